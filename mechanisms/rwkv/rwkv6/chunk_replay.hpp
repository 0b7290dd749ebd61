#pragma once
// The arithmetic of RWKV-6's chunkwise tensor-core prefill (rwkv6/chunk_cuda.cu, the algebra in
// chunk_plan.hpp) replayed on the CPU for one head: the same chunks of kRwkv6ChunkTokens, the same
// fp32 cumulative log-decays (summed token by token, as each kernel thread sums its channel), the
// same bf16 roundings at the same places (K~, U_c, the state entering each chunk, the scores P, R~,
// the output), the fp32 state carried across chunks. Only the order of the fp32 sums inside a
// product differs from the tensor cores'. Tests compare it with the fp64 reference
// (tests/test_rwkv6_chunk.cpp): the strongest evidence a kernel written without a GPU can have.
#include <cstdint>

namespace arch_bench {

// Deliberate mistakes, so a test can show that the comparison catches them.
enum class Rwkv6ChunkFault {
  none,
  bonus_dropped,      // A_tt = 0 (the current token's u term missing)
  decay_off_by_one,   // exp(b_t - b_s) for exp(b_{t-1} - b_s): the current token's decay applied
};

// One head: r, k, v, d [tokens][dim] (values as the kernel reads them: already bf16-representable),
// u [dim]; state [dim(k)][dim(v)] fp32 in and out; out [tokens][dim], each value bf16-representable.
void rwkv6_chunk_replay(int dim, std::int64_t tokens, const float* r, const float* k, const float* v, const float* d,
                        const float* u, float* state, float* out, Rwkv6ChunkFault fault = Rwkv6ChunkFault::none);

}  // namespace arch_bench
