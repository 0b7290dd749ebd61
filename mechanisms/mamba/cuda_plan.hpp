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
// lane folds its steps (a, b) = (exp(dt A_s), dt B_s u) into one element (ScanElement's combine;
// the element's a as exp2 of the lane's dt sum times A_s log2 e), a five-step shuffle scan
// (Hillis-Steele) combines the 32 lane elements, the channel's carried h_s (shared memory, beside
// A_s log2 e, per state entry and warp) enters at lane 0 and leaves from lane 31, and each lane
// re-runs its few steps from the h entering them, accumulating C_s h into its outputs. No
// block-wide barrier sits inside the scan. The block's kMambaScanWarps channels belong to one
// batch element, so B and C of the chunk (the same for every channel) are staged in shared memory
// once per block, kMambaScanStateGroup entries at a time, as fp32 tiles.
// One exp per (token, channel, state entry), as exp2 of dt (A log2 e), is the floor of the work;
// the kernel is bound by instruction issue before it (docs/gpu-guide.md counts both).
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
// different banks. `element_bytes` is the tile element's size: the kernel stages fp32 tiles (4)
// for both storage dtypes; the map takes 2 as well (bf16 tiles, as the kernel had them before).
constexpr int mamba_tile_vector(int element_bytes) { return 16 / element_bytes; }
constexpr int mamba_tile_stride(int element_bytes) { return kMambaScanChunk + mamba_tile_vector(element_bytes); }
constexpr int mamba_tile_index(int element_bytes, int group_entry, int token) {
  const int v = mamba_tile_vector(element_bytes), lane = token / kMambaScanItems, item = token % kMambaScanItems;
  return group_entry * mamba_tile_stride(element_bytes) + (item / v) * (32 * v) + lane * v + item % v;
}
// The kernel stages B and C as fp32 tiles whatever the storage dtype (element_bytes 4): widening
// bf16 once per block while staging costs each of the 8 warps nothing, where bf16 tiles cost every
// warp a shift or mask per item read (2 of about 13 instructions per (token, channel, entry)).
// Vector staging (N a multiple of 8, B and C 16-byte aligned): thread t of the block loads the
// 8 entries of one token of the group as one (bf16) or two (fp32) 16-byte vectors and writes them
// to the 8 tile rows. Its token: warp w = t / 32 stages lanes 8 (w % 4) .. + 7, items 4 (w / 4)
// .. + 3, so that a warp's 32 writes to a row are 32 consecutive words (conflict-free).
constexpr int mamba_stage_token(int thread) {
  const int warp = thread / 32, j = thread % 32;
  const int lane = 8 * (warp % 4) + j / 4, item = 4 * (warp / 4) + j % 4;
  return lane * kMambaScanItems + item;
}
// Dynamic shared bytes of the scan kernel: the B and C tiles and, per warp and state entry, the
// carried h and the entry's A log2 e (fp32 pairs [warps][N][2], read together as one 8-byte load).
constexpr std::size_t mamba_scan_shared_bytes(int element_bytes, int state_size) {
  return static_cast<std::size_t>(2 * kMambaScanStateGroup * mamba_tile_stride(element_bytes) * element_bytes) +
         2 * sizeof(float) * static_cast<std::size_t>(kMambaScanWarps * state_size);
}

// The second prefill kernel (cuda_entry.cu, issue 39): a thread per (channel, E state entries)
// walking time, no lane scan. E = kMambaEntryEntriesPerThread = 4 at N 16 and at N 8, so a channel
// has L = N / 4 lanes (4 or 2), neighbours in a warp: lane j of the channel holds entries
// 4 j .. 4 j + 3. A block holds kMambaEntryChannelsPerBlock = 32 channels of one batch element
// (128 threads at N 16, 64 at N 8). Time goes in tiles of kMambaEntryTile tokens: the block copies
// the tile's raw inputs into shared memory one tile ahead (16-byte cp.async, double-buffered; the
// raw layout below), then stages from them the tile's B_t, C_t (fp32, [token][entry], so that a
// lane's 4 entries of a token are one 16-byte read) and per (channel, token) {dt, dt u} and
// {D u, silu(z)} (softplus, skip and gate once per (token, channel), each lane for its own
// channel's 16 / L tokens), and each lane runs its 4 h over the tile: per element
// dt x A log2 e, one exp2, du x B, the h FMA, and C h folded into the lane's y partial of the token
// (an FMUL and 3 FFMA over its 4 entries in entry order). y sums the channel's L partials by a
// transpose-reduce over groups of L tokens (cuda_entry.cu, entry_reduce): log2 L shuffle steps, at each of
// which a lane keeps half of its group's tokens and sends the other half to its partner, so that
// lane j ends with token j of the group, summed as (p_0 + p_2) + (p_1 + p_3) at L 4 and p_0 + p_1
// at L 2 (p_l: lane l's partial). Every exp is one ex2.approx on the MUFU (docs/gpu-guide.md says
// why a polynomial exp2 on the FMA pipe does not pay at this issue count). The time split of the
// lane kernel (segments, map pass, combine, workspace) carries over unchanged.
// Instantiated for N in {8, 16} (mamba_entry_applies); other N run the lane kernel.
enum class MambaScanKernel {
  lane,        // mamba_warp_scan_kernel: a warp per channel, shuffle scan over lanes of 8 tokens
  entry,       // mamba_entry_scan_kernel: a thread per (channel, 4 state entries), every exp on ex2.approx
};
inline constexpr int kMambaEntryEntriesPerThread = 4;
inline constexpr int kMambaEntryChannelsPerBlock = 32;
inline constexpr int kMambaEntryTile = 16;
constexpr bool mamba_entry_applies(std::int64_t n) { return n == 8 || n == 16; }
constexpr int mamba_entry_lanes_per_channel(int n) { return n / kMambaEntryEntriesPerThread; }
constexpr int mamba_entry_threads(int n) { return kMambaEntryChannelsPerBlock * mamba_entry_lanes_per_channel(n); }
constexpr int mamba_entry_channels_per_block(int /*n*/) { return kMambaEntryChannelsPerBlock; }
// __launch_bounds__: both passes hold 16 warps per SM (4 blocks at N 16, 8 at N 8: at most 128
// registers). At 32 warps (64 registers) the outputs pass spilled 40-140 bytes: a thread keeps its
// 4 h and 4 A log2 e, the next tile's raw values (16 / L (channel, token) items and 2 of B and C)
// and its loads' pointers and bounds, and the unrolled tile loop hoists its shared reads. Issue 39's
// grids hold about 2 blocks per SM (kMambaEntrySplitBlocksPerSm) whatever the bound.
inline constexpr int kMambaEntryWarpsPerSm = 16;
constexpr int mamba_entry_min_blocks_per_sm(int n) { return kMambaEntryWarpsPerSm / (mamba_entry_threads(n) / 32); }
// The split plan counts 2 blocks per SM for the entry kernel, not the 8 or 16 resident: the kernel is
// bound by instruction issue, and a split's map pass repeats the staging and the exps of all but the
// last segment (about 1.5x the issue at 4 segments), which more resident warps do not buy back. So a
// grid splits only where it would leave SMs without two blocks (batch 1: 16 blocks, split 16 ways;
// batch 16 at d_inner 512: 256 blocks, unsplit).
inline constexpr int kMambaEntrySplitBlocksPerSm = 2;
// Thread t of an entry block: lane j = t % L of the block's channel t / L, entries 4 j .. 4 j + 3.
struct MambaEntrySlot {
  int channel = 0;  // of the block
  int lane = 0;     // j: of the channel's L lanes
};
constexpr MambaEntrySlot mamba_entry_slot(int n, int thread) {
  return {thread / mamba_entry_lanes_per_channel(n), thread % mamba_entry_lanes_per_channel(n)};
}
// The tile token whose y lane j of a channel stores after the transpose-reduce of group g (tokens
// g L .. g L + L - 1).
constexpr int mamba_entry_owned_token(int n, int lane, int group) { return group * mamba_entry_lanes_per_channel(n) + lane; }
// Shared memory (floats), per block: the B and C tiles [2][tile][N] (a tile's B is 16 N contiguous
// elements in global memory, so the staging writes are contiguous and a lane's 4 entries are one
// 16-byte read); per channel of the block the tile's {dt, dt u} pairs [channels][stride] and
// {D u, silu(z)} pairs [channels][stride], a channel's row padded by 2 L words past its 2 x 16:
// the rows of neighbouring channels then start 2 L banks apart, so that the scan's 16-byte pair
// reads (L lanes of a channel share one; a quarter-warp spans 8 / L channels) and the owners' 8-byte
// term reads (a half-warp spans 16 / L channels, each L consecutive tokens) fall on different banks.
constexpr int mamba_entry_bc_index(int n, int tensor, int token, int s) { return (tensor * kMambaEntryTile + token) * n + s; }
constexpr int mamba_entry_channel_stride(int n) { return 2 * kMambaEntryTile + 2 * mamba_entry_lanes_per_channel(n); }
constexpr int mamba_entry_pairs_offset(int n) { return 2 * kMambaEntryTile * n; }
constexpr int mamba_entry_terms_offset(int n) {
  return mamba_entry_pairs_offset(n) + mamba_entry_channels_per_block(n) * mamba_entry_channel_stride(n);
}
// Word of {dt, du} (terms: {D u, silu z}) of the block's channel `channel`, tile token `token`.
constexpr int mamba_entry_pair_index(int n, int channel, int token) {
  return mamba_entry_pairs_offset(n) + channel * mamba_entry_channel_stride(n) + 2 * token;
}
constexpr int mamba_entry_term_index(int n, int channel, int token) {
  return mamba_entry_terms_offset(n) + channel * mamba_entry_channel_stride(n) + 2 * token;
}
// The raw tile the block copies from global memory one tile ahead (cuda_entry.cu: 16-byte cp.async
// where the rows are 16-byte aligned, element by element where not), double-buffered after the fp32
// arrays, in storage elements: u, dt_raw, z [tensor][channel][token], then B, C [tensor][token x N]
// as in global memory. In that order the tile's 16-byte vectors are consecutive in shared memory,
// so vector v of the tile lands at byte 16 v of the stage whatever tensor it belongs to.
inline constexpr int kMambaEntryRawTokenElements = 3 * kMambaEntryChannelsPerBlock * kMambaEntryTile;
constexpr int mamba_entry_raw_index(int tensor, int channel, int token) {
  return (tensor * kMambaEntryChannelsPerBlock + channel) * kMambaEntryTile + token;
}
constexpr int mamba_entry_raw_bc_index(int n, int tensor, int element) {
  return kMambaEntryRawTokenElements + tensor * kMambaEntryTile * n + element;
}
constexpr int mamba_entry_raw_stage_elements(int n) { return kMambaEntryRawTokenElements + 2 * kMambaEntryTile * n; }
// Bytes: the fp32 arrays, then the two raw stages (their offset a multiple of 16).
constexpr std::size_t mamba_entry_raw_offset_bytes(int n) {
  return sizeof(float) * static_cast<std::size_t>(mamba_entry_terms_offset(n) +
                                                  mamba_entry_channels_per_block(n) * mamba_entry_channel_stride(n));
}
constexpr std::size_t mamba_entry_raw_stage_bytes(int n, int element_bytes) {
  return static_cast<std::size_t>(mamba_entry_raw_stage_elements(n)) * static_cast<std::size_t>(element_bytes);
}
// Dynamic shared bytes for a storage dtype of `element_bytes`; the plan's shared_bytes is the fp32
// size (4), which bounds the bf16 one.
constexpr std::size_t mamba_entry_shared_bytes(int n, int element_bytes = 4) {
  return mamba_entry_raw_offset_bytes(n) + 2 * mamba_entry_raw_stage_bytes(n, element_bytes);
}
// The staging from the raw tile (per tile, after a barrier): thread t computes dt, dt u, D u and
// silu(z) of 16 / L consecutive tokens of its own scan channel (its lane j stages tokens
// (16 / L) j ..), reading each raw row as one 8- or 16-byte vector, and widens 4 consecutive B or
// C elements (threads [0, T / 2) B, [T / 2, T) C) into the fp32 tiles.
constexpr int mamba_entry_staged_tokens(int n) { return kMambaEntryTile / mamba_entry_lanes_per_channel(n); }
constexpr int mamba_entry_widened_element(int n, int thread) {
  return 4 * (thread % (mamba_entry_threads(n) / 2));
}

// Split-L at small batch: the grid above has batch x ceil(d_inner / 8) blocks, each walking the
// whole sequence; at batch 1, d_inner 512 that is 64 blocks, half an H100's or H200's SMs, each a
// chain of L / 256 chunks. The plan then cuts the sequence into `segments` pieces of
// `segment_tokens` (whole chunks; the last may be shorter) scanned by separate blocks, in three
// launches of which two are the same kernel (cuda.cu):
//   1. map: per (channel, segment) but the last, the segment from h = 0, keeping the h it ends
//      with and the sum of its dt (the segment's decay of entry s is exp2(sum dt x A_s log2 e), one
//      log-sum per channel instead of N products); no outputs;
//   2. combine (small): per (row, state entry) the segments' maps in order from the carried h,
//      leaving in the workspace the h entering each segment;
//   3. outputs: per (channel, segment) the segment from its entering h, writing the outputs; the
//      last segment leaves the final h in `state`.
// The split reads u, dt_raw and B twice and repeats the exps of every segment but the last.
struct MambaPrefillPlan {
  std::int64_t batch = 0;
  int channels = 0;
  int state_size = 0;
  std::int64_t tokens = 0;
  std::int64_t channel_groups = 0;  // ceil(channels / channels_per_block)
  std::int64_t chunks = 0;          // ceil(tokens / kMambaScanChunk)
  int threads = kMambaScanThreads;
  std::int64_t segments = 1;        // pieces of the sequence scanned by separate blocks (1: no split)
  std::int64_t segment_tokens = 0;  // a multiple of kMambaScanChunk; segments x segment_tokens >= tokens
  std::int64_t blocks = 0;          // the outputs pass (the one kernel unsplit): batch * segments * channel_groups
  std::int64_t map_blocks = 0;      // pass 1: batch * (segments - 1) * channel_groups; 0 unsplit
  std::int64_t combine_blocks = 0;  // pass 2: ceil(rows * N / kMambaCombineThreads); 0 unsplit
  std::int64_t workspace_floats = 0;  // rows * segments * (N + 1) floats; 0 unsplit
  std::size_t shared_bytes = 0;     // dynamic: mamba_scan_shared_bytes(4, N), or mamba_entry_shared_bytes(N), the
                                    // fp32 bound (the entry kernel launches with its dtype's bytes)
  MambaScanKernel kernel = MambaScanKernel::lane;
  int channels_per_block = kMambaScanWarps;  // lane: a warp per channel; entry: 256 / N
};
inline constexpr int kMambaCombineThreads = 256;

// The workspace of a split prefill: the h of (row, segment) [rows][segments][N] (pass 1's h from
// zero at the segment's end, replaced by pass 2 with the h entering the segment), then the
// segment's sum of dt [rows][segments].
constexpr std::int64_t mamba_segment_state_index(const MambaPrefillPlan& plan, std::int64_t row, std::int64_t segment,
                                                 int s) {
  return (row * plan.segments + segment) * plan.state_size + s;
}
constexpr std::int64_t mamba_segment_dt_index(const MambaPrefillPlan& plan, std::int64_t row, std::int64_t segment) {
  return plan.batch * plan.channels * plan.segments * plan.state_size + row * plan.segments + segment;
}

// Segments for `row_blocks` = batch x channel_groups blocks over `chunks` chunks on a device with
// `multiprocessors` SMs (<= 0: unknown, no split). Up to kMambaScanMinBlocksPerSm blocks run on an
// SM at once, so a grid of more than that many per SM runs in waves; the segments fill the
// resident slots once, floor(2 SMs / row_blocks), and never exceed the chunks. The split pays for
// a second walk (pass 1) over all but one segment: it is taken only when the two walks of a segment
// are shorter than the unsplit walk, 2 ceil(chunks / segments) < chunks. This counts pass 1 as
// costly as pass 3 and a block sharing its SM with another as fast as one alone: at <= 2 blocks (16
// warps) per SM the scan is bound by the latency of its shuffle chain, not by the SM's issue rate.
// A device of more than kMambaSplitMaxMultiprocessors SMs is planned as one of that many (fewer
// segments than it could run at once, never a wrong split), so that the workspace has a bound
// that does not depend on the device (mamba_prefill_cuda_workspace_bytes).
inline constexpr int kMambaSplitMaxMultiprocessors = 256;
// `blocks_per_sm`: the blocks per SM the split fills (kMambaScanMinBlocksPerSm, the lane kernel's
// resident blocks; kMambaEntrySplitBlocksPerSm for the entry kernel).
std::int64_t mamba_prefill_segments(std::int64_t row_blocks, std::int64_t chunks, int multiprocessors,
                                    int blocks_per_sm = kMambaScanMinBlocksPerSm);

// Device workspace bytes a prefill with `plan` allocates (launch_mamba_prefill's `workspace`): what
// the CUDA cells allocate.
std::int64_t mamba_prefill_workspace_bytes(const MambaPrefillPlan& plan);
// The most workspace bytes the CUDA prefill of `tokens` allocates on any device: the plan's on a
// device of kMambaSplitMaxMultiprocessors SMs (segments never decrease as SMs are added), exact
// there and an upper bound on smaller devices (139,264 bytes on an H200's 132 SMs at batch 1,
// d_inner 512, N 16, L 8192; 278,528 bounded; the entry kernel, 16 segments of 512 tokens on an
// H200: 557,056, and 1,114,112 bounded). predicted_peak_bytes counts it for the kernel the cell's scan_kernel picks, since a
// cell's prediction is made before any device is known.
std::int64_t mamba_prefill_cuda_workspace_bytes(const MambaShape& shape, std::int64_t tokens,
                                                MambaScanKernel kernel = MambaScanKernel::lane);

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
  std::int64_t segment = 0;
};
// The batch element, segment and first channel of a scan block over a grid of `segments` segments
// (pass 1 launches segments - 1 of the plan's); warp w owns channel first_channel + w. The channel
// groups of one (batch element, segment) are neighbours in the grid, so they read the same B and C
// rows at about the same time (from L2 after the first).
constexpr MambaScanRun mamba_scan_run(std::int64_t block, std::int64_t channel_groups, std::int64_t segments = 1,
                                      int channels_per_block = kMambaScanWarps) {
  const std::int64_t piece = block / channel_groups;
  return {piece / segments, static_cast<int>(block % channel_groups) * channels_per_block, piece % segments};
}
// Token (within the chunk) of item i of lane l.
constexpr int mamba_scan_token(int lane, int item) { return lane * kMambaScanItems + item; }

MambaDecodePlan plan_mamba_decode(const MambaShape& shape);
// `multiprocessors` (the device's SMs; <= 0: no split) chooses the segments (mamba_prefill_segments).
// `kernel` must apply to the shape (entry kernels: mamba_entry_applies(N)).
MambaPrefillPlan plan_mamba_prefill(const MambaShape& shape, std::int64_t tokens, int multiprocessors = 0,
                                    MambaScanKernel kernel = MambaScanKernel::lane);
// `plan` cut into `segments` pieces whatever the device (the tests' forms): clamped to 1..chunks,
// then to the fewest that keep its segment length, so that no segment is empty.
MambaPrefillPlan split_mamba_prefill(MambaPrefillPlan plan, std::int64_t segments);

// The prefill kernel a cell runs: its `scan_kernel` option (options.hpp), `auto` resolved to
// `entry` where mamba_entry_applies(N) (N 8, 16), else `lane`; nullopt where `entry` is asked
// for an N it does not take (mamba_cuda_unsupported says why).
std::optional<MambaScanKernel> mamba_scan_kernel_of(const Cell& cell);
// Its name: "lane" or "entry"; and what a CUDA cell records as gpu_kernel: "prefill entry (N 16)",
// "prefill lane (warp scan)", "decode (context prefill entry ...)".
std::string mamba_scan_kernel_name(MambaScanKernel kernel);
std::string mamba_gpu_kernel_name(const Cell& cell);

// Why the CUDA kernels cannot run `cell` (beyond Mechanism::unsupported), or nullopt.
std::optional<std::string> mamba_cuda_unsupported(const Cell& cell);

}  // namespace arch_bench
