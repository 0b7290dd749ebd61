#include "mechanisms/mamba/cpu.hpp"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "mechanisms/common/parallel_policy.hpp"
#include "core/bf16.hpp"
#include "mechanisms/common/kernel_variant.hpp"
#include "mechanisms/common/bit_select.hpp"
#include "mechanisms/common/fast_math.hpp"
#include "mechanisms/common/float8.hpp"
#include "mechanisms/common/wide_vector.hpp"

namespace arch_bench {

namespace {
constexpr std::int64_t kMaxN = kMambaMaxStateSize;  // Mechanism::unsupported() rejects larger N
// Tokens of one row whose dt, dt*u and output gate are computed together in one vectorised pass
// before the (sequential in time) state loop runs over them.
constexpr std::int64_t kBlock = 64;
constexpr float kLog2e = 1.44269504088896341f;
// Decode threading: common/parallel_policy.hpp (passive waiting made the split cost 54-100 us here).
constexpr std::int64_t kParallelStateElements = kParallelScanElements;

// softplus(x) = log(1 + e^x) = max(x, 0) + log1p(e^-|x|). With e = e^-|x| in (0, 1],
// log1p(e) = 2 atanh(s), s = e / (2 + e) in (0, 1/3], whose odd series converges fast: seven
// terms truncate at < 2e-8, and the float result stays within 3e-7 (relative) of the fp64
// softplus on [-30, 30]. Branch-free, so `#pragma omp simd` vectorises it; libm's log1pf/expf are
// scalar calls that would cost as much as the whole state update of a token.
#pragma omp declare simd
inline float softplus(float x) {
  const float e = exp_nonpositive(x > 0.0f ? -x : x);
  const float s = e / (2.0f + e);
  const float s2 = s * s;
  float p = 1.0f / 13.0f;
  p = p * s2 + 1.0f / 11.0f;
  p = p * s2 + 1.0f / 9.0f;
  p = p * s2 + 1.0f / 7.0f;
  p = p * s2 + 1.0f / 5.0f;
  p = p * s2 + 1.0f / 3.0f;
  p = p * s2 + 1.0f;
  return (x > 0.0f ? x : 0.0f) + 2.0f * s * p;
}

// silu(z) = z sigmoid(z), with the exponent kept <= 0 on both sides of zero.
#pragma omp declare simd
inline float silu(float z) {
  const float e = exp_nonpositive(z > 0.0f ? -z : z);
  return z * bit_select(z >= 0.0f, 1.0f, e) / (1.0f + e);
}

// The per-channel pieces of one row.
template <class T>
struct RowView {
  const float* A;  // [N]
  float dt_bias, D;
  const T* u;       // [tokens] (decode: the one token)
  const T* dt_raw;
  const T* z;
  const T* B;       // [tokens, N] of this row's batch element
  const T* C;
};

template <class T>
RowView<T> row_view(const MambaShape& shape, const MambaParameters& params, const MambaTokens<T>& x,
                    std::int64_t r, std::int64_t tokens) {
  const std::int64_t c = r % shape.channels, b = r / shape.channels, n = shape.state_size;
  return {params.A + c * n, params.dt_bias[c], params.D[c], x.u + r * tokens, x.dt_raw + r * tokens,
          x.z + r * tokens, x.B + b * tokens * n, x.C + b * tokens * n};
}

// One token of one row: h <- exp(dt A) h + dt B u, returns C.h. dt * A <= 0 always (dt > 0,
// A < 0), which is what makes exp_nonpositive applicable. The state sizes that are not a multiple
// of 8 take this path (vectorised over N, one horizontal reduction per token).
template <class T, class N>
inline float update_state(N n, const float* __restrict A, float dt, float du,
                          const T* __restrict B, const T* __restrict C, float* __restrict h) {
  float y = 0.0f;
#pragma omp simd reduction(+ : y)
  for (std::int64_t s = 0; s < n; ++s) {
    const float next = exp_nonpositive(dt * A[s]) * h[s] + du * to_float(B[s]);
    h[s] = next;
    y += to_float(C[s]) * next;
  }
  return y;
}

// update_state without the output: phase 1 of the chunked scan only needs the state.
template <class T, class N>
inline void advance_state(N n, const float* __restrict A, float dt, float du, const T* __restrict B,
                          float* __restrict h) {
#pragma omp simd
  for (std::int64_t s = 0; s < n; ++s) h[s] = exp_nonpositive(dt * A[s]) * h[s] + du * to_float(B[s]);
}

// The state loop of `count` tokens of one row for N a multiple of V's lane count, the state held as
// vectors V (kVectors of them when N is known at compile time, so that they stay in registers across
// the time loop; 0: N / lanes at run time). V is float8, or wide_vector where that is 16 lanes (one zmm
// per 16 states: half the instructions, and its exp2 takes vscalefps for 2^n). Per token and
// vector: one exp, one FMA into h, and (with outputs) one FMA into a partial of C.h, folded to 8 lanes;
// the partials of 8 tokens are then summed with one horizontal-add tree (sum_lanes), which takes the
// reduction off the per-token critical path.
template <class V, int kVectors, bool kOutputs, class T>
inline void scan_vectors(std::int64_t n, const float* __restrict A, std::int64_t count, const float* __restrict dt,
                         const float* __restrict du, const T* __restrict B, const T* __restrict C,
                         float* __restrict h, float* __restrict partials, float* __restrict y) {
  constexpr std::int64_t kLanes = sizeof(V) / sizeof(float);
  constexpr int kMaxVectors = kMaxN / kLanes;
  const std::int64_t vectors = kVectors > 0 ? kVectors : n / kLanes;
  V a[kVectors > 0 ? kVectors : kMaxVectors], state[kVectors > 0 ? kVectors : kMaxVectors];
  for (std::int64_t v = 0; v < vectors; ++v) {
    a[v] = load_lanes<V>(A + v * kLanes) * kLog2e;  // exp(dt A) = 2^(dt A log2 e)
    state[v] = load_lanes<V>(h + v * kLanes);
  }
  for (std::int64_t t = 0; t < count; ++t) {
    const T* b = B + t * n;
    const T* c = kOutputs ? C + t * n : nullptr;
    V partial{};
#pragma GCC unroll 4
    for (std::int64_t v = 0; v < vectors; ++v) {
      state[v] = exp2_nonpositive(dt[t] * a[v]) * state[v] + du[t] * load_lanes<V>(b + v * kLanes);
      if constexpr (kOutputs) partial += load_lanes<V>(c + v * kLanes) * state[v];
    }
    if constexpr (kOutputs) store_float8(partials + t * kFloat8Lanes, fold_to_8_lanes(partial));
  }
  for (std::int64_t v = 0; v < vectors; ++v) store_lanes(h + v * kLanes, state[v]);
  if constexpr (kOutputs) sum_lanes(count, partials, y);
}

// out_t = (y_t + D u_t) silu(z_t) for `count` tokens of one row.
template <class T>
inline void write_outputs(std::int64_t count, const float* __restrict y, float D, const T* __restrict u,
                          const T* __restrict z, T* __restrict out) {
#pragma omp simd
  for (std::int64_t i = 0; i < count; ++i) {
    out[i] = from_float<T>((y[i] + D * to_float(u[i])) * silu(to_float(z[i])));
  }
}

// The number of `lanes`-float state vectors when N is a compile-time constant (std::integral_constant),
// 0 (decided at run time) when it is a plain integer.
template <class N, std::int64_t lanes = kFloat8Lanes>
constexpr int compile_time_vectors() {
  if constexpr (std::is_integral_v<N>) {
    return 0;
  } else {
    return static_cast<int>(N{} / lanes);
  }
}

// The state loop of `count` tokens of one row for N a multiple of 8: on 16-lane vectors where the
// build has them and N allows (without AVX-512, wide_vector is float8 and both calls are one).
template <bool kOutputs, class T, class N>
inline void scan_tokens(N n, const float* A, std::int64_t count, const float* dt, const float* du, const T* B,
                        const T* C, float* h, float* partials, float* y) {
  if (n % kWideLanes == 0) {
    scan_vectors<wide_vector, compile_time_vectors<N, kWideLanes>(), kOutputs>(n, A, count, dt, du, B, C, h,
                                                                              partials, y);
  } else {
    scan_vectors<float8, compile_time_vectors<N>(), kOutputs>(n, A, count, dt, du, B, C, h, partials, y);
  }
}

// One thread's buffers for a block of tokens of one row: the per-token values (on the thread's
// stack, so a run allocates nothing).
struct BlockBuffers {
  alignas(64) float partials[kBlock * kFloat8Lanes];
  alignas(64) float dt[kBlock], du[kBlock], y[kBlock];
};

// Tokens [t0, t0 + count) (count <= kBlock) of one row from the state in h (advanced in place),
// writing out[t0 ..]. B and C are widened to fp32 as they are loaded. Without kOutputs (phase 1
// of the chunked scan) it only advances h, skips C, and returns sum dt.
template <class T, bool kOutputs, class N>
float scan_block(N n, const RowView<T>& row, std::int64_t t0, std::int64_t count, float* h, T* out,
                 BlockBuffers& w) {
  const T* B = row.B + t0 * n;
  const T* C = row.C + t0 * n;
  float dt_sum = 0.0f;
#pragma omp simd reduction(+ : dt_sum)
  for (std::int64_t i = 0; i < count; ++i) {
    const float step = softplus(to_float(row.dt_raw[t0 + i]) + row.dt_bias);
    w.dt[i] = step;
    w.du[i] = step * to_float(row.u[t0 + i]);
    dt_sum += step;
  }
  if (n % kFloat8Lanes == 0) {
    scan_tokens<kOutputs>(n, row.A, count, w.dt, w.du, B, C, h, w.partials, w.y);
  } else {
    for (std::int64_t i = 0; i < count; ++i) {
      if constexpr (kOutputs) {
        w.y[i] = update_state(n, row.A, w.dt[i], w.du[i], B + i * n, C + i * n, h);
      } else {
        advance_state(n, row.A, w.dt[i], w.du[i], B + i * n, h);
      }
    }
  }
  if constexpr (kOutputs) write_outputs(count, w.y, row.D, row.u + t0, row.z + t0, out + t0);
  return dt_sum;
}

// Tokens [begin, end) of one row, block by block.
template <class T, bool kOutputs, class N>
float scan_row(N n, const RowView<T>& row, std::int64_t begin, std::int64_t end, float* h, T* out,
               BlockBuffers& w) {
  float dt_sum = 0.0f;
  for (std::int64_t t0 = begin; t0 < end; t0 += kBlock) {
    const std::int64_t count = std::min(kBlock, end - t0);
    dt_sum += scan_block<T, kOutputs>(n, row, t0, count, h, out, w);
  }
  return dt_sum;
}

// Token t of one row, the body of the sequential prefill: the same state kernels as the prefill
// with the per-token values computed directly (the block passes' vector loops cost more than they
// save for one token).
template <class T, class N>
inline void step_row(N n, const RowView<T>& row, std::int64_t t, float* h, T* out, BlockBuffers& w) {
  const float u = to_float(row.u[t]);
  const float dt = softplus(to_float(row.dt_raw[t]) + row.dt_bias);
  const float du = dt * u;
  float y;
  if (n % kFloat8Lanes == 0) {
    scan_tokens<true>(n, row.A, 1, &dt, &du, row.B + t * n, row.C + t * n, h, w.partials, &y);
  } else {
    y = update_state(n, row.A, dt, du, row.B + t * n, row.C + t * n, h);
  }
  *out = from_float<T>((y + row.D * u) * silu(to_float(row.z[t])));
}


// Calls f(n) with N as a compile-time constant for Mamba's default N = 16 (the state loops then
// unroll into two AVX2 vectors with no remainder handling) and as a runtime
// value otherwise.
template <class F>
void with_state_size(std::int64_t n, F&& f) {
  if (n == 16) {
    f(std::integral_constant<std::int64_t, 16>{});
  } else {
    f(n);
  }
}

// The decode step of channels [c0, c0 + count) (count <= kBlock) of batch element b, rows r0 ..:
// softplus, dt u and the output gate as vector loops over the block's channels (laid out
// contiguously when tokens = 1), the per-row state update between them. Row by row (step_row), the
// scalar softplus and silu took longer than the row's state update.
template <class T, class N>
inline void decode_block(N n, const MambaShape& shape, const MambaParameters& params, const MambaTokens<T>& x,
                         std::int64_t b, std::int64_t c0, std::int64_t count, float* state, T* out, BlockBuffers& w) {
  const std::int64_t r0 = b * shape.channels + c0;
  const float* __restrict dt_bias = params.dt_bias + c0;
  const float* __restrict D = params.D + c0;
  const T* __restrict u = x.u + r0;
  const T* __restrict dt_raw = x.dt_raw + r0;
  const T* __restrict z = x.z + r0;
#pragma omp simd
  for (std::int64_t i = 0; i < count; ++i) {
    const float step = softplus(to_float(dt_raw[i]) + dt_bias[i]);
    w.dt[i] = step;
    w.du[i] = step * to_float(u[i]);
  }
  // Decode layouts are the prefill layouts with tokens = 1: B and C are the batch element's.
  const T* B = x.B + b * n;
  const T* C = x.C + b * n;
  for (std::int64_t i = 0; i < count; ++i) {
    const float* A = params.A + (c0 + i) * n;
    float* h = state + (r0 + i) * n;
    if (n % kFloat8Lanes == 0) {
      scan_tokens<true>(n, A, 1, w.dt + i, w.du + i, B, C, h, w.partials, w.y + i);
    } else {
      w.y[i] = update_state(n, A, w.dt[i], w.du[i], B, C, h);
    }
  }
  T* __restrict o = out + r0;
#pragma omp simd
  for (std::int64_t i = 0; i < count; ++i) o[i] = from_float<T>((w.y[i] + D[i] * to_float(u[i])) * silu(to_float(z[i])));
}

template <class T, class N>
void decode_rows(N n, const MambaShape& shape, const MambaParameters& params, const MambaTokens<T>& x,
                 float* state, T* out) {
  // Blocks of kBlock channels that never cross a batch element, so each block's per-channel
  // values are contiguous.
  const std::int64_t blocks_per_batch = (shape.channels + kBlock - 1) / kBlock;
  const std::int64_t blocks = shape.batch * blocks_per_batch;
#pragma omp parallel if (shape.rows() * n >= kParallelStateElements)
  {
    BlockBuffers buffers;
#pragma omp for schedule(static)
    for (std::int64_t k = 0; k < blocks; ++k) {
      const std::int64_t b = k / blocks_per_batch, c0 = k % blocks_per_batch * kBlock;
      decode_block(n, shape, params, x, b, c0, std::min(kBlock, shape.channels - c0), state, out, buffers);
    }
  }
}

template <class T, class N>
void prefill_chunked(N n, const MambaShape& shape, const MambaParameters& params, std::int64_t tokens,
                     std::int64_t chunk, const MambaTokens<T>& x, float* state, float* workspace, T* out) {
  const std::int64_t rows = shape.rows();
  const std::int64_t chunks = (tokens + chunk - 1) / chunk;
  if (chunks <= 1) {
    // Nothing to split: every row is one independent sequential scan, in place on its state. Rows
    // outermost keeps each row's u, dt, z and out a contiguous stream for the hardware prefetcher
    // (measured: a time-block-outer order that widens B and C to fp32 once per block for all
    // channels ran no faster, its saving lost to strided row accesses; widening in the load is
    // cheaper than either).
#pragma omp parallel
    {
      BlockBuffers buffers;
#pragma omp for schedule(static)
      for (std::int64_t r = 0; r < rows; ++r) {
        scan_row<T, true>(n, row_view(shape, params, x, r, tokens), 0, tokens, state + r * n, out + r * tokens,
                          buffers);
      }
    }
    return;
  }
  // workspace [rows, chunks, 2, N]: the chunk's element (a, b) of the scan; phase 2 replaces b
  // with the state entering the chunk.
  auto pair_at = [&](std::int64_t r, std::int64_t k) { return workspace + (r * chunks + k) * 2 * n; };
#pragma omp parallel
  {
    BlockBuffers buffers;
    // Phase 1: fold each chunk (except the last, whose element nobody needs) into (a, b): b is the
    // chunk's recurrence run from h = 0, a = prod exp(dt_t A) = exp(A sum dt_t), computed from the
    // sum so that a long chunk underflows smoothly instead of through denormal products.
#pragma omp for collapse(2) schedule(static)
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t k = 0; k < chunks - 1; ++k) {
        float* a = pair_at(r, k);
        float* b = a + n;
        std::fill(b, b + n, 0.0f);
        const RowView<T> row = row_view(shape, params, x, r, tokens);
        const float dt_sum = scan_row<T, false>(n, row, k * chunk, (k + 1) * chunk, b, nullptr, buffers);
#pragma omp simd
        for (std::int64_t s = 0; s < n; ++s) a[s] = exp_nonpositive(row.A[s] * dt_sum);
      }
    }
    // Phase 2: the scan of chunk carries, sequential over the (few) chunks of a row. A GPU does
    // this step as a parallel scan across blocks too; here rows already give the parallelism.
#pragma omp for schedule(static)
    for (std::int64_t r = 0; r < rows; ++r) {
      alignas(64) float carry[kMaxN];
      std::copy(state + r * n, state + (r + 1) * n, carry);
      for (std::int64_t k = 0; k < chunks; ++k) {
        float* a = pair_at(r, k);
        float* b = a + n;
        const bool last = k + 1 == chunks;
#pragma omp simd
        for (std::int64_t s = 0; s < n; ++s) {
          const float entering = carry[s];
          if (!last) carry[s] = a[s] * entering + b[s];  // apply the chunk's element
          b[s] = entering;
        }
      }
    }
    // Phase 3: the fix-up. Each chunk re-runs its recurrence from the true entering state, which
    // gives exactly the sequential outputs (up to the rounding of the carries).
#pragma omp for collapse(2) schedule(static)
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t k = 0; k < chunks; ++k) {
        alignas(64) float h[kMaxN];
        const float* entering = pair_at(r, k) + n;
        std::copy(entering, entering + n, h);
        const std::int64_t end = std::min(tokens, (k + 1) * chunk);
        scan_row<T, true>(n, row_view(shape, params, x, r, tokens), k * chunk, end, h, out + r * tokens, buffers);
        if (k + 1 == chunks) std::copy(h, h + n, state + r * n);
      }
    }
  }
}
}  // namespace

// Throws std::invalid_argument for chunk < 1. Defined once, in the build variant: the message's
// std::to_string and std::string code would otherwise be compiled, and merged, by every variant.
void check_mamba_prefill_chunk(std::int64_t chunk);
#if defined(ARCH_BENCH_KERNEL_DISPATCHER)
void check_mamba_prefill_chunk(std::int64_t chunk) {
  if (chunk < 1) throw std::invalid_argument("mamba prefill chunk must be >= 1, got " + std::to_string(chunk));
}
#endif

template <class T, KernelVariant V>
void mamba_decode_step(const MambaShape& shape, const MambaParameters& params, const MambaTokens<T>& x,
                       float* state, T* out) {
  ARCH_BENCH_DISPATCH_KERNEL(V, (mamba_decode_step<T, W>(shape, params, x, state, out)))
  with_state_size(shape.state_size, [&](auto n) { decode_rows(n, shape, params, x, state, out); });
}

#if defined(ARCH_BENCH_KERNEL_DISPATCHER)  // not a kernel: compiled once, with the dispatched forms
std::int64_t mamba_prefill_chunk(const MambaShape& shape, std::int64_t tokens, int threads) {
  const std::int64_t wanted = 4 * std::max(1, threads);  // rows x chunks that keep threads busy
  const std::int64_t rows = std::max<std::int64_t>(1, shape.rows());
  if (rows >= wanted || tokens <= kMambaMinChunk) return std::max<std::int64_t>(1, tokens);
  const std::int64_t pieces = (wanted + rows - 1) / rows;
  return std::max(kMambaMinChunk, (tokens + pieces - 1) / pieces);
}
#endif

#if defined(ARCH_BENCH_KERNEL_DISPATCHER)  // not a kernel: compiled once, with the dispatched forms
std::int64_t mamba_prefill_workspace_floats(const MambaShape& shape, std::int64_t tokens,
                                            std::int64_t chunk) {
  check_mamba_prefill_chunk(chunk);
  const std::int64_t chunks = (tokens + chunk - 1) / chunk;
  return chunks <= 1 ? 0 : shape.rows() * chunks * 2 * shape.state_size;
}
#endif

template <class T, KernelVariant V>
void mamba_prefill_chunked(const MambaShape& shape, const MambaParameters& params, std::int64_t tokens,
                           std::int64_t chunk, const MambaTokens<T>& x, float* state, float* workspace,
                           T* out) {
  ARCH_BENCH_DISPATCH_KERNEL(V, (mamba_prefill_chunked<T, W>(shape, params, tokens, chunk, x, state, workspace, out)))
  check_mamba_prefill_chunk(chunk);
  with_state_size(shape.state_size, [&](auto n) {
    prefill_chunked(n, shape, params, tokens, chunk, x, state, workspace, out);
  });
}

template <class T, KernelVariant V>
void mamba_prefill_sequential(const MambaShape& shape, const MambaParameters& params, std::int64_t tokens,
                              const MambaTokens<T>& x, float* state, T* out) {
  ARCH_BENCH_DISPATCH_KERNEL(V, (mamba_prefill_sequential<T, W>(shape, params, tokens, x, state, out)))
  with_state_size(shape.state_size, [&](auto n) {
    BlockBuffers buffers;
    for (std::int64_t r = 0; r < shape.rows(); ++r) {
      const RowView<T> row = row_view(shape, params, x, r, tokens);
      for (std::int64_t t = 0; t < tokens; ++t) step_row(n, row, t, state + r * n, out + r * tokens + t, buffers);
    }
  });
}

#define ARCH_BENCH_MAMBA_KERNELS(PREFIX, T, V)                                                          \
  PREFIX void mamba_decode_step<T, V>(const MambaShape&, const MambaParameters&, const MambaTokens<T>&, \
                                     float*, T*);                                                       \
  PREFIX void mamba_prefill_chunked<T, V>(const MambaShape&, const MambaParameters&, std::int64_t,      \
                                         std::int64_t, const MambaTokens<T>&, float*, float*, T*);      \
  PREFIX void mamba_prefill_sequential<T, V>(const MambaShape&, const MambaParameters&, std::int64_t,   \
                                            const MambaTokens<T>&, float*, T*);
ARCH_BENCH_INSTANTIATE_KERNELS(ARCH_BENCH_MAMBA_KERNELS)

}  // namespace arch_bench
