#pragma once
// CPU kernels of softmax attention with an explicit K/V cache. Layout: q and out [batch_heads, tokens,
// dim], k and v [batch_heads / group, tokens, dim] (grouped-query attention: query head bh reads K/V
// head bh / group, mechanisms/common/kv_heads_option.hpp), storage T (float or bf16), fp32
// accumulation.
#include <cstdint>

#include "mechanisms/common/cpu_isa.hpp"

namespace arch_bench {

// Flash-decoding split of the context: each (head, split) pair reduces its slice of the cache to
// a partial (max, sum, accumulator) that a second pass merges. With batch*heads smaller than the
// thread count, splitting L is what keeps every core streaming the cache.
struct SoftmaxDecodePlan {
  std::int64_t batch_heads = 0;  // query heads of the batch
  std::int64_t group = 1;        // query heads per K/V head: the cache holds batch_heads / group heads
  std::int64_t dim = 0;
  std::int64_t capacity = 0;  // cache rows per head
  std::int64_t splits = 1;    // slices of the context per head
  CpuIsa isa = CpuIsa::portable;  // kernel set asked for (softmax_decode_isa: what runs)
  // floats of workspace needed: batch_heads * splits * (dim + 2)
  std::int64_t workspace_floats() const { return batch_heads * splits * (dim + 2); }
  std::int64_t batch_kv_heads() const { return batch_heads / group; }
};

// A decode work item scores up to this many query heads of one group against each block of its K/V
// head while the block is in L1, so the cache streams from memory once per group (a larger group is
// taken in slices of this many: its K/V is read group / 8 times).
inline constexpr std::int64_t kDecodeGroupSlice = 8;

// Chooses the split count for `threads` threads so each split streams at least 256 rows, and the
// kernel set of the running CPU (cpu_isa()). `group`: query heads per K/V head (it divides batch_heads).
SoftmaxDecodePlan plan_softmax_decode(std::int64_t batch_heads, std::int64_t dim,
                                      std::int64_t capacity, std::int64_t context, int threads,
                                      std::int64_t group = 1);

// The kernel set softmax_decode_step enters for this plan: the best one at most plan.isa that the
// CPU has and whose split kernel takes this head_dim (avx512: dim % 32 == 0, avx2: dim % 16 == 0).
CpuIsa softmax_decode_isa(const SoftmaxDecodePlan& plan);

// The kernel set softmax_prefill enters when asked for `isa` (avx512_bf16, the bf16 dot products,
// only for bf16 storage and an even dim; below it the storage type does not matter).
CpuIsa softmax_prefill_isa(bool bf16_storage, std::int64_t dim, CpuIsa isa = cpu_isa());

// One decode step for the token at `position`: appends k_new/v_new to the cache at `position`,
// then o = softmax(q K[0..position]^T / sqrt(dim)) V[0..position] for every head.
template <class T>
void softmax_decode_step(const SoftmaxDecodePlan& plan, const T* q, const T* k_new, const T* v_new,
                         T* k_cache, T* v_cache, std::int64_t position, float* workspace, T* out);

// The two halves of a step, for a cache that is not a plain prefix of the sequence (sliding_window's
// ring): k_new/v_new [batch_kv_heads, dim] into cache row `slot` of every K/V head, and
// o = softmax(q K[0..rows)^T / sqrt(dim)) V[0..rows) for every query head (softmax does not depend on
// the order of the rows).
template <class T>
void softmax_decode_append(const SoftmaxDecodePlan& plan, const T* k_new, const T* v_new, T* k_cache, T* v_cache,
                           std::int64_t slot);
template <class T>
void softmax_decode_attend(const SoftmaxDecodePlan& plan, const T* q, const T* k_cache, const T* v_cache,
                           std::int64_t rows, float* workspace, T* out);

// Which keys a prefill query sees besides the causal mask, and which K/V head: query head bh reads
// K/V head bh / group, and query t keys (t - window, t] (window 0: all of [0, t]).
struct AttentionPattern {
  std::int64_t group = 1;
  std::int64_t window = 0;
};

// Causal prefill over `tokens` tokens: tiled online softmax (FlashAttention); the L x L score
// matrix never exists, only one 64 x 64 tile per thread. `isa` picks the kernel set (tests run
// each one); one the CPU lacks falls back to the portable kernels.
// `pattern` groups the K/V heads and bands the mask (sliding_window): key blocks wholly outside a
// query block's band are skipped.
template <class T>
void softmax_prefill(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dim, const T* q,
                     const T* k, const T* v, T* out, CpuIsa isa = cpu_isa(), AttentionPattern pattern = {});

}  // namespace arch_bench
