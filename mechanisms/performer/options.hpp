#pragma once
// The options Performer reads (Mechanism::option_specs()): declared once, here.
#include <vector>

#include "core/options.hpp"

namespace arch_bench {

// feature_map: the random-feature map, favor+ (positive features, default; alias positive) or trig
// (sin/cos pairs, m even). linear_attention's elu/relu are another mechanism's: a landscape arm
// given one runs favor+ (Mechanism::arm_options).
const OptionSpec& performer_feature_map_option();
// features: m, the number of random features (1..4096; unsupported() says the upper bound). On
// `run` a list (an axis): the performer mode measures one arm per m.
const OptionSpec& performer_features_option();
// favor_stabilizer (favor+ only): where the eps of the features sits. "causal" (default): relative
// to each token's own largest feature, keys kept against a running max (decode-safe). "published":
// as performer-pytorch's softmax_kernel and google-research's FAVOR+, after subtracting max_i w_i.q~
// per query and, for keys, the key maximum over the whole sequence (reference.hpp).
const OptionSpec& favor_stabilizer_option();

std::vector<OptionSpec> performer_option_specs();

}  // namespace arch_bench
