#pragma once
// The words and numbers the text and Markdown printers share, so both say the same thing.
#include <optional>
#include <string>

#include "runner/diff/diff.hpp"

namespace arch_bench::diff_format {

std::string milliseconds(const std::optional<double>& ms);  // "0.01234", "-" when absent
std::string change(const std::optional<double>& change);    // "+12.3%", "-"
std::string p_value(const std::optional<double>& p);        // "0.042", "3.1e-07", "-"
// Structural changes of a row, short: "state_bytes grew (regression); status ok -> failed (regression)".
std::string structural_tags(const RowDiff& row);
// Structural tags, then the reason for UNSURE / ADDED / REMOVED: what a reader needs next to the verdict.
std::string row_notes(const RowDiff& row);
std::string side(const ReportSide& report);      // "results/a.json (run a, 2024-05-01T10:00:00Z, git abc123)"
std::string verdict_counts(const DiffSummary& summary);  // "3 SAME, 1 SLOWER" (non-zero counts only)
std::string structural_counts(const DiffSummary& summary);
std::string geomean(const DiffSummary& summary);  // "geomean new/old median ratio 0.982 (-1.8%) over 6 rows"
std::string settings(const DiffSettings& settings);
// An allowed difference as the warning every format puts first: "hardware.host.cpu_model differs: ...;
// compared because of --allow-hardware-change: timing verdicts compare the machines as much as the code".
std::string allowed_difference(const AllowedDifference& difference);
// "no regression (exit 0)" / "REGRESSION (exit 1): ...", then what an --allow-* option let pass.
std::string result(const DiffResult& diff);

}  // namespace arch_bench::diff_format
