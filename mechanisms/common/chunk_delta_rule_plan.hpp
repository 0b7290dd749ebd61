#pragma once
// Launch planning of the chunkwise tensor-core prefill of the gated delta rule
// (chunk_delta_rule.cuh): per (batch, head) a state S (dk x dv, fp32),
//   S_t = a_t (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T,  o_t = S_t^T q_t
// (Gated DeltaNet: a_t = exp(g_t), q and k L2-normalised). Plain C++, compiled in every build and
// tested on the CPU (tests/test_chunk_delta_rule_plan.cpp; the arithmetic replayed against the fp64
// reference in tests/test_chunk_delta_rule_replay.cpp).
//
// The algebra (Yang et al. 2024, "Parallelizing Linear Transformers with the Delta Rule over
// Sequence Length", the WY representation / UT transform; with the gate, Yang, Kautz, Hatamizadeh
// 2024, "Gated Delta Networks"). Per chunk of C tokens, b the inclusive cumulative log-decay inside
// the chunk and S_c the state entering it:
//   A = strictly-lower(diag(beta) (K K^T) . Gamma),  Gamma_ij = exp(b_i - b_j)
//   T = (I + A)^-1 diag(beta)                        (forward substitution)
//   W = T diag(exp(b)) K,  U = T V                   (independent of S_c)
//   V'_c = U - W S_c                                 (the chunk's new values)
//   O = diag(exp(b)) Q S_c + ((Q K^T) . Gamma . causal) V'_c
//   S_{c+1} = exp(b_last) S_c + (diag(exp(b_last - b)) K)^T V'_c
// Two kernels: (1) "prepare", one block per (head, chunk) in parallel: everything that does not
// depend on S_c (W, U, the masked scores P, the decayed keys K~ = diag(exp(b_last - b)) K and
// queries Q~ = diag(exp(b)) Q, b_last) into a bf16 workspace; (2) "pass", one block per (head,
// value tile) walking the chunks in order with its columns of S in shared memory (fp32): V', O and
// the next S. Column j of S, of V' and of O depends on column j of S_c only, so a head's value
// columns split over independent blocks. Products on tensor cores (wmma bf16 -> fp32).
#include <cstddef>
#include <cstdint>

namespace arch_bench {

inline constexpr int kDeltaRuleChunk = 64;            // C: tokens per chunk
inline constexpr int kDeltaRulePrepareThreads = 256;  // 8 warps
// 8 warps: a value tile has 4 to 16 output tiles per product, so at the 32-column tile most plans
// take every warp computes one (a warp's tiles are a serial chain of wmma steps: the pass's
// per-chunk latency, which its chunks add up in sequence).
inline constexpr int kDeltaRulePassThreads = 256;
// The pass double-buffers a chunk's operands (W, K~, Q~, P, U's tile): chunk c + 1's are copied
// (cp.async) into one stage while chunk c's products read the other.
inline constexpr int kDeltaRulePassStages = 2;
inline constexpr int kDeltaRuleFragment = 16;         // the wmma tile (m = n = k = 16)
inline constexpr int kDeltaRuleMaxDim = 128;          // dk and dv: multiples of 16 up to this
// Value-tile widths the pass may take, widest first (each a multiple of 16).
inline constexpr int kDeltaRuleValueTiles[] = {64, 32, 16};
// bf16 rows padded by 8 elements (16 bytes), fp32 rows by 4: rows stay 32-byte aligned for
// wmma::load_matrix_sync while consecutive rows start in different banks.
inline constexpr int kDeltaRuleBf16Pad = 8;
inline constexpr int kDeltaRuleFloatPad = 4;
// Shared memory an sm_90 block may opt in to (cudaFuncAttributeMaxDynamicSharedMemorySize).
inline constexpr std::size_t kDeltaRuleMaxSharedBytes = 227 * 1024;

// Byte offsets of the shared-memory regions, each 128-byte aligned (wmma needs 32).
struct DeltaRulePrepareLayout {  // kernel (1)
  std::size_t q = 0;             // normalised Q_c, bf16 [C][ld_k]
  std::size_t k = 0;             // normalised K_c, bf16 [C][ld_k]
  std::size_t k_scaled = 0;      // diag(exp(b)) K_c, bf16 [C][ld_k]
  std::size_t v = 0;             // V_c, bf16 [C][ld_v]
  std::size_t t = 0;             // T, bf16 [C][ld_c]
  std::size_t a = 0;             // K K^T, then A, fp32 [C][ld_a]
  std::size_t acc = 0;           // Q K^T, then W, then U, fp32 [C][ld_acc]
  std::size_t decay = 0;         // b, fp32 [C]
  std::size_t beta = 0;          // beta, fp32 [C] (0 past the sequence)
  std::size_t bytes = 0;
};
struct DeltaRulePassOperands {  // one stage of kernel (2)'s double buffer, offsets from the stage's start
  std::size_t w = 0;            // W, bf16 [C][ld_k]
  std::size_t k = 0;            // K~, bf16 [C][ld_k]
  std::size_t q = 0;            // Q~, bf16 [C][ld_k]
  std::size_t p = 0;            // P, bf16 [C][ld_c]
  std::size_t u = 0;            // U's value tile, bf16 [C][ld_n]
  std::size_t bytes = 0;
};
struct DeltaRulePassLayout {  // kernel (2)
  std::size_t even = 0;       // the operands of chunks 0, 2, 4, ... (a DeltaRulePassOperands stage)
  std::size_t odd = 0;        // the operands of chunks 1, 3, 5, ...
  std::size_t v_new = 0;      // V'_c's value tile, bf16 [C][ld_n]
  std::size_t s = 0;          // the block's columns of S, fp32 [dk][ld_s]
  std::size_t s_operand = 0;  // S_c rounded to bf16 [dk][ld_n]
  std::size_t acc = 0;        // W S_c, then O, fp32 [C][ld_s]
  std::size_t bytes = 0;
};

struct ChunkDeltaRulePlan {
  std::int64_t batch_heads = 0;
  std::int64_t tokens = 0;
  int dk = 0;
  int dv = 0;
  std::int64_t chunks = 0;  // ceil(tokens / C); the last chunk may be shorter (zero-padded)
  std::int64_t prepare_blocks = 0;  // batch_heads * chunks: block = bh * chunks + chunk
  int value_tile = 0;               // value columns per pass block (a kDeltaRuleValueTiles width dividing dv)
  int value_tiles = 0;              // dv / value_tile
  std::int64_t pass_blocks = 0;     // batch_heads * value_tiles: block = bh * value_tiles + tile
  int ld_k = 0;    // bf16 row stride of the [C][dk] tiles
  int ld_v = 0;    // bf16 row stride of V_c
  int ld_c = 0;    // bf16 row stride of T and P ([C][C])
  int ld_a = 0;    // fp32 row stride of A
  int ld_acc = 0;  // fp32 row stride of the prepare kernel's accumulator (max(C, dk, dv) wide)
  int ld_n = 0;    // bf16 row stride of the pass kernel's value tiles
  int ld_s = 0;    // fp32 row stride of the pass kernel's S and accumulator
  DeltaRulePrepareLayout prepare_layout;
  DeltaRulePassOperands pass_operands;  // inside each stage of pass_layout
  DeltaRulePassLayout pass_layout;
  int pass_blocks_per_sm = 0;  // pass blocks an sm_90 multiprocessor holds at once (shared memory, threads)
  // Workspace, one bf16 array of five regions, each [batch_heads][chunks][C][width] with every
  // chunk C rows long (rows past the sequence hold 0): W, K~, Q~ (width dk), P (width C), U (width
  // dv); and one fp32 array of each chunk's b_last [batch_heads][chunks].
  std::int64_t workspace_key_elements = 0;    // one of W, K~, Q~
  std::int64_t workspace_score_elements = 0;  // P
  std::int64_t workspace_value_elements = 0;  // U
  std::int64_t workspace_decay_elements = 0;  // b_last (fp32)
  constexpr std::int64_t workspace_bf16_elements() const {
    return 3 * workspace_key_elements + workspace_score_elements + workspace_value_elements;
  }
  constexpr std::int64_t workspace_bytes() const { return 2 * workspace_bf16_elements() + 4 * workspace_decay_elements; }
  // Element offsets of the regions in the bf16 workspace (constexpr: the kernels call them).
  constexpr std::int64_t w_offset() const { return 0; }
  constexpr std::int64_t k_offset() const { return workspace_key_elements; }
  constexpr std::int64_t q_offset() const { return 2 * workspace_key_elements; }
  constexpr std::int64_t p_offset() const { return 3 * workspace_key_elements; }
  constexpr std::int64_t u_offset() const { return 3 * workspace_key_elements + workspace_score_elements; }
  // Byte offset of the stage holding chunk `chunk`'s operands (the kernel calls it).
  constexpr std::size_t pass_stage(std::int64_t chunk) const {
    return chunk % 2 == 0 ? pass_layout.even : pass_layout.odd;
  }
  std::size_t max_shared_bytes() const {
    return prepare_layout.bytes > pass_layout.bytes ? prepare_layout.bytes : pass_layout.bytes;
  }
};

// Whether the tensor-core prefill takes these head sizes (dk, dv multiples of 16 in 16..128).
bool chunk_delta_rule_supports(std::int64_t dk, std::int64_t dv);

// The pass kernel's shared memory for key width dk and value tile `tile`: one stage of its double
// buffer (offsets from the stage's start), and the whole layout (two stages, V', S, S's bf16 copy,
// the accumulator). plan_chunk_delta_rule's pass_operands and pass_layout are these at its tile.
DeltaRulePassOperands chunk_delta_rule_pass_operands(int dk, int tile);
DeltaRulePassLayout chunk_delta_rule_pass_layout(int dk, int tile);

// Pass blocks an sm_90 multiprocessor holds at once with `pass_bytes` of dynamic shared memory each
// (chunk_pass_occupancy.hpp: the fewer of what its shared memory and its threads allow).
int chunk_delta_rule_pass_blocks_per_sm(std::size_t pass_bytes);

// The pass kernel's cost at value tile `tile` (chunk_pass_occupancy.hpp): the grid's waves
// (batch_heads * dv / tile blocks over multiprocessors * blocks_per_sm) times the wmma steps of the
// longest warp's chain per chunk: W S_c and Q~ S_c + P V' ((C / 16) (tile / 16) output tiles, dk / 16
// and dk / 16 + C / 16 steps), K~^T V' ((dk / 16) (tile / 16) tiles, C / 16 steps).
std::int64_t chunk_delta_rule_pass_cost(std::int64_t batch_heads, std::int64_t dk, std::int64_t dv, int tile,
                                        int blocks_per_sm, int multiprocessors);

// The value tile of the pass kernel: of kDeltaRuleValueTiles dividing dv, the one of least
// chunk_delta_rule_pass_cost at the blocks per SM its shared memory allows (dk's operands, double
// buffered), the widest of equals (every value tile of a head re-reads the chunk's W, K~, Q~ and P:
// a wider tile reads them fewer times). multiprocessors <= 0: the widest dividing dv.
int chunk_delta_rule_value_tile(std::int64_t batch_heads, std::int64_t dk, std::int64_t dv, int multiprocessors);

// The plan for `batch_heads` heads of `tokens` tokens. Throws std::invalid_argument for head sizes
// chunk_delta_rule_supports refuses, SizeOverflow where a count does not fit.
ChunkDeltaRulePlan plan_chunk_delta_rule(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dk,
                                         std::int64_t dv, int multiprocessors);

// The workspace bytes of such a plan (independent of the value tile; 0 where the sizes are not supported).
std::int64_t chunk_delta_rule_workspace_bytes(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dk,
                                              std::int64_t dv);

// Index maps shared by the kernels and the CPU tests.
// Tokens of chunk `chunk` (C, or fewer in the last chunk).
constexpr int delta_rule_chunk_rows(std::int64_t tokens, std::int64_t chunk) {
  return tokens - chunk * kDeltaRuleChunk < kDeltaRuleChunk ? static_cast<int>(tokens - chunk * kDeltaRuleChunk)
                                                             : kDeltaRuleChunk;
}
// Element offset of (head bh, chunk) inside a workspace region of row width `width`.
constexpr std::int64_t delta_rule_chunk_offset(const ChunkDeltaRulePlan& plan, std::int64_t bh, std::int64_t chunk,
                                               int width) {
  return (bh * plan.chunks + chunk) * kDeltaRuleChunk * width;
}

}  // namespace arch_bench
