#pragma once
// Passes over one head's state S [dk, dv] (row i = key channel) a column slice at a time.
// over_state_columns splits the columns for every decode step's pass (linear attention's too).
// decay_update_read is the pass of the steps whose write is S = alpha S + k u^T and whose read is
// the new state's o = S^T q: RetNet (alpha = gamma, u = v), Gated DeltaNet (alpha = e^g, u = beta
// (v - alpha S^T k), S^T k being read_state's pass before it) and Performer (alpha = the running
// max's rescale, over its m feature rows); with kNoDecay (S += k u^T, a multiply fewer per state
// vector in a loop bound by its FMAs and stores) linear attention's and Performer's published form.
//
// A slice of columns keeps u and the output in registers while it walks down the rows, so each
// state row slice is loaded once and stored once, on the widest vector the variant has
// (wide_vector.hpp). Written per element under `omp simd`, the output row stayed in memory and each
// row slice cost a second load and store: on the 2-vCPU Zen 4 VM (8 x 64, fp32, one thread) RetNet's
// step took 3.9-4.2 us against rwkv6's 2.7-2.9, whose pass does the same three operations per
// element with the output in registers. A decode step and the recurrent prefill's token both come
// here, so the prefill's bits are the decode steps'.
#include <cstdint>

#include "mechanisms/common/float8.hpp"
#include "core/kernel_helpers.hpp"
#include "mechanisms/common/wide_vector.hpp"

namespace arch_bench {

// The decay of a state pass that has none: S += k u^T.
struct NoDecay {};
inline constexpr NoDecay kNoDecay{};

ARCH_BENCH_KERNEL_HELPERS_BEGIN

// alpha x, or x itself without a decay (no multiply by 1, so S += k u^T rounds as written).
template <class X>
inline X decayed(float alpha, X x) {
  return alpha * x;
}
template <class X>
inline X decayed(NoDecay, X x) {
  return x;
}

// Columns [j0, j0 + lanes(V) kVectors): S[:, cols] = alpha S[:, cols] + key u[cols]^T, then
// out[cols] = S[:, cols]^T query. Decay: a float alpha or kNoDecay.
template <class V, int kVectors, class Decay>
inline void decay_update_read_columns(std::int64_t dk, std::int64_t dv, std::int64_t j0, Decay alpha,
                                      const float* __restrict key, const float* __restrict query,
                                      const float* __restrict update, float* __restrict state,
                                      float* __restrict out) {
  constexpr std::int64_t kLanes = sizeof(V) / sizeof(float);
  V u[kVectors], acc[kVectors];
  for (int c = 0; c < kVectors; ++c) {
    u[c] = load_lanes<V>(update + j0 + c * kLanes);
    acc[c] = V{};
  }
  for (std::int64_t i = 0; i < dk; ++i) {
    float* row = state + i * dv + j0;
    const float a = key[i], b = query[i];
#pragma GCC unroll 4
    for (int c = 0; c < kVectors; ++c) {
      const V updated = decayed(alpha, load_lanes<V>(row + c * kLanes)) + a * u[c];
      store_lanes(row + c * kLanes, updated);
      acc[c] += b * updated;
    }
  }
  for (int c = 0; c < kVectors; ++c) store_lanes(out + j0 + c * kLanes, acc[c]);
}

// Columns [j0, j0 + lanes(V) kVectors) of out = S^T key, S only read.
template <class V, int kVectors>
inline void read_columns(std::int64_t dk, std::int64_t dv, std::int64_t j0, const float* __restrict key,
                         const float* __restrict state, float* __restrict out) {
  constexpr std::int64_t kLanes = sizeof(V) / sizeof(float);
  V acc[kVectors];
  for (int c = 0; c < kVectors; ++c) acc[c] = V{};
  for (std::int64_t i = 0; i < dk; ++i) {
    const float* row = state + i * dv + j0;
    const float a = key[i];
#pragma GCC unroll 4
    for (int c = 0; c < kVectors; ++c) acc[c] += a * load_lanes<V>(row + c * kLanes);
  }
  for (int c = 0; c < kVectors; ++c) store_lanes(out + j0 + c * kLanes, acc[c]);
}

// Runs `pass.template operator()<V, N>(j0)` over the columns [j0, dv) that vectors take: slices of
// kSlice wide vectors, then single wide vectors, then (where the wide vector is wider) one float8;
// returns the first column left to scalars. Every state pass of a decode step splits its columns
// here (linear attention's too), so a column takes the same path in a step and in a prefill's token.
template <int kSlice, class Pass>
inline std::int64_t over_state_columns(std::int64_t dv, Pass&& pass) {
  std::int64_t j0 = 0;
  for (; j0 + kSlice * kWideLanes <= dv; j0 += kSlice * kWideLanes) pass.template operator()<wide_vector, kSlice>(j0);
  for (; j0 + kWideLanes <= dv; j0 += kWideLanes) pass.template operator()<wide_vector, 1>(j0);
  if constexpr (kWideLanes > kFloat8Lanes) {
    if (j0 + kFloat8Lanes <= dv) {
      pass.template operator()<float8, 1>(j0);
      j0 += kFloat8Lanes;
    }
  }
  return j0;
}

// Columns [j0, dv) of decay_update_read one at a time: the head widths that are not a multiple of 8.
template <class Decay>
inline void decay_update_read_tail(std::int64_t dk, std::int64_t dv, std::int64_t j0, Decay alpha,
                                   const float* __restrict key, const float* __restrict query,
                                   const float* __restrict update, float* __restrict state, float* __restrict out) {
  if (j0 >= dv) return;
  for (std::int64_t j = j0; j < dv; ++j) out[j] = 0.0f;
  for (std::int64_t i = 0; i < dk; ++i) {
    float* row = state + i * dv;
    for (std::int64_t j = j0; j < dv; ++j) {
      row[j] = decayed(alpha, row[j]) + key[i] * update[j];
      out[j] += query[i] * row[j];
    }
  }
}

// S = alpha S + key update^T, then out = S^T query, over every column of one head. Always inlined
// into the head's step (out of line, GCC 12 takes a row the caller filled in a loop for one that may
// be read uninitialised, a false -Wmaybe-uninitialized).
template <class Decay>
[[gnu::always_inline]] inline void decay_update_read(std::int64_t dk, std::int64_t dv, Decay alpha,
                                                     const float* __restrict key, const float* __restrict query,
                                                     const float* __restrict update, float* __restrict state,
                                                     float* __restrict out) {
  const std::int64_t j0 = over_state_columns<4>(dv, [&]<class V, int N>(std::int64_t column) {
    decay_update_read_columns<V, N>(dk, dv, column, alpha, key, query, update, state, out);
  });
  decay_update_read_tail(dk, dv, j0, alpha, key, query, update, state, out);
}

// out = S^T key over every column of one head (inlined as decay_update_read is).
[[gnu::always_inline]] inline void read_state(std::int64_t dk, std::int64_t dv, const float* __restrict key,
                                              const float* __restrict state, float* __restrict out) {
  const std::int64_t j0 = over_state_columns<4>(dv, [&]<class V, int N>(std::int64_t column) {
    read_columns<V, N>(dk, dv, column, key, state, out);
  });
  for (std::int64_t j = j0; j < dv; ++j) out[j] = 0.0f;
  for (std::int64_t i = 0; i < dk; ++i) {
    for (std::int64_t j = j0; j < dv; ++j) out[j] += key[i] * state[i * dv + j];
  }
}

ARCH_BENCH_KERNEL_HELPERS_END

}  // namespace arch_bench
