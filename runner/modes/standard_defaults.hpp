#pragma once
// The default matrix the built-in modes share, so a mode states only what it measures differently.
#include <string>
#include <utility>
#include <vector>

#include "runner/modes/mode.hpp"

namespace arch_bench {

// A mode's identity over L = 512, 2048 and 8192 at 8 heads of 64 channels in bf16, over `phases`. The
// mode sets its warmup, repeats and options after.
inline ModeDefaults standard_mode_defaults(std::string experiment, std::string semantic_id, std::string workload_id,
                                           std::vector<Phase> phases) {
  ModeDefaults defaults{std::move(experiment), std::move(semantic_id), std::move(workload_id), {}};
  defaults.workload.sequence_lengths = {512, 2048, 8192};
  defaults.workload.heads = 8;
  defaults.workload.head_dim = 64;
  defaults.workload.dtype = DType::bfloat16;
  defaults.workload.phases = std::move(phases);
  return defaults;
}

}  // namespace arch_bench
