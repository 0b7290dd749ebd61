#include "runner/cli/parse_lists.hpp"

#include <charconv>

#include <fmt/format.h>

#include "runner/core/errors.hpp"

namespace arch_bench {

std::vector<std::string> parse_word_list(const std::string& option, const std::string& text) {
  std::vector<std::string> words;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    std::string word = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    while (!word.empty() && word.front() == ' ') word.erase(word.begin());
    while (!word.empty() && word.back() == ' ') word.pop_back();
    if (word.empty()) throw UsageError(fmt::format("{}: empty item in '{}'", option, text));
    words.push_back(word);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return words;
}

std::vector<std::int64_t> parse_positive_list(const std::string& option, const std::string& text) {
  if (text.empty()) throw UsageError(fmt::format("{} is empty; give comma-separated positive integers", option));
  std::vector<std::int64_t> values;
  for (const std::string& word : parse_word_list(option, text)) {
    std::int64_t value = 0;
    const auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), value);
    if (error != std::errc() || end != word.data() + word.size()) {
      throw UsageError(fmt::format("{}: '{}' is not an integer", option, word));
    }
    if (value <= 0) throw UsageError(fmt::format("{}: {} is not positive", option, value));
    values.push_back(value);
  }
  return values;
}

}  // namespace arch_bench
