#pragma once
// Parsing of the comma-separated list options (--sequence-lengths 512,2048,8192), with errors
// that name the option and the offending item.
#include <cstdint>
#include <string>
#include <vector>

namespace arch_bench {

// Positive integers; throws UsageError for an empty list, an empty item, a non-number or a value <= 0.
std::vector<std::int64_t> parse_positive_list(const std::string& option, const std::string& text);
// A seed: a decimal integer from 0 to 2^63-1, what the reports' schema (integer, minimum 0) and every
// JSON reader take; throws UsageError naming the option otherwise.
std::uint64_t parse_seed(const std::string& option, const std::string& text);
// Non-empty comma-separated words.
std::vector<std::string> parse_word_list(const std::string& option, const std::string& text);

}  // namespace arch_bench
