#pragma once
// The options Mamba-2 reads (Mechanism::option_specs()): declared once, here. head_dim P is the
// cell's --dim, the heads its --heads.
#include <cstdint>

#include "core/options.hpp"

namespace arch_bench {

// Limits Mamba2::unsupported() enforces: the decode step keeps a head's B_t, C_t and its P-wide rows
// on the stack, and the chunk's cumulative decays live in a fixed array.
inline constexpr std::int64_t kMamba2MaxStateSize = 256;
inline constexpr std::int64_t kMamba2MaxHeadDim = 256;
inline constexpr std::int64_t kMamba2MaxChunk = 256;

// state_size: N, the state columns per head (default 128, the published Mamba-2 configurations'
// d_state). The key is mamba's too, so `--state-size` and a model preset's d_state reach both; each
// fills in its own default.
const OptionSpec& mamba2_state_size_option();
// n_groups: how many B/C pairs the heads share (default 1); heads per group = heads / n_groups.
const OptionSpec& mamba2_groups_option();
// ssd_chunk: the chunk length of the chunked SSD prefill (default 64).
const OptionSpec& mamba2_chunk_option();

}  // namespace arch_bench
