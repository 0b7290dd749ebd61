#pragma once
// The measuring step of a run: the backend the report names, the machine's ceilings and timer
// overhead, then every cell of the plan (execute.hpp); and, after a long CPU run, the ceilings once
// more (ceilings.hpp, kSecondCeilingReadingAfterSeconds).
#include "runner/pipeline/execute.hpp"
#include "runner/pipeline/plan.hpp"
#include "runner/pipeline/workload.hpp"
#include "runner/report/report.hpp"

namespace arch_bench {

// On report.backend ("cpu" | "cuda"): fills the report's ceilings, timer overhead, machine facts
// (host, gpu, the CPU's kernel set) and evidence level, and its rows. Returns how long the cells
// took, in seconds. The caller holds a GracefulInterrupt (interrupt.hpp) around it.
double measure_plan(const Plan& plan, const Workload& workload, RunReport& report, const ProgressSink& progress);

// A CPU run whose cells took long enough (wants_second_ceiling_reading) reads the ceilings again
// and the rows' fractions use the better of the two readings of each; else nothing changes.
void reread_ceilings(RunReport& report, const Workload& workload, bool interrupted, double cells_seconds,
                     const ProgressSink& progress);

}  // namespace arch_bench
