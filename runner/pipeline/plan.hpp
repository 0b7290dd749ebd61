#pragma once
// The plan: every (arm, phase, length) cell of the workload matrix, checked against what each
// mechanism can take, with its predicted state and peak bytes. Building it is where bad input is
// refused (UsageError), before any measurement or file.
#include <cstdint>
#include <vector>

#include "mechanisms/mechanism.hpp"
#include "runner/modes/mode.hpp"

namespace arch_bench {

struct PlannedCell {
  Arm arm;
  Cell cell;
  const Mechanism* mechanism = nullptr;
  std::int64_t state_bytes = 0;
  std::int64_t predicted_peak_bytes = 0;     // the backend buffers (device memory on a GPU)
  std::int64_t predicted_process_bytes = 0;  // what the process gains on the host: buffers and all
  // Not empty: the cell is not measured and its row is `skipped` with this reason (set by
  // check_resources under --skip-cells-that-do-not-fit).
  std::string skip_reason;
};

struct Plan {
  std::vector<PlannedCell> cells;  // ordered: phase, then length, then arm (baseline first)
  std::int64_t max_predicted_peak_bytes() const;
  std::int64_t max_predicted_process_bytes() const;
};

// Throws UsageError naming the option at fault (empty or non-positive lengths/sizes, repeats 0,
// unknown mechanism, a head_dim a mechanism cannot take, ...).
void validate_workload(const Workload& workload);
// The mode's arms, each arm of a mechanism declaring an every-mode axis (kv_heads) run once per value
// of the workload's list for it (OptionSpec::every_mode_axis).
std::vector<Arm> arms_over_axes(const Mode& mode, const Workload& workload);

Plan build_plan(const Mode& mode, const Workload& workload, const std::string& backend);

}  // namespace arch_bench
