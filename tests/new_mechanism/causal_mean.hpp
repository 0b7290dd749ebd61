#pragma once
// causal_mean: the template of a new mechanism (tests/new_mechanism/, copied to mechanisms/causal_mean/ by
// scripts/new-mechanism-check.sh). Output t is a weighted mean of the values up to t:
//   o_t = sum_{i<=t} w_i v_i / sum_{i<=t} w_i,   w_i = (i + 1)^p
// with p the mechanism's one option, `mean_power` (0: the plain causal mean). The state that carries
// the context is fixed in L: the weighted sum S [batch_heads, dim] (fp32) and the weight sum W.
//   decode:  S' = S + w_L v_L, W' = W + w_L, o_L = S' / W'
//   prefill: the same recurrence over every token, in one pass
// Every kernel here is plain C++ (no CUDA): the CPU backend is the only one it states.
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/bf16.hpp"
#include "mechanisms/common/conformance_adapter.hpp"
#include "mechanisms/common/matrix.hpp"

namespace arch_bench {

// Weight of token i for power p.
inline double causal_mean_weight(std::int64_t i, std::int64_t power) {
  return std::pow(static_cast<double>(i + 1), static_cast<double>(power));
}

// One decode step for every (batch, head) row: reads the state (s, weight) of the first `position`
// tokens, writes the state after token `position` to (s_next, weight_next) and its output to out.
// Reads one state and writes another, so that re-running the step does the same work every time.
template <class T>
void causal_mean_decode_step(std::int64_t rows, std::int64_t dim, std::int64_t position, std::int64_t power,
                             const float* s, float weight, const T* v, float* s_next, float* weight_next, T* out) {
  const float w = static_cast<float>(causal_mean_weight(position, power));
  const float total = weight + w;
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < dim; ++c) {
      const std::int64_t i = r * dim + c;
      s_next[i] = s[i] + w * to_float(v[i]);
      out[i] = from_float<T>(s_next[i] / total);
    }
  }
  *weight_next = total;
}

// The causal prefill over v [rows, tokens, dim] into out (same layout); leaves the state after the
// last token in s [rows, dim] (which starts at zero) and *weight.
template <class T>
void causal_mean_prefill(std::int64_t rows, std::int64_t tokens, std::int64_t dim, std::int64_t power, const T* v,
                         float* s, float* weight, T* out) {
  float total = 0;
  for (std::int64_t t = 0; t < tokens; ++t) total += static_cast<float>(causal_mean_weight(t, power));
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    float running = 0;
    for (std::int64_t t = 0; t < tokens; ++t) {
      const float w = static_cast<float>(causal_mean_weight(t, power));
      running += w;
      for (std::int64_t c = 0; c < dim; ++c) {
        const std::int64_t i = (r * tokens + t) * dim + c;
        s[r * dim + c] += w * to_float(v[i]);
        out[i] = from_float<T>(s[r * dim + c] / running);
      }
    }
  }
  *weight = total;
}

// The fp64 reference: outputs [tokens, dim] of one row v [tokens, dim], and the final weighted sum.
struct CausalMeanReference {
  MatrixD outputs;
  std::vector<double> state;
};
inline CausalMeanReference causal_mean_reference(const MatrixD& v, std::int64_t power) {
  CausalMeanReference r{MatrixD(v.rows, v.cols), std::vector<double>(static_cast<std::size_t>(v.cols), 0.0)};
  double total = 0;
  for (std::int64_t t = 0; t < v.rows; ++t) {
    const double w = causal_mean_weight(t, power);
    total += w;
    for (std::int64_t c = 0; c < v.cols; ++c) {
      r.state[c] += w * v(t, c);
      r.outputs(t, c) = r.state[c] / total;
    }
  }
  return r;
}

// The power p that `options` asks for (mechanism.cpp: the option's declaration).
std::int64_t causal_mean_power(const MechanismOptions& options);

// The conformance adapter (conformance.cpp), which the mechanism's conformance() returns.
const ConformanceAdapter& causal_mean_conformance();

}  // namespace arch_bench
