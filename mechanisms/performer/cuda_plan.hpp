#pragma once
// Launch planning of the CUDA kernels of Performer attention (cuda.cu): grids, blocks, shared memory
// and the prefill workspace as plain functions, compiled in every build and tested on the CPU
// (tests/test_performer_cuda_plan.cpp). The kernels read their tile layout from the constants here.
//
// The GPU kernels compute what the CPU kernels do (cpu.hpp, reference.hpp): the same projection
// (packed [dk, rows], scaled by dk^(-1/4)), the same stabilised features and the causal running max
// M of the keys' log-scales, with S and z stored relative to exp(M).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "mechanisms/common/chunk_tile.hpp"
#include "mechanisms/performer/cpu.hpp"
#include "core/cell.hpp"

namespace arch_bench {

// Threads of every Performer kernel block; the kernels are compiled with this bound. The prefill's
// tiles are common/chunk_tile.hpp's, as linear_attention's (64-token chunks, 64 x 64 tiles of S,
// the output kernel walks m in steps of 32).
inline constexpr int kPerformerCudaThreads = kChunkTileThreads;
static_assert(kChunkTile == kPerformerChunk, "the GPU chunk is the CPU chunk");
// Tokens whose features one block of the feature kernel computes together: each thread keeps one
// projection accumulator per token, so W is read once per this many tokens, not once per token.
inline constexpr int kPerformerFeatureTokens = 16;

// Decode: one block per (batch, head) owns that head's S, z and M. Thread t < columns * row_groups
// handles value column t % columns and rows g, g + row_groups, ... of S (g = t / columns), as in
// linear_attention's decode. Shared memory (floats): x_q, x_k [dk], phi_q, phi_k [m], v [dv],
// partial numerators [row_groups][dv], reduction scratch [kPerformerReduceFloats].
inline constexpr int kPerformerReduceFloats = 2 * (kPerformerCudaThreads / 32) + 4;
struct PerformerDecodePlan {
  std::int64_t blocks = 0;
  int threads = kPerformerCudaThreads;
  int dk = 0;
  int dv = 0;
  int features = 0;         // m
  int projection_rows = 0;  // m (favor+) or m / 2 (trig)
  int row_groups = 0;
  PerformerFeatures kind = PerformerFeatures::favor_plus;
  std::size_t shared_bytes = 0;
};

// Where each part of the prefill workspace starts (floats from its base). fp32, except the features
// on the tensor-core path, which are stored in the precision their readers take them in (bf16, two
// bytes an element, each plane a whole number of 16-byte units): phi(q) rounded once (stage 5 rounds
// it so anyway), phi(k) as bf16 hi at key_features (what stage 5 reads) and lo at key_features_low
// (stage 3 reads hi + lo: the chunk states need phi(k) to ~2^-17, see PerformerPrefillPath).
struct PerformerPrefillWorkspace {
  std::int64_t query_features = 0;  // [bh, tokens, m]   stabilised features of the queries
  std::int64_t key_features = 0;    // [bh, tokens, m]   ... and of the keys (tensor cores: bf16 hi)
  std::int64_t key_features_low = 0;  // [bh, tokens, m] bf16 lo of the keys' (tensor cores only; else 0)
  std::int64_t key_scale = 0;       // [bh, tokens]      c_j, each key's log-scale
  std::int64_t row_max = 0;         // [bh, tokens]      M at each token (prefix max, from the carried M)
  std::int64_t carried_max = 0;     // [bh]              M before the prefill (the state's reference)
  std::int64_t chunk_states = 0;    // [bh, chunks, m, dv] U_c, then S entering each chunk (tensor
                                    // cores: S entering each chunk, written once)
  std::int64_t chunk_sums = 0;      // [bh, chunks, m]     likewise for z
  std::int64_t denominators = 0;    // [bh, tokens]      phi(q).z of every row (nonpositive counts)
  std::int64_t floats = 0;          // total
};

// Which kernels compute the prefill. The bf16 prefill runs stages 1, 3 + 4 and 5 on tensor cores
// (wmma bf16 16 x 16 x 16, fp32 accumulators); stage 2 (the running max) stays the SIMT kernel on
// both paths. Stages 3 and 4 are one pass there (performer_tensor_core_state_scan_kernel): per
// (head, 64 x 64 tile of S) a block walks the chunks in order with the running state in fp32
// accumulators, writes the state entering each chunk once, then weights it to the chunk's last M
// and adds the chunk's K~^T V_c on tensor cores; U_c is never stored and no prefix rereads it. The
// state carried across chunks is fp32 throughout.
// Stage 1 (cuda_tensor_core.cu) projects [64 tokens x dk] x [dk x projection_rows] per block. x is
// exactly bf16 there, but W rounded to bf16 would put 2^-9 relative on every term, and a feature
// exp(p - stabiliser) turns an absolute error in p into the same relative error (1-3% at dk 64, too
// much for bf16's 1e-2). So W is split once per cell into W_hi = bf16(W) and W_lo = bf16(W - W_hi)
// and each projection accumulates x W_hi + x W_lo: W is then held to ~2^-17 relative.
// Stages 3 and 5 (cuda_tensor_core_chunks.cu) split the two operands that carry the state the same
// way: the weighted keys K~ = e^(c_j - M_end) phi(k_j) of a chunk state, and the state S entering a
// chunk in the inter-chunk term. Rounded to bf16 once, they would put 2^-9 on every element of S,
// and an output is a signed sum of S's elements much smaller than they are (the replay: favor+'s
// error doubles, the state left behind misses 1e-4 by 8-26x). As hi + lo they are held to ~2^-17,
// so the state carried across chunks keeps fp32's precision where it matters. The rest is rounded
// to bf16 once, a relative 2^-9 per element that averages over the features and the chunk's
// tokens: phi(q) (of the scores and of the inter-chunk term, whose product is then weighted by
// e^(M_in - M_r) in fp32), phi(k) of the scores, and the weighted masked scores P. Every sum is
// fp32 (the accumulators, the key sums z as the sum of hi + lo, each row's denominator), and
// numerator and denominator take the same rounded queries and the same P, so those roundings move
// a row's weights, not their balance. Stage 1 stores the features in exactly those precisions
// (PerformerPrefillWorkspace): phi(q) bf16, phi(k) as bf16 hi (the scores) + lo (with hi, the
// chunk states' K~), 6 bytes a feature of a token instead of fp32's 8 and stage 5 reading 4
// instead of 8; the stabilisers and log-scales that stages 2-5 read (chunk maxima included) are
// fp32 from stage 1's fp32 projections. fp32 storage keeps the SIMT kernels throughout (1e-4
// needs fp32 products).
enum class PerformerPrefillPath { simt, tensor_core_bf16 };

// Tokens of one block of the tensor-core feature kernel (four 16-row wmma tiles), and its warps.
inline constexpr int kPerformerTensorCoreTokens = 64;
inline constexpr int kPerformerTensorCoreFragment = 16;
inline constexpr int kPerformerTensorCoreWarps = kPerformerCudaThreads / 32;
// Elements of padding after each row of the shared x tile (bf16): rows 16 bytes apart from a
// multiple of 128 spread the wmma row loads over the banks; wmma needs the stride a multiple of 8.
inline constexpr int kPerformerTensorCoreRowPad = 8;

// The tensor-core feature kernel: block = (head, 64-token tile, queries or keys), as
// performer_feature_block with 64-token tiles. Warp w takes the 16-column tiles w, w + 8, ... of the
// projections and, for each, all four 16-token row tiles (W's fragments are loaded once per column
// tile and used four times). favor+ runs the products twice: the first pass only takes each token's
// largest projection (the stabiliser), the second writes exp(p - max) straight to the workspace;
// products are cheap on tensor cores, and a second pass over the fp32 features in global memory is
// not (4 bytes x m per token, written, read and written again). Trig needs no maximum: one pass.
struct PerformerTensorCoreFeaturePlan {
  std::int64_t tokens = 0;
  std::int64_t token_tiles = 0;  // ceil(tokens / 64)
  std::int64_t blocks = 0;       // batch_heads * token_tiles * 2
  int dk = 0;
  int projection_rows = 0;  // n: m (favor+) or m / 2 (trig)
  int features = 0;         // m
  PerformerFeatures kind = PerformerFeatures::favor_plus;
  int dk_padded = 0;       // dk up to a multiple of 16 (W's rows and x's columns past dk are 0)
  int columns_padded = 0;  // n up to a multiple of 16 (W's columns past n are 0, never written)
  int ld_x = 0;            // dk_padded + kPerformerTensorCoreRowPad
  // Shared memory (bytes from the base, 128-byte aligned regions): x [64][ld_x] bf16, one fp32
  // 16 x 16 staging tile per warp (wmma stores accumulators only to memory), the per-warp row
  // maxima [warps][64], the row maxima [64] and |x~|^2 / 2 [64].
  std::size_t x = 0, stage = 0, partial = 0, top = 0, half_norm = 0;
  std::size_t shared_bytes = 0;
  // The split projection [2][dk_padded][columns_padded] bf16: W_hi, then W_lo.
  constexpr std::int64_t split_part_elements() const { return static_cast<std::int64_t>(dk_padded) * columns_padded; }
  constexpr std::int64_t split_elements() const { return 2 * split_part_elements(); }
};

// Stages 3 and 5 on tensor cores (cuda_tensor_core_chunks.cu): the SIMT kernels' grids
// (chunk_state_block, chunk_output_block: 64-token chunks, 64 x 64 tiles of S, 64-column tiles of
// the output) with bf16 tiles in shared memory. Shared memory in bytes from the base, each region
// 128-byte aligned (wmma needs 32-byte aligned tile pointers), the same for every shape: rows of
// bf16 tiles padded by 8 elements, of fp32 tiles by 4 (wmma's ld must be a multiple of 8 or 4; the
// padding moves consecutive rows to other banks).
inline constexpr int kPerformerTensorCoreStep = 32;  // features per step of the output kernel's loop
inline constexpr int kPerformerBf16Ld = kChunkTile + 8;                       // [.][64] bf16 tiles
inline constexpr int kPerformerStepLd = kPerformerTensorCoreStep + 8;         // [64][32] bf16 tiles
inline constexpr int kPerformerFloatLd = kChunkTile + 4;                      // [64][64] fp32 tiles
// Stages 3 + 4: block = (head, 64 features, 64 value columns), performer_state_scan_block; warp w
// holds the 16 x 16 tiles w and w + 8 of the running state (row tile = tile / 4) in its
// accumulators and moves them to and from global memory through its fp32 staging tile; per chunk
// the block stages K~ (hi, lo) and V_c here.
struct PerformerTensorCoreStateLayout {
  std::size_t k = 0;        // K~ = e^(c_j - M_end) phi(k_j) as bf16 hi [64 tokens][kPerformerBf16Ld]
  std::size_t k_low = 0;    // ... and lo, likewise
  std::size_t v = 0;        // V_c, bf16 [64 tokens][kPerformerBf16Ld]
  std::size_t stage = 0;    // fp32 [warps][16][16]
  std::size_t weights = 0;  // e^(c_j - M_end), fp32 [64]
  std::size_t bytes = 0;
};
// Stage 5: block = (head, chunk, 64 value columns). The loop over the m features in steps of 32
// stages phi(Q), phi(K) (both bf16 as stage 1 stored them) and the entering S; warp w accumulates
// the score tiles and output tiles w and w + 8 (row tile = tile / 4) in registers across the whole
// loop, the output tiles holding phi(Q) S_in. After it the scores go to `a` (over the loop's
// regions), the weighted masked scores to `p`; each warp then passes its output tiles through `a`
// once to weight their rows by e^(M_in - M_r) in fp32, adds P V, and stores them back to `a` for
// the epilogue's division.
struct PerformerTensorCoreOutputLayout {
  std::size_t q = 0, k = 0;  // bf16 [64][kPerformerStepLd]
  std::size_t s = 0;      // S entering the chunk as bf16 hi [32][kPerformerBf16Ld]
  std::size_t s_low = 0;  // ... and lo, likewise
  std::size_t loop_end = 0;
  std::size_t a = 0;  // scores, then outputs, fp32 [64][kPerformerFloatLd] (over q..s)
  std::size_t p = 0;  // masked, weighted scores, bf16 [64][kPerformerBf16Ld]
  std::size_t v = 0;  // V_c, bf16 [64][kPerformerBf16Ld]
  std::size_t z = 0;  // z entering the chunk, fp32 [32]
  std::size_t row_scale = 0, row_max = 0, key_scale = 0, denominator = 0;  // fp32 [64] each
  std::size_t bytes = 0;
};
// Warp w's two 16 x 16 tiles x = 0, 1 of a 64 x 64 block in both kernels: (row tile, column tile)
// = (w / 4 + 2x, w % 4). Both share the column tile, so a warp loads each B fragment once for the
// pair; together the 8 warps cover the 16 tiles once.
struct PerformerWarpTile {
  int row = 0, column = 0;
};
constexpr PerformerWarpTile performer_tensor_core_warp_tile(int warp, int x) {
  return {warp / (kChunkTile / kPerformerTensorCoreFragment) + 2 * x, warp % (kChunkTile / kPerformerTensorCoreFragment)};
}
static_assert(2 * kPerformerTensorCoreWarps * kPerformerTensorCoreFragment * kPerformerTensorCoreFragment ==
                  kChunkTile * kChunkTile,
              "each warp takes two of the 16 tiles of a 64 x 64 block");
// The tensor-core state scan's block: (head, key tile, value tile), value tile fastest, as
// chunk_state_block orders them for one chunk (the block sets `chunk` as it walks them).
constexpr ChunkTile performer_state_scan_block(std::int64_t block, std::int64_t key_tiles, std::int64_t value_tiles) {
  return chunk_state_block(block, 1, key_tiles, value_tiles);
}
PerformerTensorCoreStateLayout performer_tensor_core_state_layout();
PerformerTensorCoreOutputLayout performer_tensor_core_output_layout();

// Prefill in five stages, parallel over chunks:
//  1. features: per (bh, 16-token tile (64 on tensor cores), q or k) the projections and stabilised features, and the
//     keys' log-scales c_j, into the workspace;
//  2. row_max: per bh, M_t = max(M_carried, c_0..c_t), an inclusive block scan (max) over tokens;
//  3. chunk_state: per (bh, chunk, 64 x 64 tile of S), U_c = sum_j exp(c_j - M_end(c)) f(k_j) v_j^T
//     (and the key sums), relative to the chunk's last M;
//  4. chunk_prefix: per (bh, element of S or z), the exclusive scan over chunks
//     S_in(c + 1) = S_in(c) exp(M_in(c) - M_end(c)) + U_c from the carried state, in place; the
//     total goes back to the state (relative to the final M, which stage 2 wrote) (on tensor
//     cores 3 and 4 are one pass per (bh, 64 x 64 tile of S) over the chunks: PerformerPrefillPath);
//  5. chunk_output: per (bh, chunk, 64-column tile of dv), o_r = [f(q_r) S_in e^(M_in - M_r) +
//     sum_{j<=r} f(q_r).f(k_j) e^(c_j - M_r) v_j] / [the same with z and 1].
// Stages 3-5 run on the common ChunkwiseGrid (chunk_tile.hpp) over m x dv; stages 1, 3 + 4 and 5 on
// tensor cores for bf16 (PerformerPrefillPath).
struct PerformerPrefillPlan : ChunkwiseGrid {
  std::int64_t batch_heads = 0;
  std::int64_t tokens = 0;
  int dk = 0;
  int dv = 0;
  int features = 0;
  int projection_rows = 0;
  PerformerFeatures kind = PerformerFeatures::favor_plus;
  std::int64_t token_tiles = 0;   // ceil(tokens / kPerformerFeatureTokens)
  int threads = kPerformerCudaThreads;
  std::int64_t feature_blocks = 0;  // batch_heads * token_tiles * 2 (queries, keys)
  std::int64_t max_blocks = 0;      // batch_heads
  std::size_t feature_shared_bytes = 0;
  std::size_t state_shared_bytes = 0;
  std::size_t output_shared_bytes = 0;
  PerformerPrefillPath prefill_path = PerformerPrefillPath::simt;
  PerformerTensorCoreFeaturePlan tensor_core;  // stage 1 when prefill_path is tensor_core_bf16
  PerformerTensorCoreStateLayout tensor_core_state;    // stages 3 + 4 likewise
  std::int64_t state_scan_blocks = 0;  // ... their blocks: batch_heads * key_tiles * value_tiles
  PerformerTensorCoreOutputLayout tensor_core_output;  // stage 5 likewise
  PerformerPrefillWorkspace workspace;
  std::int64_t workspace_bytes() const;  // checked: throws SizeOverflow rather than wrapping
};

// The output kernel's shared memory (floats): the common layout, then three per-row values.
struct PerformerOutputSharedLayout : ChunkOutputSharedLayout {
  static constexpr int row_scale = ChunkOutputSharedLayout::floats;  // [64] e^(M_in - M_r)
  static constexpr int row_max = row_scale + kChunkTile;             // [64] M_r
  static constexpr int key_scale = row_max + kChunkTile;             // [64] c_j
  static constexpr int floats = key_scale + kChunkTile;
};
// Feature kernel: the tile's rows x [16][dk] and the per-token reductions [16][warps].
constexpr int performer_feature_shared_floats(int dk) {
  return kPerformerFeatureTokens * dk + kPerformerFeatureTokens * (kPerformerCudaThreads / 32) +
         2 * kPerformerFeatureTokens;
}

// Index maps shared by the kernels and the CPU tests.
constexpr int performer_decode_column(const PerformerDecodePlan& plan, int thread) { return thread % plan.dv; }
constexpr int performer_decode_group(const PerformerDecodePlan& plan, int thread) { return thread / plan.dv; }

struct PerformerFeatureTile {
  std::int64_t bh = 0;
  std::int64_t first_token = 0;
  bool keys = false;  // false: queries
};
// `tile_tokens`: kPerformerFeatureTokens (SIMT) or kPerformerTensorCoreTokens.
constexpr PerformerFeatureTile performer_feature_block(std::int64_t block, std::int64_t token_tiles,
                                                       int tile_tokens = kPerformerFeatureTokens) {
  PerformerFeatureTile tile;
  tile.keys = block % 2 == 1;
  block /= 2;
  tile.first_token = (block % token_tiles) * tile_tokens;
  tile.bh = block / token_tiles;
  return tile;
}

PerformerDecodePlan plan_performer_decode(const PerformerShape& shape);
PerformerPrefillPlan plan_performer_prefill(const PerformerShape& shape, std::int64_t tokens,
                                            PerformerPrefillPath prefill_path = PerformerPrefillPath::simt);
PerformerTensorCoreFeaturePlan plan_performer_tensor_core_features(const PerformerShape& shape, std::int64_t tokens);

// The path of a cell's prefill: tensor cores for a bf16 prefill (common/
// tensor_core_prefill.hpp), SIMT for fp32 and for the context fill of a decode cell (decode is
// unchanged: its context prefill stays the kernels its state was validated with).
PerformerPrefillPath performer_cuda_prefill_path(const Cell& cell);

// What a CUDA cell records as `gpu_kernel` (mechanisms/gpu_kernel_name.hpp): "prefill simt",
// kPerformerTensorCoreKernelName or "decode simt".
inline constexpr const char* kPerformerTensorCoreKernelName =
    "prefill wmma_bf16: features (W hi+lo), chunk states and their prefix, outputs; simt: row max";
std::string performer_gpu_kernel_name(const Cell& cell);

// Device bytes a CUDA cell holds beyond inputs, outputs, W and (S, z, M): the prefill's workspace
// (on tensor cores, also the split projection W_hi, W_lo), and the decode's one denominator per head.
std::int64_t performer_cuda_workspace_bytes(const Cell& cell);

// Why the CUDA kernels cannot run `cell` (beyond Mechanism::unsupported), or nullopt.
std::optional<std::string> performer_cuda_unsupported(const Cell& cell);

}  // namespace arch_bench
