#include "mechanisms/performer/options.hpp"

namespace arch_bench {

const OptionSpec& performer_feature_map_option() {
  static const OptionSpec spec{.key = "feature_map",
                               .type = OptionType::text,
                               .default_value = std::string("favor+"),
                               .help = "performer random features: favor+ (positive features, default; alias "
                                       "positive) or trig (sin/cos pairs, m even)",
                               .choices = {"favor+", "trig", "positive"}};
  return spec;
}

const OptionSpec& performer_features_option() {
  static const OptionSpec spec{.key = "features",
                               .type = OptionType::integer,
                               .default_value = std::int64_t{256},
                               .help = "performer: random features m, 1 to 4096 (default 256). On `run`, a "
                                       "comma-separated list: the performer mode measures favor+ at each m (default "
                                       "64,128,256); other modes run m = 256",
                               .minimum = 1.0,
                               .axis = true,
                               .shapes_inputs = true};
  return spec;
}

const OptionSpec& favor_stabilizer_option() {
  static const OptionSpec spec{.key = "favor_stabilizer",
                               .type = OptionType::text,
                               .default_value = std::string("causal"),
                               .help = "performer (favor+): causal (default; eps relative to each token's largest "
                                       "feature, decode-safe) or published (eps placed as performer-pytorch's "
                                       "softmax_kernel and google-research's FAVOR+: after the key max over the "
                                       "whole sequence; see docs/user-guide.md)",
                               .choices = {"causal", "published"}};
  return spec;
}

std::vector<OptionSpec> performer_option_specs() {
  return {performer_feature_map_option(), performer_features_option(), favor_stabilizer_option()};
}

}  // namespace arch_bench
