// libFuzzer target: a result report as `validate` and `diff` read it. Bytes -> json_input (depth,
// numbers) -> every schema -> identity checks -> for a valid report, the diff of it with itself in
// every format. Only a UsageError (exit 2) may leave; any other exception or a sanitizer report is
// a crash (arch-bench would exit 3 or worse).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/errors.hpp"
#include "runner/diff/diff.hpp"
#include "runner/diff/printers.hpp"
#include "runner/report/json_input.hpp"
#include "runner/report/schema_validation.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace arch_bench;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  nlohmann::json document;
  try {
    document = parse_json_input(text, "fuzz.json");
  } catch (const UsageError&) {
    return 0;
  }
  for (const char* schema : {"profile", "preflight", "diff"}) schema_errors(document, schema);
  const LoadedReport report{"fuzz.json", document};
  try {
    check_comparable(report, report, {});
    validate_report(report);
  } catch (const UsageError&) {
    return 0;
  }
  DiffSettings settings;
  const DiffResult diff = compare_reports(report, report, settings);
  format_diff_text(diff);
  format_diff_markdown(diff);
  const nlohmann::json diff_json = diff_to_json(diff);
  if (!schema_errors(diff_json, "diff").empty()) __builtin_trap();  // `diff --format json` would exit 3
  return 0;
}
