#pragma once
// Runs a plan on a backend: for each cell, prepare (inputs and context in place), one run and the
// fp64 check, then warmup and timed repeats; returns one Row per cell.
#include <functional>
#include <string>
#include <vector>

#include "core/backends/backend.hpp"
#include "runner/pipeline/plan.hpp"
#include "runner/pipeline/run_result.hpp"

namespace arch_bench {

// Progress lines for a human (stderr); may be empty. A transient line (sample counts) is replaced
// by the next line on a terminal and may be dropped elsewhere.
using ProgressSink = std::function<void(const std::string& line, bool transient)>;

std::vector<Row> execute_plan(const Plan& plan, const Workload& workload, Backend& backend,
                              const Ceilings& ceilings, const ProgressSink& progress);

// Fills achieved rates and fractions of the ceilings from the row's cost and median.
void attach_rates(Row& row, const Ceilings& ceilings);

}  // namespace arch_bench
