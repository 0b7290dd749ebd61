// libFuzzer target: result reports as `validate`, `diff` and `merge` read them. The input is one report,
// or two separated by a NUL byte (JSON text holds none, so the split is unambiguous; one report is
// compared with itself). Bytes -> json_input (depth, numbers) -> every schema -> the hardware
// comparison on the raw documents (merge and diff run it before or without validation) -> identity
// checks, refused and allowed -> for valid reports, the diff of the two in every format, with the gate
// strict and relaxed -> the merge of the two as shards, refused and allowed. Only a UsageError (exit 2)
// may leave; any other exception or a sanitizer report is a crash (arch-bench would exit 3 or worse).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/errors.hpp"
#include "runner/diff/diff.hpp"
#include "runner/diff/hardware_identity.hpp"
#include "runner/diff/printers.hpp"
#include "runner/report/json_input.hpp"
#include "runner/report/schema_validation.hpp"
#include "runner/shard/merge.hpp"

namespace {
using namespace arch_bench;

void diff_in_every_format(const LoadedReport& a, const LoadedReport& b, const DiffSettings& settings,
                          const std::vector<AllowedDifference>& allowed) {
  const DiffResult diff = compare_reports(a, b, settings, environment_notes(a, b), allowed);
  format_diff_text(diff);
  format_diff_markdown(diff);
  const nlohmann::json diff_json = diff_to_json(diff);
  if (!schema_errors(diff_json, "diff").empty()) __builtin_trap();  // `diff --format json` would exit 3
}

void merge_as_shards(const LoadedReport& a, const LoadedReport& b, bool allow_hardware_change) {
  MergeContext context{"arch-bench merge fuzz", "2024-01-01T00:00:00Z", std::nullopt, allow_hardware_change, 0.25};
  try {
    const nlohmann::json merged = merge_shard_reports({a, b}, context);
    schema_errors(merged, "result");  // merge refuses an invalid result (exit 1); here only the walk matters
  } catch (const UsageError&) {
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t split = input.find('\0');
  const std::string_view first = input.substr(0, split);
  const std::string_view second = split == std::string_view::npos ? first : input.substr(split + 1);
  nlohmann::json old_document, new_document;
  try {
    old_document = parse_json_input(first, "old.json");
    new_document = parse_json_input(second, "new.json");
  } catch (const UsageError&) {
    return 0;
  }
  for (const char* schema : {"profile", "preflight", "diff"}) schema_errors(old_document, schema);
  hardware_differences(old_document, "old.json", new_document, "new.json", 0.25);
  const LoadedReport old_report{"old.json", old_document}, new_report{"new.json", new_document};
  try {
    check_comparable(old_report, new_report, {});
  } catch (const UsageError&) {
  }
  std::vector<AllowedDifference> allowed;
  try {
    allowed = check_comparable(old_report, new_report, {true, true, true});
    validate_report(old_report);
    validate_report(new_report);
  } catch (const UsageError&) {
    return 0;
  }
  DiffSettings strict, relaxed;
  relaxed.fail_on_slower = false;
  relaxed.allow_removed = relaxed.allow_failure = relaxed.allow_evidence_drop = true;
  relaxed.allow_workload_change = relaxed.allow_mode_change = relaxed.allow_hardware_change = true;
  diff_in_every_format(old_report, new_report, strict, allowed);
  diff_in_every_format(old_report, new_report, relaxed, allowed);
  merge_as_shards(old_report, new_report, false);
  merge_as_shards(old_report, new_report, true);
  return 0;
}
