#pragma once
// The dynamic shared-memory layouts of the chunkwise tensor-core kernels (chunk_delta_rule_plan,
// chunk_scalar_decay_plan, rwkv6/chunk_plan) are planned on the host: each region is placed after
// the last at the next 128-byte boundary. wmma::load/store_matrix_sync needs 32-byte aligned tile
// pointers and the 16-byte vector copies need 16; 128 bytes (32 banks of 4 bytes) also starts every
// region on bank 0.
#include <cstddef>

namespace arch_bench {

inline constexpr std::size_t kSharedRegionAlign = 128;

// Places a region of `bytes` at the next aligned offset at or after `end`, moves `end` past it and
// returns its offset.
inline std::size_t place_shared_region(std::size_t& end, std::size_t bytes) {
  const std::size_t at = (end + kSharedRegionAlign - 1) / kSharedRegionAlign * kSharedRegionAlign;
  end = at + bytes;
  return at;
}

}  // namespace arch_bench
