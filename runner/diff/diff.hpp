#pragma once
// `arch-bench diff OLD.json NEW.json` (docs/design.md, "Diff"): pairs the rows of two result reports and
// says, per row, whether the new run is SAME, FASTER, SLOWER or UNSURE (a rank test on the raw
// samples plus a minimum effect on the ratio of medians), and which structural facts changed
// (state bytes, peak memory, finiteness, error, status; decision and evidence level per report).
//
// Data flow: load_report (read, compare identities and hardware, validate) -> pair_rows -> judge_timing
// and structural checks per pair -> unpaired rows explained -> the gate (summary, exit code) ->
// DiffResult -> one printer per format (text, markdown, json).
//
// The gate cannot pass on nothing (issue 42): rows that disappear (REMOVED), a new report whose
// `failure` is set (an interrupted run with no rows) and a lowered evidence level fail it, unless
// --allow-removed, --allow-failure or --allow-evidence-drop says they may; the output then says so.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/diff/load_report.hpp"
#include "runner/diff/pair_rows.hpp"
#include "runner/diff/structural_checks.hpp"
#include "runner/diff/timing_verdict.hpp"

namespace arch_bench {

// 1.1.0: allowed_differences, settings.allow_*, summary.relaxed, side.hardware and side.failure.
inline constexpr const char* kDiffSchemaVersion = "1.1.0";

struct DiffSettings {
  TimingSettings timing;
  MemoryTolerance memory;
  // false (--fail-on never): SLOWER rows are reported but do not fail; structural regressions
  // still do, because a noisy shared CI machine excuses timing, not broken outputs or grown state.
  bool fail_on_slower = true;
  bool allow_workload_change = false;
  // What the gate lets pass on purpose; each one that mattered is named in summary.relaxed.
  bool allow_removed = false;         // REMOVED rows do not fail
  bool allow_failure = false;         // a new report whose `failure` is set does not fail
  bool allow_evidence_drop = false;   // a lowered evidence level does not fail
  bool allow_hardware_change = false; // reports of different hardware are compared (check_comparable)
  bool allow_mode_change = false;     // reports of different identity.mode are compared (check_comparable)
};

// One row of the diff: a pair, or a row present in one report only (ADDED / REMOVED).
struct RowDiff {
  RowKey key;
  std::string label;  // key as people read it; only the parts that vary between rows
  Verdict verdict = Verdict::unsure;
  std::string reason;
  std::optional<std::string> old_status, new_status;  // absent on the side without the row
  TimingComparison timing;                             // empty for ADDED / REMOVED
  std::vector<StructuralChange> structural;
};

// What is said about each report in the diff's header.
struct ReportSide {
  std::string file, schema_version, workload_id, run_label, mode, created_at, git_commit, evidence_level,
      decision_verdict;
  bool git_tree_modified = false;  // the binary was built from a tree with uncommitted changes
  std::string hardware;            // "cpu, AMD EPYC" or "cuda, NVIDIA H100 (host AMD EPYC)"
  std::string failure;             // "interrupted: ...", "" when the report's failure is null
};

struct DiffSummary {
  std::map<Verdict, int> verdicts;  // every Verdict present, zero counts included
  int structural_regressions = 0, structural_improvements = 0, structural_neutral = 0;
  // Geometric mean of new/old median ratios over rows paired with status ok and samples on both
  // sides: one number for "did this change make things faster overall".
  std::optional<double> geomean_ratio;
  int geomean_rows = 0;
  std::vector<std::string> failing;  // why the exit code is 1; empty when it is 0
  std::vector<std::string> relaxed;  // what would have failed but an --allow-* option let pass
  int exit_code = 0;                 // 0 no regression, 1 regression
};

struct DiffResult {
  ReportSide old_report, new_report;
  DiffSettings settings;
  // Differences that make the reports incomparable by default (hardware, mode, workload), allowed
  // by an option: every printer puts them first, above the verdicts they undermine.
  std::vector<AllowedDifference> allowed_differences;
  std::vector<RowDiff> rows;                    // old report's row order, then added rows
  std::vector<StructuralChange> report_changes; // decision verdict, evidence level
  std::vector<std::string> notes;               // e.g. the workload change that was allowed
  DiffSummary summary;
};

// Both reports must already be loaded (load_report) and found comparable (check_comparable, whose
// allowed differences are passed on as `allowed`).
DiffResult compare_reports(const LoadedReport& old_report, const LoadedReport& new_report,
                           const DiffSettings& settings, std::vector<std::string> notes = {},
                           std::vector<AllowedDifference> allowed = {});

}  // namespace arch_bench
