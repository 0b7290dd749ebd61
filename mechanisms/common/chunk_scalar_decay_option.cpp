#include "mechanisms/common/chunk_scalar_decay_option.hpp"

#include <string>

namespace arch_bench {

const OptionSpec& scalar_decay_state_pass_option() {
  static const OptionSpec spec{.key = "state_pass",
                               .type = OptionType::text,
                               .default_value = std::string("auto"),
                               .help = "retnet, mamba2, linear_attention (bf16 CUDA prefill on tensor cores): auto "
                                       "(default: fused where its grid is one wave covering every SM, else "
                                       "three_kernel), fused (one pass carrying S over the chunks) or three_kernel "
                                       "(chunk states, prefix, outputs); the row's gpu_kernel names the one that "
                                       "ran. On `run`, a comma-separated list: one arm per value",
                               .choices = {"auto", "fused", "three_kernel"},
                               .axis = true,
                               .every_mode_axis = true};
  return spec;
}

ScalarDecayStatePassChoice scalar_decay_state_pass_choice_of(const Cell& cell) {
  const std::string choice = scalar_decay_state_pass_option().text(cell.options);
  if (choice == "fused") return ScalarDecayStatePassChoice::fused;
  if (choice == "three_kernel") return ScalarDecayStatePassChoice::three_kernel;
  return ScalarDecayStatePassChoice::automatic;
}

}  // namespace arch_bench
