#pragma once
// After the measurement: the mode's verdict over the rows (a shard's is partial), the report's
// failure, the notes a reader needs (team trial, noisy rows against the profile), and what an
// interrupted run may still say.
#include <cstddef>
#include <optional>
#include <span>

#include "runner/modes/mode.hpp"
#include "runner/pipeline/plan.hpp"
#include "runner/pipeline/run_result.hpp"
#include "runner/preflight/preflight.hpp"
#include "runner/profiles/profile.hpp"
#include "runner/report/report.hpp"
#include "runner/shard/shard.hpp"

namespace arch_bench {

// `shard`, `profile`: null when the run had none; `stop_signal`: the signal that interrupted the
// measuring (0: none). `planned_cells`: the cells this process was to measure.
void decide_run(RunReport& report, const Mode& mode, std::size_t planned_cells, const ShardSelection* shard,
                const Profile* profile, int stop_signal);

// A dry run decides from the plan alone (runner/preflight/dry_run.hpp): evidence_level dry_run, the
// host (and GPUs) the preflight read, else this host's facts, and the failure "preflight_failed"
// when a check of `preflight` (null: no profile) failed.
void decide_dry_run(RunReport& report, const Plan& plan, const PreflightResult* preflight);

// The first failed row as the report's failure (kind "mechanism_error" when the row names none).
std::optional<Failure> first_row_failure(std::span<const Row> rows);

// An interrupted run keeps the rows measured before the signal; nothing is decided from them: the
// verdict becomes inconclusive, the failure "interrupted", naming the last cell that was cut short.
// Interrupted before the first cell (in the ceilings, say), the interruption is the only reason given.
void mark_interrupted(RunReport& report, std::size_t planned_cells, int signal_number);

}  // namespace arch_bench
