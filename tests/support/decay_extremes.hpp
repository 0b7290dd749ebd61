#pragma once
// The extreme-decay check shared by the chunked replays of the RWKV recurrences.
#include <cstdint>
#include <functional>
#include <random>
#include <utility>

#include <gtest/gtest.h>

#include "core/dtype.hpp"

namespace arch_bench::testing {

// `Problem(heads, dim, tokens)` is a chunked replay with redraw_decays(draw), which replaces every
// decay parameter by draw(), and against_reference(), its relative errors {output, state} against
// fp64. Both stay within the bf16 tolerance when the decays are all strong (drawn from
// [strong_low, strong_high)), all weak (`weak` everywhere) and mixed (drawn from [mixed_low,
// mixed_high): strong and weak channels in one chunk), at 2 heads of widths 16 and 64 over 333 tokens.
template <class Problem>
void expect_accurate_with_strong_weak_and_mixed_decays(float strong_low, float strong_high, float weak,
                                                       float mixed_low, float mixed_high) {
  const double tolerance = dtype_tolerance(DType::bfloat16);
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> strong(strong_low, strong_high), mixed(mixed_low, mixed_high);
  const std::pair<const char*, std::function<float()>> kinds[] = {
      {"strong", [&] { return strong(rng); }}, {"weak", [&] { return weak; }}, {"mixed", [&] { return mixed(rng); }}};
  for (const std::int64_t dim : {16, 64}) {
    Problem p(2, dim, 333);
    for (const auto& [kind, draw] : kinds) {
      p.redraw_decays(draw);
      const auto e = p.against_reference();
      EXPECT_LT(e.output, tolerance) << kind << ", d " << dim;
      EXPECT_LT(e.state, tolerance) << kind << ", d " << dim;
    }
  }
}

}  // namespace arch_bench::testing
