#pragma once
// The launch geometry the two-kernel chunkwise tensor-core prefills share (common/chunk_delta_rule
// and rwkv/rwkv7/chunk: "prepare", one block per (head, chunk) in parallel, then "pass", one block
// per (head, value tile) walking the chunks in order), and the three-kernel ones (state, prefix,
// output passes: common/chunk_scalar_decay and rwkv/rwkv6/chunk), written once so that the plans of
// a family cannot drift apart. Plain C++: the plans are compiled in every build and tested on the CPU.
#include <cstddef>
#include <cstdint>

#include "core/checked_size.hpp"
#include "mechanisms/common/cuda_launch_limits.hpp"
#include "mechanisms/common/smem_layout.hpp"

namespace arch_bench {

// Whether a head size is whole wmma tiles: a multiple of `fragment` in fragment..max_dim.
constexpr bool fits_wmma_tiles(std::int64_t dim, int fragment, int max_dim) {
  return dim >= fragment && dim <= max_dim && dim % fragment == 0;
}

// Fills the grid fields a chunkwise plan shares (batch_heads, tokens, chunks, prepare_blocks,
// value_tile, value_tiles, pass_blocks) for `value_width` value columns split in tiles of `value_tile`.
template <class Plan>
void place_chunk_pass_grid(Plan& plan, std::int64_t batch_heads, std::int64_t tokens, int chunk_tokens,
                           std::int64_t value_width, int value_tile) {
  plan.batch_heads = batch_heads;
  plan.tokens = tokens;
  plan.chunks = ceil_div(tokens, chunk_tokens);
  plan.prepare_blocks = checked_product(batch_heads, plan.chunks);
  plan.value_tile = value_tile;
  plan.value_tiles = static_cast<int>(value_width / value_tile);
  plan.pass_blocks = checked_product(batch_heads, plan.value_tiles);
}

// Fills the grid fields the three-kernel chunkwise prefills share (common/chunk_scalar_decay and
// rwkv/rwkv6/chunk: a state pass and an output pass of one block per (head, chunk), between them a
// prefix pass with one thread per pair of a head's `state_elements`): batch_heads, tokens, chunks,
// state_blocks, output_blocks, prefix_blocks_per_head, prefix_blocks. plan.threads must be set.
template <class Plan>
void place_chunk_state_grid(Plan& plan, std::int64_t batch_heads, std::int64_t tokens, int chunk_tokens,
                            std::int64_t state_elements) {
  plan.batch_heads = batch_heads;
  plan.tokens = tokens;
  plan.chunks = ceil_div(tokens, chunk_tokens);
  plan.state_blocks = checked_product(batch_heads, plan.chunks);
  plan.output_blocks = plan.state_blocks;
  plan.prefix_blocks_per_head = ceil_div(state_elements / 2, plan.threads);
  plan.prefix_blocks = checked_product(batch_heads, plan.prefix_blocks_per_head);
}

// Bytes of `rows` rows of `ld` elements of `element_bytes` each (a shared-memory tile).
constexpr std::size_t tile_bytes(std::size_t rows, int ld, std::size_t element_bytes) {
  return rows * static_cast<std::size_t>(ld) * element_bytes;
}

// A layout struct of shared-memory offsets (std::size_t fields, the last `bytes`) filled by placing
// regions of the given sizes in the order of its fields (place_shared_region): a brace list is
// evaluated left to right, so field i gets the i-th region, and `bytes` the end of the last.
template <class Layout, class... Bytes>
Layout place_shared_layout(Bytes... region_bytes) {
  static_assert(sizeof(Layout) == (sizeof...(Bytes) + 1) * sizeof(std::size_t), "one size per region of the layout");
  std::size_t end = 0;
  Layout layout{place_shared_region(end, static_cast<std::size_t>(region_bytes))..., std::size_t{0}};
  layout.bytes = end;
  return layout;
}

}  // namespace arch_bench
