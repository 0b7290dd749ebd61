// FlashAttention-2-style bf16 causal prefill on mma.sync tensor cores (Dao, "FlashAttention-2:
// Faster Attention with Better Parallelism and Work Partitioning", 2023: the loop order and the
// per-warp split of query rows; fragment layouts from the PTX ISA, see cuda_mma_ptx.cuh).
//
// Grid (query tiles, query heads), 4 warps per block, 64 query rows per block, 16 per warp; key
// tiles of 64 rows. Per block: Q and the first K/V tile are copied with cp.async, Q moves into
// registers as A fragments once, and every later K/V tile's copy is issued before the math of the
// current one (two stages in shared memory). Per warp and key tile:
//   S = Q K^T        16 x 64 fp32 in registers (8 m16n8 tiles; K^T's B fragments by ldmatrix),
//   mask             only on the diagonal tile and a tile crossing the window's lower edge,
//   online softmax   in the exp2 domain: p = 2^(s * log2(e)/sqrt(d) - m), the scale folded into
//                    one FMA; row max and sums over the 4 lanes of a row by two shuffles,
//   P                rounded to bf16 and packed in place: the C fragments of two m16n8 S tiles are
//                    the A fragment of one m16n8k16 (same rows, same lane owns the same columns),
//   O += P V         16 x head_dim fp32 in registers (V's B fragments by transposed ldmatrix).
// Key tiles wholly after the query tile (causal) or wholly before its first row's band (window)
// are never loaded (cuda_plan.hpp: prefill_first_key_tile, prefill_key_tile_masked). The sum l is
// kept per lane over its own columns, with the rescaling every lane of a row applies alike, and
// summed across the row's lanes once at the end. The output goes through the warp's own Q rows in
// shared memory so it leaves as 16-byte stores.
#include "mechanisms/softmax_kv/cuda_prefill_mma.hpp"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "core/backends/cuda/cuda_check.hpp"
#include "core/bf16.hpp"
#include "mechanisms/softmax_kv/cuda_mma_ptx.cuh"

namespace arch_bench {

namespace {

using namespace mma_ptx;

constexpr unsigned kFullMask = 0xffffffffu;
constexpr float kLog2e = 1.4426950408889634f;
constexpr int kTile = 64;         // query rows per block = key rows per tile (plan.query_rows)
constexpr int kWarpRows = 16;     // query rows per warp: one m16 row block
constexpr int kKeyBlocks = kTile / 8;  // m16n8 tiles of S per warp
constexpr int kVectorElems = 8;   // bf16 per 16-byte copy

struct MmaPrefillGeometry {
  int tokens;
  int group;  // query heads per K/V head: block row y reads K/V head y / group
  int band;   // query t attends keys (t - band, t]
  float scale_log2;  // log2(e) / sqrt(head_dim)
  int ld;            // pitch of the Q, K and V tiles in elements
  unsigned q_offset, k_offset, v_offset, stage_bytes;
};

// Issues the cp.async copies of rows [row0, row0 + 64) of one head ([tokens][kDim]) into `tile`;
// rows past the last token are zero-filled (0 x garbage could be NaN).
template <int kDim>
__device__ __forceinline__ void copy_tile_async(__nv_bfloat16* tile, int ld, const __nv_bfloat16* head, int row0,
                                                int tokens) {
  constexpr int kVectors = kDim / kVectorElems;
  static_assert(kTile * kVectors % kPrefillThreads == 0, "every thread copies the same number of vectors");
#pragma unroll
  for (int step = 0; step < kTile * kVectors / kPrefillThreads; ++step) {
    const int i = step * kPrefillThreads + static_cast<int>(threadIdx.x);
    const int r = i / kVectors;
    const int c = i % kVectors;
    const bool inside = row0 + r < tokens;
    // Outside: a valid address that is not read (src-size 0).
    const __nv_bfloat16* source = head + static_cast<std::size_t>(inside ? row0 + r : 0) * kDim + c * kVectorElems;
    cp_async::copy_16_or_zeros(tile + r * ld + c * kVectorElems, source, inside);
  }
}

// The two bf16 of a packed pair as floats (a bf16 is the high half of a float).
__device__ __forceinline__ float low_bf16(std::uint32_t pair) { return __uint_as_float(pair << 16); }
__device__ __forceinline__ float high_bf16(std::uint32_t pair) { return __uint_as_float(pair & 0xffff0000u); }

// Max that is safe to subtract: -inf (no score yet) becomes 0, so exp2f(-inf - 0) = 0.
__device__ __forceinline__ float usable_max(float m) { return m == -INFINITY ? 0.0f : m; }

template <int kDim>
__global__ void __launch_bounds__(kPrefillThreads, prefill_mma_min_blocks(kDim))
    softmax_prefill_mma_kernel(const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k,
                               const __nv_bfloat16* __restrict__ v, __nv_bfloat16* __restrict__ out,
                               MmaPrefillGeometry g) {
  constexpr int kSteps = kDim / 16;     // k-steps of Q K^T (16 channels each)
  constexpr int kDimBlocks = kDim / 8;  // m16n8 tiles of O per warp
  extern __shared__ __align__(128) unsigned char shared[];
  __nv_bfloat16* q_tile = reinterpret_cast<__nv_bfloat16*>(shared + g.q_offset);

  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int row_in_block = lane / 4;  // g of the fragment layouts: rows g and g + 8 of the warp
  const int quad_lane = lane % 4;     // t: columns 2t, 2t + 1 of every m16n8 tile
  // Query tiles from the last, so the blocks with the most key tiles start first.
  const int query_tile = static_cast<int>(gridDim.x - 1 - blockIdx.x);
  const int q0 = query_tile * kTile;
  const int tokens = g.tokens;
  const int first_key_tile = static_cast<int>(prefill_first_key_tile(q0, g.band, kTile));
  const std::size_t head = static_cast<std::size_t>(blockIdx.y) * tokens * kDim;
  const std::size_t kv_head = static_cast<std::size_t>(blockIdx.y / g.group) * tokens * kDim;
  const __nv_bfloat16* k_head = k + kv_head;
  const __nv_bfloat16* v_head = v + kv_head;
  auto k_stage = [&](int stage) {
    return reinterpret_cast<__nv_bfloat16*>(shared + g.k_offset + stage * g.stage_bytes);
  };
  auto v_stage = [&](int stage) {
    return reinterpret_cast<__nv_bfloat16*>(shared + g.v_offset + stage * g.stage_bytes);
  };

  copy_tile_async<kDim>(q_tile, g.ld, q + head, q0, tokens);
  copy_tile_async<kDim>(k_stage(0), g.ld, k_head, first_key_tile * kTile, tokens);
  copy_tile_async<kDim>(v_stage(0), g.ld, v_head, first_key_tile * kTile, tokens);
  cp_async::commit();

  std::uint32_t q_frag[kSteps][4];
  float o[kDimBlocks][4];
#pragma unroll
  for (int n = 0; n < kDimBlocks; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) o[n][e] = 0.0f;
  }
  // Running max (log2 domain) and this lane's part of the sum, of rows g (index 0) and g + 8 (1).
  float m[2] = {-INFINITY, -INFINITY};
  float l[2] = {0.0f, 0.0f};
  const int query_low = q0 + warp * kWarpRows + row_in_block;  // row g; row g + 8 is query_low + 8

  for (int key_tile = first_key_tile; key_tile <= query_tile; ++key_tile) {
    const int stage = (key_tile - first_key_tile) & 1;
    if (key_tile < query_tile) {  // the next tile's copies overlap this tile's math
      copy_tile_async<kDim>(k_stage(stage ^ 1), g.ld, k_head, (key_tile + 1) * kTile, tokens);
      copy_tile_async<kDim>(v_stage(stage ^ 1), g.ld, v_head, (key_tile + 1) * kTile, tokens);
    }
    cp_async::commit();  // an empty group on the last tile keeps the wait below uniform
    cp_async::wait<1>();  // everything but the group just committed: this tile (and Q) landed
    __syncthreads();
    if (key_tile == first_key_tile) {
      // Q rows warp * 16.. as A fragments: matrix i = lane / 8 is (rows +8 if i odd, cols +8 if i >= 2).
#pragma unroll
      for (int s = 0; s < kSteps; ++s) {
        ldmatrix_x4(q_frag[s], q_tile + (warp * kWarpRows + (lane & 15)) * g.ld + s * 16 + (lane >> 4) * 8);
      }
    }
    const __nv_bfloat16* k_tile = k_stage(stage);
    const __nv_bfloat16* v_tile = v_stage(stage);

    // S = Q K^T. One ldmatrix.x4 of K gives the B fragments of keys 16j..16j+7 (matrices 0, 1: the
    // step's channels 0-7, 8-15) and 16j+8..16j+15 (matrices 2, 3).
    float s[kKeyBlocks][4];
#pragma unroll
    for (int n = 0; n < kKeyBlocks; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) s[n][e] = 0.0f;
    }
#pragma unroll
    for (int step = 0; step < kSteps; ++step) {
#pragma unroll
      for (int j = 0; j < kKeyBlocks / 2; ++j) {
        std::uint32_t b[4];
        const int key = j * 16 + (lane & 7) + ((lane >> 4) << 3);
        const int channel = step * 16 + ((lane >> 3) & 1) * 8;
        ldmatrix_x4(b, k_tile + key * g.ld + channel);
        mma_bf16_16816(s[2 * j], q_frag[step], b[0], b[1]);
        mma_bf16_16816(s[2 * j + 1], q_frag[step], b[2], b[3]);
      }
    }

    const int k0 = key_tile * kTile;
    if (prefill_key_tile_masked(q0, kTile, k0, kTile, g.band, tokens)) {
#pragma unroll
      for (int n = 0; n < kKeyBlocks; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int key = k0 + n * 8 + quad_lane * 2 + (e & 1);
          const int t = query_low + (e >> 1) * 8;
          if (!(key <= t && key > t - g.band && key < tokens)) s[n][e] = -INFINITY;
        }
      }
    }

    // Online softmax of rows g (elements 0, 1) and g + 8 (2, 3).
    float m_use[2];
    float correction[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float tile_max = -INFINITY;
#pragma unroll
      for (int n = 0; n < kKeyBlocks; ++n) tile_max = fmaxf(tile_max, fmaxf(s[n][2 * r], s[n][2 * r + 1]));
      tile_max = fmaxf(tile_max, __shfl_xor_sync(kFullMask, tile_max, 1));
      tile_max = fmaxf(tile_max, __shfl_xor_sync(kFullMask, tile_max, 2));
      const float m_new = fmaxf(m[r], tile_max * g.scale_log2);  // the scale is positive: same argmax
      m_use[r] = usable_max(m_new);
      correction[r] = exp2f(m[r] - m_use[r]);
      m[r] = m_new;
    }
    // P in bf16 as the A fragments of P V: key block 16j is S tiles 2j (a0, a1) and 2j + 1 (a2, a3).
    std::uint32_t p_frag[kTile / 16][4];
    float row_sum[2] = {0.0f, 0.0f};
#pragma unroll
    for (int n = 0; n < kKeyBlocks; ++n) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const float p0 = exp2f(fmaf(s[n][2 * r], g.scale_log2, -m_use[r]));
        const float p1 = exp2f(fmaf(s[n][2 * r + 1], g.scale_log2, -m_use[r]));
        const std::uint32_t pair = pack_bf16x2(p0, p1);
        row_sum[r] += low_bf16(pair) + high_bf16(pair);  // the weights P V really uses
        p_frag[n / 2][(n & 1) * 2 + r] = pair;
      }
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) l[r] = l[r] * correction[r] + row_sum[r];
#pragma unroll
    for (int n = 0; n < kDimBlocks; ++n) {
      o[n][0] *= correction[0];
      o[n][1] *= correction[0];
      o[n][2] *= correction[1];
      o[n][3] *= correction[1];
    }

    // O += P V. One transposed ldmatrix.x4 of V gives the B fragments of channels 16c..16c+7
    // (matrices 0, 1: keys 0-7, 8-15 of the step) and 16c+8..16c+15 (matrices 2, 3).
#pragma unroll
    for (int step = 0; step < kTile / 16; ++step) {
#pragma unroll
      for (int c = 0; c < kDimBlocks / 2; ++c) {
        std::uint32_t b[4];
        const int key = step * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
        const int channel = c * 16 + (lane >> 4) * 8;
        ldmatrix_x4_trans(b, v_tile + key * g.ld + channel);
        mma_bf16_16816(o[2 * c], p_frag[step], b[0], b[1]);
        mma_bf16_16816(o[2 * c + 1], p_frag[step], b[2], b[3]);
      }
    }
    __syncthreads();  // every warp is done with this stage before the next iteration refills it
  }

  // Each row's sum over its 4 lanes, then O / l rounded to bf16 into the warp's own Q rows (only
  // this warp read them) and out as 16-byte rows.
  float inverse[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float sum = l[r] + __shfl_xor_sync(kFullMask, l[r], 1);
    sum += __shfl_xor_sync(kFullMask, sum, 2);
    inverse[r] = 1.0f / sum;
  }
  __nv_bfloat16* o_rows = q_tile + warp * kWarpRows * g.ld;
#pragma unroll
  for (int n = 0; n < kDimBlocks; ++n) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const std::uint32_t pair = pack_bf16x2(o[n][2 * r] * inverse[r], o[n][2 * r + 1] * inverse[r]);
      *reinterpret_cast<std::uint32_t*>(o_rows + (row_in_block + 8 * r) * g.ld + n * 8 + quad_lane * 2) = pair;
    }
  }
  __syncwarp();
  constexpr int kVectors = kDim / kVectorElems;
#pragma unroll
  for (int step = 0; step < kWarpRows * kVectors / 32; ++step) {
    const int i = step * 32 + lane;
    const int r = i / kVectors;
    const int c = i % kVectors;
    const int t = q0 + warp * kWarpRows + r;
    if (t < tokens) {
      *reinterpret_cast<uint4*>(out + head + static_cast<std::size_t>(t) * kDim + c * kVectorElems) =
          *reinterpret_cast<const uint4*>(o_rows + r * g.ld + c * kVectorElems);
    }
  }
}

MmaPrefillGeometry mma_prefill_geometry(const SoftmaxPrefillCudaPlan& plan) {
  if (plan.path != SoftmaxPrefillPath::mma_bf16 || !prefill_mma_takes(plan.dim) || plan.query_rows != kTile ||
      plan.keys_per_tile != kTile || plan.threads != kPrefillThreads || plan.kv_stages != kPrefillMmaKvStages) {
    throw std::invalid_argument("launch_softmax_prefill_mma: the plan is not an mma_bf16 plan of 64-row tiles");
  }
  if (plan.group < 1 || plan.batch_heads % plan.group != 0) {
    throw std::invalid_argument("launch_softmax_prefill_mma: the query group does not divide the heads");
  }
  MmaPrefillGeometry g;
  g.tokens = static_cast<int>(plan.tokens);
  g.group = static_cast<int>(plan.group);
  g.band = static_cast<int>(plan.band());
  g.scale_log2 = kLog2e / std::sqrt(static_cast<float>(plan.dim));
  g.ld = plan.ld_q;
  g.q_offset = static_cast<unsigned>(plan.q_offset);
  g.k_offset = static_cast<unsigned>(plan.k_offset);
  g.v_offset = static_cast<unsigned>(plan.v_offset);
  g.stage_bytes = static_cast<unsigned>(plan.kv_stage_bytes);
  return g;
}

}  // namespace

void configure_softmax_prefill_mma(const SoftmaxPrefillCudaPlan& plan) {
  if (!plan.needs_shared_opt_in()) return;
  const int bytes = static_cast<int>(plan.shared_bytes);
  if (plan.dim == 64) {
    ARCH_BENCH_CUDA_CHECK(
        cudaFuncSetAttribute(softmax_prefill_mma_kernel<64>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  } else if (plan.dim == 128) {
    ARCH_BENCH_CUDA_CHECK(
        cudaFuncSetAttribute(softmax_prefill_mma_kernel<128>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  } else {
    throw std::invalid_argument("configure_softmax_prefill_mma: head_dim must be 64 or 128");
  }
}

void launch_softmax_prefill_mma(const SoftmaxPrefillCudaPlan& plan, const bf16* q, const bf16* k, const bf16* v,
                                bf16* out, CUstream_st* stream) {
  if (plan.tokens == 0) return;
  const MmaPrefillGeometry g = mma_prefill_geometry(plan);
  const dim3 grid(static_cast<unsigned>(plan.query_tiles), static_cast<unsigned>(plan.batch_heads));
  const auto* q_d = reinterpret_cast<const __nv_bfloat16*>(q);
  const auto* k_d = reinterpret_cast<const __nv_bfloat16*>(k);
  const auto* v_d = reinterpret_cast<const __nv_bfloat16*>(v);
  auto* out_d = reinterpret_cast<__nv_bfloat16*>(out);
  if (plan.dim == 64) {
    softmax_prefill_mma_kernel<64><<<grid, plan.threads, plan.shared_bytes, stream>>>(q_d, k_d, v_d, out_d, g);
  } else {
    softmax_prefill_mma_kernel<128><<<grid, plan.threads, plan.shared_bytes, stream>>>(q_d, k_d, v_d, out_d, g);
  }
  check_launch("softmax_prefill_mma_kernel");
}

}  // namespace arch_bench
