#include "mechanisms/rwkv/rwkv7/cpu.hpp"

#include <omp.h>
#include <type_traits>

#include "core/bf16.hpp"
#include "mechanisms/common/float8.hpp"
#include "mechanisms/common/kernel_variant.hpp"
#include "mechanisms/common/wide_vector.hpp"

namespace arch_bench {

namespace {

constexpr std::int64_t kMaxDim = kRwkvMaxDim;

// Tokens whose per-channel vectors are prepared together: every column slice of the state walks
// them, so they are widened and their decays computed once (16 tokens x 6 vectors x 64 channels is
// 24 KiB at d = 64: with the 16 KiB state, in L1).
constexpr std::int64_t kTokenBlock = 16;

// A block's per-token inputs in fp32, [token][channel]: the decay w = exp(-e^-0.5 sigmoid(w_raw)),
// a = -kappa, b = kappa * iclr, k and r per key channel, v per value channel; o the outputs when the
// storage is not fp32.
struct TokenBlock {
  alignas(64) float w[kTokenBlock * kMaxDim], a[kTokenBlock * kMaxDim], b[kTokenBlock * kMaxDim];
  alignas(64) float k[kTokenBlock * kMaxDim], r[kTokenBlock * kMaxDim], v[kTokenBlock * kMaxDim];
  alignas(64) float o[kTokenBlock * kMaxDim];
};

// Channels [j, j + lanes of V) of one token's vectors into row `dst` of the block.
template <class V, class T>
void prepare_lanes(std::int64_t src, std::int64_t dst, std::int64_t j, const RwkvTokens<T>& x, TokenBlock& block) {
  auto load = [&](const T* p) { return load_lanes<V>(p + src + j); };
  const V kap = load(x.kappa);
  store_lanes(block.w + dst + j, exp_nonpositive(rwkv7_log_decay(load(x.decay))));
  store_lanes(block.a + dst + j, -kap);
  store_lanes(block.b + dst + j, kap * load(x.iclr));
  store_lanes(block.k + dst + j, load(x.k));
  store_lanes(block.r + dst + j, load(x.r));
  store_lanes(block.v + dst + j, load(x.v));
}

// One token's vectors into row t of the block, the widest vector at a time (two exps and a
// division per channel are a large part of a step when done one by one).
template <class T>
void prepare_token(std::int64_t dim, std::int64_t src, const RwkvTokens<T>& x, std::int64_t t, TokenBlock& block) {
  const std::int64_t dst = t * dim;
  std::int64_t j = 0;
  for (; j + kWideLanes <= dim; j += kWideLanes) prepare_lanes<wide_vector>(src, dst, j, x, block);
  for (; j + kFloat8Lanes <= dim; j += kFloat8Lanes) prepare_lanes<float8>(src, dst, j, x, block);
  for (; j < dim; ++j) {
    const float kap = to_float(x.kappa[src + j]);
    block.w[dst + j] = exp_nonpositive(rwkv7_log_decay(to_float(x.decay[src + j])));
    block.a[dst + j] = -kap;
    block.b[dst + j] = kap * to_float(x.iclr[src + j]);
    block.k[dst + j] = to_float(x.k[src + j]);
    block.r[dst + j] = to_float(x.r[src + j]);
    block.v[dst + j] = to_float(x.v[src + j]);
  }
}

// u = a^T H over the slice's columns: the values the block's first token removes. Summed over the
// rows in the order the pass below sums the next token's u, so a decode step computes exactly what
// the prefill computes for its token.
template <class V, int kVectors>
void removed_values(std::int64_t dim, std::int64_t c0, const float* a, const float* H, V (&u)[kVectors]) {
  constexpr std::int64_t kLanes = sizeof(V) / sizeof(float);
  for (std::int64_t j = 0; j < dim; ++j) {
#pragma GCC unroll 4
    for (int c = 0; c < kVectors; ++c) u[c] += load_lanes<V>(H + j * dim + c0 + c * kLanes) * a[j];
  }
}

// The block's n tokens over the state columns [c0, c0 + kVectors x lanes of V) (value channels, in
// the state H [key, value]): the columns of H are independent through the recurrence, so a slice
// keeps its removed values u = a_t^T H and its outputs in registers across the tokens. Per token
// and key row j, x = w_j H_j + b_j u + k_j v is stored over H_j, o += r_j x, and the next token's
// u' += a'_j x: five FMAs per element, no horizontal sums, one pass over the slice per token.
// The last token's pass prefetches the same slice of `prefetch` (the thread's next head, in a
// decode step), whose removed_values pass then reads L1 instead of L2.
template <class V, int kVectors>
void update_columns(std::int64_t dim, std::int64_t n, std::int64_t c0, const TokenBlock& block, float* __restrict H,
                    float* O, const float* prefetch) {
  constexpr std::int64_t kLanes = sizeof(V) / sizeof(float);
  V u[kVectors] = {};
  removed_values(dim, c0, block.a, H, u);  // the other tokens' u come out of the previous token's pass
  for (std::int64_t t = 0; t < n; ++t) {
    const std::int64_t row = t * dim;
    const float *w = block.w + row, *b = block.b + row, *k = block.k + row, *r = block.r + row;
    const float* a_next = block.a + row + dim;  // read only while t + 1 < n
    V v[kVectors], o[kVectors] = {}, u_next[kVectors] = {};
#pragma GCC unroll 4
    for (int c = 0; c < kVectors; ++c) v[c] = load_lanes<V>(block.v + row + c0 + c * kLanes);
    auto pass = [&](auto has_next) {
      for (std::int64_t j = 0; j < dim; ++j) {
        float* h = H + j * dim + c0;
#pragma GCC unroll 4
        for (int c = 0; c < kVectors; ++c) {
          const V x = load_lanes<V>(h + c * kLanes) * w[j] + u[c] * b[j] + v[c] * k[j];
          store_lanes(h + c * kLanes, x);
          o[c] += x * r[j];
          if constexpr (decltype(has_next)::value) {
            u_next[c] += x * a_next[j];
          } else if (prefetch != nullptr) {
            __builtin_prefetch(prefetch + j * dim + c0 + c * kLanes, 0, 3);
          }
        }
      }
    };
    if (t + 1 < n) {
      pass(std::true_type{});
    } else {
      pass(std::false_type{});
    }
#pragma GCC unroll 4
    for (int c = 0; c < kVectors; ++c) {
      store_lanes(O + row + c0 + c * kLanes, o[c]);
      u[c] = u_next[c];
    }
  }
}

// The vectors a slice keeps in registers: four arrays of them (u, v, o, u') plus the element in
// flight, so four zmm per array with AVX-512's 32 registers and two elsewhere (16 ymm).
constexpr int kSliceVectors = kWideLanes == 16 ? 4 : 2;

// A decode step (one token) keeps no u', so three arrays: four vectors each fit 16 ymm (one spills
// to an L1 operand). Twice the chains in the removed_values pass, which at two chains waits on FMA
// latency: 12-14% off an AVX2 decode step on Zen 1 (results/ggml-side-by-side.md, run 13). The columns
// stay independent, so the outputs are bitwise those of the narrower slices.
constexpr int kDecodeSliceVectors = 4;

// Every column of H for the block: whole slices of wide vectors, then what is left a wide vector,
// a float8 and a column at a time.
void update_block(std::int64_t dim, std::int64_t n, const TokenBlock& block, float* H, float* O, const float* pf) {
  constexpr std::int64_t kSlice = kSliceVectors * kWideLanes;
  std::int64_t c = 0;
  if (n == 1) {
    constexpr std::int64_t kDecodeSlice = kDecodeSliceVectors * kWideLanes;
    for (; c + kDecodeSlice <= dim; c += kDecodeSlice) {
      update_columns<wide_vector, kDecodeSliceVectors>(dim, n, c, block, H, O, pf);
    }
  }
  for (; c + kSlice <= dim; c += kSlice) update_columns<wide_vector, kSliceVectors>(dim, n, c, block, H, O, pf);
  for (; c + kWideLanes <= dim; c += kWideLanes) update_columns<wide_vector, 1>(dim, n, c, block, H, O, pf);
  for (; c + kFloat8Lanes <= dim; c += kFloat8Lanes) update_columns<float8, 1>(dim, n, c, block, H, O, pf);
  for (; c < dim; ++c) update_columns<float, 1>(dim, n, c, block, H, O, pf);
}

template <class T>
void recurrent_head(std::int64_t dim, std::int64_t tokens, const RwkvTokens<T>& x, float* H, T* out,
                    TokenBlock& block, const float* pf) {
  for (std::int64_t begin = 0; begin < tokens; begin += kTokenBlock) {
    const std::int64_t n = std::min(kTokenBlock, tokens - begin);
    for (std::int64_t t = 0; t < n; ++t) prepare_token(dim, (begin + t) * dim, x, t, block);
    // fp32 storage takes the outputs straight into `out`; bf16 goes through the block's buffer.
    if constexpr (std::is_same_v<T, float>) {
      update_block(dim, n, block, H, out + begin * dim, pf);
    } else {
      update_block(dim, n, block, H, block.o, pf);
      for (std::int64_t e = 0; e < n * dim; ++e) out[begin * dim + e] = from_float<T>(block.o[e]);
    }
  }
}

}  // namespace

template <class T, KernelVariant V>
void rwkv7_recurrent(const RwkvShape& shape, std::int64_t tokens, const RwkvTokens<T>& x, float* state, T* out) {
  ARCH_BENCH_DISPATCH_KERNEL(V, (rwkv7_recurrent<T, W>(shape, tokens, x, state, out)))
  const std::int64_t dim = shape.dim;
#pragma omp parallel if (shape.batch_heads * dim * dim * tokens >= kRwkvParallelWork)
  {
    TokenBlock block;  // one per thread, reused for every head it takes
    // The static schedule by hand, so that a thread knows which head it takes next.
    const std::int64_t threads = omp_get_num_threads(), thread = omp_get_thread_num();
    const std::int64_t first = shape.batch_heads * thread / threads, last = shape.batch_heads * (thread + 1) / threads;
    for (std::int64_t bh = first; bh < last; ++bh) {
      const std::int64_t o = bh * tokens * dim;
      const RwkvTokens<T> head{x.r + o, x.k + o, x.v + o, x.decay + o, x.kappa + o, x.iclr + o};
      const float* pf = tokens == 1 && bh + 1 < last ? state + (bh + 1) * dim * dim : nullptr;
      recurrent_head(dim, tokens, head, state + bh * dim * dim, out + o, block, pf);
    }
  }
}

#define ARCH_BENCH_RWKV7_RECURRENT_KERNELS(PREFIX, T, V)                                               \
  PREFIX void rwkv7_recurrent<T, V>(const RwkvShape&, std::int64_t, const RwkvTokens<T>&, float*, T*);
ARCH_BENCH_INSTANTIATE_KERNELS(ARCH_BENCH_RWKV7_RECURRENT_KERNELS)

}  // namespace arch_bench
