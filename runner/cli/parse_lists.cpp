#include "runner/cli/parse_lists.hpp"

#include <charconv>

#include <fmt/format.h>

#include "core/errors.hpp"

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

std::uint64_t parse_seed(const std::string& option, const std::string& text) {
  std::int64_t value = -1;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < 0) {
    // The reports record the seed as a JSON integer with minimum 0, and readers (valijson, Python,
    // jq) hold integers as signed 64-bit: a larger seed would be measured and then fail the schema.
    throw UsageError(fmt::format("{} '{}' is not an integer from 0 to 9223372036854775807 (2^63-1)", option, text));
  }
  return static_cast<std::uint64_t>(value);
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
