#pragma once
// Launch planning of RWKV-6's chunkwise tensor-core prefill (rwkv6/chunk_cuda.cu), bf16 storage:
// plain C++, compiled in every build and tested on the CPU (tests/test_rwkv6_chunk.cpp), with the
// CPU replay of the same arithmetic (chunk_replay.hpp).
//
// RWKV-6 is linear attention with a per-key-channel decay (gated linear attention): per head, with
// g_t = log w_t = max(-exp(d_t), -100) per key channel and, inside a chunk, the inclusive cumulative
// log-decay b_t = sum_{m <= t} g_m (b_{-1} = 0),
//   scores   A_ts = sum_c r_tc k_sc exp(b_{t-1,c} - b_{s,c})   (s < t),   A_tt = sum_c r_tc u_c k_tc
//   output   o_t  = sum_{s <= t} A_ts v_s + (r_t . exp(b_{t-1}))^T S
//   state    S'   = diag(exp(b_last)) S + sum_s (k_s . exp(b_last - b_s)) v_s^T
// S being the state entering the chunk. Every exponent above is <= 0, so nothing overflows however
// strong the decays: with per-channel decays the pair weight exp(b_{t-1,c} - b_{s,c}) does not
// factor into a row and a column term that both stay bounded (exp(-b_s) alone overflows past 88
// nats, reached in one token at the -100 clamp), so the scores are computed pair by pair in fp32 on
// the SIMT cores, as flash-linear-attention's chunk_rwkv6 / GLA kernels do for their diagonal
// 16 x 16 sub-chunk blocks (Yang et al. 2024, "Gated Linear Attention Transformers with
// Hardware-Efficient Training", section 4.2). The chunk is that one sub-chunk: C = 16 tokens, one
// wmma tile, so no off-diagonal factored blocks are needed at all. The three products that are
// matrix products (U = K~^T V, P V and R~ S) run on tensor cores (wmma 16 x 16 x 16, bf16 -> fp32).
//
// Three kernels, as common/chunk_scalar_decay.cuh (which has a scalar decay per token):
//   (1) per (head, chunk) in parallel: U_c = K~^T V with K~ = bf16(k_s . exp(b_last - b_s)), into
//       the workspace in bf16, and b_last (per key channel, fp32);
//   (2) per element pair of S, over the chunks in order: S_{c+1} = diag(exp(b_last,c)) S_c + U_c in
//       fp32 registers, leaving the state entering each chunk (bf16) in place of U_c and the state
//       after the last chunk in `state` (fp32);
//   (3) per (head, chunk) in parallel: P = bf16(A) (pairwise, fp32), R~ = bf16(r . exp(b_{t-1})),
//       O = P V + R~ S_c, S_c read by wmma straight from the workspace.
//
// Bytes, the bound of these kernels, at B16 H8 d64 L8192 (bf16; 128 heads x 512 chunks, 8 KiB of
// bf16 state a chunk): the operands r, k, v, d and the output are 134 MB each; (1) reads k, v, d,
// (3) reads r, k, v, d and writes o: 1074 MB. States: (1) writes 537 MB, (2) reads and rewrites
// 1074, (3) reads 537: 2147 MB; the chunk log-decays 34 MB. ~3.3 GB in all: ~0.7 ms at an H200's
// ~4.8 TB/s, ~1.0 ms at an H100's 3.35 (flash-linear-attention's chunk_rwkv6: 1.70 ms). FLOPs per
// chunk: 2 C d^2 (U) + 2 C^2 d (P V) + 2 C d^2 (R~ S) on tensor cores, ~0.3 MFLOP at d = 64, 20 GFLOP
// in all; on the SIMT cores the C (C + 1) / 2 = 136 score pairs x d channels x (one exp + two FMAs):
// 570 M exps, the largest compute term (~0.15 ms of an H100's SFUs), overlapped with the loads. A
// chunk of 64 would cut the state bytes 4x (~1.7 GB in all) but needs factored off-diagonal blocks
// (three bounded factors per pair, as rwkv6/cpu.cpp's sub-chunk path); at 16 there are none.
#include <cstddef>
#include <cstdint>

#include "core/cell.hpp"

namespace arch_bench {

inline constexpr int kRwkv6ChunkTokens = 16;    // C: tokens per chunk, one wmma tile
inline constexpr int kRwkv6ChunkThreads = 256;  // 8 warps, every kernel
inline constexpr int kRwkv6ChunkFragment = 16;  // the wmma tile (m = n = k = 16)
inline constexpr int kRwkv6ChunkMaxDim = 128;   // head_dim: a multiple of 16 up to this
// Row padding: bf16 rows by 8 elements (16 bytes), fp32 wmma rows by 4; the fp32 rows the pairwise
// scores read column by column (k and b of 16 tokens at one channel) by 1, so those 16 reads fall
// in 16 different banks.
inline constexpr int kRwkv6ChunkBf16Pad = 8;
inline constexpr int kRwkv6ChunkFloatPad = 4;
inline constexpr int kRwkv6ChunkScalarPad = 1;
static_assert(kRwkv6ChunkTokens == kRwkv6ChunkFragment, "a chunk is one wmma tile of tokens");
static_assert(kRwkv6ChunkTokens * kRwkv6ChunkTokens == kRwkv6ChunkThreads, "one thread per score pair");
static_assert(kRwkv6ChunkMaxDim / kRwkv6ChunkFragment <= kRwkv6ChunkThreads / 32, "one output tile per warp");

// Byte offsets of the shared-memory regions (each 128-byte aligned; wmma needs 32).
struct Rwkv6ChunkStateLayout {  // kernel (1)
  std::size_t b = 0;            // b, fp32 [C][dim]
  std::size_t k = 0;            // K~ = k . exp(b_last - b), bf16 [C][ld_bf16]
  std::size_t v = 0;            // V, bf16 [C][ld_bf16]
  std::size_t u = 0;            // each warp's 16 x 16 tile of U, fp32 [warps][16][16], before bf16
  std::size_t bytes = 0;
};
struct Rwkv6ChunkOutputLayout {  // kernel (3)
  std::size_t r = 0;             // r, fp32 [C][ld_scalar]
  std::size_t k = 0;             // k, fp32 [C][ld_scalar]
  std::size_t b = 0;             // b, fp32 [C][ld_scalar]
  std::size_t u = 0;             // the bonus u of this head, fp32 [dim]
  std::size_t r_decayed = 0;     // R~ = r . exp(b_{t-1}), bf16 [C][ld_bf16]
  std::size_t v = 0;             // V, bf16 [C][ld_bf16]
  std::size_t p = 0;             // the scores, bf16 [C][ld_p]
  std::size_t o = 0;             // O, fp32 [C][ld_o]
  std::size_t bytes = 0;
};

struct Rwkv6ChunkPlan {
  std::int64_t batch_heads = 0;
  std::int64_t heads = 0;  // u is indexed by bh % heads
  std::int64_t tokens = 0;
  int dim = 0;
  std::int64_t chunks = 0;  // ceil(tokens / C); the last may be shorter (zero-padded in shared memory)
  int threads = kRwkv6ChunkThreads;
  std::int64_t state_blocks = 0;            // batch_heads * chunks: block = bh * chunks + chunk
  std::int64_t prefix_blocks_per_head = 0;  // ceil(dim^2 / 2 / threads): one thread per pair of S
  std::int64_t prefix_blocks = 0;           // batch_heads * prefix_blocks_per_head
  std::int64_t output_blocks = 0;           // batch_heads * chunks
  int ld_bf16 = 0;    // bf16 row stride of K~, V and R~
  int ld_scalar = 0;  // fp32 row stride of r, k and b in kernel (3)
  int ld_p = 0;       // bf16 row stride of the scores
  int ld_o = 0;       // fp32 row stride of O
  Rwkv6ChunkStateLayout state_layout;
  Rwkv6ChunkOutputLayout output_layout;
  // Workspace (as floats, from the cell's allocator): U_c, then the state entering chunk c, bf16
  // [batch_heads][chunks][dim][dim] two to a float; then each chunk's b_last, fp32
  // [batch_heads][chunks][dim].
  std::int64_t workspace_state_elements = 0;
  std::int64_t workspace_decay_elements = 0;
  std::int64_t workspace_floats() const { return workspace_state_elements + workspace_decay_elements; }
  std::int64_t workspace_bytes() const { return 4 * workspace_floats(); }
  std::size_t max_shared_bytes() const {
    return state_layout.bytes > output_layout.bytes ? state_layout.bytes : output_layout.bytes;
  }
};

// Whether the chunkwise prefill takes this head_dim (a multiple of 16 in 16..128).
bool rwkv6_chunk_supports(std::int64_t dim);
// Whether a CUDA cell's prefill runs chunkwise: bf16 prefill with a head_dim it takes (fp32 and
// decode keep the recurrence of rwkv6/cuda.cu).
bool rwkv6_cuda_prefill_is_chunked(const Cell& cell);

// The plan; throws std::invalid_argument for a head_dim rwkv6_chunk_supports refuses or negative
// counts, SizeOverflow where a count does not fit.
Rwkv6ChunkPlan plan_rwkv6_chunk(std::int64_t batch_heads, std::int64_t heads, std::int64_t tokens, std::int64_t dim);

// The workspace bytes of a cell's CUDA prefill (0 where it is not chunked).
std::int64_t rwkv6_cuda_workspace_bytes(const Cell& cell);

// Index maps shared by the kernels, the replay and the tests.
constexpr int rwkv6_chunk_rows(std::int64_t tokens, std::int64_t chunk) {
  return tokens - chunk * kRwkv6ChunkTokens < kRwkv6ChunkTokens ? static_cast<int>(tokens - chunk * kRwkv6ChunkTokens)
                                                                 : kRwkv6ChunkTokens;
}
// Element (bf16) offset of chunk `chunk` of head bh in the workspace's states.
constexpr std::int64_t rwkv6_chunk_state_offset(const Rwkv6ChunkPlan& plan, std::int64_t bh, std::int64_t chunk) {
  return (bh * plan.chunks + chunk) * plan.dim * plan.dim;
}
// Element (fp32) offset of chunk `chunk`'s b_last of head bh in the workspace's log-decays.
constexpr std::int64_t rwkv6_chunk_decay_offset(const Rwkv6ChunkPlan& plan, std::int64_t bh, std::int64_t chunk) {
  return (bh * plan.chunks + chunk) * plan.dim;
}

}  // namespace arch_bench
