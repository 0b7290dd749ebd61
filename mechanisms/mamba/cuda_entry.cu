// Mamba's selective-scan prefill with one thread per (channel, 4 state entries) walking time
// (issue 39): no lane scan; per element dt x A log2 e, one exp2 (the MUFU's ex2.approx), du x B,
// the h FMA, and C h folded into the thread's y partial of the token; y summed over a channel's
// N / 4 lanes by a shuffle transpose-reduce (mamba_entry_reduce). Geometry and shared layout:
// cuda_plan.hpp (tested on the CPU); the CPU replay of this arithmetic, operation for operation:
// cuda_replay.cpp (entry_pass). The time split (map pass, combine kernel in cuda.cu,
// outputs pass) is the lane kernel's.
// Compiled, not yet run on a GPU.
#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "core/backends/cuda/cuda_check.hpp"
#include "mechanisms/common/cp_async.cuh"
#include "mechanisms/common/cuda_storage.cuh"
#include "mechanisms/mamba/cuda_entry.hpp"
#include "mechanisms/mamba/entry_activations.hpp"

namespace arch_bench {

namespace {

constexpr int kTile = kMambaEntryTile;
constexpr int kEntries = kMambaEntryEntriesPerThread;
constexpr unsigned kFullWarp = 0xffffffffu;

// ---- The raw tile: global -> shared, one tile ahead ----------------------------------------------

template <class S>
__device__ __forceinline__ S zero_of() {
  if constexpr (std::is_same_v<S, float>) {
    return 0.0f;
  } else {
    return __ushort_as_bfloat16(0);
  }
}

// A thread's share of a tile's 16-byte copies (the vector path): vector v = t + T i of the stage,
// from its global address at the segment's first tile. A tile with `left` tokens still in the
// segment (at most 16) reads min(max(left x mult - off, 0), per vector) elements of it: mult 1 and
// off = the vector's first token for u, dt_raw, z; mult N and off = its first element for B, C;
// mult 0 (nothing read, zeros) for a channel past d_inner, and for z and C in the map pass. A tile
// moves every source 16 mult elements on.
template <int N, class S, bool kOutputs>
struct TileCopies {
  static constexpr int kThreads = mamba_entry_threads(N);
  static constexpr int kChannels = mamba_entry_channels_per_block(N);
  static constexpr int kPerVector = 16 / static_cast<int>(sizeof(S));
  static constexpr int kTokenVectors = kMambaEntryRawTokenElements / kPerVector;
  static constexpr int kVectors = mamba_entry_raw_stage_elements(N) / kPerVector;
  static constexpr int kItems = (kVectors + kThreads - 1) / kThreads;
  const S* source[kItems];
  int mult[kItems], off[kItems];

  __device__ __forceinline__ TileCopies(const S* u, const S* dt_raw, const S* z, const S* B, const S* C,
                                        std::int64_t first_row, std::int64_t batch, std::int64_t tokens,
                                        std::int64_t begin, int channels_here) {
    constexpr int kRowVectors = kTile / kPerVector;
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
      const int v = static_cast<int>(threadIdx.x) + kThreads * i;
      mult[i] = 0, off[i] = 1, source[i] = u;
      if (v < kTokenVectors) {
        const int tensor = v / (kChannels * kRowVectors), ch = (v / kRowVectors) % kChannels;
        const int part = (v % kRowVectors) * kPerVector;
        const S* base = tensor == 0 ? u : tensor == 1 ? dt_raw : z;
        source[i] = base + (first_row + ch) * tokens + begin + part;
        if (ch < channels_here && (kOutputs || tensor != 2)) mult[i] = 1, off[i] = part;
      } else if (v < kVectors) {
        const int w = v - kTokenVectors, tensor = w / (kTile * N / kPerVector);
        const int element = (w % (kTile * N / kPerVector)) * kPerVector;
        source[i] = (tensor == 0 ? B : C) + (batch * tokens + begin) * N + element;
        if (kOutputs || tensor == 0) mult[i] = N, off[i] = element;
      }
    }
  }

  // Issues the copies of the tile with `left` tokens into the stage at shared address `stage`, and
  // moves the sources to the next tile. A copy that reads nothing gets `somewhere` (a valid
  // address, not read) instead of its source, which may lie past the tensor's end.
  __device__ __forceinline__ void issue(std::uint32_t stage, int left, const S* somewhere) {
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
      const int v = static_cast<int>(threadIdx.x) + kThreads * i;
      if (kVectors % kThreads == 0 || v < kVectors) {
        const int valid = min(max(left * mult[i] - off[i], 0), kPerVector);
        cp_async::copy_16_partial(stage + 16u * static_cast<unsigned>(v), valid > 0 ? source[i] : somewhere,
                      valid * static_cast<int>(sizeof(S)));
        source[i] += kTile * mult[i];
      }
    }
  }
};

// The element-by-element path, for rows that are not 16-byte aligned (L not a multiple of 16 / the
// element size, or an offset view): plain loads into the same raw layout, zeros outside, raw
// element r = t + T i of the stage. Slower (a load per element, its latency not hidden), correct.
template <int N, class S, bool kOutputs>
__device__ __forceinline__ void copy_tile_elements(S* stage, const S* u, const S* dt_raw, const S* z, const S* B,
                                                   const S* C, std::int64_t first_row, std::int64_t batch,
                                                   std::int64_t tokens, std::int64_t first, int left,
                                                   int channels_here) {
  constexpr int kThreads = mamba_entry_threads(N), kChannels = mamba_entry_channels_per_block(N);
  constexpr int kElements = mamba_entry_raw_stage_elements(N);
  for (int r = static_cast<int>(threadIdx.x); r < kElements; r += kThreads) {
    S value = zero_of<S>();
    if (r < kMambaEntryRawTokenElements) {
      const int tensor = r / (kChannels * kTile), ch = (r / kTile) % kChannels, t = r % kTile;
      const S* base = tensor == 0 ? u : tensor == 1 ? dt_raw : z;
      if (ch < channels_here && t < left && (kOutputs || tensor != 2)) value = base[(first_row + ch) * tokens + first + t];
    } else {
      const int w = r - kMambaEntryRawTokenElements, tensor = w / (kTile * N), element = w % (kTile * N);
      if (element / N < left && (kOutputs || tensor == 0)) value = (tensor == 0 ? B : C)[(batch * tokens + first) * N + element];
    }
    stage[r] = value;
  }
}

// K consecutive raw elements from shared memory as floats, as one or two 8- or 16-byte reads.
template <int K, class S>
__device__ __forceinline__ void raw_row(const S* p, float (&v)[K]) {
  if constexpr (std::is_same_v<S, float>) {
#pragma unroll
    for (int k = 0; k < K; k += 4) {
      const float4 q = *reinterpret_cast<const float4*>(p + k);
      v[k] = q.x, v[k + 1] = q.y, v[k + 2] = q.z, v[k + 3] = q.w;
    }
  } else {
    // bf16: the element at the lower address is the word's low half; widening is exact.
    std::uint32_t w[K / 2];
    if constexpr (K == 8) {
      const uint4 q = *reinterpret_cast<const uint4*>(p);
      w[0] = q.x, w[1] = q.y, w[2] = q.z, w[3] = q.w;
    } else {
      static_assert(K == 4, "4 or 8 tokens a thread");
      const uint2 q = *reinterpret_cast<const uint2*>(p);
      w[0] = q.x, w[1] = q.y;
    }
#pragma unroll
    for (int k = 0; k < K / 2; ++k) {
      v[2 * k] = __uint_as_float(w[k] << 16);
      v[2 * k + 1] = __uint_as_float(w[k] & 0xffff0000u);
    }
  }
}

// The raw tile into the fp32 arrays the scan reads: per (channel, token) {dt, dt u} and
// {D u, silu(z)}, computed once per (token, channel) with the MUFU-based activations of
// entry_activations.hpp, by the channel's own lanes (lane j: tokens K j .. K j + K - 1, K = 16 / L),
// stored as 16-byte vectors of 2 tokens; B and C widened, 4 elements a thread. Past the segment
// (token >= left) dt = 0 and u = 0 (zeros in the raw tile): the identity step (ex2.approx(0) = 1
// exactly, dt u B = 0), and nothing added to the dt sum.
template <int N, bool kOutputs, class S>
__device__ __forceinline__ void stage_tile(const S* raw, float* smem, int ch, int j, int left, float bias,
                                           float skip_d) {
  constexpr int K = mamba_entry_staged_tokens(N), kThreads = mamba_entry_threads(N);
  const int t0 = K * j;
  float u[K], dt_raw[K], z[K];
  raw_row<K>(raw + mamba_entry_raw_index(0, ch, t0), u);
  raw_row<K>(raw + mamba_entry_raw_index(1, ch, t0), dt_raw);
  if constexpr (kOutputs) raw_row<K>(raw + mamba_entry_raw_index(2, ch, t0), z);
  // softplus(-inf) = 0 exactly (ex2 of -inf is +0): a select on the input, where `t < left ?
  // softplus : 0` compiled to a branch around each softplus (BSSY, BRA, BSYNC: 3 slots an item).
  const float kNoStep = -INFINITY;
#pragma unroll
  for (int k = 0; k < K; k += 2) {
    const float dt0 = entry_softplus(t0 + k < left ? dt_raw[k] + bias : kNoStep);
    const float dt1 = entry_softplus(t0 + k + 1 < left ? dt_raw[k + 1] + bias : kNoStep);
    *reinterpret_cast<float4*>(smem + mamba_entry_pair_index(N, ch, t0 + k)) =
        make_float4(dt0, dt0 * u[k], dt1, dt1 * u[k + 1]);
    if constexpr (kOutputs) {
      *reinterpret_cast<float4*>(smem + mamba_entry_term_index(N, ch, t0 + k)) =
          make_float4(skip_d * u[k], entry_silu(z[k]), skip_d * u[k + 1], entry_silu(z[k + 1]));
    }
  }
  const int tensor = static_cast<int>(threadIdx.x) / (kThreads / 2);
  if (kOutputs || tensor == 0) {
    const int e = mamba_entry_widened_element(N, static_cast<int>(threadIdx.x));
    float bc[4];
    raw_row<4>(raw + mamba_entry_raw_bc_index(N, tensor, e), bc);
    *reinterpret_cast<float4*>(smem + mamba_entry_bc_index(N, tensor, e / N, e % N)) =
        make_float4(bc[0], bc[1], bc[2], bc[3]);
  }
}

// y of a group of L tokens over a channel's L lanes: `part` holds this lane's partials of the
// group's tokens; lane j returns the whole sum of token j. At each step (partner lane distance
// `half` = L / 2, then L / 4, ...) a lane keeps the half of its tokens named by its lane bit and
// sends the other half to its partner, adding what comes back: log2 L shuffles, L - 1 adds and
// 2 (L - 1) selects per group, against N - 1 adds and N loads of the one-entry kernel's shared
// transpose. Summation order (the replay's): at L 4, (p_0 + p_2) + (p_1 + p_3).
template <int L>
__device__ __forceinline__ float entry_reduce(float (&part)[L], int lane) {
#pragma unroll
  for (int half = L / 2; half >= 1; half /= 2) {
    const bool upper = (lane & half) != 0;
#pragma unroll
    for (int i = 0; i < half; ++i) {
      const float keep = upper ? part[half + i] : part[i];
      const float send = upper ? part[i] : part[half + i];
      part[i] = keep + __shfl_xor_sync(kFullWarp, send, half);
    }
  }
  return part[0];
}

// One pass over one segment per (channel, 4 entries) thread. grid: batch x segments-in-grid x
// channel groups blocks (mamba_scan_run with the entry kernel's 32 channels per block).
template <int N, class S, bool kOutputs, bool kVector>
__global__ void __launch_bounds__(mamba_entry_threads(N), mamba_entry_min_blocks_per_sm(N))
    mamba_entry_scan_kernel(const float* __restrict__ A, const float* __restrict__ dt_bias,
                            const float* __restrict__ D, const S* __restrict__ u, const S* __restrict__ dt_raw,
                            const S* __restrict__ z, const S* __restrict__ B, const S* __restrict__ C,
                            const float* entering, float* state, float* __restrict__ workspace, S* __restrict__ out,
                            MambaPrefillPlan plan, std::int64_t grid_segments) {
  constexpr int kChannels = mamba_entry_channels_per_block(N);
  constexpr int kLanes = mamba_entry_lanes_per_channel(N);
  static_assert(kLanes * kEntries == N && 32 % kLanes == 0 && kTile % kLanes == 0, "a channel's lanes share a warp");
  extern __shared__ __align__(16) float smem[];

  const MambaScanRun run = mamba_scan_run(blockIdx.x, plan.channel_groups, grid_segments, kChannels);
  const MambaEntrySlot slot = mamba_entry_slot(N, static_cast<int>(threadIdx.x));
  const int j = slot.lane, ch = slot.channel, s0 = kEntries * j;
  const int c = run.first_channel + ch;
  const bool active = c < plan.channels;
  const std::int64_t tokens = plan.tokens;
  const std::int64_t first_row = run.batch * plan.channels + run.first_channel;
  const std::int64_t row = first_row + ch;
  const std::int64_t begin = run.segment * plan.segment_tokens;
  const std::int64_t end = begin + plan.segment_tokens < tokens ? begin + plan.segment_tokens : tokens;
  const int channels_here = plan.channels - run.first_channel < kChannels ? plan.channels - run.first_channel : kChannels;

  S* out_row = kOutputs ? out + row * tokens : nullptr;
  // The thread stages its own channel's tokens (stage_tile), so dt_bias and D stay in registers.
  const float bias = active ? dt_bias[c] : 0.0f, skip_d = active ? D[c] : 0.0f;
  float a2[kEntries], h[kEntries];
#pragma unroll
  for (int i = 0; i < kEntries; ++i) {
    a2[i] = active ? A[static_cast<std::int64_t>(c) * N + s0 + i] * kMambaLog2e : 0.0f;
    h[i] = kOutputs && active ? entering[mamba_segment_state_index(plan, row, run.segment, s0 + i)] : 0.0f;
  }
  float dt_sum = 0.0f;
  const float* pairs = smem + mamba_entry_pair_index(N, ch, 0);
  const float* terms = smem + mamba_entry_term_index(N, ch, 0);
  // The two raw stages (an index, not an array of pointers: a runtime-indexed array goes to local memory).
  S* const raw0 = reinterpret_cast<S*>(reinterpret_cast<char*>(smem) + mamba_entry_raw_offset_bytes(N));
  auto raw = [&](int buffer) { return raw0 + buffer * mamba_entry_raw_stage_elements(N); };
  auto left_of = [&](std::int64_t first) {
    return static_cast<int>(end - first < kTile ? end - first : kTile);
  };

  // The raw tile at `first` into stage `buffer`: cp.async groups (waited for a tile later) or loads.
  TileCopies<N, S, kOutputs> copies(u, dt_raw, z, B, C, first_row, run.batch, tokens, begin, channels_here);
  auto copy_tile = [&](std::int64_t first, int buffer) {
    if constexpr (kVector) {
      copies.issue(cp_async::shared_address(raw(buffer)), left_of(first), u);
    } else {
      copy_tile_elements<N, S, kOutputs>(raw(buffer), u, dt_raw, z, B, C, first_row, run.batch, tokens, first,
                                         left_of(first), channels_here);
    }
  };
  if (begin < end) copy_tile(begin, 0);
  if constexpr (kVector) cp_async::commit();
  int buffer = 0;
  for (std::int64_t first = begin; first < end; first += kTile, buffer ^= 1) {
    if (first + kTile < end) copy_tile(first + kTile, buffer ^ 1);
    if constexpr (kVector) {
      cp_async::commit();  // an empty group on the last tile keeps the count: the wait leaves one
      cp_async::wait<1>();
    }
    // This tile's raw values are in (every thread's copies); every warp is done with the tile
    // before's fp32 arrays and raw stage (which the copies above now refill).
    __syncthreads();
    const int left = active ? left_of(first) : 0;
    stage_tile<N, kOutputs>(raw(buffer), smem, ch, j, left, bias, skip_d);
    // This lane stores token g + j of each group g while g + j < left: one 32-bit compare and an
    // immediate offset from one pointer a tile.
    const int store_left = left - j;
    S* const out_tile = kOutputs ? out_row + first + j : nullptr;
    __syncthreads();  // the tile is staged
#pragma unroll
    for (int g = 0; g < kTile; g += kLanes) {
      float part[kLanes];  // this lane's C h over its 4 entries, per token of the group
#pragma unroll
      for (int q = 0; q < kLanes; q += 2) {
        const float4 p2 = *reinterpret_cast<const float4*>(pairs + 2 * (g + q));  // {dt, du} of 2 tokens
        const float dtv[2] = {p2.x, p2.z}, duv[2] = {p2.y, p2.w};
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const int t = g + q + r;
          const float4 b4 = *reinterpret_cast<const float4*>(smem + mamba_entry_bc_index(N, 0, t, s0));
          const float bv[kEntries] = {b4.x, b4.y, b4.z, b4.w};
#pragma unroll
          for (int i = 0; i < kEntries; ++i) {
            const float x = dtv[r] * a2[i];
            h[i] = fmaf(entry_exp2(x), h[i], duv[r] * bv[i]);
          }
          if constexpr (kOutputs) {
            const float4 c4 = *reinterpret_cast<const float4*>(smem + mamba_entry_bc_index(N, 1, t, s0));
            float y = c4.x * h[0];
            y = fmaf(c4.y, h[1], y);
            y = fmaf(c4.z, h[2], y);
            y = fmaf(c4.w, h[3], y);
            part[q + r] = y;
          } else {
            dt_sum += dtv[r];
          }
        }
      }
      if constexpr (kOutputs) {
        const float y = entry_reduce<kLanes>(part, j);
        const int t = mamba_entry_owned_token(N, j, g / kLanes);  // g + j
        const float2 term = *reinterpret_cast<const float2*>(terms + 2 * t);  // {D u, silu(z)}
        if (g < store_left) store_float(out_tile + g, (y + term.x) * term.y);
      }
    }
  }
  if (!active) return;
#pragma unroll
  for (int i = 0; i < kEntries; ++i) {
    if constexpr (kOutputs) {
      if (run.segment == plan.segments - 1) state[row * N + s0 + i] = h[i];
    } else {
      workspace[mamba_segment_state_index(plan, row, run.segment, s0 + i)] = h[i];
    }
  }
  if constexpr (!kOutputs) {
    if (j == 0) workspace[mamba_segment_dt_index(plan, row, run.segment)] = dt_sum;
  }
}

template <int N, class S, bool kOutputs, bool kVector>
void launch_pass(const MambaPrefillPlan& plan, const MambaParameters& params, const S* u, const S* dt_raw, const S* z,
                 const S* B, const S* C, const float* entering, float* state, float* workspace, S* out,
                 std::int64_t blocks, std::int64_t grid_segments, CUstream_st* stream) {
  mamba_entry_scan_kernel<N, S, kOutputs, kVector>
      <<<static_cast<unsigned>(blocks), mamba_entry_threads(N), mamba_entry_shared_bytes(N, static_cast<int>(sizeof(S))), stream>>>(
          params.A, params.dt_bias, params.D, u, dt_raw, z, B, C, entering, state, workspace, out, plan, grid_segments);
  check_launch(kOutputs ? "mamba_entry_scan_kernel" : "mamba_entry_scan_kernel (segment maps)");
}

template <int N, class S, bool kOutputs>
void launch_aligned_or_not(const MambaPrefillPlan& plan, const MambaParameters& params, const S* u, const S* dt_raw,
                           const S* z, const S* B, const S* C, const float* entering, float* state, float* workspace,
                           S* out, std::int64_t blocks, std::int64_t grid_segments, CUstream_st* stream) {
  // The 16-byte copies need every row of u, dt_raw, z (and B, C) to start 16-byte aligned: the
  // tensors' bases aligned and L a multiple of a vector's elements (B and C rows are 16 N
  // elements, whole vectors at N 8 and 16).
  auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  const bool vector = plan.tokens % (16 / static_cast<std::int64_t>(sizeof(S))) == 0 && aligned(u) &&
                      aligned(dt_raw) && aligned(z) && aligned(B) && aligned(C);
  if (vector) {
    launch_pass<N, S, kOutputs, true>(plan, params, u, dt_raw, z, B, C, entering, state, workspace, out, blocks,
                                      grid_segments, stream);
  } else {
    launch_pass<N, S, kOutputs, false>(plan, params, u, dt_raw, z, B, C, entering, state, workspace, out, blocks,
                                       grid_segments, stream);
  }
}

template <int N, class S>
void launch_for_state_size(const MambaPrefillPlan& plan, const MambaParameters& params, const S* u, const S* dt_raw,
                           const S* z, const S* B, const S* C, const float* entering, float* state, float* workspace,
                           S* out, bool outputs, CUstream_st* stream) {
  const std::int64_t blocks = outputs ? plan.blocks : plan.map_blocks;
  const std::int64_t segments = outputs ? plan.segments : plan.segments - 1;
  if (outputs) {
    launch_aligned_or_not<N, S, true>(plan, params, u, dt_raw, z, B, C, entering, state, workspace, out, blocks,
                                      segments, stream);
  } else {
    launch_aligned_or_not<N, S, false>(plan, params, u, dt_raw, z, B, C, entering, state, workspace, out, blocks,
                                       segments, stream);
  }
}

}  // namespace

template <class T>
void launch_mamba_entry_pass(const MambaPrefillPlan& plan, const MambaParameters& params, const MambaTokens<T>& x,
                             const float* entering, float* state, float* workspace, T* out, bool outputs,
                             CUstream_st* stream) {
  using S = typename DeviceStorage<T>::type;
  if (plan.kernel == MambaScanKernel::lane) throw std::invalid_argument("launch_mamba_entry_pass: a lane plan");
  const S *u = reinterpret_cast<const S*>(x.u), *dt_raw = reinterpret_cast<const S*>(x.dt_raw);
  const S *z = reinterpret_cast<const S*>(x.z), *B = reinterpret_cast<const S*>(x.B), *C = reinterpret_cast<const S*>(x.C);
  S* o = reinterpret_cast<S*>(out);
  switch (plan.state_size) {
    case 8:
      launch_for_state_size<8>(plan, params, u, dt_raw, z, B, C, entering, state, workspace, o, outputs, stream);
      return;
    case 16:
      launch_for_state_size<16>(plan, params, u, dt_raw, z, B, C, entering, state, workspace, o, outputs, stream);
      return;
    default:
      throw std::invalid_argument("launch_mamba_entry_pass: the entry kernel takes N 8 or 16");
  }
}

template void launch_mamba_entry_pass<float>(const MambaPrefillPlan&, const MambaParameters&, const MambaTokens<float>&,
                                             const float*, float*, float*, float*, bool, CUstream_st*);
template void launch_mamba_entry_pass<bf16>(const MambaPrefillPlan&, const MambaParameters&, const MambaTokens<bf16>&,
                                            const float*, float*, float*, bf16*, bool, CUstream_st*);

}  // namespace arch_bench
