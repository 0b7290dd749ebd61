#pragma once
// A measured row as the report tests build one by hand (no run): the softmax_kv baseline cell of the
// seed workload with three samples and their statistics, for tests that write a report and check
// what it says about a row.
#include "runner/pipeline/run_result.hpp"

namespace arch_bench::testing {

// softmax_kv, L 512, batch 1, 8 heads of 64, bf16, as the baseline arm; 1 MiB of explicit history.
inline Row softmax_kv_baseline_row(Phase phase) {
  Row row;
  row.cell = Cell{"softmax_kv", phase, 512, 1, 8, 64, DType::bfloat16, {}};
  row.role = Role::baseline;
  row.state_kind = StateKind::explicit_history;
  row.state_bytes = 1 << 20;
  row.samples_ms = {0.1, 0.2, 0.15};
  row.stats = {0.15, 0.15, 0.105, 0.195, 0.05, 0.33, 0.1, 0.2};
  row.tolerance = 1e-2;
  return row;
}

}  // namespace arch_bench::testing
