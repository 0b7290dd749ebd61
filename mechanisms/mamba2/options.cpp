#include "mechanisms/mamba2/options.hpp"

namespace arch_bench {

const OptionSpec& mamba2_state_size_option() {
  static const OptionSpec spec{.key = "state_size",
                               .type = OptionType::integer,
                               .default_value = std::int64_t{128},
                               .help = "mamba2: state size N per head (default 128, at most 256)",
                               .minimum = 1.0,
                               .shapes_inputs = true};
  return spec;
}

const OptionSpec& mamba2_groups_option() {
  // Sizes B and C ([batch, n_groups, tokens, N]), so it shapes the drawn inputs.
  static const OptionSpec spec{.key = "n_groups",
                               .type = OptionType::integer,
                               .default_value = std::int64_t{1},
                               .help = "mamba2: B/C groups shared by heads / n_groups heads each (default 1; must "
                                       "divide --heads)",
                               .minimum = 1.0,
                               .shapes_inputs = true};
  return spec;
}

const OptionSpec& mamba2_chunk_option() {
  // 64 rather than the GPU kernels' 256: a 64-token chunk's C, B^T and score tiles of a head (N =
  // 128, P = 64) take about 100 KiB and stay in L2, and the intra-chunk work (R^2 (N + P) per chunk)
  // stays below the state passes' (2 R N P).
  static const OptionSpec spec{.key = "ssd_chunk",
                               .type = OptionType::integer,
                               .default_value = std::int64_t{64},
                               .help = "mamba2: chunk length of the chunked SSD prefill (default 64, at most 256)",
                               .minimum = 1.0};
  return spec;
}

}  // namespace arch_bench
