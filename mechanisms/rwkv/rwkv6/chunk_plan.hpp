#pragma once
// Launch planning of RWKV-6's chunkwise tensor-core prefill (rwkv6/chunk_cuda.cu), bf16 storage:
// plain C++, compiled in every build and tested on the CPU (tests/test_rwkv6_chunk.cpp), with the
// CPU replay of the same arithmetic (chunk_replay.hpp).
//
// RWKV-6 is linear attention with a per-key-channel decay (gated linear attention): per head, with
// g_t = log w_t = max(-exp(d_t), -100) per key channel and b_t = sum_{m <= t} g_m inside a chunk
// (b_{-1} = 0),
//   scores   A_ts = sum_c r_tc k_sc exp(b_{t-1,c} - b_{s,c})   (s < t),   A_tt = sum_c r_tc u_c k_tc
//   output   o_t  = sum_{s <= t} A_ts v_s + (r_t . exp(b_{t-1}))^T S
//   state    S'   = diag(exp(b_last)) S + sum_s (k_s . exp(b_last - b_s)) v_s^T
// S being the state entering the chunk. A chunk is C = 64 tokens, four sub-chunks of 16 (one wmma
// tile each); per sub-chunk J and key channel, beta_t is the inclusive cumulative log-decay from
// J's first token and T_J = beta at J's last token (J's total). The pair weight of s < t is
// exp(sum of g over s+1 .. t-1), and every exponent the kernels take is such a sum over a run of
// tokens, never a negated one:
//   - diagonal blocks (t, s in one sub-chunk): exp(beta_{t-1} - beta_s) pair by pair in fp32 on the
//     SIMT cores, as flash-linear-attention's chunk_rwkv6 / GLA kernels do (Yang et al. 2024, "Gated
//     Linear Attention Transformers with Hardware-Efficient Training", section 4.2);
//   - off-diagonal blocks (t in sub-chunk I, s in J < I): factored at I's first token, the sub-chunk
//     boundary between them: Q~_t = r_t . exp(beta_{t-1}) (the decay from the boundary to t - 1) and
//     K^(I)_s = k_s . exp((T_J - beta_s) + sum_{J < m < I} T_m) (the decay from s + 1 to the
//     boundary), so A_ts = Q~_t . K^(I)_s, one wmma product per block. Both factors are <= 1: no
//     inverse decay exp(-beta) appears (it would overflow past 88 nats, one token at the clamp);
//   - inter-chunk: R^_t = r_t . exp(P_I + beta_{t-1}) with P_I = sum_{m < I} T_m (the decay from the
//     chunk's start to t - 1); the state: K~_s = k_s . exp((T_J - beta_s) + sum_{m > J} T_m).
// In fp32 a running sum of g <= 0 never rises (rounding is monotone), so T_J <= beta_s <= beta_{t-1}
// for s < t in one sub-chunk and every difference above is <= 0 as computed; the sums of totals are
// sums of values <= 0. Every exp takes an argument <= 0 and returns a value in [0, 1]: nothing
// overflows however strong the decays, with no clamp beyond the existing -100 per token (which keeps
// |beta| <= 1600 and |b| <= 6400 finite). A weight that underflows to 0 is a pair the decay has
// erased. Differences are only ever taken inside one 16-token sub-chunk (|beta| <= 1600, so an
// exponent near 0 carries at most ~1e-4 absolute error: a relative 1e-4 on the weight, far under
// bf16's 2^-8).
//
// Three kernels, as common/chunk_scalar_decay.cuh (which has a scalar decay per token):
//   (1) per (head, chunk) in parallel: U_c = K~^T V (four k-steps of 16 tokens) into the workspace
//       in bf16, and b_last = ((T_0 + T_1) + T_2) + T_3 (per key channel, fp32);
//   (2) per element pair of S, over the chunks in order: S_{c+1} = diag(exp(b_last,c)) S_c + U_c in
//       fp32 registers, leaving the state entering each chunk (bf16) in place of U_c and the state
//       after the last chunk in `state` (fp32);
//   (3) per (head, chunk) in parallel: the diagonal scores pairwise (fp32), the six off-diagonal
//       blocks Q~_I K^(I)_J^T on wmma, all rounded to bf16 into P [64 x 64] (lower block triangle),
//       then O = P V + R^ S_c, S_c read by wmma straight from the workspace.
//
// Bytes, the bound of these kernels, at B16 H8 d64 L8192 (bf16; 128 heads x 128 chunks, 8 KiB of
// bf16 state a chunk): the operands r, k, v, d and the output are 134 MB each; (1) reads k, v, d,
// (3) reads r, k, v, d and writes o: 1074 MB. States: (1) writes 134 MB, (2) reads and rewrites
// 268, (3) reads 134: 537 MB; the chunk log-decays 8 MB. ~1.62 GB in all (16-token chunks: ~3.3):
// ~0.34 ms at an H200's ~4.8 TB/s if at bandwidth, 0.6-0.9 ms at a more likely 40-55 % of it
// (flash-linear-attention's chunk_rwkv6: 1.70 ms). On the SIMT cores per head-chunk at d 64: 4 x 120
// diagonal pairs x d channels (one exp + two FMAs each, 31 k exps) and ~4.5 exps per element of Q~,
// R^, K^(I) and K~ (18 k): ~0.8 G exps at B16 H8 d64 L8192 (~0.2 ms of an H100's SFUs), overlapped
// with the loads. Tensor cores per head-chunk: U (2 C d^2), the off-diagonal scores (6 x 2 x 16^2
// d), P V (10 blocks x 2 x 16^2 d) and R^ S (2 C d^2): 1.6 MFLOP at d 64, 26 GFLOP in all.
#include <cstddef>
#include <cstdint>

#include "core/cell.hpp"

namespace arch_bench {

inline constexpr int kRwkv6ChunkTokens = 64;     // C: tokens per chunk
inline constexpr int kRwkv6ChunkSubTokens = 16;  // tokens per sub-chunk: one wmma tile
inline constexpr int kRwkv6ChunkSubs = kRwkv6ChunkTokens / kRwkv6ChunkSubTokens;  // 4
// The off-diagonal blocks (I, J), J < I, in the order (1,0) (2,0) (2,1) (3,0) (3,1) (3,2).
inline constexpr int kRwkv6ChunkOffDiagonalBlocks = kRwkv6ChunkSubs * (kRwkv6ChunkSubs - 1) / 2;
// Q~ is read only by the off-diagonal blocks, whose query sub-chunk is 1..3: 48 rows.
inline constexpr int kRwkv6ChunkQueryRows = kRwkv6ChunkTokens - kRwkv6ChunkSubTokens;
// The keys of the far blocks (I >= J + 2: (2,0) (3,0) (3,1)), one 16-row tile each; the adjacent
// blocks' keys (I = J + 1) are written over k's own rows (rwkv6_chunk_key_tile).
inline constexpr int kRwkv6ChunkFarKeyRows =
    kRwkv6ChunkSubTokens * (kRwkv6ChunkSubs - 1) * (kRwkv6ChunkSubs - 2) / 2;
inline constexpr int kRwkv6ChunkThreads = 256;  // 8 warps, every kernel
inline constexpr int kRwkv6ChunkWarps = kRwkv6ChunkThreads / 32;
inline constexpr int kRwkv6ChunkFragment = 16;  // the wmma tile (m = n = k = 16)
inline constexpr int kRwkv6ChunkMaxDim = 128;   // head_dim: a multiple of 16 up to this
// The channels one diagonal-score thread reads at once: 16 bytes of bf16 r and k, two float4 of beta.
inline constexpr int kRwkv6ChunkPairVector = 8;
// Row padding: bf16 rows by 8 elements (16 bytes), kernel (3)'s fp32 beta rows by 4 (16 bytes).
// Both make a row's stride an odd multiple of 16 bytes modulo 128, so the 16-byte reads of eight
// consecutive rows at one channel (a quarter warp of the diagonal scores: eight key tokens s) fall
// in eight different 16-byte bank groups: no conflict (checked in tests/test_rwkv6_chunk.cpp).
inline constexpr int kRwkv6ChunkBf16Pad = 8;
inline constexpr int kRwkv6ChunkBetaPad = 4;
static_assert(kRwkv6ChunkSubTokens == kRwkv6ChunkFragment, "a sub-chunk is one wmma tile of tokens");
static_assert(kRwkv6ChunkTokens % kRwkv6ChunkSubTokens == 0, "a chunk is whole sub-chunks");
static_assert(kRwkv6ChunkSubTokens * kRwkv6ChunkSubTokens == kRwkv6ChunkThreads,
              "one thread per score pair of a diagonal block");
static_assert(kRwkv6ChunkFragment % kRwkv6ChunkPairVector == 0, "head_dim is whole vectors of channels");

// Byte offsets of the shared-memory regions (each 128-byte aligned; wmma needs 32). A region whose
// contents are dead after a phase is reused by a later phase (the kernels' comments say where).
struct Rwkv6ChunkStateLayout {  // kernel (1)
  std::size_t beta = 0;         // beta (per sub-chunk), fp32 [C][dim]; then the staging tiles
  std::size_t totals = 0;       // T_J, fp32 [subs][dim]
  std::size_t k = 0;            // K~ = k . exp(b_last - b), bf16 [C][ld_bf16]
  std::size_t v = 0;            // V, bf16 [C][ld_bf16]
  std::size_t stage = 0;        // = beta: each warp's 16 x 16 fp32 tile, before bf16: fp32 [warps][16][16]
  std::size_t bytes = 0;
};
// Kernel (3) runs in phases (chunk_cuda.cu): (a) loads r, k, beta, the totals and u; (b) the
// diagonal scores into P; (c) element-wise Q~, R^ (over r, in place), the adjacent boundary keys
// (over k, in place) and the far ones; (d) V over beta (dead after (c)) and the off-diagonal
// scores through staging tiles placed after V; (e) O = P V + R^ S_c.
struct Rwkv6ChunkOutputLayout {
  std::size_t r = 0;             // r, bf16 [C][ld_bf16]; from (c) R^ = r . exp(b_{t-1})
  std::size_t k = 0;             // k, bf16 [C][ld_bf16]; from (c) K^(J+1) over the rows of sub-chunks J < 3
  std::size_t beta = 0;          // beta (per sub-chunk), fp32 [C][ld_beta]; dead after (c)
  std::size_t totals = 0;        // T_J, fp32 [subs][dim]
  std::size_t u = 0;             // the bonus u of this head, fp32 [dim]
  std::size_t q_local = 0;       // Q~ = r . exp(beta_{t-1}) of sub-chunks 1..3, bf16 [48][ld_bf16]
  std::size_t far_keys = 0;      // K^(I) of the far blocks (2,0) (3,0) (3,1), bf16 [48][ld_bf16]
  std::size_t p = 0;             // the scores, bf16 [C][ld_p] (blocks above the diagonal unused)
  std::size_t v = 0;             // = beta: V, bf16 [C][ld_bf16], from (d)
  std::size_t stage = 0;         // inside beta's region past V: each warp's 16 x 16 fp32 tile, from (d)
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
  int ld_bf16 = 0;  // bf16 row stride of r, k, K~, V, Q~, R^ and K^
  int ld_beta = 0;  // fp32 row stride of beta in kernel (3)
  int ld_p = 0;     // bf16 row stride of the scores
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
// The off-diagonal block `block` (0 .. 5) as (I, J): (1,0) (2,0) (2,1) (3,0) (3,1) (3,2).
struct Rwkv6ChunkBlock {
  int query_sub;  // I
  int key_sub;    // J < I
};
constexpr Rwkv6ChunkBlock rwkv6_chunk_off_diagonal_block(int block) {
  int query_sub = 1;
  while (query_sub * (query_sub + 1) / 2 <= block) ++query_sub;
  return {query_sub, block - query_sub * (query_sub - 1) / 2};
}
// Where kernel (3) keeps the 16 key rows K^(I)_J of the off-diagonal block (I, J): an adjacent block
// (I = J + 1) over k's own rows of sub-chunk J (each element K^(J+1)_s = k_s exp(T_J - beta_s) is
// written by the thread that read k_s, after the diagonal scores have read k); a far block in tile
// (I - 2)(I - 1) / 2 + J of the far-key region: (2,0) 0, (3,0) 1, (3,1) 2.
struct Rwkv6ChunkKeyTile {
  bool over_k;  // in the k region (else the far-key region)
  int row;      // the tile's first row in its region
};
constexpr Rwkv6ChunkKeyTile rwkv6_chunk_key_tile(int query_sub, int key_sub) {
  if (query_sub == key_sub + 1) return {true, kRwkv6ChunkSubTokens * key_sub};
  return {false, kRwkv6ChunkSubTokens * ((query_sub - 2) * (query_sub - 1) / 2 + key_sub)};
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
