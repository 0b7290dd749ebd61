#include "runner/report/json_input.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"
#include "runner/pipeline/input_file.hpp"

namespace arch_bench {

namespace {

// The byte offset where nesting first goes deeper than kMaxJsonDepth, or npos. A linear pre-scan
// rather than the parser callback: it runs before any allocation and needs no parser state. Brackets
// inside strings do not count; on text that is not JSON the count may be off, but then the parser
// refuses the text anyway.
std::size_t too_deep_at(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::string_view::npos;
}

// nlohmann quotes the offending token in its message, which can be megabytes of a hostile file.
std::string clipped(const char* message) {
  constexpr std::size_t kShown = 300;
  const std::string text = message;
  return text.size() <= kShown ? text : text.substr(0, kShown) + fmt::format("... ({} more characters)", text.size() - kShown);
}

}  // namespace

nlohmann::json parse_json_input(std::string_view text, const std::string& name) {
  if (const std::size_t at = too_deep_at(text); at != std::string_view::npos) {
    throw UsageError(fmt::format("{}: not a usable JSON document: arrays and objects nest more than {} levels deep "
                                 "(at byte {}); no arch-bench document nests like that",
                                 name, kMaxJsonDepth, at));
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& error) {
    throw UsageError(fmt::format("{}: not valid JSON: {}", name, clipped(error.what())));
  } catch (const nlohmann::json::out_of_range& error) {
    // 406: a number such as 1e400 that no double holds.
    throw UsageError(fmt::format("{}: not a usable JSON document: {} (numbers must fit a 64-bit float)", name,
                                 clipped(error.what())));
  } catch (const nlohmann::json::exception& error) {
    throw UsageError(fmt::format("{}: not a usable JSON document: {}", name, clipped(error.what())));
  }
}

nlohmann::json read_json_input(const std::filesystem::path& path, std::string_view what) {
  return parse_json_input(read_input_file(path, what), path.string());
}

}  // namespace arch_bench
