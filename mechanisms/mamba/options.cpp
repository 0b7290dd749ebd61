#include "mechanisms/mamba/options.hpp"

namespace arch_bench {

const OptionSpec& mamba_state_size_option() {
  static const OptionSpec spec{.key = "state_size",
                               .type = OptionType::integer,
                               .default_value = std::int64_t{16},
                               .help = "mamba: state size N per channel (default 16)",
                               .minimum = 1.0,
                               .shapes_inputs = true};
  return spec;
}

}  // namespace arch_bench
