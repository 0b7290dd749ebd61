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

// Where each part of the prefill workspace starts (floats from its base). All fp32.
struct PerformerPrefillWorkspace {
  std::int64_t query_features = 0;  // [bh, tokens, m]   stabilised features of the queries
  std::int64_t key_features = 0;    // [bh, tokens, m]   ... and of the keys
  std::int64_t key_scale = 0;       // [bh, tokens]      c_j, each key's log-scale
  std::int64_t row_max = 0;         // [bh, tokens]      M at each token (prefix max, from the carried M)
  std::int64_t carried_max = 0;     // [bh]              M before the prefill (the state's reference)
  std::int64_t chunk_states = 0;    // [bh, chunks, m, dv] U_c, then S entering each chunk
  std::int64_t chunk_sums = 0;      // [bh, chunks, m]     likewise for z
  std::int64_t denominators = 0;    // [bh, tokens]      phi(q).z of every row (nonpositive counts)
  std::int64_t floats = 0;          // total
};

// Prefill in five stages, parallel over chunks:
//  1. features: per (bh, 16-token tile, q or k) the projections and stabilised features, and the
//     keys' log-scales c_j, into the workspace;
//  2. row_max: per bh, M_t = max(M_carried, c_0..c_t), an inclusive block scan (max) over tokens;
//  3. chunk_state: per (bh, chunk, 64 x 64 tile of S), U_c = sum_j exp(c_j - M_end(c)) f(k_j) v_j^T
//     (and the key sums), relative to the chunk's last M;
//  4. chunk_prefix: per (bh, element of S or z), the exclusive scan over chunks
//     S_in(c + 1) = S_in(c) exp(M_in(c) - M_end(c)) + U_c from the carried state, in place; the
//     total goes back to the state (relative to the final M, which stage 2 wrote);
//  5. chunk_output: per (bh, chunk, 64-column tile of dv), o_r = [f(q_r) S_in e^(M_in - M_r) +
//     sum_{j<=r} f(q_r).f(k_j) e^(c_j - M_r) v_j] / [the same with z and 1].
// Stages 3-5 run on the common ChunkwiseGrid (chunk_tile.hpp) over m x dv.
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
constexpr PerformerFeatureTile performer_feature_block(std::int64_t block, std::int64_t token_tiles) {
  PerformerFeatureTile tile;
  tile.keys = block % 2 == 1;
  block /= 2;
  tile.first_token = (block % token_tiles) * kPerformerFeatureTokens;
  tile.bh = block / token_tiles;
  return tile;
}

PerformerDecodePlan plan_performer_decode(const PerformerShape& shape);
PerformerPrefillPlan plan_performer_prefill(const PerformerShape& shape, std::int64_t tokens);

// Device bytes a CUDA cell holds beyond inputs, outputs, W and (S, z, M): the prefill's workspace,
// and the decode's one denominator per head.
std::int64_t performer_cuda_workspace_bytes(const Cell& cell);

// Why the CUDA kernels cannot run `cell` (beyond Mechanism::unsupported), or nullopt.
std::optional<std::string> performer_cuda_unsupported(const Cell& cell);

}  // namespace arch_bench
