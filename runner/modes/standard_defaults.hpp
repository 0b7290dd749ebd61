#pragma once
// The default matrix the built-in modes share, so a mode states only what it measures differently.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "runner/modes/mode.hpp"

namespace arch_bench {

// A mode's identity over L = 512, 2048 and 8192 at 8 heads of 64 channels in bf16, over `phases`, with
// `warmup` + `repeats` calls per cell (the mode says why its numbers). The mode sets its options after.
inline ModeDefaults standard_mode_defaults(std::string experiment, std::string semantic_id, std::string workload_id,
                                           std::vector<Phase> phases, std::int64_t warmup, std::int64_t repeats) {
  ModeDefaults defaults{std::move(experiment), std::move(semantic_id), std::move(workload_id), {}};
  defaults.workload.sequence_lengths = {512, 2048, 8192};
  defaults.workload.heads = 8;
  defaults.workload.head_dim = 64;
  defaults.workload.dtype = DType::bfloat16;
  defaults.workload.phases = std::move(phases);
  defaults.workload.warmup = warmup;
  defaults.workload.repeats = repeats;
  return defaults;
}

}  // namespace arch_bench
