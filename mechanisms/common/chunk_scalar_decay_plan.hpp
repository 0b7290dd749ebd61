#pragma once
// Launch planning of the chunkwise tensor-core prefill of "scalar-decay linear attention"
// (chunk_scalar_decay.cuh): per (batch, head) a state S (dk x dv, fp32) with one scalar decay per
// token, S_t = a_t S_{t-1} + k_t v_t^T, o_t = S_t^T q_t (retnet: a_t = gamma_h; Mamba-2's SSD:
// a_t = exp(dt_t A_h)). Plain C++, compiled in every build and tested on the CPU
// (tests/test_chunk_scalar_decay_plan.cpp).
//
// Three kernels, as linear attention's chunkwise prefill: (1) per chunk in parallel, the chunk's own
// contribution U_c = K_c^T diag(exp(b_last - b_j)) V_c and its total log-decay b_last (b: the
// inclusive cumulative log-decay inside the chunk); (2) an exclusive prefix over chunks per element
// of S, S_{c+1} = exp(b_last,c) S_c + U_c, leaving the state entering each chunk in place of U_c and
// the final state in S; (3) per chunk in parallel, O = ((Q K^T) . M) V + diag(exp(b_i)) Q S_c with
// M_ij = exp(b_i - b_j) for j <= i, else 0. The products run on tensor cores (wmma bf16 -> fp32);
// the decays and the carried S stay fp32, the per-chunk states U_c and S_c are bf16 in memory.
//
// Why bf16 per-chunk states and a separate prefix pass, in bytes moved (the kernels are bound by
// memory, not by the tensor cores). At B16 H8 d64 L8192 (retnet: dk = dv = 64; 128 heads x 128
// chunks x 4096 state elements = 67M): q, k, v and the output are 134 MB each in bf16; (1) reads
// k and v, (3) reads q, k, v and writes the output: 805 MB whatever the states.
//   fp32 states:  (1) writes 268 MB, (2) reads and rewrites 537, (3) reads 268: 1074 MB; with the
//                 operands 1879 MB, ~0.39 ms at an H200's ~4.8 TB/s (fla's chunk_simple_gla 0.42)
//   bf16 states:  134 + 268 + 134 = 537 MB; 1342 MB in all, ~0.28 ms (this)
//   fused state pass carrying S across chunks in registers (fla's chunk_fwd_h), writing each
//                 entering state once in bf16: 134 + 134 = 268 MB; 1074 MB, ~0.22 ms
// At Mamba-2's N = 128, P = 64 (dk = 128, dv = 64: 8192 elements a state) the state bytes double:
// 2147 MB fp32, 1074 MB bf16, 537 MB fused. The fused pass saves another 0.06 ms at B16 but puts
// each chunk's U_c product and its 16 KB of K and V loads on a sequential chain per head (or per
// column tile of S): at batch 1 (8 heads) that is 8-32 blocks on 132 SMs, 128 dependent steps at
// L8192, where the separate prefix walks the same chain with nothing but 8 loads a step in flight
// and kernel (1) runs every chunk in parallel. Issue 39 asks linear_attention's prefill not to be
// slower than today at B1, so both are written (chunk_scalar_decay_fused.cuh holds the fused pass)
// and the plan picks one (ScalarDecayStatePass): the fused pass where its grid, batch_heads x
// (dv / column tile) blocks, is one wave that covers every SM (SMs <= blocks <= 2 x SMs: B16 H8 on
// 132 SMs, 256 blocks of 32 columns), the three kernels elsewhere (B1 H8: at most 32 blocks; and
// grids of several waves, each wave a whole chain of dependent steps). docs/gpu-guide.md has the
// estimate behind the rule.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace arch_bench {

inline constexpr int kScalarDecayChunk = 64;     // C: tokens per chunk
inline constexpr int kScalarDecayThreads = 256;  // 8 warps per block, every kernel
inline constexpr int kScalarDecayFragment = 16;  // the wmma tile (m = n = k = 16)
inline constexpr int kScalarDecayMaxDim = 128;   // dk and dv: multiples of 16 up to this
// bf16 rows padded by 8 elements (16 bytes), fp32 rows by 4: the rows stay 32-byte aligned for
// wmma::load_matrix_sync while consecutive rows start in different banks.
inline constexpr int kScalarDecayBf16Pad = 8;
inline constexpr int kScalarDecayFloatPad = 4;
// Shared memory an sm_90 block may opt in to (cudaFuncAttributeMaxDynamicSharedMemorySize).
inline constexpr std::size_t kScalarDecayMaxSharedBytes = 227 * 1024;

// How the per-chunk states are made (kernels (1) and (2), or one fused pass), and what a cell asks for
// (its state_pass option, state_pass_option.hpp): auto picks by the grid (see above).
enum class ScalarDecayStatePass { three_kernel, fused };
enum class ScalarDecayStatePassChoice { automatic, three_kernel, fused };
// Column tiles of S a fused block may carry, widest first; 16 divides every supported dv. A tile
// holds at most kScalarDecayFusedMaxTileElements of S (dk x tile): 64 columns up to dk 64, 32 above.
inline constexpr int kScalarDecayFusedTiles[] = {64, 32, 16};
inline constexpr int kScalarDecayFusedMaxTile = 64;
inline constexpr int kScalarDecayFusedMaxTileElements = 4096;
// The most accumulator fragments a warp of the fused pass carries: 4096 / (16 x 16) / 8 warps.
inline constexpr int kScalarDecayFusedMaxFragments = 2;
// Resident blocks per SM the fused kernel is compiled for (__launch_bounds__): at most 128 registers
// a thread (the counts are in docs/gpu-guide.md; at 3 blocks, 80 registers, it spilled 108 bytes).
// With four fragments a warp (dk 128 x 64 columns) sm_90 spilled at 128: hence the tile cap above.
inline constexpr int kScalarDecayFusedMinBlocksPerSm = 2;

// How the fused pass's threads prefetch a chunk's [C][width] operand tile (K: width dk; V: the column
// tile), a pair of adjacent elements to a register: the block's threads cover rows_per_pass rows a
// pass, thread t taking the pair at column 2 (t % (width / 2)) of row t / (width / 2) (threads past
// rows_per_pass rows idle), then the rows rows_per_pass further on, one pass after another. The
// kernel (chunk_scalar_decay_fused.cuh) and the CPU tests both walk it through these functions.
constexpr int scalar_decay_pair_rows_per_pass(int width) { return kScalarDecayThreads / (width / 2); }
constexpr int scalar_decay_pair_column(int width, int thread) { return 2 * (thread % (width / 2)); }
constexpr int scalar_decay_pair_first_row(int width, int thread) { return thread / (width / 2); }
// The row of pass `pass` for a thread whose first row is `first_row`, or -1 where it has none.
constexpr int scalar_decay_pair_row(int first_row, int rows_per_pass, int pass) {
  const int row = first_row + pass * rows_per_pass;
  return first_row < rows_per_pass && row < kScalarDecayChunk ? row : -1;
}
// Passes the kernel's register arrays hold: enough for K at every dk (dk 96: 5 rows a pass, 13
// passes; dk 128: 4 rows, 16) and for V at every column tile (64: 8 rows, 8 passes).
inline constexpr int kScalarDecayFusedKeyPasses = 16;
inline constexpr int kScalarDecayFusedValuePasses = 8;

// Byte offsets of the shared-memory regions, each 128-byte aligned (wmma needs 32).
struct ScalarDecayStateLayout {  // kernel (1)
  std::size_t k = 0;             // K_c, bf16 [C][ld_k]
  std::size_t v = 0;             // V_c scaled by exp(b_last - b_j), bf16 [C][ld_v]
  std::size_t decay = 0;         // b, fp32 [C]
  std::size_t u = 0;             // each warp's 16 x 16 tile of U_c, fp32 [warps][16][16], before bf16
  std::size_t bytes = 0;
};
struct ScalarDecayOutputLayout {  // kernel (3)
  std::size_t q = 0;              // Q_c, then diag(exp(b_i)) Q_c in place, bf16 [C][ld_k]
  std::size_t k = 0;              // K_c, bf16 [C][ld_k]
  std::size_t v = 0;              // V_c, bf16 [C][ld_v]
  std::size_t s = 0;              // S entering the chunk, bf16 [dk][ld_v]
  std::size_t p = 0;              // (Q K^T) . M, bf16 [C][ld_p]
  std::size_t acc = 0;            // Q K^T, then O, fp32 [C][ld_acc]
  std::size_t decay = 0;          // b, fp32 [C]
  std::size_t bytes = 0;
};

// The fused state pass (chunk_scalar_decay_fused.cuh). The next chunk's operands wait in registers
// while this chunk's products read K and V here, so one buffer of each suffices; b has two (warp 0
// scans the next chunk's while the others still read this chunk's b_last).
struct ScalarDecayFusedLayout {
  std::size_t k = 0;             // K_c, bf16 [C][ld_k]
  std::size_t v = 0;             // V_c's column tile scaled by exp(b_last - b_j), bf16 [C][ld_fused_v]
  std::size_t decay = 0;         // b of this chunk and the next, fp32 [2][C]
  std::size_t stage = 0;         // each warp's 16 x 16 tile of the entering state, fp32 [warps][16][16]
  std::size_t bytes = 0;
};

struct ChunkScalarDecayPlan {
  std::int64_t batch_heads = 0;
  std::int64_t tokens = 0;
  int dk = 0;
  int dv = 0;
  std::int64_t chunks = 0;         // ceil(tokens / C); the last chunk may be shorter (zero-padded)
  int threads = kScalarDecayThreads;
  std::int64_t state_blocks = 0;   // batch_heads * chunks: block = bh * chunks + chunk
  std::int64_t prefix_blocks = 0;  // batch_heads * prefix_blocks_per_head
  std::int64_t prefix_blocks_per_head = 0;  // ceil(dk * dv / 2 / threads): one thread per pair of S
  std::int64_t output_blocks = 0;  // batch_heads * chunks
  int ld_k = 0;    // bf16 row stride of Q_c and K_c
  int ld_v = 0;    // bf16 row stride of V_c and S
  int ld_p = 0;    // bf16 row stride of the masked scores
  int ld_acc = 0;  // fp32 row stride of the scores and of O
  ScalarDecayStateLayout state_layout;
  ScalarDecayOutputLayout output_layout;
  // The state pass: fused (one block per (head, column tile of S) walking the chunks; kernels (1)
  // and (2) are not launched and chunk_log_decay is not allocated) or the three kernels.
  ScalarDecayStatePass state_pass = ScalarDecayStatePass::three_kernel;
  int fused_column_tile = 0;         // value columns of S per fused block (kScalarDecayFusedTiles)
  int fused_column_tiles = 0;        // dv / fused_column_tile
  std::int64_t fused_blocks = 0;     // batch_heads * fused_column_tiles: block = bh * tiles + tile
  int ld_fused_v = 0;                // bf16 row stride of the fused pass's V tile
  ScalarDecayFusedLayout fused_layout;
  // Workspace (from the cell's allocator, as floats): U_c, then the state entering chunk c, in
  // bf16 [batch_heads][chunks][dk][dv], two to a float (workspace_state_elements floats, half the
  // state elements: the launch takes a float pointer, as its callers allocate); and each chunk's
  // total log-decay, fp32 [batch_heads][chunks].
  std::int64_t workspace_state_elements = 0;
  std::int64_t workspace_decay_elements = 0;
  std::int64_t workspace_bytes() const { return 4 * (workspace_state_elements + workspace_decay_elements); }
  // The shared memory of the kernels this plan launches.
  std::size_t max_shared_bytes() const {
    const std::size_t first = state_pass == ScalarDecayStatePass::fused ? fused_layout.bytes : state_layout.bytes;
    return first > output_layout.bytes ? first : output_layout.bytes;
  }
};

// The fused pass's column tile: of the kScalarDecayFusedTiles dividing dv within
// kScalarDecayFusedMaxTileElements (dk x tile), the narrowest whose grid is one wave
// (batch_heads x dv / tile <= kScalarDecayFusedMinBlocksPerSm x multiprocessors: the most blocks,
// each resident from the first chunk to the last), else the widest (the fewest waves); with
// multiprocessors <= 0 the widest.
int scalar_decay_fused_column_tile(std::int64_t batch_heads, std::int64_t dk, std::int64_t dv, int multiprocessors);
// The state pass `choice` resolves to: automatic is fused where that tile's grid is one wave that
// gives every SM a block (multiprocessors <= blocks <= kScalarDecayFusedMinBlocksPerSm x
// multiprocessors), else the three kernels; with multiprocessors <= 0 (no device known) automatic
// is the three kernels.
ScalarDecayStatePass chunk_scalar_decay_state_pass(ScalarDecayStatePassChoice choice, std::int64_t batch_heads,
                                                   std::int64_t dk, std::int64_t dv, int multiprocessors);
// "fused" or "three_kernel" (the option's spelling), and the phrase a row's gpu_kernel carries:
// "fused state pass (256 blocks of 32 columns, auto: one wave on 132 SMs)",
// "three-kernel state pass (auto: 32 blocks < 132 SMs)", "three-kernel state pass (forced)".
const char* scalar_decay_state_pass_name(ScalarDecayStatePass pass);
std::string scalar_decay_state_pass_description(const ChunkScalarDecayPlan& plan, ScalarDecayStatePassChoice choice,
                                                int multiprocessors);
// What a prefill cell running `plan` records as gpu_kernel: "prefill chunkwise bf16 tensor cores, "
// and the state pass's description.
std::string scalar_decay_prefill_kernel_name(const ChunkScalarDecayPlan& plan, ScalarDecayStatePassChoice choice,
                                             int multiprocessors);

// Whether the tensor-core prefill takes these head sizes (dk, dv multiples of 16 in 16..128), or why not.
bool chunk_scalar_decay_supports(std::int64_t dk, std::int64_t dv);

// The plan for `batch_heads` heads of `tokens` tokens. Throws std::invalid_argument for head sizes
// chunk_scalar_decay_supports refuses, SizeOverflow where a count does not fit.
// `choice` and `multiprocessors` pick the state pass (chunk_scalar_decay_state_pass) and the fused
// pass's column tile (scalar_decay_fused_column_tile); the fused fields are filled whichever pass runs.
ChunkScalarDecayPlan plan_chunk_scalar_decay(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dk,
                                             std::int64_t dv,
                                             ScalarDecayStatePassChoice choice = ScalarDecayStatePassChoice::three_kernel,
                                             int multiprocessors = 0);

// Why `plan` cannot launch on any device, or nullopt: a grid past 2^31 - 1 blocks, or shared memory
// past kScalarDecayMaxSharedBytes (cell-level messages: the plan is a cell's prefill).
std::optional<std::string> chunk_scalar_decay_unlaunchable(const ChunkScalarDecayPlan& plan);

// The workspace bytes of that plan without building it (0 where the head sizes are not supported).
// The per-chunk states are the same bytes either way (U_c and the entering state share them); the
// fused pass needs no chunk_log_decay. A prediction made before the device is known counts
// `automatic` as the three kernels' (the larger, exact where they run).
std::int64_t chunk_scalar_decay_workspace_bytes(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dk,
                                                std::int64_t dv,
                                                ScalarDecayStatePassChoice choice = ScalarDecayStatePassChoice::three_kernel);

// Index maps shared by the kernels and the CPU tests.
// Tokens of chunk `chunk` (C, or fewer in the last chunk).
constexpr int scalar_decay_chunk_rows(std::int64_t tokens, std::int64_t chunk) {
  return tokens - chunk * kScalarDecayChunk < kScalarDecayChunk ? static_cast<int>(tokens - chunk * kScalarDecayChunk)
                                                                 : kScalarDecayChunk;
}
// Element (bf16) offset of chunk `chunk` of head bh in the workspace's states.
constexpr std::int64_t scalar_decay_state_offset(const ChunkScalarDecayPlan& plan, std::int64_t bh,
                                                 std::int64_t chunk) {
  return (bh * plan.chunks + chunk) * plan.dk * plan.dv;
}

}  // namespace arch_bench
