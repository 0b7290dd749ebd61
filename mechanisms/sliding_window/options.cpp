#include "mechanisms/sliding_window/options.hpp"

namespace arch_bench {

const OptionSpec& window_option() {
  static const OptionSpec spec{.key = "window",
                               .type = OptionType::integer,
                               .default_value = std::int64_t{4096},
                               .help = "sliding_window: W, the tokens each query attends to (itself and the W - 1 "
                                       "before it; default 4096, Mistral 7B's); the K/V state holds min(L, W) tokens",
                               .minimum = 1.0};
  return spec;
}

}  // namespace arch_bench
