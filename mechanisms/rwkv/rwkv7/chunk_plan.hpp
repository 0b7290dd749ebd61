#pragma once
// Launch planning of RWKV-7's chunkwise tensor-core prefill (rwkv7/chunk_cuda.cu), bf16 storage:
// plain C++, compiled in every build and tested on the CPU (tests/test_rwkv7_chunk_plan.cpp), with
// the CPU replay of the same arithmetic (chunk_replay.hpp, tests/test_rwkv7_chunk_replay.cpp).
//
// The algebra is rwkv7/cpu.hpp's chunkwise WY/UT form (the generalised delta rule with a diagonal
// decay) in the kernels' column convention, H [key][value]. Per chunk of C tokens, e_t the running
// product of w over the chunk's tokens up to t (per key channel, e_{-1} = 1), H_0 the state entering:
//   rows   A^ = a e_{t-1},  R^ = r e_t,  B' = b / e_s,  K' = k / e_s       (per key channel)
//   scores A_ab = strict(A^ B'^T), A_ak = strict(A^ K'^T), Q_rb = lower(R^ B'^T), Q_rk = lower(R^ K'^T)
//   T = (I - A_ab)^{-1},  M = T A_ak                                      (forward substitution)
//   W = T A^                                                              (independent of H_0)
//   U = W H_0 + M V                                                       (the values the tokens remove)
//   O = R^ H_0 + Q_rb U + Q_rk V
//   H_C = diag(e_last) H_0 + B~^T U + K~^T V,  B~ = b e_last / e_s,  K~ = k e_last / e_s
// The pair weights e_{t-1}/e_s are factorised into a row and a column term, which stay normal fp32
// (and bf16) numbers because RWKV-7's decay is bounded: |log w| <= e^{-0.5}, so over C = 32 tokens
// e_t >= e^{-19.4} (the bound rwkv7/chunkwise.cpp states).
// Two kernels, as common/chunk_delta_rule.cuh (which has a scalar decay and beta):
//   (1) "prepare", one block per (head, chunk) in parallel: e, the four score blocks on tensor cores,
//       T and M by forward substitution in fp32, then W on tensor cores; into the workspace (bf16):
//       W, R^, B~, K~ (C x d each), M, P_rb = Q_rb, P_rk = Q_rk (C x C each), and e_last (fp32, d);
//   (2) "pass", one block per (head, value tile) walking the chunks in order with its columns of H
//       in shared memory (fp32): U, O and the next H. Value columns are independent (as in GDN).
//       M V and Q_rk V are formed there, not in (1): C x C operands instead of C x d products cost
//       fewer bytes for d > 24, and U and O are then rounded to bf16 once each, not twice.
// Products: wmma 16 x 16 x 16, bf16 operands, fp32 accumulators.
//
// Bytes at B16 H8 d64 L8192 (bf16; 128 heads x 256 chunks): the six inputs 134 MB each, read by
// (1) (805 MB), v again by (2) (134 MB), the output 134 MB. The workspace is 4 C d + 3 C^2 bf16 + d
// fp32 per chunk = 22.8 KB, 747 MB written by (1); (2) reads all of it once per value tile (2 tiles
// of 32 columns on an H200's 132 SMs): 1.5 GB requested, ~0.75 GB from DRAM where a head's tiles,
// walking the same chunks at about the same time, hit L2. ~2.6 GB from DRAM, ~0.55 ms at an H200's
// 4.8 TB/s. FLOPs per chunk: scores 4 x 2 C^2 d, W 2 C^2 d, the pass 2 x 2 C d^2 (W H, R^ H),
// 3 x 2 C^2 d (M V, P_rb U, P_rk V), 2 x 2 C d^2 (B~^T U, K~^T V): ~2.2 MFLOP at d = 64, ~70 GFLOP
// in all, < 0.1 ms of tensor cores. The pass is sequential over 256 chunks per head, so its
// per-chunk latency sets its time: it double-buffers each chunk's operands (copied a chunk ahead,
// cp.async) so that a chunk is a warp's wmma chain and five barriers (~1 us), not a round of
// global loads; and it picks the value tile by waves x that chain (common/chunk_pass_occupancy.hpp).
#include <cstddef>
#include <cstdint>

#include "core/cell.hpp"

namespace arch_bench {

inline constexpr int kRwkv7ChunkTokens = 32;          // C: tokens per chunk (rwkv7/cpu.hpp's kRwkv7Chunk)
inline constexpr int kRwkv7ChunkPrepareThreads = 256;  // 8 warps
inline constexpr int kRwkv7ChunkPassThreads = 128;     // 4 warps
inline constexpr int kRwkv7ChunkFragment = 16;         // the wmma tile (m = n = k = 16)
inline constexpr int kRwkv7ChunkMaxDim = 128;          // head_dim: a multiple of 16 up to this
// Value-tile widths the pass may take, widest first (each a multiple of 16).
inline constexpr int kRwkv7ChunkValueTiles[] = {64, 32, 16};
// bf16 rows padded by 8 elements (16 bytes), fp32 rows by 4: rows stay 32-byte aligned for wmma
// while consecutive rows start in different banks.
inline constexpr int kRwkv7ChunkBf16Pad = 8;
inline constexpr int kRwkv7ChunkFloatPad = 4;
static_assert(kRwkv7ChunkTokens % kRwkv7ChunkFragment == 0, "a chunk is whole wmma tiles of tokens");
static_assert(2 * kRwkv7ChunkTokens <= kRwkv7ChunkPrepareThreads, "one thread per column of [T | M]");
static_assert(kRwkv7ChunkMaxDim <= kRwkv7ChunkPrepareThreads, "one thread per key channel's decays");
// e_t >= exp(-C e^{-0.5}) = e^{-19.4}: 1 / e_t and the factorised pair weights stay normal fp32.
static_assert(kRwkv7ChunkTokens * 0.60653066 < 80.0, "rwkv7's chunk is too long for the factorised decays");

// Byte offsets of the shared-memory regions (each 128-byte aligned, common/smem_layout.hpp).
struct Rwkv7ChunkPrepareLayout {  // kernel (1)
  std::size_t decay = 0;          // e_t, fp32 [C][dim]
  std::size_t a = 0;              // A^, bf16 [C][ld_k]
  std::size_t r = 0;              // R^, bf16 [C][ld_k]
  std::size_t b = 0;              // B', bf16 [C][ld_k]
  std::size_t k = 0;              // K', bf16 [C][ld_k]
  std::size_t v = 0;              // V, bf16 [C][ld_k]
  std::size_t scores = 0;         // A_ab, A_ak, Q_rb, Q_rk, fp32 [4][C][ld_score]
  std::size_t t = 0;              // T, bf16 [C][ld_c]
  std::size_t acc = 0;            // W, fp32 [C][ld_acc]
  std::size_t bytes = 0;
};
struct Rwkv7ChunkPassOperands {  // one stage of kernel (2)'s double buffer, offsets from the stage's start
  std::size_t w = 0;             // W, bf16 [C][ld_k]
  std::size_t r = 0;             // R^, bf16 [C][ld_k]
  std::size_t b = 0;             // B~, bf16 [C][ld_k]
  std::size_t k = 0;             // K~, bf16 [C][ld_k]
  std::size_t m = 0;             // M, bf16 [C][ld_c]
  std::size_t p_rb = 0;          // P_rb = Q_rb, bf16 [C][ld_c]
  std::size_t p_rk = 0;          // P_rk = Q_rk, bf16 [C][ld_c]
  std::size_t v = 0;             // V's value tile, bf16 [C][ld_n] (0 past the sequence)
  std::size_t decay = 0;         // e_last, fp32 [dim]
  std::size_t bytes = 0;
};
struct Rwkv7ChunkPassLayout {  // kernel (2)
  std::size_t even = 0;        // the operands of chunks 0, 2, 4, ... (an Rwkv7ChunkPassOperands stage)
  std::size_t odd = 0;         // the operands of chunks 1, 3, 5, ...
  std::size_t u = 0;           // U's value tile, bf16 [C][ld_n]
  std::size_t s = 0;           // the block's columns of H, fp32 [dim][ld_s]
  std::size_t s_operand = 0;   // H_0 rounded to bf16, [dim][ld_n]
  std::size_t acc = 0;         // U, then O, fp32 [C][ld_s]
  std::size_t bytes = 0;
};

struct Rwkv7ChunkPlan {
  std::int64_t batch_heads = 0;
  std::int64_t tokens = 0;
  int dim = 0;
  std::int64_t chunks = 0;          // ceil(tokens / C); the last may be shorter (zero-padded)
  std::int64_t prepare_blocks = 0;  // batch_heads * chunks: block = bh * chunks + chunk
  int value_tile = 0;               // value columns per pass block (a kRwkv7ChunkValueTiles width dividing dim)
  int value_tiles = 0;              // dim / value_tile
  std::int64_t pass_blocks = 0;     // batch_heads * value_tiles: block = bh * value_tiles + tile
  int ld_k = 0;      // bf16 row stride of the [C][dim] tiles
  int ld_c = 0;      // bf16 row stride of [C][C] tiles
  int ld_score = 0;  // fp32 row stride of the score blocks
  int ld_acc = 0;    // fp32 row stride of the prepare kernel's accumulator ([C][dim])
  int ld_n = 0;      // bf16 row stride of the pass kernel's value tiles
  int ld_s = 0;      // fp32 row stride of the pass kernel's H and accumulator
  Rwkv7ChunkPrepareLayout prepare_layout;
  Rwkv7ChunkPassOperands pass_operands;  // inside each stage of pass_layout
  Rwkv7ChunkPassLayout pass_layout;
  int pass_blocks_per_sm = 0;  // pass blocks an sm_90 multiprocessor holds at once (common/chunk_pass_occupancy.hpp)
  // Workspace: one bf16 array of seven regions, each [batch_heads][chunks][C][width] with every chunk
  // C rows long (rows past the sequence hold 0): W, R^, B~, K~ (width dim), M, P_rb, P_rk (width C);
  // then one fp32 array of each chunk's e_last [batch_heads][chunks][dim], 16-byte aligned.
  std::int64_t workspace_row_elements = 0;    // one of W, R^, B~, K~
  std::int64_t workspace_score_elements = 0;  // one of M, P_rb, P_rk
  std::int64_t workspace_decay_elements = 0;  // e_last (fp32)
  constexpr std::int64_t workspace_bf16_elements() const {
    return 4 * workspace_row_elements + 3 * workspace_score_elements;
  }
  // The bf16 array rounded up to whole 16-byte vectors, then the fp32 array.
  constexpr std::int64_t decay_byte_offset() const { return (2 * workspace_bf16_elements() + 15) / 16 * 16; }
  constexpr std::int64_t workspace_bytes() const { return decay_byte_offset() + 4 * workspace_decay_elements; }
  // As floats (the cell's allocator hands out float buffers; workspace_bytes() is a multiple of 4).
  constexpr std::int64_t workspace_floats() const { return workspace_bytes() / 4; }
  // Element offsets of the bf16 regions (constexpr: the kernels call them).
  constexpr std::int64_t w_offset() const { return 0; }
  constexpr std::int64_t r_offset() const { return workspace_row_elements; }
  constexpr std::int64_t b_offset() const { return 2 * workspace_row_elements; }
  constexpr std::int64_t k_offset() const { return 3 * workspace_row_elements; }
  constexpr std::int64_t m_offset() const { return 4 * workspace_row_elements; }
  constexpr std::int64_t p_rb_offset() const { return 4 * workspace_row_elements + workspace_score_elements; }
  constexpr std::int64_t p_rk_offset() const { return 4 * workspace_row_elements + 2 * workspace_score_elements; }
  // Byte offset of the stage holding chunk `chunk`'s operands (the kernel calls it).
  constexpr std::size_t pass_stage(std::int64_t chunk) const {
    return chunk % 2 == 0 ? pass_layout.even : pass_layout.odd;
  }
  std::size_t max_shared_bytes() const {
    return prepare_layout.bytes > pass_layout.bytes ? prepare_layout.bytes : pass_layout.bytes;
  }
};

// Whether the chunkwise prefill takes this head_dim (a multiple of 16 in 16..128).
bool rwkv7_chunk_supports(std::int64_t dim);
// Whether a CUDA cell's prefill runs chunkwise: bf16 prefill with a head_dim it takes (fp32 and
// decode keep the recurrence of rwkv7/cuda.cu).
bool rwkv7_cuda_prefill_is_chunked(const Cell& cell);

// The pass kernel's shared memory at head_dim `dim` and value tile `tile`: one stage of its double
// buffer (offsets from the stage's start), and the whole layout (two stages, U, H, H's bf16 copy,
// the accumulator). plan_rwkv7_chunk's pass_operands and pass_layout are these at its tile.
Rwkv7ChunkPassOperands rwkv7_chunk_pass_operands(int dim, int tile);
Rwkv7ChunkPassLayout rwkv7_chunk_pass_layout(int dim, int tile);

// The pass's cost at value tile `tile` (common/chunk_pass_occupancy.hpp): the grid's waves
// (batch_heads * dim / tile blocks over multiprocessors * blocks_per_sm) times the wmma steps of the
// longest warp's chain per chunk: U = W H_0 + M V and O = R^ H_0 + P_rb U + P_rk V ((C / 16)
// (tile / 16) output tiles, dim / 16 + C / 16 and dim / 16 + 2 C / 16 steps), H's update ((dim / 16)
// (tile / 16) tiles, 2 C / 16 steps).
std::int64_t rwkv7_chunk_pass_cost(std::int64_t batch_heads, std::int64_t dim, int tile, int blocks_per_sm,
                                   int multiprocessors);

// The pass's value tile: of kRwkv7ChunkValueTiles dividing dim, the one of least
// rwkv7_chunk_pass_cost at the blocks per SM its double-buffered shared memory allows, the widest of
// equals (each of a head's tiles re-reads the chunk's W, R^, B~, K~, M, P_rb, P_rk);
// multiprocessors <= 0: the widest dividing dim.
int rwkv7_chunk_value_tile(std::int64_t batch_heads, std::int64_t dim, int multiprocessors);

// The plan; throws std::invalid_argument for a head_dim rwkv7_chunk_supports refuses or negative
// counts, SizeOverflow where a count does not fit.
Rwkv7ChunkPlan plan_rwkv7_chunk(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dim, int multiprocessors);

// The workspace bytes of a cell's CUDA prefill (0 where it is not chunked; independent of the value tile).
std::int64_t rwkv7_cuda_workspace_bytes(const Cell& cell);

// Index maps shared by the kernels, the replay and the tests.
constexpr int rwkv7_chunk_rows(std::int64_t tokens, std::int64_t chunk) {
  return tokens - chunk * kRwkv7ChunkTokens < kRwkv7ChunkTokens ? static_cast<int>(tokens - chunk * kRwkv7ChunkTokens)
                                                                 : kRwkv7ChunkTokens;
}
// Element offset of (head bh, chunk) inside a bf16 workspace region of row width `width`.
constexpr std::int64_t rwkv7_chunk_offset(const Rwkv7ChunkPlan& plan, std::int64_t bh, std::int64_t chunk, int width) {
  return (bh * plan.chunks + chunk) * kRwkv7ChunkTokens * width;
}
// Element offset of chunk `chunk`'s e_last of head bh in the fp32 workspace array.
constexpr std::int64_t rwkv7_chunk_decay_offset(const Rwkv7ChunkPlan& plan, std::int64_t bh, std::int64_t chunk) {
  return (bh * plan.chunks + chunk) * plan.dim;
}

}  // namespace arch_bench
