// Mamba's selective-scan prefill with one thread per (channel, 4 state entries) walking time
// (issue 39): no lane scan; per element dt x A log2 e, one exp2 (the MUFU's ex2.approx, or the FMA
// pipe's polynomial for kMambaEntryPolynomialTokens of each tile's tokens), du x B, the h FMA, and
// C h folded into the thread's y partial of the token; y summed over a channel's N / 4 lanes by a
// shuffle transpose-reduce (mamba_entry_reduce). Geometry, shared layout and the choice of
// polynomial tokens: cuda_plan.hpp (tested on the CPU); the CPU replay of this arithmetic, operation
// for operation: cuda_replay.cpp (entry_pass). The time split (map pass, combine kernel in cuda.cu,
// outputs pass) is the lane kernel's.
// Compiled, not yet run on a GPU.
#include <cstdint>
#include <stdexcept>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "core/backends/cuda/cuda_check.hpp"
#include "mechanisms/common/cuda_storage.cuh"
#include "mechanisms/mamba/cuda_entry.hpp"
#include "mechanisms/mamba/entry_activations.hpp"
#include "mechanisms/mamba/exp2_poly.hpp"

namespace arch_bench {

namespace {

constexpr int kTile = kMambaEntryTile;
constexpr int kEntries = kMambaEntryEntriesPerThread;
constexpr unsigned kFullWarp = 0xffffffffu;

// The raw inputs of one tile a thread stages, loaded one tile ahead (global loads in flight while
// the lanes scan the tile before). Thread t stages the (channel, token) elements t + T i of the
// block's channels x tile and the B, C elements t + T i of the tile's tokens x N (T threads).
template <int N>
struct EntryStage {
  static constexpr int kThreads = mamba_entry_threads(N);
  static constexpr int kChannels = mamba_entry_channels_per_block(N);
  static constexpr int kTokenItems = kChannels * kTile / kThreads;  // 16 / L: 4 at N 16, 8 at N 8
  static constexpr int kStateItems = kTile * N / kThreads;          // 2
  static_assert(kTokenItems * kThreads == kChannels * kTile && kStateItems * kThreads == kTile * N,
                "the staging covers the tile exactly");
  float u[kTokenItems], dt_raw[kTokenItems], z[kTokenItems], b[kStateItems], c[kStateItems];
};

// What a thread stages, fixed for the whole walk: its items' pointers at token 0 of the segment
// walk (one per tensor; item i is T / 16 channels further for the token items, T elements for B and
// C), and the last `first` at which each item is still inside the segment (a tile at `first` loads
// item i while first < last[i]; never for a channel past d_inner). Set up once, so that a tile's
// loads cost a 64-bit add and a compare each.
template <int N, class S>
struct EntryLoads {
  using Stage = EntryStage<N>;
  const S *u, *dt_raw, *z, *b, *c;
  std::int64_t item_stride;  // between token items: T / 16 channels' rows
  std::int64_t token_last[Stage::kTokenItems], state_last[Stage::kStateItems];
};

template <int N, class S>
__device__ __forceinline__ EntryLoads<N, S> entry_loads(const S* u, const S* dt_raw, const S* z, const S* B, const S* C,
                                                        std::int64_t first_row, std::int64_t batch,
                                                        std::int64_t tokens, std::int64_t end, int channels_here) {
  using Stage = EntryStage<N>;
  constexpr int kThreads = Stage::kThreads;
  static_assert(kThreads % kTile == 0, "a thread's token items share one token of the tile");
  EntryLoads<N, S> l;
  const int t = static_cast<int>(threadIdx.x) % kTile, ch0 = static_cast<int>(threadIdx.x) / kTile;
  const std::int64_t at = (first_row + ch0) * tokens + t;
  l.u = u + at, l.dt_raw = dt_raw + at, l.z = z + at;
  l.item_stride = static_cast<std::int64_t>(kThreads / kTile) * tokens;
  const std::int64_t bc = batch * tokens * N + threadIdx.x;  // the tile's tokens x N are contiguous
  l.b = B + bc, l.c = C + bc;
#pragma unroll
  for (int i = 0; i < Stage::kTokenItems; ++i) {
    const bool channel = ch0 + (kThreads / kTile) * i < channels_here;
    l.token_last[i] = channel ? end - t : 0;
  }
#pragma unroll
  for (int i = 0; i < Stage::kStateItems; ++i) {
    const int e = static_cast<int>(threadIdx.x) + kThreads * i;
    l.state_last[i] = end - e / N;
  }
  return l;
}

template <int N, bool kOutputs, class S>
__device__ __forceinline__ void load_stage(const EntryLoads<N, S>& l, std::int64_t first, EntryStage<N>& st) {
  using Stage = EntryStage<N>;
#pragma unroll
  for (int i = 0; i < Stage::kTokenItems; ++i) {
    const bool inside = first < l.token_last[i];
    const std::int64_t at = first + l.item_stride * i;
    st.u[i] = inside ? load_float(l.u[at]) : 0.0f;
    st.dt_raw[i] = inside ? load_float(l.dt_raw[at]) : 0.0f;
    if constexpr (kOutputs) st.z[i] = inside ? load_float(l.z[at]) : 0.0f;
  }
#pragma unroll
  for (int i = 0; i < Stage::kStateItems; ++i) {
    const bool inside = first < l.state_last[i];
    const std::int64_t at = first * N + Stage::kThreads * i;
    st.b[i] = inside ? load_float(l.b[at]) : 0.0f;
    if constexpr (kOutputs) st.c[i] = inside ? load_float(l.c[at]) : 0.0f;
  }
}

// The staged tile into shared memory: B, C as fp32 [token][entry]; per (channel, token) {dt, dt u}
// and {D u, silu(z)}, computed here once per (token, channel), with the MUFU-based activations of
// entry_activations.hpp. Past the segment dt = 0 and u = 0:
// the identity step (exp2(0) = 1 on both pipes, dt u B = 0), and nothing added to the dt sum.
template <int N, bool kOutputs, class S>
__device__ __forceinline__ void write_stage(const EntryStage<N>& st, const EntryLoads<N, S>& l, std::int64_t first,
                                            const float* bias, const float* skip_d, float* smem) {
  using Stage = EntryStage<N>;
#pragma unroll
  for (int i = 0; i < Stage::kTokenItems; ++i) {
    const int e = threadIdx.x + Stage::kThreads * i, ch = e / kTile, t = e % kTile;
    const float dt = first < l.token_last[i] ? entry_softplus(st.dt_raw[i] + bias[ch]) : 0.0f;
    *reinterpret_cast<float2*>(smem + mamba_entry_pair_index(N, ch, t)) = make_float2(dt, dt * st.u[i]);
    if constexpr (kOutputs) {
      *reinterpret_cast<float2*>(smem + mamba_entry_term_index(N, ch, t)) =
          make_float2(skip_d[ch] * st.u[i], entry_silu(st.z[i]));
    }
  }
#pragma unroll
  for (int i = 0; i < Stage::kStateItems; ++i) {
    const int e = threadIdx.x + Stage::kThreads * i;  // token e / N, entry e % N
    smem[mamba_entry_bc_index(N, 0, e / N, e % N)] = st.b[i];
    if constexpr (kOutputs) smem[mamba_entry_bc_index(N, 1, e / N, e % N)] = st.c[i];
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
template <int N, class S, bool kOutputs, bool kPolynomial>
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
  __shared__ float bias[kChannels], skip_d[kChannels];

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

  if (threadIdx.x < kChannels) {
    const int cc = run.first_channel + static_cast<int>(threadIdx.x);
    bias[threadIdx.x] = cc < plan.channels ? dt_bias[cc] : 0.0f;
    skip_d[threadIdx.x] = cc < plan.channels ? D[cc] : 0.0f;
  }
  const int channels_here = plan.channels - run.first_channel < kChannels ? plan.channels - run.first_channel : kChannels;
  const EntryLoads<N, S> loads = entry_loads<N>(u, dt_raw, z, B, C, first_row, run.batch, tokens, end, channels_here);
  S* out_row = kOutputs ? out + row * tokens : nullptr;
  float a2[kEntries], h[kEntries];
#pragma unroll
  for (int i = 0; i < kEntries; ++i) {
    a2[i] = active ? A[static_cast<std::int64_t>(c) * N + s0 + i] * kMambaLog2e : 0.0f;
    h[i] = kOutputs && active ? entering[mamba_segment_state_index(plan, row, run.segment, s0 + i)] : 0.0f;
  }
  float dt_sum = 0.0f;
  const float* pairs = smem + mamba_entry_pair_index(N, ch, 0);
  const float* terms = smem + mamba_entry_term_index(N, ch, 0);

  EntryStage<N> st;
  if (begin < end) load_stage<N, kOutputs>(loads, begin, st);
  __syncthreads();  // bias, skip_d
  for (std::int64_t first = begin; first < end; first += kTile) {
    write_stage<N, kOutputs>(st, loads, first, bias, skip_d, smem);
    __syncthreads();  // the tile is staged
    if (first + kTile < end) load_stage<N, kOutputs>(loads, first + kTile, st);
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
            const float a = kPolynomial && mamba_entry_polynomial_token(t) ? mamba_exp2_poly(x) : entry_exp2(x);
            h[i] = fmaf(a, h[i], duv[r] * bv[i]);
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
        const int t = mamba_entry_owned_token(N, j, g / kLanes);
        const float2 term = *reinterpret_cast<const float2*>(terms + 2 * t);  // {D u, silu(z)}
        if (active && first + t < end) store_float(out_row + first + t, (y + term.x) * term.y);
      }
    }
    __syncthreads();  // every warp is done with the tile's shared arrays
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

template <int N, class S, bool kOutputs, bool kPolynomial>
void launch_pass(const MambaPrefillPlan& plan, const MambaParameters& params, const S* u, const S* dt_raw, const S* z,
                 const S* B, const S* C, const float* entering, float* state, float* workspace, S* out,
                 std::int64_t blocks, std::int64_t grid_segments, CUstream_st* stream) {
  mamba_entry_scan_kernel<N, S, kOutputs, kPolynomial><<<static_cast<unsigned>(blocks), mamba_entry_threads(N),
                                                          plan.shared_bytes, stream>>>(
      params.A, params.dt_bias, params.D, u, dt_raw, z, B, C, entering, state, workspace, out, plan, grid_segments);
  check_launch(kOutputs ? "mamba_entry_scan_kernel" : "mamba_entry_scan_kernel (segment maps)");
}

template <int N, class S>
void launch_for_state_size(const MambaPrefillPlan& plan, const MambaParameters& params, const S* u, const S* dt_raw,
                           const S* z, const S* B, const S* C, const float* entering, float* state, float* workspace,
                           S* out, bool outputs, CUstream_st* stream) {
  const bool polynomial = plan.kernel == MambaScanKernel::entry;
  const std::int64_t blocks = outputs ? plan.blocks : plan.map_blocks;
  const std::int64_t segments = outputs ? plan.segments : plan.segments - 1;
  if (outputs && polynomial) {
    launch_pass<N, S, true, true>(plan, params, u, dt_raw, z, B, C, entering, state, workspace, out, blocks, segments, stream);
  } else if (outputs) {
    launch_pass<N, S, true, false>(plan, params, u, dt_raw, z, B, C, entering, state, workspace, out, blocks, segments, stream);
  } else if (polynomial) {
    launch_pass<N, S, false, true>(plan, params, u, dt_raw, z, B, C, entering, state, workspace, out, blocks, segments, stream);
  } else {
    launch_pass<N, S, false, false>(plan, params, u, dt_raw, z, B, C, entering, state, workspace, out, blocks, segments, stream);
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
