#pragma once
// Structural changes: facts about a row or a report that timing noise cannot explain (state
// bytes, peak memory, finiteness, error against the reference, status; decision verdict and
// evidence level). They are never judged statistically: a change is a change.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/diff/verdicts.hpp"

namespace arch_bench {

// Peak memory moves a little between runs (allocator rounding, thread stacks); it counts as
// changed only when it moves by more than both bounds.
struct MemoryTolerance {
  double fraction = 0.10;
  std::int64_t bytes = 64 * 1024;
};

struct StructuralChange {
  std::string field;  // the report field that changed, e.g. "state_bytes", "decision.verdict"
  nlohmann::json old_value, new_value;
  ChangeKind kind = ChangeKind::neutral;
  std::string message;  // a sentence a reader can act on
  bool allowed = false;  // a regression an --allow-* option let pass (kind is then neutral)
};

// Between two paired rows (schema-valid). Regressions: state_bytes grew, peak_memory_bytes grew
// beyond the tolerance, output_finite true -> false, within_tolerance true -> false (error beyond
// the dtype tolerance), status ok -> failed or skipped. The opposite directions are improvements;
// failed <-> skipped is neutral. Memory, finiteness and error are compared only when both rows
// are ok (a failed row has no meaningful outputs; its status change is reported instead).
std::vector<StructuralChange> row_structural_changes(const nlohmann::json& old_row, const nlohmann::json& new_row,
                                                     const MemoryTolerance& memory);

// Between two reports. evidence_level ranks dry_run < cpu_measured < gpu_measured: lower is a
// regression (the claim is weaker), higher an improvement. decision.verdict ranks reject_* <
// inconclusive < accept_*: lower is a regression, higher an improvement, another verdict of the
// same rank neutral; a verdict outside that vocabulary changing is a regression (a person must look),
// except next to a dry run, which decides nothing (neutral).
std::vector<StructuralChange> report_structural_changes(const nlohmann::json& old_document,
                                                        const nlohmann::json& new_document);

}  // namespace arch_bench
