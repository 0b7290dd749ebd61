#pragma once
// The arithmetic of RWKV-7's chunkwise tensor-core prefill (rwkv7/chunk_cuda.cu, the algebra in
// chunk_plan.hpp) replayed on the CPU for one head: the same chunks of kRwkv7ChunkTokens, the same
// fp32 running products of the decays (token by token, as each kernel thread multiplies its
// channel's), the same bf16 roundings at the same places (A^, R^, B', K', B~, K~, the masked scores
// P, T and M, W, H_0 as an operand, U, the output), fp32 score blocks, solve and carried
// state. Only the order of the fp32 sums inside a product differs from the tensor cores'. Tests
// compare it with the fp64 reference (tests/test_rwkv7_chunk_replay.cpp): the strongest evidence a
// kernel written without a GPU can have.
#include <cstdint>

namespace arch_bench {

// Deliberate mistakes, so a test can show that the comparison catches them.
enum class Rwkv7ChunkFault {
  none,
  delta_dropped,     // b = 0: the a^T b (removal) term of the transition missing
  decay_off_by_one,  // A^ = a e_t for a e_{t-1}: the current token's decay applied before its removal
};

// One head: r, w_raw, k, v, kappa, iclr [tokens][dim] (values as the kernel reads them: already
// bf16-representable); state H [dim(key)][dim(value)] fp32 in and out; out [tokens][dim], each value
// bf16-representable.
void rwkv7_chunk_replay(int dim, std::int64_t tokens, const float* r, const float* w_raw, const float* k,
                        const float* v, const float* kappa, const float* iclr, float* state, float* out,
                        Rwkv7ChunkFault fault = Rwkv7ChunkFault::none);

}  // namespace arch_bench
