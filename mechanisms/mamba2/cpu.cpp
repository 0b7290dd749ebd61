#include "mechanisms/mamba2/cpu.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "core/bf16.hpp"
#include "mechanisms/common/bit_select.hpp"
#include "mechanisms/common/chunk_matmul.hpp"
#include "mechanisms/common/chunk_state_fold.hpp"
#include "mechanisms/common/fast_math.hpp"
#include "mechanisms/common/kernel_variant.hpp"
#include "mechanisms/common/parallel_policy.hpp"
#include "mechanisms/common/state_pass.hpp"
#include "mechanisms/mamba2/options.hpp"

namespace arch_bench {

namespace {
constexpr std::int64_t kMaxN = kMamba2MaxStateSize;
constexpr std::int64_t kMaxP = kMamba2MaxHeadDim;
constexpr std::int64_t kMaxChunk = kMamba2MaxChunk;

constexpr std::int64_t padded(std::int64_t floats) { return mamba2_workspace_padded(floats); }

// dt = softplus(dt_raw + dt_bias), once per token and head: libm's calls cost nothing next to the
// head's N x P state pass.
inline float softplus(float x) { return x > 0.0f ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

// silu(z) = z sigmoid(z), with the exponent kept <= 0 on both sides of zero; vectorised over P.
#pragma omp declare simd
inline float silu(float z) {
  const float e = exp_nonpositive(z > 0.0f ? -z : z);
  return z * bit_select(z >= 0.0f, 1.0f, e) / (1.0f + e);
}

// out = (y + D x) silu(z) over one token's P channels of one head.
template <class T>
inline void gate_row(std::int64_t width, const float* y, float D, const T* x, const T* z, T* out) {
#pragma omp simd
  for (std::int64_t i = 0; i < width; ++i) out[i] = from_float<T>((y[i] + D * to_float(x[i])) * silu(to_float(z[i])));
}

// One token of one head: S = a S + B_t (dt x_t)^T, y = S^T C_t, gated. S is [N, P].
template <class T>
void decode_one_head(std::int64_t n, std::int64_t width, float A, float dt_bias, float D, const T* x, T dt_raw,
                     const T* z, const T* B, const T* C, float* state, T* out) {
  alignas(64) float key[kMaxN], query[kMaxN], update[kMaxP], result[kMaxP];
  const float dt = softplus(to_float(dt_raw) + dt_bias);
  const float a = std::exp(dt * A);
  widen_row(B, n, key);
  widen_row(C, n, query);
#pragma omp simd
  for (std::int64_t i = 0; i < width; ++i) update[i] = dt * to_float(x[i]);
  decay_update_read(n, width, a, key, query, update, state, result);
  gate_row(width, result, D, x, z, out);
}

// One thread's chunk buffers, carved from the workspace.
struct ChunkBuffers {
  ChunkBuffers(float* w, std::int64_t chunk, std::int64_t n, std::int64_t width)
      : c_rows(w),
        b_t(c_rows + padded(chunk * n)),
        dt_x(b_t + padded(n * chunk)),
        scores(dt_x + padded(chunk * width)),
        outputs(scores + padded(chunk * chunk)),
        decay(outputs + padded(chunk * width)) {}
  float* c_rows;   // C [R, N], then scaled by exp(c_r)
  float* b_t;      // B^T [N, chunk], then scaled by exp(c_{R-1} - c_c)
  float* dt_x;     // dt x [R, P]
  float* scores;   // (L o C B^T) [R, chunk]
  float* outputs;  // Y [R, P]
  float* decay;    // one row of L, [chunk]
};

template <class T>
void prefill_one_head(std::int64_t n, std::int64_t width, std::int64_t chunk, float A, float dt_bias, float D,
                      std::int64_t tokens, const T* x, const T* dt_raw, const T* z, const T* B, const T* C,
                      float* state, T* out, const ChunkBuffers& w) {
  // Running log decays in fp64: inside a chunk they reach -10^3 (dt up to ~3, A down to -16), where a
  // float's spacing (6e-5) would make exp(c_r - c_c) of two nearby tokens wrong by as much.
  double cum[kMaxChunk];
  for (std::int64_t begin = 0; begin < tokens; begin += chunk) {
    const std::int64_t rows = std::min(chunk, tokens - begin);
    double running = 0.0;
    for (std::int64_t r = 0; r < rows; ++r) {
      const float dt = softplus(to_float(dt_raw[begin + r]) + dt_bias);
      running += static_cast<double>(dt) * A;
      cum[r] = running;
      const T* xr = x + (begin + r) * width;
      float* u = w.dt_x + r * width;
#pragma omp simd
      for (std::int64_t i = 0; i < width; ++i) u[i] = dt * to_float(xr[i]);
      widen_row(C + (begin + r) * n, n, w.c_rows + r * n);
      const T* br = B + (begin + r) * n;
      for (std::int64_t s = 0; s < n; ++s) w.b_t[s * chunk + r] = to_float(br[s]);
    }
    // Intra-chunk: the causal scores C B^T, then the decay mask L.
    chunk_matmul(rows, rows, n, w.c_rows, n, w.b_t, chunk, w.scores, chunk, {.lower_c = true});
    for (std::int64_t r = 0; r < rows; ++r) {
      float* s = w.scores + r * chunk;
      const double last = cum[r];
#pragma omp simd
      for (std::int64_t c = 0; c <= r; ++c) w.decay[c] = static_cast<float>(last - cum[c]);
#pragma omp simd
      for (std::int64_t c = 0; c <= r; ++c) s[c] *= exp_nonpositive(w.decay[c]);
      std::fill(s + r + 1, s + rows, 0.0f);  // the lower_a product below reads up to the row block
    }
    // Inter-chunk: the state carried in, seen from row r, has decayed by exp(c_r).
    for (std::int64_t r = 0; r < rows; ++r) {
      const float scale = static_cast<float>(std::exp(cum[r]));
      float* c_row = w.c_rows + r * n;
#pragma omp simd
      for (std::int64_t s = 0; s < n; ++s) c_row[s] *= scale;
    }
    chunk_matmul(rows, width, n, w.c_rows, n, state, width, w.outputs, width);
    chunk_matmul(rows, width, rows, w.scores, chunk, w.dt_x, width, w.outputs, width,
                 {.accumulate = true, .lower_a = true});
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t t = begin + r;
      gate_row(width, w.outputs + r * width, D, x + t * width, z + t * width, out + t * width);
    }
    // State passing: S = exp(c_{R-1}) S + (diag(exp(c_{R-1} - c_c)) B)^T (dt x).
    const double total = cum[rows - 1];
#pragma omp simd
    for (std::int64_t c = 0; c < rows; ++c) w.decay[c] = static_cast<float>(total - cum[c]);
#pragma omp simd
    for (std::int64_t c = 0; c < rows; ++c) w.decay[c] = exp_nonpositive(w.decay[c]);
    fold_chunk_into_state(n, width, rows, static_cast<float>(std::exp(total)), w.decay, w.b_t, chunk, w.dt_x, state);
  }
}
}  // namespace

template <class T, KernelVariant V>
void mamba2_decode_step(const Mamba2Shape& shape, const Mamba2Parameters& params, const Mamba2Tokens<T>& token,
                        float* state, T* out) {
  ARCH_BENCH_DISPATCH_KERNEL(V, (mamba2_decode_step<T, W>(shape, params, token, state, out)))
  const std::int64_t n = shape.state_size, width = shape.head_dim;
  // The step's per-element update is RetNet's (one multiply-add pair and a read): the same split.
#pragma omp parallel for schedule(static) if (shape.rows() * n * width >= kParallelStateElements)
  for (std::int64_t bh = 0; bh < shape.rows(); ++bh) {
    const std::int64_t h = bh % shape.heads, g = shape.group_row(bh);
    decode_one_head(n, width, params.A[h], params.dt_bias[h], params.D[h], token.x + bh * width, token.dt_raw[bh],
                    token.z + bh * width, token.B + g * n, token.C + g * n, state + bh * n * width,
                    out + bh * width);
  }
}

template <class T, KernelVariant V>
void mamba2_prefill_chunked(const Mamba2Shape& shape, const Mamba2Parameters& params, std::int64_t tokens,
                            std::int64_t chunk, const Mamba2Tokens<T>& in, float* state, float* workspace,
                            int threads, T* out) {
  ARCH_BENCH_DISPATCH_KERNEL(
      V, (mamba2_prefill_chunked<T, W>(shape, params, tokens, chunk, in, state, workspace, threads, out)))
  const std::int64_t n = shape.state_size, width = shape.head_dim;
  const std::int64_t per_thread = mamba2_chunk_workspace_floats(shape, chunk);
#pragma omp parallel num_threads(threads)
  {
    // The workspace was sized for `threads`; a team given fewer threads uses fewer slices.
    const ChunkBuffers buffers(workspace + omp_get_thread_num() * per_thread, chunk, n, width);
#pragma omp for schedule(static)
    for (std::int64_t bh = 0; bh < shape.rows(); ++bh) {
      const std::int64_t h = bh % shape.heads, g = shape.group_row(bh);
      prefill_one_head(n, width, chunk, params.A[h], params.dt_bias[h], params.D[h], tokens,
                       in.x + bh * tokens * width, in.dt_raw + bh * tokens, in.z + bh * tokens * width,
                       in.B + g * tokens * n, in.C + g * tokens * n, state + bh * n * width,
                       out + bh * tokens * width, buffers);
    }
  }
}

template <class T, KernelVariant V>
void mamba2_prefill_recurrent(const Mamba2Shape& shape, const Mamba2Parameters& params, std::int64_t tokens,
                              const Mamba2Tokens<T>& in, float* state, T* out) {
  ARCH_BENCH_DISPATCH_KERNEL(V, (mamba2_prefill_recurrent<T, W>(shape, params, tokens, in, state, out)))
  const std::int64_t n = shape.state_size, width = shape.head_dim;
#pragma omp parallel for schedule(static)
  for (std::int64_t bh = 0; bh < shape.rows(); ++bh) {
    const std::int64_t h = bh % shape.heads, g = shape.group_row(bh);
    for (std::int64_t t = 0; t < tokens; ++t) {
      const std::int64_t row = bh * tokens + t;
      decode_one_head(n, width, params.A[h], params.dt_bias[h], params.D[h], in.x + row * width, in.dt_raw[row],
                      in.z + row * width, in.B + (g * tokens + t) * n, in.C + (g * tokens + t) * n,
                      state + bh * n * width, out + row * width);
    }
  }
}

#define ARCH_BENCH_MAMBA2_KERNELS(PREFIX, T, V)                                                                    \
  PREFIX void mamba2_decode_step<T, V>(const Mamba2Shape&, const Mamba2Parameters&, const Mamba2Tokens<T>&,      \
                                       float*, T*);                                                             \
  PREFIX void mamba2_prefill_chunked<T, V>(const Mamba2Shape&, const Mamba2Parameters&, std::int64_t,           \
                                           std::int64_t, const Mamba2Tokens<T>&, float*, float*, int, T*);      \
  PREFIX void mamba2_prefill_recurrent<T, V>(const Mamba2Shape&, const Mamba2Parameters&, std::int64_t,         \
                                             const Mamba2Tokens<T>&, float*, T*);
ARCH_BENCH_INSTANTIATE_KERNELS(ARCH_BENCH_MAMBA2_KERNELS)

}  // namespace arch_bench
