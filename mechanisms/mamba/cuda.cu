// CUDA kernels of Mamba's selective scan: a fused decode step and a prefill in which a warp scans
// one channel's recurrence, chunk after chunk, with a shuffle scan over (a, b) pairs and h carried
// between chunks; at small batch the sequence is split into segments scanned by separate blocks,
// whose entering h a small combine pass finds (cuda_plan.hpp describes the geometry). fp32 math
// throughout; expf and log1pf keep softplus and silu within 1e-4 of the fp64 reference, and
// exp(dt A) is one ex2.approx. A plan for the entry kernel (a thread per (channel, 4 state entries),
// cuda_entry.cu) shares the split's combine pass here. The lane prefill is bound by instruction issue, not by the MUFU: its
// instruction counts per (token, channel, entry), read off the SASS, are in docs/gpu-guide.md.
#include <cstdint>
#include <stdexcept>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "mechanisms/common/cuda_storage.cuh"
#include "mechanisms/common/ssm_activations.hpp"
#include "mechanisms/mamba/cuda.hpp"
#include "mechanisms/mamba/cuda_entry.hpp"
#include "mechanisms/mamba/entry_activations.hpp"
#include "core/backends/cuda/cuda_check.hpp"

namespace arch_bench {

namespace {

// ---------------------------------------------------------------------------------------------
// Decode: a group of `lanes` threads per row (MambaDecodePlan). Threads past the last row keep
// running with zeros so that every lane of a warp takes part in the shuffles.
template <class T>
__global__ void __launch_bounds__(kMambaDecodeThreads)
    mamba_decode_kernel(const float* __restrict__ A, const float* __restrict__ dt_bias, const float* __restrict__ D,
                        const T* __restrict__ u, const T* __restrict__ dt_raw, const T* __restrict__ z,
                        const T* __restrict__ B, const T* __restrict__ C, float* __restrict__ state,
                        T* __restrict__ out, std::int64_t rows, int channels, int n, int lanes) {
  const std::int64_t global = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t r = global / lanes;  // mamba_decode_slot
  const int lane = static_cast<int>(global % lanes);
  const bool valid = r < rows;
  const int c = valid ? static_cast<int>(r % channels) : 0;
  const std::int64_t b = valid ? r / channels : 0;
  const float x = valid ? load_float(u[r]) : 0.0f;
  const float dt = valid ? softplus(load_float(dt_raw[r]) + dt_bias[c]) : 0.0f;
  const float du = dt * x;
  float y = 0.0f;
  if (valid) {
    float* h = state + r * n;
    const float* a_row = A + static_cast<std::int64_t>(c) * n;
    const T* b_row = B + b * n;
    const T* c_row = C + b * n;
    for (int s = lane; s < n; s += lanes) {
      const float next = fmaf(expf(dt * a_row[s]), h[s], du * load_float(b_row[s]));
      h[s] = next;
      y = fmaf(load_float(c_row[s]), next, y);
    }
  }
  for (int offset = lanes / 2; offset > 0; offset >>= 1) y += __shfl_xor_sync(0xffffffffu, y, offset);
  if (valid && lane == 0) store_float(out + r, (y + D[c] * x) * silu(load_float(z[r])));
}

// ---------------------------------------------------------------------------------------------
// Prefill: the warp-level chunked selective scan (MambaPrefillPlan in cuda_plan.hpp; its CPU replay,
// operation for operation, is cuda_replay.cpp).

constexpr int kItems = kMambaScanItems;
constexpr int kGroup = kMambaScanStateGroup;
constexpr unsigned kFullWarp = 0xffffffffu;

// A lane's kItems consecutive values starting at p (count of them inside the sequence, 0 past it):
// 16-byte vector loads when all are inside and p is aligned, else one by one.
__device__ __forceinline__ void load_items(const float* p, int count, float (&v)[kItems]) {
  if (count >= kItems && reinterpret_cast<std::uintptr_t>(p) % 16 == 0) {
    const float4 lo = reinterpret_cast<const float4*>(p)[0], hi = reinterpret_cast<const float4*>(p)[1];
    v[0] = lo.x, v[1] = lo.y, v[2] = lo.z, v[3] = lo.w, v[4] = hi.x, v[5] = hi.y, v[6] = hi.z, v[7] = hi.w;
    return;
  }
#pragma unroll
  for (int i = 0; i < kItems; ++i) v[i] = i < count ? p[i] : 0.0f;
}
// bf16 pairs in a 32-bit word, first element in the low half: widening is a shift or a mask.
__device__ __forceinline__ float bf16_low(unsigned word) { return __uint_as_float(word << 16); }
__device__ __forceinline__ float bf16_high(unsigned word) { return __uint_as_float(word & 0xffff0000u); }
__device__ __forceinline__ void unpack_bf16x8(uint4 raw, float (&v)[kItems]) {
  const unsigned words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int k = 0; k < 4; ++k) v[2 * k] = bf16_low(words[k]), v[2 * k + 1] = bf16_high(words[k]);
}
__device__ __forceinline__ void load_items(const __nv_bfloat16* p, int count, float (&v)[kItems]) {
  if (count >= kItems && reinterpret_cast<std::uintptr_t>(p) % 16 == 0) {
    unpack_bf16x8(*reinterpret_cast<const uint4*>(p), v);
    return;
  }
#pragma unroll
  for (int i = 0; i < kItems; ++i) v[i] = i < count ? __bfloat162float(p[i]) : 0.0f;
}

__device__ __forceinline__ void store_items(float* p, int count, const float (&v)[kItems]) {
  if (count >= kItems && reinterpret_cast<std::uintptr_t>(p) % 16 == 0) {
    reinterpret_cast<float4*>(p)[0] = make_float4(v[0], v[1], v[2], v[3]);
    reinterpret_cast<float4*>(p)[1] = make_float4(v[4], v[5], v[6], v[7]);
    return;
  }
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    if (i < count) p[i] = v[i];
  }
}
__device__ __forceinline__ unsigned pack_bf16x2(float first, float second) {
  const __nv_bfloat162 pair = __floats2bfloat162_rn(first, second);  // .x (first) in the low half
  return *reinterpret_cast<const unsigned*>(&pair);
}
__device__ __forceinline__ void store_items(__nv_bfloat16* p, int count, const float (&v)[kItems]) {
  if (count >= kItems && reinterpret_cast<std::uintptr_t>(p) % 16 == 0) {
    *reinterpret_cast<uint4*>(p) =
        make_uint4(pack_bf16x2(v[0], v[1]), pack_bf16x2(v[2], v[3]), pack_bf16x2(v[4], v[5]), pack_bf16x2(v[6], v[7]));
    return;
  }
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    if (i < count) p[i] = __float2bfloat16_rn(v[i]);
  }
}

// One Hillis-Steele step of the lanes' inclusive scan over (a, b) pairs: a lane at or above
// `offset` combines the pair `offset` lanes below with its own, (a, b) <- (a a', a b' + b); a lane
// below keeps its pair. The shuffle's own in-range predicate guards the update in place (written
// with __shfl_up_sync and a branch, nvcc keeps copies of both values and adds four moves and two
// selects per step: 30 instructions a scan instead of 20).
__device__ __forceinline__ void scan_step(float& a, float& b, int offset) {
  asm("{\n\t.reg .pred in;\n\t.reg .f32 pa, pb;\n\t"
      "shfl.sync.up.b32 pa|in, %0, %2, 0, -1;\n\t"
      "shfl.sync.up.b32 pb, %1, %2, 0, -1;\n\t"
      "@in fma.rn.f32 %1, %0, pb, %1;\n\t"
      "@in mul.rn.f32 %0, %0, pa;\n\t}"
      : "+f"(a), "+f"(b)
      : "r"(offset));
}

// A lane's kItems values of one fp32 tile row (mamba_tile_index(4, ...): vector j of lane l at (32 j + l) 4).
constexpr int kTileStride = mamba_tile_stride(4);
__device__ __forceinline__ void tile_items(const float* row, int lane, float (&v)[kItems]) {
  const float4 lo = reinterpret_cast<const float4*>(row)[lane], hi = reinterpret_cast<const float4*>(row)[32 + lane];
  v[0] = lo.x, v[1] = lo.y, v[2] = lo.z, v[3] = lo.w, v[4] = hi.x, v[5] = hi.y, v[6] = hi.z, v[7] = hi.w;
}
// 8 consecutive values at a 16-byte aligned p, widened to fp32.
__device__ __forceinline__ void load_aligned8(const float* p, float (&v)[kItems]) {
  const float4 lo = reinterpret_cast<const float4*>(p)[0], hi = reinterpret_cast<const float4*>(p)[1];
  v[0] = lo.x, v[1] = lo.y, v[2] = lo.z, v[3] = lo.w, v[4] = hi.x, v[5] = hi.y, v[6] = hi.z, v[7] = hi.w;
}
__device__ __forceinline__ void load_aligned8(const __nv_bfloat16* p, float (&v)[kItems]) {
  unpack_bf16x8(*reinterpret_cast<const uint4*>(p), v);
}

// One warp's channel in a scan pass: its per-channel constants and where its rows start (u, dt_raw,
// z, out at the row's token 0; B, C at the batch element's).
template <class S>
struct ScanChannel {
  const S *u, *dt_raw, *z, *b_rows, *c_rows;
  S* out;
  float bias, skip;
  std::int64_t tokens;
  int n;
  bool active;      // uniform over the warp; an idle warp still meets the barriers
  bool vector_bc;   // N % 8 == 0 and B, C 16-byte aligned: staging by vectors (mamba_stage_token)
};

// B (and with kOutputs C) entries s0 .. s0 + kGroup - 1 of the chunk from `first` into the fp32
// tiles, by the whole block. Past the sequence or N: zeros.
template <bool kOutputs, class S>
__device__ __forceinline__ void stage_group(const ScanChannel<S>& ch, std::int64_t first, int s0, float* b_tile,
                                            float* c_tile) {
  static_assert(kMambaScanStateGroup == kItems && kMambaScanThreads == kMambaScanChunk,
                "vector staging: one thread per token, one 8-entry vector per tensor");
  const int n = ch.n;
  if (ch.vector_bc) {
    const int token = mamba_stage_token(threadIdx.x);
    const std::int64_t at = first + token;
    float b[kItems] = {}, c[kItems] = {};
    if (at < ch.tokens) {
      load_aligned8(ch.b_rows + at * n + s0, b);
      if constexpr (kOutputs) load_aligned8(ch.c_rows + at * n + s0, c);
    }
    const int to = mamba_tile_index(4, 0, token);
#pragma unroll
    for (int g = 0; g < kGroup; ++g) {
      b_tile[to + g * kTileStride] = b[g];
      if constexpr (kOutputs) c_tile[to + g * kTileStride] = c[g];
    }
    return;
  }
  for (int e = threadIdx.x; e < kMambaScanChunk * kGroup; e += kMambaScanThreads) {
    const int token = e / kGroup, g = e % kGroup;  // consecutive threads: consecutive entries of a token
    const std::int64_t at = first + token;
    const bool inside = at < ch.tokens && s0 + g < n;
    const int to = mamba_tile_index(4, g, token);
    b_tile[to] = inside ? load_float(ch.b_rows[at * n + s0 + g]) : 0.0f;
    if constexpr (kOutputs) c_tile[to] = inside ? load_float(ch.c_rows[at * n + s0 + g]) : 0.0f;
  }
}

// One 256-token chunk from `first`, per state entry s the carried h and A_s log2 e in shared
// memory (hs[s] = {h, a2}): the body of every scan pass. kOutputs: also C h, the D skip and the
// gate, writing out (the outputs pass and the unsplit kernel); without it (the map pass of a split
// prefill) B alone is staged, the lanes' re-run and the outputs are skipped, and dt_total gains the
// chunk's sum of dt (lane sums, then a butterfly, which leaves the same bits in every lane:
// a + b == b + a).
template <bool kOutputs, class S>
__device__ __forceinline__ void scan_chunk(const ScanChannel<S>& ch, std::int64_t first, int lane, float2* hs,
                                           float* b_tile, float* c_tile, float& dt_total) {
  const int n = ch.n;
  const std::int64_t token0 = first + mamba_scan_token(lane, 0);
  const std::int64_t left = ch.tokens - token0;
  const int count = !ch.active || left <= 0 ? 0 : left >= kItems ? kItems : static_cast<int>(left);
  // Per item: u, dt and dt u; past the sequence dt = 0 makes the identity step (a, b) = (1, 0).
  float x[kItems] = {}, dt[kItems] = {}, du[kItems], y[kItems];
  if (count > 0) {
    load_items(ch.u + token0, count, x);
    load_items(ch.dt_raw + token0, count, dt);
  }
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    dt[i] = i < count ? softplus(dt[i] + ch.bias) : 0.0f;
    du[i] = dt[i] * x[i];
    y[i] = 0.0f;
  }
  // The lane's sum of dt, in item order: its decay of entry s is exp2(lane_dt a2), one exp per
  // (lane, entry) instead of 7 products of the items' decays.
  float lane_dt = dt[0];
#pragma unroll
  for (int i = 1; i < kItems; ++i) lane_dt += dt[i];
  if constexpr (!kOutputs) {
    float sum = lane_dt;
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_xor_sync(kFullWarp, sum, offset);
    dt_total += sum;
  }
  for (int s0 = 0; s0 < n; s0 += kGroup) {
    __syncthreads();  // every warp is done with the previous group's tiles
    stage_group<kOutputs>(ch, first, s0, b_tile, c_tile);
    __syncthreads();
    if (!ch.active) continue;
    const int group_size = min(kGroup, n - s0);
    for (int g = 0; g < group_size; ++g) {
      const int s = s0 + g;
      const float2 carried = hs[s];  // {h entering the chunk, A_s log2 e}
      const float a2 = carried.y;
      float b_in[kItems], a[kItems], b[kItems];
      tile_items(b_tile + g * kTileStride, lane, b_in);
      // The lane's fold of its steps: (fold_a, fold_b) maps h entering the lane to h leaving it.
#pragma unroll
      for (int i = 0; i < kItems; ++i) {
        a[i] = entry_exp2(dt[i] * a2);  // ex2.approx.ftz: one per (token, channel, entry), the scan's floor
        b[i] = du[i] * b_in[i];
      }
      float fold_b = b[0];
#pragma unroll
      for (int i = 1; i < kItems; ++i) fold_b = fmaf(a[i], fold_b, b[i]);
      float fold_a = entry_exp2(lane_dt * a2);
      // Inclusive scan over the lanes (ScanElement's combine: lower lanes first).
#pragma unroll
      for (int offset = 1; offset < 32; offset *= 2) scan_step(fold_a, fold_b, offset);
      const float entering = carried.x;
      const float exit = fmaf(fold_a, entering, fold_b);  // h after this lane's last token
      const float leaving = __shfl_sync(kFullWarp, exit, 31);
      if constexpr (kOutputs) {
        float state_s = __shfl_up_sync(kFullWarp, exit, 1);
        if (lane == 0) state_s = entering;
        float c_in[kItems];
        tile_items(c_tile + g * kTileStride, lane, c_in);
#pragma unroll
        for (int i = 0; i < kItems; ++i) {
          state_s = fmaf(a[i], state_s, b[i]);
          y[i] = fmaf(c_in[i], state_s, y[i]);
        }
      }
      __syncwarp();  // every lane has read hs[s]
      if (lane == 0) hs[s].x = leaving;
    }
  }
  if constexpr (kOutputs) {
    if (count > 0) {
      // out = (y + D u) silu(z)
      float gate[kItems];
      load_items(ch.z + token0, count, gate);
#pragma unroll
      for (int i = 0; i < kItems; ++i) y[i] = fmaf(ch.skip, x[i], y[i]) * silu(gate[i]);
      store_items(ch.out + token0, count, y);
    }
  }
}

// The scan over one segment of the sequence (the whole of it unsplit) per warp and channel, in
// `grid_segments` x batch x channel_groups blocks. kOutputs (the outputs pass, and the unsplit
// kernel with entering = state): h enters from entering[(row, segment)] and the last segment
// leaves it in `state`. Map pass (!kOutputs): h enters at 0 and leaves, with the segment's dt sum,
// in the workspace at (row, segment).
template <class S, bool kOutputs>
__global__ void __launch_bounds__(kMambaScanThreads, kMambaScanMinBlocksPerSm)
    mamba_warp_scan_kernel(const float* __restrict__ A, const float* __restrict__ dt_bias,
                           const float* __restrict__ D, const S* __restrict__ u, const S* __restrict__ dt_raw,
                           const S* __restrict__ z, const S* __restrict__ B, const S* __restrict__ C,
                           const float* entering, float* state, float* __restrict__ workspace, S* __restrict__ out,
                           MambaPrefillPlan plan, std::int64_t grid_segments) {
  static_assert(kItems == 8, "load_items, store_items and tile_items move 8 items: 2 fp32 or 1 bf16 vector");
  extern __shared__ __align__(16) unsigned char shared[];
  float* b_tile = reinterpret_cast<float*>(shared);                        // [kGroup][kTileStride]
  float* c_tile = b_tile + kGroup * kTileStride;                           // [kGroup][kTileStride]
  float2* carry = reinterpret_cast<float2*>(c_tile + kGroup * kTileStride);  // [warps][n] {h, A log2 e}

  const MambaScanRun run = mamba_scan_run(blockIdx.x, plan.channel_groups, grid_segments);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, n = plan.state_size;
  const int c = run.first_channel + warp;
  const bool active = c < plan.channels;
  const std::int64_t row = run.batch * plan.channels + (active ? c : 0), tokens = plan.tokens;
  const S* b_rows = B + run.batch * tokens * n;
  const S* c_rows = C + run.batch * tokens * n;
  const bool vector_bc = n % kGroup == 0 && reinterpret_cast<std::uintptr_t>(B) % 16 == 0 &&
                         reinterpret_cast<std::uintptr_t>(C) % 16 == 0;
  const ScanChannel<S> ch{u + row * tokens,
                          dt_raw + row * tokens,
                          z + row * tokens,
                          b_rows,
                          c_rows,
                          kOutputs ? out + row * tokens : nullptr,
                          active ? dt_bias[c] : 0.0f,
                          active ? D[c] : 0.0f,
                          tokens,
                          n,
                          active,
                          vector_bc};
  float2* hs = carry + warp * n;
  if (active) {
    const float* a_row = A + static_cast<std::int64_t>(c) * n;
    for (int s = lane; s < n; s += 32) {
      const float h = kOutputs ? entering[mamba_segment_state_index(plan, row, run.segment, s)] : 0.0f;
      hs[s] = make_float2(h, a_row[s] * kMambaLog2e);
    }
  }
  __syncwarp();
  float dt_total = 0.0f;
  const std::int64_t begin = run.segment * plan.segment_tokens;
  const std::int64_t end = begin + plan.segment_tokens < tokens ? begin + plan.segment_tokens : tokens;
  for (std::int64_t first = begin; first < end; first += kMambaScanChunk) {
    scan_chunk<kOutputs>(ch, first, lane, hs, b_tile, c_tile, dt_total);
  }
  __syncwarp();  // lane 0's last writes of h
  if (!active) return;
  if constexpr (kOutputs) {
    if (run.segment == plan.segments - 1) {
      for (int s = lane; s < n; s += 32) state[row * n + s] = hs[s].x;
    }
  } else {
    for (int s = lane; s < n; s += 32) workspace[mamba_segment_state_index(plan, row, run.segment, s)] = hs[s].x;
    if (lane == 0) workspace[mamba_segment_dt_index(plan, row, run.segment)] = dt_total;
  }
}

// Pass 2 of a split prefill, one thread per (row, state entry): the segments' maps h -> P h + Q in
// order from the carried h, P = exp2(dt sum x A_s log2 e) and Q pass 1's h from zero; each
// segment's slot then holds the h entering it (segment 0: the carried h).
__global__ void __launch_bounds__(kMambaCombineThreads)
    mamba_segment_combine_kernel(const float* __restrict__ A, const float* __restrict__ state,
                                 float* __restrict__ workspace, MambaPrefillPlan plan) {
  const std::int64_t at = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int n = plan.state_size;
  if (at >= plan.batch * plan.channels * n) return;
  const std::int64_t row = at / n;
  const int s = static_cast<int>(at % n), c = static_cast<int>(row % plan.channels);
  const float a2 = A[static_cast<std::int64_t>(c) * n + s] * kMambaLog2e;
  float h = state[at];
  for (std::int64_t k = 0; k < plan.segments; ++k) {
    float& slot = workspace[mamba_segment_state_index(plan, row, k, s)];
    if (k == plan.segments - 1) {
      slot = h;
      break;
    }
    const float from_zero = slot;
    slot = h;
    h = fmaf(entry_exp2(workspace[mamba_segment_dt_index(plan, row, k)] * a2), h, from_zero);
  }
}

}  // namespace

template <class T>
void launch_mamba_decode(const MambaDecodePlan& plan, const MambaParameters& params, const MambaTokens<T>& x,
                         float* state, T* out, CUstream_st* stream) {
  using S = typename DeviceStorage<T>::type;
  if (plan.blocks == 0) return;
  mamba_decode_kernel<S><<<static_cast<unsigned>(plan.blocks), plan.threads, 0, stream>>>(
      params.A, params.dt_bias, params.D, reinterpret_cast<const S*>(x.u), reinterpret_cast<const S*>(x.dt_raw),
      reinterpret_cast<const S*>(x.z), reinterpret_cast<const S*>(x.B), reinterpret_cast<const S*>(x.C), state,
      reinterpret_cast<S*>(out), plan.rows, plan.channels, plan.state_size, plan.lanes);
  check_launch("mamba_decode_kernel");
}

template <class T>
void launch_mamba_prefill(const MambaPrefillPlan& plan, const MambaParameters& params, const MambaTokens<T>& x,
                          float* state, float* workspace, T* out, CUstream_st* stream) {
  using S = typename DeviceStorage<T>::type;
  if (plan.tokens == 0 || plan.blocks == 0) return;  // h unchanged
  const S *u = reinterpret_cast<const S*>(x.u), *dt_raw = reinterpret_cast<const S*>(x.dt_raw);
  const S *z = reinterpret_cast<const S*>(x.z), *B = reinterpret_cast<const S*>(x.B), *C = reinterpret_cast<const S*>(x.C);
  const bool split = plan.segments > 1;
  const bool entry = plan.kernel != MambaScanKernel::lane;  // cuda_entry.cu: a thread per (channel, 4 entries)
  if (split) {
    if (workspace == nullptr) throw std::invalid_argument("launch_mamba_prefill: a split plan needs its workspace");
    if (entry) {
      launch_mamba_entry_pass<T>(plan, params, x, nullptr, state, workspace, nullptr, false, stream);
    } else {
      mamba_warp_scan_kernel<S, false><<<static_cast<unsigned>(plan.map_blocks), plan.threads, plan.shared_bytes, stream>>>(
          params.A, params.dt_bias, params.D, u, dt_raw, z, B, C, nullptr, state, workspace, nullptr, plan,
          plan.segments - 1);
      check_launch("mamba_warp_scan_kernel (segment maps)");
    }
    mamba_segment_combine_kernel<<<static_cast<unsigned>(plan.combine_blocks), kMambaCombineThreads, 0, stream>>>(
        params.A, state, workspace, plan);
    check_launch("mamba_segment_combine_kernel");
  }
  if (entry) {
    launch_mamba_entry_pass<T>(plan, params, x, split ? workspace : state, state, nullptr, out, true, stream);
    return;
  }
  mamba_warp_scan_kernel<S, true><<<static_cast<unsigned>(plan.blocks), plan.threads, plan.shared_bytes, stream>>>(
      params.A, params.dt_bias, params.D, u, dt_raw, z, B, C, split ? workspace : state, state, nullptr,
      reinterpret_cast<S*>(out), plan, plan.segments);
  check_launch("mamba_warp_scan_kernel");
}

#define ARCH_BENCH_INSTANTIATE(T)                                                                          \
  template void launch_mamba_decode<T>(const MambaDecodePlan&, const MambaParameters&, const MambaTokens<T>&, \
                                       float*, T*, CUstream_st*);                                           \
  template void launch_mamba_prefill<T>(const MambaPrefillPlan&, const MambaParameters&,                    \
                                        const MambaTokens<T>&, float*, float*, T*, CUstream_st*);
ARCH_BENCH_INSTANTIATE(float)
ARCH_BENCH_INSTANTIATE(bf16)
#undef ARCH_BENCH_INSTANTIATE

}  // namespace arch_bench
