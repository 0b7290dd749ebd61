#pragma once
// Why rows did not pair. Rows pair by their whole key (pair_rows.hpp), so a report measured at another
// dtype, head count, head_dim, batch or option shows every row as REMOVED and ADDED; that alone does
// not say the workload changed. Each REMOVED row is matched with the ADDED row of the same mechanism,
// variant, phase and sequence length that differs in the fewest key axes, and both rows' reasons, and
// one note per change, name those axes and their values (issue 42).
#include <string>
#include <vector>

#include "runner/diff/diff.hpp"

namespace arch_bench {

// The key axes in which `a` and `b` differ, with both values: {"dtype bfloat16 -> float32"}.
// Mechanism, variant, phase, sequence length and occurrence are not axes here: they name the cell.
std::vector<std::string> key_axis_changes(const RowKey& a, const RowKey& b);

// Rewrites the reasons of REMOVED and ADDED rows that have a near counterpart, and appends to
// `notes` one line per distinct change: "2 row(s) did not pair because the workload changed (dtype
// bfloat16 -> float32): they show as REMOVED and ADDED, not as timing verdicts".
void explain_unpaired_rows(std::vector<RowDiff>& rows, std::vector<std::string>& notes);

}  // namespace arch_bench
