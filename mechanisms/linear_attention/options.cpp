#include "mechanisms/linear_attention/options.hpp"

namespace arch_bench {

const OptionSpec& linear_attention_feature_map_option() {
  static const OptionSpec spec{.key = "feature_map",
                               .type = OptionType::text,
                               .default_value = std::string("elu"),
                               .help = "linear_attention feature map: elu (elu+1, default) or relu (relu+1)",
                               .choices = {"elu", "relu"}};
  return spec;
}

}  // namespace arch_bench
