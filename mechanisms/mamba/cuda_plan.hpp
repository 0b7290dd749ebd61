#pragma once
// Launch planning of the CUDA kernels of Mamba's selective scan (cuda.cu): grids, blocks and shared
// memory as plain functions, compiled in every build and tested on the CPU
// (tests/test_mamba_cuda_plan.cpp). The kernels read their layout from the constants and index maps
// here. Layouts are the CPU kernels' (cpu.hpp): u, dt_raw, z, out [rows, tokens] channel-major, B, C
// [batch, tokens, N] token-major, h [rows, N] fp32.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "mechanisms/mamba/cpu.hpp"
#include "core/cell.hpp"

namespace arch_bench {

// Decode: a group of `lanes` threads (a power of two <= 32, so a group never straddles a warp) owns
// one row and walks its N state entries s = lane, lane + lanes, ...: a warp reads whole rows of h
// (coalesced), and C.h is a shuffle reduction inside the group.
inline constexpr int kMambaDecodeThreads = 256;
struct MambaDecodePlan {
  std::int64_t rows = 0;
  int channels = 0;
  int state_size = 0;
  int lanes = 0;  // threads per row
  int threads = kMambaDecodeThreads;
  std::int64_t blocks = 0;  // ceil(rows * lanes / threads)
};

// Prefill: a warp-level chunked selective scan. Each warp owns one channel of one batch element and
// walks the sequence in chunks of kMambaScanChunk = 32 x kMambaScanItems tokens; lane l holds the
// kMambaScanItems consecutive tokens l * kMambaScanItems .. of the chunk, so u, dt_raw, z and out
// are read and written once, as one 16-byte vector per lane where aligned. Per state entry s the
// lane folds its steps (a, b) = (exp(dt A_s), dt B_s u) into one element (ScanElement's combine),
// a five-step shuffle scan (Hillis-Steele) combines the 32 lane elements, the channel's carried h_s
// (shared memory, one float per state entry and warp) enters at lane 0 and leaves from lane 31,
// and each lane re-runs its few steps from the h entering them, accumulating C_s h into its
// outputs. No block-wide barrier sits inside the scan. The block's kMambaScanWarps channels belong
// to one batch element, so B and C of the chunk (the same for every channel) are staged in shared
// memory once per block, kMambaScanStateGroup entries at a time, in the storage dtype.
// One exp per (token, channel, state entry), as exp2 of dt (A log2 e), is the floor of the work.
inline constexpr int kMambaScanWarps = 8;
inline constexpr int kMambaScanThreads = 32 * kMambaScanWarps;
inline constexpr int kMambaScanItems = 8;
inline constexpr int kMambaScanChunk = 32 * kMambaScanItems;
inline constexpr int kMambaScanStateGroup = 8;
inline constexpr int kMambaScanMinBlocksPerSm = 2;  // __launch_bounds__: at most 128 registers
// The fp32 log2(e) the kernel folds into A: exp(dt A) = exp2(dt (A log2 e)).
inline constexpr float kMambaLog2e = 1.4426950408889634f;

// The B and C tiles of one state group: for entry g and chunk token `token` (lane token / items,
// item token % items) the element sits so that a lane's items are whole 16-byte vectors and the
// 32 lanes' j-th vectors are 512 contiguous bytes (a warp's vector read is conflict-free). A row
// per entry, padded by one vector so that the staging writes of neighbouring entries fall on
// different banks. `element_bytes` is the storage dtype's size (4 fp32, 2 bf16).
constexpr int mamba_tile_vector(int element_bytes) { return 16 / element_bytes; }
constexpr int mamba_tile_stride(int element_bytes) { return kMambaScanChunk + mamba_tile_vector(element_bytes); }
constexpr int mamba_tile_index(int element_bytes, int group_entry, int token) {
  const int v = mamba_tile_vector(element_bytes), lane = token / kMambaScanItems, item = token % kMambaScanItems;
  return group_entry * mamba_tile_stride(element_bytes) + (item / v) * (32 * v) + lane * v + item % v;
}
// Dynamic shared bytes of the scan kernel: the B and C tiles and the carried h [warps][N] (fp32).
constexpr std::size_t mamba_scan_shared_bytes(int element_bytes, int state_size) {
  return static_cast<std::size_t>(2 * kMambaScanStateGroup * mamba_tile_stride(element_bytes) * element_bytes) +
         sizeof(float) * static_cast<std::size_t>(kMambaScanWarps * state_size);
}

struct MambaPrefillPlan {
  std::int64_t batch = 0;
  int channels = 0;
  int state_size = 0;
  std::int64_t tokens = 0;
  std::int64_t channel_groups = 0;  // ceil(channels / kMambaScanWarps)
  std::int64_t chunks = 0;          // ceil(tokens / kMambaScanChunk)
  int threads = kMambaScanThreads;
  std::int64_t blocks = 0;          // batch * channel_groups
  std::size_t shared_bytes = 0;     // dynamic: mamba_scan_shared_bytes(4, N), enough for either dtype
};

// Bytes a prefill must move at the least: u, dt_raw, z read and out written once per channel and
// token, B and C read once per token, the fp32 parameters (A, dt_bias, D) and h read and written
// once. The measure of the scan's bandwidth (gpu-guide.md).
std::int64_t mamba_prefill_min_bytes(const MambaShape& shape, std::int64_t tokens, int element_bytes);

// Index maps shared by the kernels and the CPU tests.
struct MambaDecodeSlot {
  std::int64_t row = 0;
  int lane = 0;
};
constexpr MambaDecodeSlot mamba_decode_slot(const MambaDecodePlan& plan, std::int64_t block, int thread) {
  const std::int64_t global = block * plan.threads + thread;
  return {global / plan.lanes, static_cast<int>(global % plan.lanes)};
}
struct MambaScanRun {
  std::int64_t batch = 0;
  int first_channel = 0;
};
// The batch element and first channel of a scan block; warp w owns channel first_channel + w.
constexpr MambaScanRun mamba_scan_run(std::int64_t block, std::int64_t channel_groups) {
  return {block / channel_groups, static_cast<int>(block % channel_groups) * kMambaScanWarps};
}
// Token (within the chunk) of item i of lane l.
constexpr int mamba_scan_token(int lane, int item) { return lane * kMambaScanItems + item; }

MambaDecodePlan plan_mamba_decode(const MambaShape& shape);
MambaPrefillPlan plan_mamba_prefill(const MambaShape& shape, std::int64_t tokens);

// Why the CUDA kernels cannot run `cell` (beyond Mechanism::unsupported), or nullopt.
std::optional<std::string> mamba_cuda_unsupported(const Cell& cell);

}  // namespace arch_bench
