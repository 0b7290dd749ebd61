#pragma once
// What Mamba (S6) and Mamba-2 (SSD) share about their layer parameters A = -exp(A_log), dt_bias
// and D: how the inputs draw them (Gu and Dao's initialisation, arXiv:2312.00752, and Dao and Gu's,
// arXiv:2405.21060) and how a CPU cell keeps them in tracked buffers. The two layouts differ
// (Mamba: A per channel and state entry; Mamba-2: one per head), not these steps.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

#include "core/backends/allocator.hpp"
#include "core/backends/backend.hpp"

namespace arch_bench {

// A = -exp(A_log) rounded to fp32: the A the kernels read (both papers compute it the same way).
inline std::vector<float> negated_exp(const std::vector<float>& log_values) {
  std::vector<float> out(log_values.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = -std::exp(log_values[i]);
  return out;
}

// dt drawn log-uniform in [1e-3, 1e-1] and stored as the bias that softplus maps back onto it:
// dt_bias = dt + log(-expm1(-dt)), the inverse of softplus.
inline float draw_dt_bias(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> log_dt(std::log(1e-3), std::log(1e-1));
  const double dt = std::exp(log_dt(rng));
  return static_cast<float>(dt + std::log(-std::expm1(-dt)));
}

// The skip weight D: ones at initialisation, drawn uniform in [0.5, 1.5] so that a kernel that
// drops or misplaces it is seen.
inline float draw_skip_weight(std::mt19937_64& rng) { return std::uniform_real_distribution<float>(0.5f, 1.5f)(rng); }

// The layer's fp32 parameters in tracked buffers, A already negated and exponentiated; View is the
// kernels' pointer triple {A, dt_bias, D} (MambaParameters, Mamba2Parameters).
template <class View>
struct SsmParameterBuffers {
  template <class Inputs>
  SsmParameterBuffers(const Inputs& inputs, Allocator& allocator)
      : A(allocator, inputs.A_log.size()), dt_bias(allocator, inputs.dt_bias.size()), D(allocator, inputs.D.size()) {
    const std::vector<float> a = negated_exp(inputs.A_log);
    std::copy(a.begin(), a.end(), A.data());
    std::copy(inputs.dt_bias.begin(), inputs.dt_bias.end(), dt_bias.data());
    std::copy(inputs.D.begin(), inputs.D.end(), D.data());
  }
  View view() const { return {A.data(), dt_bias.data(), D.data()}; }
  void add_spans(std::vector<ByteSpan>& spans) const {
    spans.insert(spans.end(), {A.byte_span(), dt_bias.byte_span(), D.byte_span()});
  }
  Buffer<float> A, dt_bias, D;
};

}  // namespace arch_bench
