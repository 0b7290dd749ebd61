#include "mechanisms/softmax_kv/cpu.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "core/bf16.hpp"
#include "mechanisms/common/fast_math.hpp"
#include "mechanisms/softmax_kv/cpu_avx2.hpp"
#include "mechanisms/softmax_kv/cpu_avx512.hpp"

namespace arch_bench {

namespace {
constexpr std::int64_t kMaxDim = 256;    // Mechanism::unsupported() rejects wider heads
constexpr std::int64_t kKeyBlock = 64;   // scores kept in registers/L1 per block
constexpr std::int64_t kQueryBlock = 64;
constexpr std::int64_t kMinRowsPerSplit = 256;
// Below this many cache elements a step takes a few microseconds, less than waking the team.
constexpr std::int64_t kParallelCacheElements = 1 << 16;

template <class T>
float dot_scaled(const float* q, const T* k, std::int64_t dim) {
  float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
  for (std::int64_t c = 0; c < dim; ++c) dot += q[c] * to_float(k[c]);
  return dot;
}

// Online-softmax state of one query row: running max m, running sum l, unnormalised output acc.
struct OnlineRow {
  float m = -INFINITY;
  float l = 0.0f;
};

// Folds one block of scores (already q.k/sqrt(d)) and value rows into the running state.
template <class T>
void fold_block(OnlineRow& row, float* acc, float* scores, std::int64_t count, const T* values,
                std::int64_t dim) {
  float block_max = -INFINITY;
  for (std::int64_t j = 0; j < count; ++j) block_max = std::max(block_max, scores[j]);
  const float new_max = std::max(row.m, block_max);
  const float correction = exp_nonpositive(row.m - new_max);
  float block_sum = 0.0f;
#pragma omp simd reduction(+ : block_sum)
  for (std::int64_t j = 0; j < count; ++j) {
    scores[j] = exp_nonpositive(scores[j] - new_max);
    block_sum += scores[j];
  }
  row.l = row.l * correction + block_sum;
  row.m = new_max;
#pragma omp simd
  for (std::int64_t c = 0; c < dim; ++c) acc[c] *= correction;
  for (std::int64_t j = 0; j < count; ++j) {
    const T* value = values + j * dim;
    const float weight = scores[j];
#pragma omp simd
    for (std::int64_t c = 0; c < dim; ++c) acc[c] += weight * to_float(value[c]);
  }
}
}  // namespace

SoftmaxDecodePlan plan_softmax_decode(std::int64_t batch_heads, std::int64_t dim,
                                      std::int64_t capacity, std::int64_t context, int threads,
                                      std::int64_t group) {
  SoftmaxDecodePlan plan;
  plan.batch_heads = batch_heads;
  plan.group = std::max<std::int64_t>(group, 1);
  plan.dim = dim;
  plan.capacity = capacity;
  // Work items before splitting: one per K/V head and slice of its group.
  const std::int64_t items = plan.batch_kv_heads() * ((plan.group + kDecodeGroupSlice - 1) / kDecodeGroupSlice);
  const std::int64_t wanted = (2 * std::max(threads, 1) + items - 1) / std::max<std::int64_t>(items, 1);
  const std::int64_t allowed = std::max<std::int64_t>(1, context / kMinRowsPerSplit);
  plan.splits = std::clamp<std::int64_t>(wanted, 1, allowed);
  plan.isa = cpu_isa();
  return plan;
}

CpuIsa softmax_decode_isa(const SoftmaxDecodePlan& plan) {
  if (plan.isa >= CpuIsa::avx512 && plan.dim % 32 == 0 && cpu_supports(CpuIsa::avx512)) return CpuIsa::avx512;
  if (plan.isa >= CpuIsa::avx2 && plan.dim % 16 == 0 && cpu_supports(CpuIsa::avx2)) return CpuIsa::avx2;
  return CpuIsa::portable;
}

CpuIsa softmax_prefill_isa(bool bf16_storage, std::int64_t dim, CpuIsa isa) {
  if (bf16_storage && dim % 2 == 0 && isa >= CpuIsa::avx512_bf16 && cpu_supports(CpuIsa::avx512_bf16)) {
    return CpuIsa::avx512_bf16;
  }
  for (CpuIsa candidate : {CpuIsa::avx512, CpuIsa::avx2}) {
    if (isa >= candidate && cpu_supports(candidate)) return candidate;
  }
  return CpuIsa::portable;
}

template <class T>
void softmax_decode_append(const SoftmaxDecodePlan& plan, const T* k_new, const T* v_new, T* k_cache, T* v_cache,
                           std::int64_t slot) {
  const std::int64_t dim = plan.dim;
  for (std::int64_t kv = 0; kv < plan.batch_kv_heads(); ++kv) {
    std::memcpy(k_cache + (kv * plan.capacity + slot) * dim, k_new + kv * dim, dim * sizeof(T));
    std::memcpy(v_cache + (kv * plan.capacity + slot) * dim, v_new + kv * dim, dim * sizeof(T));
  }
}

template <class T>
void softmax_decode_attend(const SoftmaxDecodePlan& plan, const T* q, const T* k_cache, const T* v_cache,
                           std::int64_t rows, float* workspace, T* out) {
  const std::int64_t dim = plan.dim;
  const std::int64_t context = rows;
  const std::int64_t splits = plan.splits;
  const std::int64_t rows_per_split = (context + splits - 1) / splits;
  const std::int64_t group = plan.group;
  const std::int64_t slices = (group + kDecodeGroupSlice - 1) / kDecodeGroupSlice;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dim));
  [[maybe_unused]] const CpuIsa kernels = softmax_decode_isa(plan);

  // One item per (K/V head, slice of its query group, split of the context): the slice's queries
  // share every block of K/V rows the split streams.
#pragma omp parallel for schedule(static) if (plan.batch_kv_heads() * context * dim >= kParallelCacheElements)
  for (std::int64_t item = 0; item < plan.batch_kv_heads() * slices * splits; ++item) {
    const std::int64_t kv = item / (slices * splits);
    const std::int64_t slice = item / splits % slices;
    const std::int64_t split = item % splits;
    const std::int64_t first_query = kv * group + slice * kDecodeGroupSlice;  // query head of the batch
    const std::int64_t count = std::min(kDecodeGroupSlice, group - slice * kDecodeGroupSlice);
    const std::int64_t begin = split * rows_per_split;
    const std::int64_t end = std::min(context, begin + rows_per_split);
    alignas(64) float query[kDecodeGroupSlice * kMaxDim];  // [count][dim]
    for (std::int64_t i = 0; i < count * dim; ++i) query[i] = to_float(q[first_query * dim + i]) * scale;
    const T* keys = k_cache + kv * plan.capacity * dim;
    const T* values = v_cache + kv * plan.capacity * dim;
    // Partials are [query head][split][dim + 2]: the group's queries are splits * (dim + 2) apart.
    float* partials = workspace + (first_query * splits + split) * (dim + 2);
    const std::int64_t stride = splits * (dim + 2);
#if defined(ARCH_BENCH_SOFTMAX_AVX512)
    if (kernels == CpuIsa::avx512) {
      softmax_decode_split_avx512(query, count, keys, values, begin, end, dim, partials, stride);
      continue;
    }
#endif
#if defined(ARCH_BENCH_SOFTMAX_AVX2)
    if (kernels == CpuIsa::avx2) {
      softmax_decode_split_avx2(query, count, keys, values, begin, end, dim, partials, stride);
      continue;
    }
#endif
    alignas(64) float acc[kDecodeGroupSlice][kMaxDim] = {};
    alignas(64) float scores[kKeyBlock];
    OnlineRow row[kDecodeGroupSlice];
    for (std::int64_t block = begin; block < end; block += kKeyBlock) {
      const std::int64_t block_rows = std::min(kKeyBlock, end - block);
      for (std::int64_t g = 0; g < count; ++g) {  // the block stays in L1 for the group's next queries
        const float* query_row = query + g * dim;
        for (std::int64_t j = 0; j < block_rows; ++j) scores[j] = dot_scaled(query_row, keys + (block + j) * dim, dim);
        fold_block(row[g], acc[g], scores, block_rows, values + block * dim, dim);
      }
    }
    for (std::int64_t g = 0; g < count; ++g) {
      float* partial = partials + g * stride;
      partial[0] = row[g].m;
      partial[1] = row[g].l;
      std::memcpy(partial + 2, acc[g], dim * sizeof(float));
    }
  }

  // Merge the splits of each query head: rescale every partial to the global max.
  for (std::int64_t bh = 0; bh < plan.batch_heads; ++bh) {
    const float* partials = workspace + bh * splits * (dim + 2);
    float global_max = -INFINITY;
    for (std::int64_t s = 0; s < splits; ++s) global_max = std::max(global_max, partials[s * (dim + 2)]);
    alignas(64) float merged[kMaxDim] = {};
    float denominator = 0.0f;
    for (std::int64_t s = 0; s < splits; ++s) {
      const float* partial = partials + s * (dim + 2);
      const float weight = exp_nonpositive(partial[0] - global_max);
      denominator += weight * partial[1];
      for (std::int64_t c = 0; c < dim; ++c) merged[c] += weight * partial[2 + c];
    }
    for (std::int64_t c = 0; c < dim; ++c) out[bh * dim + c] = from_float<T>(merged[c] / denominator);
  }
}

template <class T>
void softmax_decode_step(const SoftmaxDecodePlan& plan, const T* q, const T* k_new, const T* v_new,
                         T* k_cache, T* v_cache, std::int64_t position, float* workspace, T* out) {
  softmax_decode_append(plan, k_new, v_new, k_cache, v_cache, position);
  softmax_decode_attend(plan, q, k_cache, v_cache, position + 1, workspace, out);
}

template <class T>
void softmax_prefill(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dim, const T* q,
                     const T* k, const T* v, T* out, [[maybe_unused]] CpuIsa isa, AttentionPattern pattern) {
  const std::int64_t group = std::max<std::int64_t>(pattern.group, 1);
  const std::int64_t window = pattern.window;
  [[maybe_unused]] const CpuIsa kernels = softmax_prefill_isa(std::is_same_v<T, bf16>, dim, isa);
#if defined(ARCH_BENCH_SOFTMAX_AVX512)
  if constexpr (std::is_same_v<T, bf16>) {
    if (kernels == CpuIsa::avx512_bf16) {
      softmax_prefill_avx512_bf16_dot(batch_heads, tokens, dim, q, k, v, out, group, window);
      return;
    }
  }
  if (kernels == CpuIsa::avx512) {
    softmax_prefill_avx512(batch_heads, tokens, dim, q, k, v, out, group, window);
    return;
  }
#endif
#if defined(ARCH_BENCH_SOFTMAX_AVX2)
  if (kernels == CpuIsa::avx2) {
    softmax_prefill_avx2(batch_heads, tokens, dim, q, k, v, out, group, window);
    return;
  }
#endif
  // Portable kernel: the compiler vectorises the inner loops for whatever the build targets.
  const std::int64_t query_blocks = (tokens + kQueryBlock - 1) / kQueryBlock;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dim));
  // Later query blocks see more keys; dynamic scheduling balances the causal triangle.
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t item = 0; item < batch_heads * query_blocks; ++item) {
    const std::int64_t bh = item / query_blocks;
    const std::int64_t q_begin = (item % query_blocks) * kQueryBlock;
    const std::int64_t q_end = std::min(tokens, q_begin + kQueryBlock);
    const T* keys = k + bh / group * tokens * dim;
    const T* values = v + bh / group * tokens * dim;
    const std::int64_t rows = q_end - q_begin;
    // One query tile's running state; each key tile is loaded once and used by all its rows.
    alignas(64) float query[kQueryBlock][kMaxDim];
    alignas(64) float acc[kQueryBlock][kMaxDim] = {};
    alignas(64) float scores[kKeyBlock];
    OnlineRow state[kQueryBlock];
    for (std::int64_t r = 0; r < rows; ++r) {
      const T* q_row = q + (bh * tokens + q_begin + r) * dim;
      for (std::int64_t c = 0; c < dim; ++c) query[r][c] = to_float(q_row[c]) * scale;
    }
    // With a window, query t sees keys from t - window + 1: blocks before the first query's band are skipped.
    const std::int64_t first_key = window > 0 ? std::max<std::int64_t>(0, q_begin - window + 1) : 0;
    for (std::int64_t block = first_key / kKeyBlock * kKeyBlock; block < q_end; block += kKeyBlock) {
      for (std::int64_t r = 0; r < rows; ++r) {
        const std::int64_t t = q_begin + r;
        const std::int64_t from = window > 0 ? std::max(block, t - window + 1) : block;  // band
        const std::int64_t to = std::min(block + kKeyBlock, t + 1);                       // causal mask
        if (from >= to) continue;
        for (std::int64_t j = from; j < to; ++j) scores[j - from] = dot_scaled(query[r], keys + j * dim, dim);
        fold_block(state[r], acc[r], scores, to - from, values + from * dim, dim);
      }
    }
    for (std::int64_t r = 0; r < rows; ++r) {
      T* o_row = out + (bh * tokens + q_begin + r) * dim;
      const float inverse = 1.0f / state[r].l;
      for (std::int64_t c = 0; c < dim; ++c) o_row[c] = from_float<T>(acc[r][c] * inverse);
    }
  }
}

#define ARCH_BENCH_INSTANTIATE(T)                                                                  \
  template void softmax_decode_step<T>(const SoftmaxDecodePlan&, const T*, const T*, const T*, T*, \
                                       T*, std::int64_t, float*, T*);                              \
  template void softmax_decode_append<T>(const SoftmaxDecodePlan&, const T*, const T*, T*, T*,     \
                                         std::int64_t);                                            \
  template void softmax_decode_attend<T>(const SoftmaxDecodePlan&, const T*, const T*, const T*,   \
                                         std::int64_t, float*, T*);                                \
  template void softmax_prefill<T>(std::int64_t, std::int64_t, std::int64_t, const T*, const T*,   \
                                   const T*, T*, CpuIsa, AttentionPattern);
ARCH_BENCH_INSTANTIATE(float)
ARCH_BENCH_INSTANTIATE(bf16)
#undef ARCH_BENCH_INSTANTIATE

}  // namespace arch_bench
