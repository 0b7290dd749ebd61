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

// Prefill, the selective scan as the published kernel does it: each block owns a run of
// kMambaScanChannels channels of one batch element and walks the sequence in chunks of
// kMambaScanChunk tokens; thread t holds tokens t * kMambaScanItems .. + kMambaScanItems - 1 of the
// chunk. Per state entry s and channel, the chunk's steps (a, b) = (exp(dt A_s), dt B_s u) are
// combined by a block-wide associative scan (cub::BlockScan, ScanElement's combine) whose prefix
// callback carries h across chunks; every thread then re-runs its few steps from the state entering
// them and accumulates C_s h into its outputs. h over L never leaves the chip: only the final h
// is written. B and C of the chunk are staged in shared memory kMambaScanStateGroup entries at a
// time, shared by the block's channels (B_t and C_t are the same for every channel of a batch).
inline constexpr int kMambaScanThreads = 128;
inline constexpr int kMambaScanItems = 8;
inline constexpr int kMambaScanChunk = kMambaScanThreads * kMambaScanItems;
inline constexpr int kMambaScanChannels = 2;
inline constexpr int kMambaScanStateGroup = 4;
// One float of padding per 32 tokens: thread t reads token 8t + i, and the padding puts the 32
// lanes of a warp on 32 different banks.
inline constexpr int kMambaScanTileStride = kMambaScanChunk + kMambaScanChunk / 32;
constexpr int mamba_tile_index(int group_entry, int token) {
  return group_entry * kMambaScanTileStride + token + token / 32;
}
// Shared floats of the scan kernel besides CUB's temp storage: the B and C tiles and the carried
// h of each channel [kMambaScanChannels][N].
constexpr int mamba_scan_shared_floats(int state_size) {
  return 2 * kMambaScanStateGroup * kMambaScanTileStride + kMambaScanChannels * state_size;
}

struct MambaPrefillPlan {
  std::int64_t batch = 0;
  int channels = 0;
  int state_size = 0;
  std::int64_t tokens = 0;
  std::int64_t channel_groups = 0;  // ceil(channels / kMambaScanChannels)
  std::int64_t chunks = 0;          // ceil(tokens / kMambaScanChunk)
  int threads = kMambaScanThreads;
  std::int64_t blocks = 0;          // batch * channel_groups
  std::size_t shared_bytes = 0;     // dynamic: mamba_scan_shared_floats(N) floats
};

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
constexpr MambaScanRun mamba_scan_run(std::int64_t block, std::int64_t channel_groups) {
  return {block / channel_groups, static_cast<int>(block % channel_groups) * kMambaScanChannels};
}
// Token (within the chunk) of item i of thread t.
constexpr int mamba_scan_token(int thread, int item) { return thread * kMambaScanItems + item; }

MambaDecodePlan plan_mamba_decode(const MambaShape& shape);
MambaPrefillPlan plan_mamba_prefill(const MambaShape& shape, std::int64_t tokens);

// Why the CUDA kernels cannot run `cell` (beyond Mechanism::unsupported), or nullopt.
std::optional<std::string> mamba_cuda_unsupported(const Cell& cell);

}  // namespace arch_bench
