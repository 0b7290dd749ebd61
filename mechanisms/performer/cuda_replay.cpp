#include "mechanisms/performer/cuda_replay.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/bf16.hpp"
#include "mechanisms/performer/cuda_plan.hpp"
#include "mechanisms/performer/cuda_trig.hpp"

namespace arch_bench {

namespace {

constexpr int kF = kPerformerTensorCoreFragment;

float to_bf16(float x) { return round_through<bf16>(x); }

// p_i = x . W[:, i], as project_column_tile accumulates it.
float projection(const PerformerSplitProjection& w, const float* x, int i, PerformerReplayFault fault) {
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

namespace {

constexpr std::int64_t kC = kPerformerChunk;

// The next fp32 accumulator of an mma chain: the step's exact products summed in fp64, added once.
float mma_step(float acc, double step) { return static_cast<float>(acc + step); }

// One head's tokens as the kernels lay them out in the workspace: the features as stage 1 stores
// them (phi(q) bf16, phi(k) as bf16 hi + lo), the keys' log-scales c and the running max M at every
// token (fp32).
struct HeadFeatures {
  std::vector<float> query, key_high, key_low;  // [tokens][m], each value a bf16
  std::vector<float> scale, max;                // [tokens]
};

HeadFeatures replay_features(const PerformerShape& shape, std::int64_t tokens, const PerformerSplitProjection& w,
                             const float* q, const float* k, float carried_max, PerformerReplayFault fault) {
  const std::int64_t m = shape.features, dk = shape.dk;
  HeadFeatures h;
  h.query.resize(static_cast<std::size_t>(tokens * m));
  h.key_high.resize(h.query.size());
  h.key_low.resize(h.query.size());
  h.scale.resize(static_cast<std::size_t>(tokens));
  h.max.resize(h.scale.size());
  float running = carried_max;
  std::vector<float> key(static_cast<std::size_t>(m));
  for (std::int64_t t = 0; t < tokens; ++t) {
    float* query = h.query.data() + t * m;
    replay_performer_tensor_core_token(shape, w, q + t * dk, query, fault);
    for (std::int64_t i = 0; i < m; ++i) query[i] = to_bf16(query[i]);
    const float c = replay_performer_tensor_core_token(shape, w, k + t * dk, key.data(), fault);
    for (std::int64_t i = 0; i < m; ++i) {
      const float high = to_bf16(key[static_cast<std::size_t>(i)]);
      h.key_high[static_cast<std::size_t>(t * m + i)] = high;
      h.key_low[static_cast<std::size_t>(t * m + i)] =
          fault == PerformerReplayFault::key_features_high_only ? 0.0f : to_bf16(key[static_cast<std::size_t>(i)] - high);
    }
    h.scale[static_cast<std::size_t>(t)] = c;
    running = std::max(running, c);  // -inf before the first key
    h.max[static_cast<std::size_t>(t)] = running;
  }
  return h;
}

// A value as bf16 hi + lo, as the kernels split W, K~ and S (hi + lo is exact in fp32).
struct Split {
  float high, low;
};
Split split_bf16(float x, PerformerReplayFault fault) {
  const float high = to_bf16(x);
  return {high, fault == PerformerReplayFault::state_high_part_only ? 0.0f : to_bf16(x - high)};
}

// Stages 3 + 4 of one chunk, as the state-scan kernel folds it into the running (S, z) (relative to
// M_in, brought to M_end by `carry`): S = S carry in fp32, then + K~_hi^T V_c + K~_lo^T V_c one
// 16-token step at a time (hi then lo) into the same fp32 accumulator; z = fmaf(z, carry, z_c) with
// z_c the fp32 sum of K~ hi + lo in token order.
void replay_chunk_state_scan(const HeadFeatures& h, const float* v, std::int64_t first, int rows, std::int64_t m,
                             std::int64_t dv, float carry, PerformerReplayFault fault, float* s, float* z) {
  const float end_max = h.max[static_cast<std::size_t>(first + rows - 1)];
  std::vector<Split> keys(static_cast<std::size_t>(rows * m));  // K~ = e^(c_j - M_end) phi(k_j), hi + lo
  for (int r = 0; r < rows; ++r) {
    const float weight = std::exp(h.scale[static_cast<std::size_t>(first + r)] - end_max);
    for (std::int64_t i = 0; i < m; ++i) {
      const std::size_t at = static_cast<std::size_t>((first + r) * m + i);
      keys[static_cast<std::size_t>(r * m + i)] = split_bf16(weight * (h.key_high[at] + h.key_low[at]), fault);
    }
  }
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < dv; ++j) {
      float acc = s[i * dv + j] * carry;
      for (int t0 = 0; t0 < rows; t0 += kF) {
        double high = 0.0, low = 0.0;
        for (int t = t0; t < std::min(t0 + kF, rows); ++t) {
          const Split& key = keys[static_cast<std::size_t>(t * m + i)];
          high += static_cast<double>(key.high) * v[(first + t) * dv + j];
          low += static_cast<double>(key.low) * v[(first + t) * dv + j];
        }
        acc = mma_step(mma_step(acc, high), low);
      }
      s[i * dv + j] = acc;
    }
    float sum = 0.0f;
    for (int r = 0; r < rows; ++r) {
      const Split& key = keys[static_cast<std::size_t>(r * m + i)];
      sum += key.high + key.low;
    }
    z[i] = std::fmaf(z[i], carry, sum);
  }
}

// Stage 5 of one chunk: the outputs of its rows from the state entering it (fp32 S_in, z_in, and the
// M it is relative to).
void replay_chunk_outputs(const HeadFeatures& h, const float* v, std::int64_t first, int rows, std::int64_t m,
                          std::int64_t dv, const float* s_in, const float* z_in, float entering_max,
                          PerformerReplayFault fault, float* out) {
  const bool inter = fault != PerformerReplayFault::no_carried_state;
  const bool causal = fault != PerformerReplayFault::no_causal_mask;
  const auto at = [m](std::int64_t r, std::int64_t i) { return static_cast<std::size_t>(r * m + i); };
  // phi(q) and phi(k) hi as stored (bf16): both products and the denominator take them as they are.
  const float* q = h.query.data() + first * m;
  const float* k = h.key_high.data() + first * m;
  std::vector<Split> s(static_cast<std::size_t>(m * dv));
  for (std::size_t e = 0; e < s.size(); ++e) s[e] = split_bf16(s_in[e], fault);
  std::vector<float> p(static_cast<std::size_t>(rows * kC), 0.0f);
  for (int r = 0; r < rows; ++r) {
    const float row_max = h.max[static_cast<std::size_t>(first + r)];
    for (int t = 0; t < (causal ? r + 1 : rows); ++t) {
      float a = 0.0f;
      for (std::int64_t i0 = 0; i0 < m; i0 += kF) {
        double step = 0.0;
        for (std::int64_t i = i0; i < std::min<std::int64_t>(i0 + kF, m); ++i) {
          step += static_cast<double>(q[at(r, i)]) * k[at(t, i)];
        }
        a = mma_step(a, step);
      }
      p[static_cast<std::size_t>(r * kC + t)] = to_bf16(a * std::exp(h.scale[static_cast<std::size_t>(first + t)] - row_max));
    }
  }
  for (int r = 0; r < rows; ++r) {
    // The inter-chunk terms are brought from M_in to M_r after their products, in fp32.
    const float row_scale = fault == PerformerReplayFault::no_row_scale
                                ? 1.0f
                                : std::exp(entering_max - h.max[static_cast<std::size_t>(first + r)]);
    float denominator = 0.0f;
    if (inter) {
      for (std::int64_t i = 0; i < m; ++i) denominator = std::fmaf(q[at(r, i)], z_in[i], denominator);
    }
    denominator *= row_scale;
    for (int t = 0; t < kC; ++t) denominator += p[static_cast<std::size_t>(r * kC + t)];
    // Row tile r / 16 sums P V over key tiles up to its own (all of them without the mask).
    const int key_end = causal ? (r / kF + 1) * kF : rows;
    for (std::int64_t j = 0; j < dv; ++j) {
      float acc = 0.0f;
      for (std::int64_t i0 = 0; inter && i0 < m; i0 += kF) {
        double high = 0.0, low = 0.0;
        for (std::int64_t i = i0; i < std::min<std::int64_t>(i0 + kF, m); ++i) {
          const Split& state = s[static_cast<std::size_t>(i * dv + j)];
          high += static_cast<double>(q[at(r, i)]) * state.high;
          low += static_cast<double>(q[at(r, i)]) * state.low;
        }
        acc = mma_step(mma_step(acc, high), low);
      }
      acc *= row_scale;
      for (int t0 = 0; t0 < std::min(key_end, rows); t0 += kF) {
        double step = 0.0;
        for (int t = t0; t < std::min(t0 + kF, rows); ++t) {
          step += static_cast<double>(p[static_cast<std::size_t>(r * kC + t)]) * v[(first + t) * dv + j];
        }
        acc = mma_step(acc, step);
      }
      out[r * dv + j] = to_bf16(acc * (1.0f / denominator));
    }
  }
}

}  // namespace

std::vector<float> replay_performer_tensor_core_prefill(const PerformerShape& shape, std::int64_t tokens,
                                                        const PerformerSplitProjection& w, const float* q,
                                                        const float* k, const float* v, PerformerReplayState& carried,
                                                        PerformerReplayFault fault) {
  const std::int64_t m = shape.features, dk = shape.dk, dv = shape.dv;
  std::vector<float> out(static_cast<std::size_t>(shape.batch_heads * tokens * dv));
  if (tokens == 0) return out;  // (S, z, M) unchanged, as the kernels leave them
  const std::int64_t chunks = (tokens + kC - 1) / kC;
  for (std::int64_t bh = 0; bh < shape.batch_heads; ++bh) {
    const float carried_max = carried.running_max[static_cast<std::size_t>(bh)];
    const HeadFeatures h =
        replay_features(shape, tokens, w, q + bh * tokens * dk, k + bh * tokens * dk, carried_max, fault);
    const float* v_head = v + bh * tokens * dv;
    float* s = carried.state.data() + bh * m * dv;
    float* z = carried.normalizer.data() + bh * m;
    float entering = carried_max;
    for (std::int64_t chunk = 0; chunk < chunks; ++chunk) {
      const std::int64_t first = chunk * kC;
      const int rows = static_cast<int>(std::min(kC, tokens - first));
      // The scan writes the state entering the chunk (S_in, relative to M_in), which stage 5 reads,
      // then folds the chunk in: entering = -inf only before the first key, when (S, z) are 0.
      const float end = h.max[static_cast<std::size_t>(first + rows - 1)];
      const float carry = std::exp(entering - end);
      if (fault == PerformerReplayFault::chunk_states_bf16) {
        for (std::int64_t e = 0; e < m * dv; ++e) s[e] = to_bf16(s[e]);
      }
      if (fault == PerformerReplayFault::state_written_after_update) {
        replay_chunk_state_scan(h, v_head, first, rows, m, dv, carry, fault, s, z);
        // S and z now hold the chunk's own keys (relative to M_end): stage 5, unchanged, would read them.
        replay_chunk_outputs(h, v_head, first, rows, m, dv, s, z, entering, fault,
                             out.data() + (bh * tokens + first) * dv);
      } else {
        replay_chunk_outputs(h, v_head, first, rows, m, dv, s, z, entering, fault,
                             out.data() + (bh * tokens + first) * dv);
        replay_chunk_state_scan(h, v_head, first, rows, m, dv, carry, fault, s, z);
      }
      entering = end;
    }
    carried.running_max[static_cast<std::size_t>(bh)] = entering;
  }
  return out;
}

}  // namespace arch_bench
