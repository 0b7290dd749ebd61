#include "mechanisms/mamba/options.hpp"

#include "core/checked_size.hpp"

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

MambaShape mamba_shape_of(const Cell& cell) {
  return {cell.batch, checked_mul(cell.heads, cell.head_dim), mamba_state_size_option().integer(cell.options)};
}

}  // namespace arch_bench
