#pragma once
// Parsing of the comma-separated list options (--sequence-lengths 512,2048,8192), with errors
// that name the option and the offending item.
#include <cstdint>
#include <string>
#include <vector>

namespace arch_bench {

// Positive integers; throws UsageError for an empty list, an empty item, a non-number or a value <= 0.
std::vector<std::int64_t> parse_positive_list(const std::string& option, const std::string& text);
// Non-empty comma-separated words.
std::vector<std::string> parse_word_list(const std::string& option, const std::string& text);

}  // namespace arch_bench
