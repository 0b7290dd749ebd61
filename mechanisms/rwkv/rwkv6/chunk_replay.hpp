#pragma once
// The arithmetic of RWKV-6's chunkwise tensor-core prefill (rwkv6/chunk_cuda.cu, the algebra in
// chunk_plan.hpp) replayed on the CPU for one head: the same chunks of kRwkv6ChunkTokens and
// sub-chunks of kRwkv6ChunkSubTokens, the same fp32 log-decay sums in the same order (beta token by
// token within a sub-chunk, as each kernel thread sums its channel; the sub-chunk totals in sub-chunk
// order), the same bf16 roundings at the same places (K~, U_c, the state entering each chunk, Q~, R^,
// K^(I), the scores P, the output), the fp32 state carried across chunks, and kernel (3)'s reuse of
// its shared memory: R^ is written over r and the adjacent blocks' K^ over k, in the kernel's phase
// order, so reading them in the wrong phase shows in the replay's output. Only the order of the
// fp32 sums inside a tensor-core product differs. Tests compare it with the fp64 reference
// (tests/test_rwkv6_chunk.cpp): the strongest evidence a kernel written without a GPU can have.
#include <cstdint>

namespace arch_bench {

// Deliberate mistakes, so a test can show that the comparison catches them.
enum class Rwkv6ChunkFault {
  none,
  bonus_dropped,         // A_tt = 0 (the current token's u term missing)
  decay_off_by_one,      // beta_t for beta_{t-1} on the query side: the current token's decay applied
  off_diagonal_dropped,  // the blocks between different sub-chunks left 0
  boundary_wrong,        // K^(I) decayed to the chunk's end (the state's K~) instead of to I's first token
  between_dropped,       // K^(I) without the decay of the whole sub-chunks between J and I
  key_unscaled,          // K^(I) = k: the key side of the off-diagonal blocks not decayed at all
  // Phase-order hazards of kernel (3)'s in-place regions (a barrier missing or a phase moved):
  query_after_r_decayed,    // Q~ computed from r's region after R^ overwrote it
  diagonal_after_keys,      // the diagonal scores read k's region after K^(J+1) overwrote it
};

// One head: r, k, v, d [tokens][dim] (values as the kernel reads them: already bf16-representable),
// u [dim]; state [dim(k)][dim(v)] fp32 in and out; out [tokens][dim], each value bf16-representable.
void rwkv6_chunk_replay(int dim, std::int64_t tokens, const float* r, const float* k, const float* v, const float* d,
                        const float* u, float* state, float* out, Rwkv6ChunkFault fault = Rwkv6ChunkFault::none);

}  // namespace arch_bench
