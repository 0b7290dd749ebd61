#include "mechanisms/performer/cuda_replay.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/bf16.hpp"
#include "mechanisms/performer/cuda_plan.hpp"
#include "mechanisms/performer/cuda_trig.hpp"

namespace arch_bench {

namespace {

float to_bf16(float x) { return round_through<bf16>(x); }

// p_i = x . W[:, i], as project_column_tile accumulates it.
float projection(const PerformerSplitProjection& w, const float* x, int i, PerformerReplayFault fault) {
  constexpr int kF = kPerformerTensorCoreFragment;
  float acc = 0.0f;
  for (int d0 = 0; d0 < w.dk; d0 += kF) {
    const int d1 = std::min(d0 + kF, w.dk);
    // bf16 x bf16 is exact in fp64, and 16 such products sum exactly enough that only the
    // accumulator's fp32 rounding remains.
    double high = 0.0, low = 0.0;
    for (int d = d0; d < d1; ++d) {
      high += static_cast<double>(x[d]) * w.high[static_cast<std::size_t>(d) * w.n + i];
      low += static_cast<double>(x[d]) * w.low[static_cast<std::size_t>(d) * w.n + i];
    }
    acc = static_cast<float>(acc + high);
    if (fault != PerformerReplayFault::high_part_only) acc = static_cast<float>(acc + low);
  }
  return acc;
}

}  // namespace

PerformerSplitProjection split_performer_projection(const float* packed, int dk, int n) {
  PerformerSplitProjection w;
  w.dk = dk;
  w.n = n;
  const std::size_t count = static_cast<std::size_t>(dk) * n;
  w.high.resize(count);
  w.low.resize(count);
  for (std::size_t e = 0; e < count; ++e) {
    w.high[e] = to_bf16(packed[e]);
    w.low[e] = to_bf16(packed[e] - w.high[e]);
  }
  return w;
}

float replay_performer_tensor_core_token(const PerformerShape& shape, const PerformerSplitProjection& w, const float* x,
                                         float* features, PerformerReplayFault fault) {
  const int n = w.n, m = static_cast<int>(shape.features);
  float norm = 0.0f;
  for (int d = 0; d < w.dk; ++d) norm = std::fmaf(x[d], x[d], norm);
  const float half_norm = norm * (0.5f / std::sqrt(static_cast<float>(w.dk)));
  std::vector<float> p(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) p[static_cast<std::size_t>(i)] = projection(w, x, i, fault);
  if (shape.kind == PerformerFeatures::trig) {
    const float ratio = std::sqrt(2.0f / static_cast<float>(m));
    for (int i = 0; i < n; ++i) {
      float s, c;
      performer_trig_pair(p[static_cast<std::size_t>(i)], &s, &c);
      features[i] = ratio * s;
      features[i + n] = ratio * c;
    }
    return half_norm;
  }
  const float top = *std::max_element(p.begin(), p.end());
  const float ratio = 1.0f / std::sqrt(static_cast<float>(m));
  const float eps = static_cast<float>(kPerformerEpsilon);
  for (int i = 0; i < n; ++i) features[i] = ratio * (std::exp(p[static_cast<std::size_t>(i)] - top) + eps);
  return top - half_norm;
}

PerformerReplayState performer_replay_empty_state(const PerformerShape& shape) {
  PerformerReplayState s;
  s.state.assign(static_cast<std::size_t>(shape.batch_heads * shape.features * shape.dv), 0.0f);
  s.normalizer.assign(static_cast<std::size_t>(shape.batch_heads * shape.features), 0.0f);
  s.running_max.assign(static_cast<std::size_t>(shape.batch_heads), -std::numeric_limits<float>::infinity());
  return s;
}

std::vector<float> replay_performer_tensor_core_prefill(const PerformerShape& shape, std::int64_t tokens,
                                                        const PerformerSplitProjection& w, const float* q,
                                                        const float* k, const float* v, PerformerReplayState& carried,
                                                        PerformerReplayFault fault) {
  const std::int64_t m = shape.features, dk = shape.dk, dv = shape.dv;
  std::vector<float> out(static_cast<std::size_t>(shape.batch_heads * tokens * dv));
  std::vector<float> fq(static_cast<std::size_t>(m)), fk(static_cast<std::size_t>(m));
  std::vector<double> s(static_cast<std::size_t>(m * dv)), z(static_cast<std::size_t>(m));
  for (std::int64_t bh = 0; bh < shape.batch_heads; ++bh) {
    // (S, z) relative to exp(M), as the kernels hold them: a key above M rescales them by
    // exp(M_old - M_new) and enters with weight exp(c - M_new), both <= 1 (0 before the first key).
    std::copy_n(carried.state.begin() + bh * m * dv, m * dv, s.begin());
    std::copy_n(carried.normalizer.begin() + bh * m, m, z.begin());
    double running = carried.running_max[static_cast<std::size_t>(bh)];
    for (std::int64_t t = 0; t < tokens; ++t) {
      const std::int64_t row = bh * tokens + t;
      replay_performer_tensor_core_token(shape, w, q + row * dk, fq.data(), fault);
      const double c = replay_performer_tensor_core_token(shape, w, k + row * dk, fk.data(), fault);
      const double next = std::max(running, c);
      const double rescale = std::isinf(running) ? 0.0 : std::exp(running - next);
      const double weight = std::exp(c - next);
      running = next;
      double denominator = 0.0;
      std::vector<double> numerator(static_cast<std::size_t>(dv), 0.0);
      for (std::int64_t i = 0; i < m; ++i) {
        const double key = weight * fk[static_cast<std::size_t>(i)];
        z[static_cast<std::size_t>(i)] = z[static_cast<std::size_t>(i)] * rescale + key;
        denominator += fq[static_cast<std::size_t>(i)] * z[static_cast<std::size_t>(i)];
        for (std::int64_t j = 0; j < dv; ++j) {
          double& sij = s[static_cast<std::size_t>(i * dv + j)];
          sij = sij * rescale + key * v[row * dv + j];
          numerator[static_cast<std::size_t>(j)] += fq[static_cast<std::size_t>(i)] * sij;
        }
      }
      for (std::int64_t j = 0; j < dv; ++j) {
        out[static_cast<std::size_t>(row * dv + j)] = to_bf16(static_cast<float>(numerator[static_cast<std::size_t>(j)] / denominator));
      }
    }
    for (std::int64_t e = 0; e < m * dv; ++e) carried.state[static_cast<std::size_t>(bh * m * dv + e)] = static_cast<float>(s[static_cast<std::size_t>(e)]);
    for (std::int64_t i = 0; i < m; ++i) carried.normalizer[static_cast<std::size_t>(bh * m + i)] = static_cast<float>(z[static_cast<std::size_t>(i)]);
    carried.running_max[static_cast<std::size_t>(bh)] = static_cast<float>(running);
  }
  return out;
}

}  // namespace arch_bench
