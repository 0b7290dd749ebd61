// Mamba's selective-scan prefill with one thread per (channel, state entry) walking time (issue 39):
// no lane scan; per element dt x A log2 e, one exp2 (the MUFU's ex2.approx, or the FMA pipe's
// polynomial for kMambaEntryPolynomialTokens of each tile's tokens), du x B, the h FMA and C h; y
// summed over a channel's N lanes through a per-warp shared array once per tile. Geometry, shared
// layout and the choice of polynomial tokens: cuda_plan.hpp (tested on the CPU); the CPU replay of
// this arithmetic, operation for operation: cuda_replay.cpp (replay_mamba_entry_pass). The time
// split (map pass, combine kernel in cuda.cu, outputs pass) is the lane kernel's.
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

// The raw inputs of one tile a thread stages, loaded one tile ahead (global loads in flight while
// the lanes scan the tile before). Thread t stages the (channel, token) elements t + 256 i of the
// block's channels x tile and the B, C elements t + 256 i of the tile's tokens x N.
template <int N>
struct EntryStage {
  static constexpr int kChannels = mamba_entry_channels_per_block(N);
  static constexpr int kTokenItems = kChannels * kTile / kMambaEntryThreads;            // 16 / N
  static constexpr int kStateItems = (kTile * N + kMambaEntryThreads - 1) / kMambaEntryThreads;  // N / 16, rounded up
  float u[kTokenItems], dt_raw[kTokenItems], z[kTokenItems], b[kStateItems], c[kStateItems];
};

// What a thread stages, fixed for the whole walk: its items' pointers at token 0 of the segment
// walk (one per tensor; item i is 16 i channels further for the token items, 256 i elements for
// B and C), and the last `first` at which each item is still inside the segment (a tile at
// `first` loads item i while first < last[i]; never for a channel past d_inner). Set up once, so
// that a tile's loads cost a 64-bit add and a compare each.
template <int N, class S>
struct EntryLoads {
  using Stage = EntryStage<N>;
  const S *u, *dt_raw, *z, *b, *c;
  std::int64_t item_stride;  // between token items: 256 / 16 channels' rows
  std::int64_t token_last[Stage::kTokenItems], state_last[Stage::kStateItems];
};

template <int N, class S>
__device__ __forceinline__ EntryLoads<N, S> entry_loads(const S* u, const S* dt_raw, const S* z, const S* B, const S* C,
                                                        std::int64_t first_row, std::int64_t batch,
                                                        std::int64_t tokens, std::int64_t end, int channels_here) {
  using Stage = EntryStage<N>;
  static_assert(kMambaEntryThreads % kTile == 0, "a thread's token items share one token of the tile");
  EntryLoads<N, S> l;
  const int t = static_cast<int>(threadIdx.x) % kTile, ch0 = static_cast<int>(threadIdx.x) / kTile;
  const std::int64_t at = (first_row + ch0) * tokens + t;
  l.u = u + at, l.dt_raw = dt_raw + at, l.z = z + at;
  l.item_stride = static_cast<std::int64_t>(kMambaEntryThreads / kTile) * tokens;
  const std::int64_t bc = batch * tokens * N + threadIdx.x;  // the tile's tokens x N are contiguous
  l.b = B + bc, l.c = C + bc;
#pragma unroll
  for (int i = 0; i < Stage::kTokenItems; ++i) {
    const bool channel = ch0 + (kMambaEntryThreads / kTile) * i < channels_here;
    l.token_last[i] = channel ? end - t : 0;
  }
#pragma unroll
  for (int i = 0; i < Stage::kStateItems; ++i) {
    const int e = static_cast<int>(threadIdx.x) + kMambaEntryThreads * i;
    l.state_last[i] = e < kTile * N ? end - e / N : 0;
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
    const std::int64_t at = first * N + kMambaEntryThreads * i;
    st.b[i] = inside ? load_float(l.b[at]) : 0.0f;
    if constexpr (kOutputs) st.c[i] = inside ? load_float(l.c[at]) : 0.0f;
  }
}

// The staged tile into shared memory: B, C as fp32 [entry][token]; per (channel, token) {dt, dt u}
// and {D u, silu(z)}, computed here once per (token, channel), with the MUFU-based activations of
// entry_activations.hpp. Past the segment dt = 0 and u = 0:
// the identity step (exp2(0) = 1 on both pipes, dt u B = 0), and nothing added to the dt sum.
template <int N, bool kOutputs, class S>
__device__ __forceinline__ void write_stage(const EntryStage<N>& st, const EntryLoads<N, S>& l, std::int64_t first,
                                            const float* bias, const float* skip_d, float* smem) {
  using Stage = EntryStage<N>;
  float2* pairs = reinterpret_cast<float2*>(smem + mamba_entry_pairs_offset(N));
  float2* terms = reinterpret_cast<float2*>(smem + mamba_entry_terms_offset(N));
#pragma unroll
  for (int i = 0; i < Stage::kTokenItems; ++i) {
    const int e = threadIdx.x + kMambaEntryThreads * i, ch = e / kTile;
    const float dt = first < l.token_last[i] ? entry_softplus(st.dt_raw[i] + bias[ch]) : 0.0f;
    pairs[e] = make_float2(dt, dt * st.u[i]);
    if constexpr (kOutputs) terms[e] = make_float2(skip_d[ch] * st.u[i], entry_silu(st.z[i]));
  }
#pragma unroll
  for (int i = 0; i < Stage::kStateItems; ++i) {
    const int e = threadIdx.x + kMambaEntryThreads * i, t = e / N, s = e % N;
    if (e < kTile * N) {
      smem[mamba_entry_bc_index(N, 0, s, t)] = st.b[i];
      if constexpr (kOutputs) smem[mamba_entry_bc_index(N, 1, s, t)] = st.c[i];
    }
  }
}

// One pass over one segment per (channel, entry) thread. grid: batch x segments-in-grid x channel
// groups blocks (mamba_scan_run with the entry kernel's channels per block).
// The map pass (no outputs) runs only for a split plan, at small batch where the grid fills one wave
// with room to spare: it gets 3 blocks' worth of registers (80), where at 4 (64) its N = 8 form
// spilled 4 bytes on sm_80.
template <int N, class S, bool kOutputs, bool kPolynomial>
__global__ void __launch_bounds__(kMambaEntryThreads, kOutputs ? kMambaEntryMinBlocksPerSm : kMambaEntryMapMinBlocksPerSm)
    mamba_entry_scan_kernel(const float* __restrict__ A, const float* __restrict__ dt_bias,
                            const float* __restrict__ D, const S* __restrict__ u, const S* __restrict__ dt_raw,
                            const S* __restrict__ z, const S* __restrict__ B, const S* __restrict__ C,
                            const float* entering, float* state, float* __restrict__ workspace, S* __restrict__ out,
                            MambaPrefillPlan plan, std::int64_t grid_segments) {
  constexpr int kChannels = mamba_entry_channels_per_block(N);
  extern __shared__ __align__(16) float smem[];
  __shared__ float bias[kChannels], skip_d[kChannels];

  const MambaScanRun run = mamba_scan_run(blockIdx.x, plan.channel_groups, grid_segments, kChannels);
  const int warp = threadIdx.x / 32;
  const MambaEntrySlot slot = mamba_entry_slot(N, static_cast<int>(threadIdx.x));
  const int k = slot.channel_in_warp, s = slot.entry, ch = slot.channel;
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
  const float a2 = active ? A[static_cast<std::int64_t>(c) * N + s] * kMambaLog2e : 0.0f;
  float h = kOutputs && active ? entering[mamba_segment_state_index(plan, row, run.segment, s)] : 0.0f;
  float dt_sum = 0.0f;
  const float4* pairs = reinterpret_cast<const float4*>(smem + mamba_entry_pairs_offset(N)) + ch * (kTile / 2);
  const float2* terms = reinterpret_cast<const float2*>(smem + mamba_entry_terms_offset(N)) + ch * kTile;
  float* y_rows = smem + mamba_entry_y_offset(N) + warp * kMambaEntryWarpYFloats;

  EntryStage<N> st;
  if (begin < end) load_stage<N, kOutputs>(loads, begin, st);
  __syncthreads();  // bias, skip_d
  for (std::int64_t first = begin; first < end; first += kTile) {
    write_stage<N, kOutputs>(st, loads, first, bias, skip_d, smem);
    __syncthreads();  // the tile is staged
    if (first + kTile < end) load_stage<N, kOutputs>(loads, first + kTile, st);
    // Row k N + s of the warp's y array: this lane's C h of the tile, written 4 tokens at a time as
    // they are made (4 registers live, not 16).
    float* mine = y_rows + mamba_entry_y_index(N, k, s, 0);
#pragma unroll
    for (int t4 = 0; t4 < kTile; t4 += 4) {
      const float4 b4 = *reinterpret_cast<const float4*>(smem + mamba_entry_bc_index(N, 0, s, t4));
      const float4 p01 = pairs[t4 / 2], p23 = pairs[t4 / 2 + 1];
      const float bv[4] = {b4.x, b4.y, b4.z, b4.w};
      const float dtv[4] = {p01.x, p01.z, p23.x, p23.z}, duv[4] = {p01.y, p01.w, p23.y, p23.w};
      float cv[4] = {}, y[4] = {};
      if constexpr (kOutputs) {
        const float4 c4 = *reinterpret_cast<const float4*>(smem + mamba_entry_bc_index(N, 1, s, t4));
        cv[0] = c4.x, cv[1] = c4.y, cv[2] = c4.z, cv[3] = c4.w;
      }
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float x = dtv[j] * a2;
        const float a = kPolynomial && mamba_entry_polynomial_token(t4 + j) ? mamba_exp2_poly(x) : entry_exp2(x);
        h = fmaf(a, h, duv[j] * bv[j]);
        if constexpr (kOutputs) {
          y[j] = cv[j] * h;
        } else {
          dt_sum += dtv[j];
        }
      }
      if constexpr (kOutputs) *reinterpret_cast<float4*>(mine + t4) = make_float4(y[0], y[1], y[2], y[3]);
    }
    if constexpr (kOutputs) {
      // The transpose-reduce: each lane sums the N entries of its tokens s + N q in entry order.
      __syncwarp();
#pragma unroll
      for (int q = 0; q < kTile / N; ++q) {
        const int t = s + N * q;
        float sum = y_rows[mamba_entry_y_index(N, k, 0, t)];
#pragma unroll
        for (int e = 1; e < N; ++e) sum += y_rows[mamba_entry_y_index(N, k, e, t)];
        const float2 term = terms[t];  // {D u, silu(z)}
        if (active && first + t < end) store_float(out_row + first + t, (sum + term.x) * term.y);
      }
    }
    __syncthreads();  // every warp is done with the tile's shared arrays
  }
  if (!active) return;
  if constexpr (kOutputs) {
    if (run.segment == plan.segments - 1) state[row * N + s] = h;
  } else {
    workspace[mamba_segment_state_index(plan, row, run.segment, s)] = h;
    if (s == 0) workspace[mamba_segment_dt_index(plan, row, run.segment)] = dt_sum;
  }
}

template <int N, class S, bool kOutputs, bool kPolynomial>
void launch_pass(const MambaPrefillPlan& plan, const MambaParameters& params, const S* u, const S* dt_raw, const S* z,
                 const S* B, const S* C, const float* entering, float* state, float* workspace, S* out,
                 std::int64_t blocks, std::int64_t grid_segments, CUstream_st* stream) {
  mamba_entry_scan_kernel<N, S, kOutputs, kPolynomial><<<static_cast<unsigned>(blocks), kMambaEntryThreads,
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
