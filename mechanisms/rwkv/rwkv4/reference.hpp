#pragma once
// fp64 references of RWKV-4's WKV operator (seed 002), per channel c, decay rate w_c > 0, bonus u_c:
//   wkv_t = (sum_{i<t} e^{-(t-1-i) w + k_i} v_i + e^{u + k_t} v_t) / (sum_{i<t} e^{-(t-1-i) w + k_i} + e^{u + k_t})
// The naive form is the formula as written, O(T^2) per channel; it overflows once k (or u + k)
// passes the float type's exponent range (k ~ 89 in fp32, ~710 in fp64). The stable form carries
// the state (a, b, p): the two sums scaled by e^{-p}, p the running maximum exponent, O(T).
#include <cstdint>
#include <vector>

#include "mechanisms/common/matrix.hpp"

namespace arch_bench {

// k, v [tokens, channels]; w, u [channels]. Real = double (the reference) or float (to show where
// the naive form breaks). Throws std::invalid_argument on an empty or mismatched input.
template <class Real>
MatrixD rwkv4_wkv_naive(const MatrixD& k, const MatrixD& v, const std::vector<double>& w,
                        const std::vector<double>& u);

struct Rwkv4ReferenceResult {
  MatrixD outputs;  // [tokens, channels]
  // State after the last token, per channel: a = e^{-p} sum_i e^{-(T-1-i) w + k_i} v_i,
  // b = e^{-p} sum_i e^{-(T-1-i) w + k_i}, and p.
  std::vector<double> a, b, p;
};

Rwkv4ReferenceResult rwkv4_wkv_stable(const MatrixD& k, const MatrixD& v, const std::vector<double>& w,
                                      const std::vector<double>& u);

}  // namespace arch_bench
