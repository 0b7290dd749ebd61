#pragma once
// Causality of a prefill, as the recurrent mechanisms' CPU tests check it: change token j of every
// head, and the outputs of tokens before j must stay bit-identical while j and every later token
// change. Shared so that each mechanism's test states only how it runs its prefill.
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "mechanisms/common/inputs.hpp"

namespace arch_bench::testing {

// q, k and v of token j of every head of `in` ([batch_heads, tokens, dim]), each changed differently.
inline void change_token(AttentionInputs& in, std::int64_t j) {
  for (std::int64_t h = 0; h < in.batch_heads; ++h) {
    for (std::int64_t c = 0; c < in.dim; ++c) {
      in.q[(h * in.tokens + j) * in.dim + c] += 1.0f;
      in.k[(h * in.tokens + j) * in.dim + c] -= 2.0f;
      in.v[(h * in.tokens + j) * in.dim + c] *= -3.0f;
    }
  }
}

// Outputs a and b ([batch_heads, tokens, dim] of `in`'s shape): row t of a head is the same in both
// exactly when t < j.
inline void expect_changed_from_token(const std::vector<float>& a, const std::vector<float>& b,
                                      const AttentionInputs& in, std::int64_t j) {
  for (std::int64_t h = 0; h < in.batch_heads; ++h) {
    for (std::int64_t t = 0; t < in.tokens; ++t) {
      bool same = true;
      for (std::int64_t c = 0; c < in.dim; ++c) {
        const std::size_t i = static_cast<std::size_t>((h * in.tokens + t) * in.dim + c);
        same &= a[i] == b[i];
      }
      EXPECT_EQ(same, t < j) << "head " << h << " token " << t;
    }
  }
}

}  // namespace arch_bench::testing
