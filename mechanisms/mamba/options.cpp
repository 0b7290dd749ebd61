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

const OptionSpec& mamba_scan_kernel_option() {
  static const OptionSpec spec{.key = "scan_kernel",
                               .type = OptionType::text,
                               .default_value = std::string("auto"),
                               .help = "mamba (CUDA prefill): auto (default: entry at state_size 8 and 16, "
                                       "estimated the fastest until a GPU run measures them; lane at any other), "
                                       "entry (a thread per channel and 4 state entries, every exp on "
                                       "ex2.approx) or lane (the warp scan); the row's gpu_kernel names the one "
                                       "that ran. On `run`, a comma-separated list: one arm per value",
                               .choices = {"auto", "entry", "lane"},
                               .axis = true,
                               .every_mode_axis = true};
  return spec;
}

MambaShape mamba_shape_of(const Cell& cell) {
  return {cell.batch, checked_mul(cell.heads, cell.head_dim), mamba_state_size_option().integer(cell.options)};
}

}  // namespace arch_bench
