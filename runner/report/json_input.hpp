#pragma once
// JSON documents that come from outside (result reports for `validate` and `diff`, profiles) are
// read and parsed here, once: a regular file under the input cap (runner/pipeline/input_file.hpp),
// arrays and objects nested at most kMaxJsonDepth deep, every number within double range. Whatever
// the bytes, the outcome is a document or a UsageError (exit 2) that names the file; never a crash,
// never "internal error".
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace arch_bench {

// Reports nest about 6 levels deep. The bound keeps every recursive walk over a document (dump,
// comparison, copying, schema validation) far from the end of the stack; nlohmann's parser itself
// is iterative, but what uses its result is not.
inline constexpr int kMaxJsonDepth = 64;

// Parses `text`; `name` (usually the path) starts every error message.
nlohmann::json parse_json_input(std::string_view text, const std::string& name);

// read_input_file(path, what) then parse_json_input.
nlohmann::json read_json_input(const std::filesystem::path& path, std::string_view what);

}  // namespace arch_bench
