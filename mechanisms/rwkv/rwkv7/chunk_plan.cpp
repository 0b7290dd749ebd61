#include "mechanisms/rwkv/rwkv7/chunk_plan.hpp"

#include <stdexcept>
#include <string>

#include "core/checked_size.hpp"
#include "mechanisms/common/chunk_pass_grid.hpp"
#include "mechanisms/common/chunk_pass_occupancy.hpp"

namespace arch_bench {

bool rwkv7_chunk_supports(std::int64_t dim) { return fits_wmma_tiles(dim, kRwkv7ChunkFragment, kRwkv7ChunkMaxDim); }

bool rwkv7_cuda_prefill_is_chunked(const Cell& cell) {
  return cell.phase == Phase::prefill && cell.dtype == DType::bfloat16 && rwkv7_chunk_supports(cell.head_dim);
}

namespace {

constexpr int kC = kRwkv7ChunkTokens;
constexpr std::size_t kBf16 = 2, kFloat = 4, kRows = kC;

// Row strides of the pass kernel's value tiles (bf16) and of its H and accumulator (fp32).
constexpr int value_stride(int tile) { return tile + kRwkv7ChunkBf16Pad; }
constexpr int state_stride(int tile) { return tile + kRwkv7ChunkFloatPad; }

}  // namespace

Rwkv7ChunkPassOperands rwkv7_chunk_pass_operands(int dim, int tile) {
  const std::size_t row_tile = tile_bytes(kRows, dim + kRwkv7ChunkBf16Pad, kBf16);
  const std::size_t chunk_tile = tile_bytes(kRows, kC + kRwkv7ChunkBf16Pad, kBf16);
  return place_shared_layout<Rwkv7ChunkPassOperands>(row_tile, row_tile, row_tile, row_tile, chunk_tile, chunk_tile,
                                                     chunk_tile, tile_bytes(kRows, value_stride(tile), kBf16),
                                                     static_cast<std::size_t>(dim) * kFloat);
}

Rwkv7ChunkPassLayout rwkv7_chunk_pass_layout(int dim, int tile) {
  const std::size_t stage = rwkv7_chunk_pass_operands(dim, tile).bytes;
  return place_shared_layout<Rwkv7ChunkPassLayout>(
      stage, stage, tile_bytes(kRows, value_stride(tile), kBf16), tile_bytes(dim, state_stride(tile), kFloat),
      tile_bytes(dim, value_stride(tile), kBf16), tile_bytes(kRows, state_stride(tile), kFloat));
}

std::int64_t rwkv7_chunk_pass_cost(std::int64_t batch_heads, std::int64_t dim, int tile, int blocks_per_sm,
                                   int multiprocessors) {
  constexpr std::int64_t kF = kRwkv7ChunkFragment, kRowTiles = kC / kF;
  const std::int64_t columns = tile / kF, keys = dim / kF;
  const std::int64_t steps = chunk_pass_warp_steps({{kRowTiles * columns, keys + kRowTiles},      // U
                                                    {kRowTiles * columns, keys + 2 * kRowTiles},  // O
                                                    {keys * columns, 2 * kRowTiles}},             // H
                                                   kRwkv7ChunkPassThreads / 32);
  const std::int64_t blocks = checked_product(batch_heads, dim / tile);
  return chunk_pass_waves(blocks, multiprocessors, blocks_per_sm) * steps;
}

int rwkv7_chunk_value_tile(std::int64_t batch_heads, std::int64_t dim, int multiprocessors) {
  return cheapest_chunk_pass_tile(kRwkv7ChunkValueTiles, dim, multiprocessors, [&](int tile) {
    const int per_sm =
        chunk_pass_blocks_per_sm(rwkv7_chunk_pass_layout(static_cast<int>(dim), tile).bytes, kRwkv7ChunkPassThreads);
    return rwkv7_chunk_pass_cost(batch_heads, dim, tile, per_sm, multiprocessors);
  });
}

Rwkv7ChunkPlan plan_rwkv7_chunk(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dim, int multiprocessors) {
  if (!rwkv7_chunk_supports(dim)) {
    throw std::invalid_argument("rwkv7's chunkwise prefill takes head_dim a multiple of 16 up to " +
                                std::to_string(kRwkv7ChunkMaxDim) + ", not " + std::to_string(dim));
  }
  if (batch_heads < 0 || tokens < 0) {
    throw std::invalid_argument("rwkv7's chunkwise prefill needs batch_heads >= 0 and tokens >= 0");
  }
  Rwkv7ChunkPlan plan;
  place_chunk_pass_grid(plan, batch_heads, tokens, kC, dim, rwkv7_chunk_value_tile(batch_heads, dim, multiprocessors));
  plan.dim = static_cast<int>(dim);
  plan.ld_k = plan.dim + kRwkv7ChunkBf16Pad;
  plan.ld_c = kC + kRwkv7ChunkBf16Pad;
  plan.ld_score = kC + kRwkv7ChunkFloatPad;
  plan.ld_acc = plan.dim + kRwkv7ChunkFloatPad;
  plan.ld_n = value_stride(plan.value_tile);
  plan.ld_s = state_stride(plan.value_tile);

  // Regions in the order of the layouts' fields (common/chunk_pass_grid.hpp).
  const std::size_t row_tile = tile_bytes(kRows, plan.ld_k, kBf16), chunk_tile = tile_bytes(kRows, plan.ld_c, kBf16);
  plan.prepare_layout = place_shared_layout<Rwkv7ChunkPrepareLayout>(
      tile_bytes(kRows, plan.dim, kFloat), row_tile, row_tile, row_tile, row_tile, row_tile,
      4 * tile_bytes(kRows, plan.ld_score, kFloat), chunk_tile, tile_bytes(kRows, plan.ld_acc, kFloat));
  plan.pass_operands = rwkv7_chunk_pass_operands(plan.dim, plan.value_tile);
  plan.pass_layout = rwkv7_chunk_pass_layout(plan.dim, plan.value_tile);
  plan.pass_blocks_per_sm = chunk_pass_blocks_per_sm(plan.pass_layout.bytes, kRwkv7ChunkPassThreads);

  const std::int64_t rows = checked_product(plan.prepare_blocks, kC);
  plan.workspace_row_elements = checked_product(rows, dim);
  plan.workspace_score_elements = checked_product(rows, kC);
  plan.workspace_decay_elements = checked_product(plan.prepare_blocks, dim);
  // Every byte count above fits an int64 (workspace_bytes() computes without checks).
  checked_add(checked_product(2, checked_add(checked_product(4, plan.workspace_row_elements),
                                             checked_product(3, plan.workspace_score_elements))),
              checked_add(16, checked_product(4, plan.workspace_decay_elements)));
  return plan;
}

std::int64_t rwkv7_cuda_workspace_bytes(const Cell& cell) {
  if (!rwkv7_cuda_prefill_is_chunked(cell) || cell.batch_heads() < 0 || cell.sequence_length < 0) return 0;
  return plan_rwkv7_chunk(cell.batch_heads(), cell.sequence_length, cell.head_dim, 0).workspace_bytes();
}

}  // namespace arch_bench
