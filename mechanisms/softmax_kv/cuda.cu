// CUDA kernels of softmax attention with an explicit K/V cache. Launch geometry, splits and
// shared-memory layouts come from cuda_plan.cpp (tested on the CPU); this file only follows them.
// Softmax runs in the log2 domain: scores are scaled by log2(e)/sqrt(d) once (folded into q) and
// exponentiated with exp2f. A running max of -inf (nothing seen yet) is replaced by 0 before
// subtracting, so -inf - -inf never makes a NaN: exp2f(-inf) = 0 carries the "empty" meaning.
#include "mechanisms/softmax_kv/cuda.hpp"

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include "core/backends/cuda/cuda_check.hpp"
#include "mechanisms/common/cuda_storage.cuh"
#include "mechanisms/softmax_kv/cuda_prefill_mma.hpp"

namespace arch_bench {

namespace {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr float kLog2e = 1.4426950408889634f;

// Storage type S (float or __nv_bfloat16) <-> fp32, and 16-byte vectors of S widened to floats.
template <class S>
struct Storage;

template <>
struct Storage<float> {
  static constexpr int kVectorElems = 4;
  __device__ static float widen(float x) { return x; }
  __device__ static float narrow(float x) { return x; }
  __device__ static void widen(const uint4& v, float* f) {
    f[0] = __uint_as_float(v.x);
    f[1] = __uint_as_float(v.y);
    f[2] = __uint_as_float(v.z);
    f[3] = __uint_as_float(v.w);
  }
};

template <>
struct Storage<__nv_bfloat16> {
  static constexpr int kVectorElems = 8;
  __device__ static float widen(__nv_bfloat16 x) { return __bfloat162float(x); }
  __device__ static __nv_bfloat16 narrow(float x) { return __float2bfloat16(x); }  // round to nearest even
  // A bf16 is the high half of a float: element 2i is the low half-word of word i (little endian).
  __device__ static void widen(const uint4& v, float* f) {
    widen_pair(v.x, f);
    widen_pair(v.y, f + 2);
    widen_pair(v.z, f + 4);
    widen_pair(v.w, f + 6);
  }
  __device__ static void widen_pair(unsigned word, float* f) {
    f[0] = __uint_as_float(word << 16);
    f[1] = __uint_as_float(word & 0xffff0000u);
  }
};

// Max that is safe to subtract: -inf (no score yet) becomes 0, so exp2f(-inf - 0) = 0.
__device__ inline float usable_max(float m) { return m == -INFINITY ? 0.0f : m; }

// ---------------------------------------------------------------------------------------------
// Decode: split-KV (flash-decoding) pass with grouped-query attention. Grid (splits, K/V heads x
// query slices), block plan.threads. A block holds kQueries query vectors of one K/V head's group
// and streams that head's rows of its split once for all of them. It is row_groups groups of
// lanes_per_row lanes; a group reads a whole cache row with 16-byte loads (lane i takes vectors
// i, i + lanes, ...), and decode_rows_in_flight rows per iteration, so a warp reads
// 32 / lanes_per_row consecutive rows (contiguous bytes) per load instruction.
struct DecodeGeometry {
  long long capacity;  // cache rows per K/V head
  int group;           // query heads per K/V head (grouped-query attention; 1: one each)
  int query_slices;    // blocks sharing a K/V head: slice s holds queries [s * kQueries, ...) of the group
  int context;         // rows attended: [0, context)
  int append_row;      // row of the new token (< context): read from k_new/v_new and written there
  int splits;          // split s covers [s * context / splits, (s + 1) * context / splits)
  int dim;
  int vectors_per_row;
  int lanes_per_row;
  float scale_log2;  // log2(e) / sqrt(dim)
};

template <class S, int kVectorsPerLane, int kQueries>
__global__ void __launch_bounds__(kDecodeThreads, decode_min_blocks_per_multiprocessor(kQueries, kVectorsPerLane))
    softmax_decode_split_kernel(const S* __restrict__ q, const S* __restrict__ k_new, const S* __restrict__ v_new,
                                S* k_cache, S* v_cache, float* __restrict__ workspace, S* __restrict__ out,
                                DecodeGeometry g) {
  constexpr int kVec = Storage<S>::kVectorElems;
  constexpr int kLaneElems = kVectorsPerLane * kVec;
  constexpr int kRows = decode_rows_in_flight(kQueries);
  extern __shared__ __align__(16) float merge[];

  const int split = blockIdx.x;
  const int kv = blockIdx.y / g.query_slices;     // K/V head of the batch
  const int slice = blockIdx.y % g.query_slices;  // which kQueries of its group
  const int lanes = g.lanes_per_row;
  const int row_group = threadIdx.x / lanes;
  const int lane = threadIdx.x % lanes;
  const int groups = blockDim.x / lanes;
  const int vectors = g.vectors_per_row;
  const int begin = static_cast<int>(static_cast<long long>(split) * g.context / g.splits);
  const int end = static_cast<int>((split + 1LL) * g.context / g.splits);
  // Query j of the block is query head kv * group + first_query + j ([batch, heads] with heads =
  // kv_heads * group); those past the group (group not a multiple of kQueries) compute on zeros
  // and write nothing.
  const int first_query = slice * kQueries;
  const int queries = min(kQueries, g.group - first_query);
  // One block per K/V head appends the new row: the first slice's, in the split holding the row.
  const bool appends = slice == 0;
  const std::size_t head = static_cast<std::size_t>(kv) * static_cast<std::size_t>(g.capacity) * vectors;
  const std::size_t first_head = static_cast<std::size_t>(kv) * g.group + first_query;
  const uint4* q_vectors = reinterpret_cast<const uint4*>(q) + first_head * vectors;
  const uint4* k_new_vectors = reinterpret_cast<const uint4*>(k_new) + static_cast<std::size_t>(kv) * vectors;
  const uint4* v_new_vectors = reinterpret_cast<const uint4*>(v_new) + static_cast<std::size_t>(kv) * vectors;
  uint4* k_head = reinterpret_cast<uint4*>(k_cache) + head;
  uint4* v_head = reinterpret_cast<uint4*>(v_cache) + head;

  float query[kQueries][kLaneElems];
  float acc[kQueries][kLaneElems];
  float m[kQueries];  // running max of each query's scores (log2 domain)
  float l[kQueries];  // running sum of 2^(score - m)
#pragma unroll
  for (int j = 0; j < kQueries; ++j) {
#pragma unroll
    for (int v = 0; v < kVectorsPerLane; ++v) {
      const int vi = lane + v * lanes;
      uint4 raw = make_uint4(0u, 0u, 0u, 0u);
      if (j < queries && vi < vectors) raw = q_vectors[static_cast<std::size_t>(j) * vectors + vi];
      Storage<S>::widen(raw, query[j] + v * kVec);
    }
#pragma unroll
    for (int i = 0; i < kLaneElems; ++i) {
      query[j][i] *= g.scale_log2;
      acc[j][i] = 0.0f;
    }
    m[j] = -INFINITY;
    l[j] = 0.0f;
  }

  // The loop bound is the same for every thread of the block, so the shuffles below always run
  // with the whole warp; rows past `end` are masked instead.
  for (int base = begin; base < end; base += groups * kRows) {
    uint4 k_raw[kRows][kVectorsPerLane];
    uint4 v_raw[kRows][kVectorsPerLane];
    bool valid[kRows];
#pragma unroll
    for (int u = 0; u < kRows; ++u) {
      const int row = base + row_group + u * groups;
      valid[u] = row < end;
      // The new token's row is read from k_new/v_new by every slice of the group and appended to
      // the cache by the first: the only thread of the launch that writes that row, and no thread
      // reads it from the cache.
      const bool fresh = row == g.append_row;
      const uint4* k_row = fresh ? k_new_vectors : k_head + static_cast<std::size_t>(row) * vectors;
      const uint4* v_row = fresh ? v_new_vectors : v_head + static_cast<std::size_t>(row) * vectors;
#pragma unroll
      for (int v = 0; v < kVectorsPerLane; ++v) {
        const int vi = lane + v * lanes;
        const bool load = valid[u] && vi < vectors;
        // Branches, not `load ? k_row[vi] : zero`: selecting between addresses would put a zero
        // vector in local memory.
        k_raw[u][v] = make_uint4(0u, 0u, 0u, 0u);
        v_raw[u][v] = make_uint4(0u, 0u, 0u, 0u);
        if (load) {
          k_raw[u][v] = k_row[vi];
          v_raw[u][v] = v_row[vi];
        }
        if (load && fresh && appends) {
          k_head[static_cast<std::size_t>(row) * vectors + vi] = k_raw[u][v];
          v_head[static_cast<std::size_t>(row) * vectors + vi] = v_raw[u][v];
        }
      }
    }

    // Each key row is widened once and scored against every query of the block.
    float score[kQueries][kRows];
#pragma unroll
    for (int u = 0; u < kRows; ++u) {
      float dot[kQueries];
#pragma unroll
      for (int j = 0; j < kQueries; ++j) dot[j] = 0.0f;
#pragma unroll
      for (int v = 0; v < kVectorsPerLane; ++v) {
        float key[kVec];
        Storage<S>::widen(k_raw[u][v], key);
#pragma unroll
        for (int j = 0; j < kQueries; ++j) {
#pragma unroll
          for (int e = 0; e < kVec; ++e) dot[j] = fmaf(query[j][v * kVec + e], key[e], dot[j]);
        }
      }
#pragma unroll
      for (int j = 0; j < kQueries; ++j) {
        for (int offset = lanes >> 1; offset > 0; offset >>= 1) dot[j] += __shfl_xor_sync(kFullMask, dot[j], offset);
        score[j][u] = valid[u] ? dot[j] : -INFINITY;
      }
    }

    float weight[kQueries][kRows];
#pragma unroll
    for (int j = 0; j < kQueries; ++j) {
      float tile_max = -INFINITY;
#pragma unroll
      for (int u = 0; u < kRows; ++u) tile_max = fmaxf(tile_max, score[j][u]);
      const float m_new = fmaxf(m[j], tile_max);
      const float m_use = usable_max(m_new);
      const float correction = exp2f(m[j] - m_use);
      float weight_sum = 0.0f;
#pragma unroll
      for (int u = 0; u < kRows; ++u) {
        weight[j][u] = exp2f(score[j][u] - m_use);
        weight_sum += weight[j][u];
      }
      l[j] = l[j] * correction + weight_sum;
      m[j] = m_new;
#pragma unroll
      for (int i = 0; i < kLaneElems; ++i) acc[j][i] *= correction;
    }
#pragma unroll
    for (int u = 0; u < kRows; ++u) {
#pragma unroll
      for (int v = 0; v < kVectorsPerLane; ++v) {
        float value[kVec];
        Storage<S>::widen(v_raw[u][v], value);
#pragma unroll
        for (int j = 0; j < kQueries; ++j) {
#pragma unroll
          for (int e = 0; e < kVec; ++e) acc[j][v * kVec + e] = fmaf(weight[j][u], value[e], acc[j][v * kVec + e]);
        }
      }
    }
  }

  // Merge the row groups of the block, one query at a time through the same shared memory:
  // rescale each group to the block's max. (kQueries is a compile-time bound, so acc[j] stays in
  // registers; the block-wide branch on j < queries keeps every __syncthreads uniform.)
  const int dim = g.dim;
  float* group_acc = merge;                  // [groups][dim]
  float* group_m = merge + groups * dim;     // [groups]
  float* group_l = group_m + groups;         // [groups]
  float* group_weight = group_l + groups;    // [groups]
#pragma unroll
  for (int j = 0; j < kQueries; ++j) {
    if (j >= queries) break;
    if (j > 0) __syncthreads();  // every thread is done reading query j - 1's merge
#pragma unroll
    for (int v = 0; v < kVectorsPerLane; ++v) {
      const int vi = lane + v * lanes;
      if (vi < vectors) {
#pragma unroll
        for (int e = 0; e < kVec; ++e) group_acc[row_group * dim + vi * kVec + e] = acc[j][v * kVec + e];
      }
    }
    if (lane == 0) {
      group_m[row_group] = m[j];
      group_l[row_group] = l[j];
    }
    __syncthreads();
    float block_max = -INFINITY;
    for (int i = 0; i < groups; ++i) block_max = fmaxf(block_max, group_m[i]);
    const float max_use = usable_max(block_max);
    for (int i = threadIdx.x; i < groups; i += blockDim.x) group_weight[i] = exp2f(group_m[i] - max_use);
    __syncthreads();
    float block_l = 0.0f;
    for (int i = 0; i < groups; ++i) block_l = fmaf(group_weight[i], group_l[i], block_l);

    const std::size_t query_head = first_head + j;
    if (g.splits == 1) {
      const float inverse = 1.0f / block_l;  // the split holds a row at least: block_l >= 1
      for (int c = threadIdx.x; c < dim; c += blockDim.x) {
        float value = 0.0f;
        for (int i = 0; i < groups; ++i) value = fmaf(group_weight[i], group_acc[i * dim + c], value);
        out[query_head * dim + c] = Storage<S>::narrow(value * inverse);
      }
    } else {
      float* partial = workspace + (query_head * g.splits + split) * (dim + 2);
      if (threadIdx.x == 0) {
        partial[0] = block_max;
        partial[1] = block_l;
      }
      for (int c = threadIdx.x; c < dim; c += blockDim.x) {
        float value = 0.0f;
        for (int i = 0; i < groups; ++i) value = fmaf(group_weight[i], group_acc[i * dim + c], value);
        partial[2 + c] = value;
      }
    }
  }
}

// Decode: merges the splits of one head (grid batch_heads, one thread per output element).
template <class S>
__global__ void __launch_bounds__(256)
    softmax_decode_combine_kernel(const float* __restrict__ workspace, S* __restrict__ out, int splits, int dim) {
  __shared__ float split_weight[kDecodeMaxSplits];
  const int bh = blockIdx.x;
  const int stride = dim + 2;
  const float* partials = workspace + static_cast<std::size_t>(bh) * splits * stride;
  float global_max = -INFINITY;
  for (int s = 0; s < splits; ++s) global_max = fmaxf(global_max, partials[s * stride]);
  const float max_use = usable_max(global_max);
  for (int s = threadIdx.x; s < splits; s += blockDim.x) split_weight[s] = exp2f(partials[s * stride] - max_use);
  __syncthreads();
  float denominator = 0.0f;
  for (int s = 0; s < splits; ++s) denominator = fmaf(split_weight[s], partials[s * stride + 1], denominator);
  const float inverse = 1.0f / denominator;
  for (int c = threadIdx.x; c < dim; c += blockDim.x) {
    float value = 0.0f;
    for (int s = 0; s < splits; ++s) value = fmaf(split_weight[s], partials[s * stride + 2 + c], value);
    out[static_cast<std::size_t>(bh) * dim + c] = Storage<S>::narrow(value * inverse);
  }
}

// ---------------------------------------------------------------------------------------------
// Prefill. Grid (query_tiles, batch_heads); blockIdx.x counts query tiles from the last, so the
// blocks with the most key tiles (the causal triangle's long rows) start first. With a window
// (sliding_window) a query attends keys (t - band, t] only.
struct PrefillGeometry {
  int tokens;
  int dim;
  int group;  // query heads per K/V head: block row y reads K/V head y / group
  int band;   // query t attends keys (t - band, t]: the window, or tokens (the whole causal prefix)
  float scale_log2;
  int ld_q, ld_k, ld_v, ld_s, ld_p, ld_o;
  unsigned q_offset, k_offset, v_offset, s_offset, p_offset, o_offset;
};

// Where a prefill block works: grid (query_tiles, batch_heads), blockIdx.x counting query tiles from
// the last; its query head's rows, its K/V head's (block row y reads K/V head y / group), and the
// first key tile any of its queries attends (tiles wholly before the band of the tile's first query
// are skipped: SoftmaxPrefillCudaPlan::first_key_tile).
struct PrefillBlock {
  int query_tile, q0, first_key_tile;
  std::size_t head, kv_head;  // element offsets of the query head's and the K/V head's [tokens][dim]
};

__device__ inline PrefillBlock prefill_block(const PrefillGeometry& g, int tile_rows) {
  PrefillBlock b;
  b.query_tile = gridDim.x - 1 - blockIdx.x;
  b.q0 = b.query_tile * tile_rows;
  const int first_key = b.q0 - g.band + 1;
  b.first_key_tile = first_key <= 0 ? 0 : first_key / tile_rows;  // key tiles are as tall as query tiles
  b.head = static_cast<std::size_t>(blockIdx.y) * g.tokens * g.dim;
  b.kv_head = static_cast<std::size_t>(blockIdx.y / g.group) * g.tokens * g.dim;
  return b;
}

// Whether query `query` attends key `key`: causal, inside the band, and a real token.
__device__ inline bool attends(int key, int query, const PrefillGeometry& g) {
  return key <= query && key > query - g.band && key < g.tokens;
}

// Copies rows [row0, row0 + rows) of one head ([tokens][dim] bf16) into a shared tile with pitch
// `ld`, 16 bytes per thread and step; rows past `tokens` are zero (0 x garbage could be NaN).
__device__ inline void load_bf16_rows(__nv_bfloat16* tile, int ld, const __nv_bfloat16* head, int row0, int rows,
                                      int tokens, int dim) {
  const int vectors = dim / 8;
  for (int i = threadIdx.x; i < rows * vectors; i += blockDim.x) {
    const int r = i / vectors;
    const int c = i - r * vectors;
    uint4 value = make_uint4(0u, 0u, 0u, 0u);
    if (row0 + r < tokens) value = reinterpret_cast<const uint4*>(head + static_cast<std::size_t>(row0 + r) * dim)[c];
    *reinterpret_cast<uint4*>(tile + r * ld + c * 8) = value;
  }
}

// bf16 tensor cores through shared memory, for the bf16 head_dims the register-resident mma
// prefill (cuda_prefill_mma.cu: 64 and 128) has no instance for (multiples of 16 up to 128).
// 4 warps x 16 query rows, 64-key tiles. Each warp owns
// its 16 rows of S, P and O in shared memory, so only the K/V tile loads need the whole block.
// Per tile: S = Q K^T (wmma, fp32) -> causal mask and online softmax in SIMT code (lanes 2r, 2r+1
// share row r) -> P in bf16 -> O rows rescaled in place -> O += P V (wmma, accumulator loaded from
// and stored back to the shared fp32 O tile).
__global__ void __launch_bounds__(kPrefillThreads)
    softmax_prefill_wmma_kernel(const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k,
                                const __nv_bfloat16* __restrict__ v, __nv_bfloat16* __restrict__ out,
                                PrefillGeometry g) {
  namespace wmma = nvcuda::wmma;
  constexpr int kTile = 64;
  constexpr int kFrag = 16;
  extern __shared__ __align__(128) unsigned char shared[];
  __nv_bfloat16* q_tile = reinterpret_cast<__nv_bfloat16*>(shared + g.q_offset);
  __nv_bfloat16* k_tile = reinterpret_cast<__nv_bfloat16*>(shared + g.k_offset);
  __nv_bfloat16* v_tile = reinterpret_cast<__nv_bfloat16*>(shared + g.v_offset);
  float* s_tile = reinterpret_cast<float*>(shared + g.s_offset);
  __nv_bfloat16* p_tile = reinterpret_cast<__nv_bfloat16*>(shared + g.p_offset);
  float* o_tile = reinterpret_cast<float*>(shared + g.o_offset);

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const auto [query_tile, q0, first_key_tile, head, kv_head] = prefill_block(g, kTile);
  const int tokens = g.tokens;
  const int dim = g.dim;

  const __nv_bfloat16* q_warp = q_tile + warp * kFrag * g.ld_q;
  float* s_warp = s_tile + warp * kFrag * g.ld_s;
  __nv_bfloat16* p_warp = p_tile + warp * kFrag * g.ld_p;
  float* o_warp = o_tile + warp * kFrag * g.ld_o;

  load_bf16_rows(q_tile, g.ld_q, q + head, q0, kTile, tokens, dim);
  for (int i = lane; i < kFrag * dim; i += 32) o_warp[(i / dim) * g.ld_o + i % dim] = 0.0f;

  const int row = lane / 2;   // this lane's row of the warp's 16
  const int half = lane % 2;  // and its columns: half, half + 2, ...
  const int query = q0 + warp * kFrag + row;
  const float* s_row = s_warp + row * g.ld_s;
  __nv_bfloat16* p_row = p_warp + row * g.ld_p;
  float* o_row = o_warp + row * g.ld_o;
  float m = -INFINITY;
  float l = 0.0f;

  for (int key_tile = first_key_tile; key_tile <= query_tile; ++key_tile) {
    const int k0 = key_tile * kTile;
    __syncthreads();  // every warp is done with the previous K/V tile (and Q is written)
    load_bf16_rows(k_tile, g.ld_k, k + kv_head, k0, kTile, tokens, dim);
    load_bf16_rows(v_tile, g.ld_v, v + kv_head, k0, kTile, tokens, dim);
    __syncthreads();

    for (int n = 0; n < kTile / kFrag; ++n) {
      wmma::fragment<wmma::accumulator, kFrag, kFrag, kFrag, float> s_frag;
      wmma::fill_fragment(s_frag, 0.0f);
      for (int kk = 0; kk < dim / kFrag; ++kk) {
        wmma::fragment<wmma::matrix_a, kFrag, kFrag, kFrag, __nv_bfloat16, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, kFrag, kFrag, kFrag, __nv_bfloat16, wmma::col_major> b;  // K^T
        wmma::load_matrix_sync(a, q_warp + kk * kFrag, g.ld_q);
        wmma::load_matrix_sync(b, k_tile + n * kFrag * g.ld_k + kk * kFrag, g.ld_k);
        wmma::mma_sync(s_frag, a, b, s_frag);
      }
      wmma::store_matrix_sync(s_warp + n * kFrag, s_frag, g.ld_s, wmma::mem_row_major);
    }
    __syncwarp();

    float tile_max = -INFINITY;
    for (int c = half; c < kTile; c += 2) {
      const int key = k0 + c;
      if (attends(key, query, g)) tile_max = fmaxf(tile_max, s_row[c] * g.scale_log2);
    }
    tile_max = fmaxf(tile_max, __shfl_xor_sync(kFullMask, tile_max, 1));
    const float m_new = fmaxf(m, tile_max);
    const float m_use = usable_max(m_new);
    const float correction = exp2f(m - m_use);
    float weight_sum = 0.0f;
    for (int c = half; c < kTile; c += 2) {
      const int key = k0 + c;
      const float p = attends(key, query, g) ? exp2f(s_row[c] * g.scale_log2 - m_use) : 0.0f;
      const __nv_bfloat16 p_bf16 = __float2bfloat16(p);
      p_row[c] = p_bf16;
      weight_sum += __bfloat162float(p_bf16);  // the weights P V really uses
    }
    weight_sum += __shfl_xor_sync(kFullMask, weight_sum, 1);
    l = l * correction + weight_sum;
    m = m_new;
    for (int c = half; c < dim; c += 2) o_row[c] *= correction;
    __syncwarp();

    for (int n = 0; n < dim / kFrag; ++n) {
      wmma::fragment<wmma::accumulator, kFrag, kFrag, kFrag, float> o_frag;
      wmma::load_matrix_sync(o_frag, o_warp + n * kFrag, g.ld_o, wmma::mem_row_major);
      for (int kk = 0; kk < kTile / kFrag; ++kk) {
        wmma::fragment<wmma::matrix_a, kFrag, kFrag, kFrag, __nv_bfloat16, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, kFrag, kFrag, kFrag, __nv_bfloat16, wmma::row_major> b;
        wmma::load_matrix_sync(a, p_warp + kk * kFrag, g.ld_p);
        wmma::load_matrix_sync(b, v_tile + kk * kFrag * g.ld_v + n * kFrag, g.ld_v);
        wmma::mma_sync(o_frag, a, b, o_frag);
      }
      wmma::store_matrix_sync(o_warp + n * kFrag, o_frag, g.ld_o, wmma::mem_row_major);
    }
    __syncwarp();
  }

  if (query < tokens) {
    const float inverse = 1.0f / l;
    __nv_bfloat16* o_out = out + head + static_cast<std::size_t>(query) * dim;
    for (int c = half; c < dim; c += 2) o_out[c] = __float2bfloat16(o_row[c] * inverse);
  }
}

// SIMT fallback (fp32, and bf16 head_dims the tensor-core kernel does not take): 32 query rows per
// block, 8 per warp, 32-key tiles in shared memory as fp32. Lane j scores key j of the tile against
// the warp's 8 rows (odd K pitch: conflict-free), then each lane accumulates output columns lane,
// lane + 32, ... with the weights broadcast by shuffles.
template <class S>
__global__ void __launch_bounds__(kPrefillThreads)
    softmax_prefill_simt_kernel(const S* __restrict__ q, const S* __restrict__ k, const S* __restrict__ v,
                                S* __restrict__ out, PrefillGeometry g) {
  constexpr int kTile = 32;
  constexpr int kRowsPerWarp = 8;
  constexpr int kDimsPerLane = 8;  // head_dim <= 256
  extern __shared__ __align__(128) unsigned char shared[];
  float* q_tile = reinterpret_cast<float*>(shared + g.q_offset);
  float* k_tile = reinterpret_cast<float*>(shared + g.k_offset);
  float* v_tile = reinterpret_cast<float*>(shared + g.v_offset);

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const auto [query_tile, q0, first_key_tile, head, kv_head] = prefill_block(g, kTile);
  const int tokens = g.tokens;
  const int dim = g.dim;

  // The tile's rows are contiguous in memory, so element i of the tile is element q0 * dim + i.
  for (int i = threadIdx.x; i < kTile * dim; i += blockDim.x) {
    const int r = i / dim;
    const int c = i - r * dim;
    const bool inside = q0 + r < tokens;
    q_tile[r * g.ld_q + c] =
        inside ? Storage<S>::widen(q[head + static_cast<std::size_t>(q0) * dim + i]) * g.scale_log2 : 0.0f;
  }

  const float* q_warp = q_tile + warp * kRowsPerWarp * g.ld_q;
  float m[kRowsPerWarp];
  float l[kRowsPerWarp];
  float acc[kRowsPerWarp][kDimsPerLane];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.0f;
#pragma unroll
    for (int i = 0; i < kDimsPerLane; ++i) acc[r][i] = 0.0f;
  }

  for (int key_tile = first_key_tile; key_tile <= query_tile; ++key_tile) {
    const int k0 = key_tile * kTile;
    __syncthreads();
    for (int i = threadIdx.x; i < kTile * dim; i += blockDim.x) {
      const int r = i / dim;
      const int c = i - r * dim;
      const bool inside = k0 + r < tokens;
      const std::size_t at = kv_head + static_cast<std::size_t>(k0) * dim + i;
      k_tile[r * g.ld_k + c] = inside ? Storage<S>::widen(k[at]) : 0.0f;
      v_tile[r * g.ld_v + c] = inside ? Storage<S>::widen(v[at]) : 0.0f;
    }
    __syncthreads();

    // Scores of key k0 + lane against the warp's rows; q is read 4 columns at a time (ld_q and dim
    // are multiples of 4: 16-byte rows).
    float score[kRowsPerWarp];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) score[r] = 0.0f;
    const float* k_row = k_tile + lane * g.ld_k;
    for (int c = 0; c < dim; c += 4) {
      const float k0v = k_row[c], k1v = k_row[c + 1], k2v = k_row[c + 2], k3v = k_row[c + 3];
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const float4 qv = *reinterpret_cast<const float4*>(q_warp + r * g.ld_q + c);
        score[r] = fmaf(qv.x, k0v, fmaf(qv.y, k1v, fmaf(qv.z, k2v, fmaf(qv.w, k3v, score[r]))));
      }
    }

    const int key = k0 + lane;
    float weight[kRowsPerWarp];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const int query = q0 + warp * kRowsPerWarp + r;
      const float s = attends(key, query, g) ? score[r] : -INFINITY;
      float tile_max = s;
#pragma unroll
      for (int offset = 16; offset > 0; offset >>= 1) tile_max = fmaxf(tile_max, __shfl_xor_sync(kFullMask, tile_max, offset));
      const float m_new = fmaxf(m[r], tile_max);
      const float m_use = usable_max(m_new);
      const float correction = exp2f(m[r] - m_use);
      weight[r] = exp2f(s - m_use);
      float weight_sum = weight[r];
#pragma unroll
      for (int offset = 16; offset > 0; offset >>= 1) weight_sum += __shfl_xor_sync(kFullMask, weight_sum, offset);
      l[r] = l[r] * correction + weight_sum;
      m[r] = m_new;
#pragma unroll
      for (int i = 0; i < kDimsPerLane; ++i) acc[r][i] *= correction;
    }

    for (int j = 0; j < kTile; ++j) {
      float value[kDimsPerLane];
#pragma unroll
      for (int i = 0; i < kDimsPerLane; ++i) {
        const int c = lane + 32 * i;
        value[i] = c < dim ? v_tile[j * g.ld_v + c] : 0.0f;
      }
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const float w = __shfl_sync(kFullMask, weight[r], j);
#pragma unroll
        for (int i = 0; i < kDimsPerLane; ++i) acc[r][i] = fmaf(w, value[i], acc[r][i]);
      }
    }
  }

#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int query = q0 + warp * kRowsPerWarp + r;
    if (query >= tokens) continue;
    const float inverse = 1.0f / l[r];
    S* o_out = out + head + static_cast<std::size_t>(query) * dim;
#pragma unroll
    for (int i = 0; i < kDimsPerLane; ++i) {
      const int c = lane + 32 * i;
      if (c < dim) o_out[c] = Storage<S>::narrow(acc[r][i] * inverse);
    }
  }
}

PrefillGeometry prefill_geometry(const SoftmaxPrefillCudaPlan& plan) {
  if (plan.group < 1 || plan.batch_heads % plan.group != 0) {
    throw std::invalid_argument("launch_softmax_prefill: the query group does not divide the heads");
  }
  PrefillGeometry g;
  g.tokens = static_cast<int>(plan.tokens);
  g.dim = static_cast<int>(plan.dim);
  g.group = static_cast<int>(plan.group);
  g.band = static_cast<int>(plan.band());
  g.scale_log2 = kLog2e / std::sqrt(static_cast<float>(plan.dim));
  g.ld_q = plan.ld_q;
  g.ld_k = plan.ld_k;
  g.ld_v = plan.ld_v;
  g.ld_s = plan.ld_s;
  g.ld_p = plan.ld_p;
  g.ld_o = plan.ld_o;
  g.q_offset = static_cast<unsigned>(plan.q_offset);
  g.k_offset = static_cast<unsigned>(plan.k_offset);
  g.v_offset = static_cast<unsigned>(plan.v_offset);
  g.s_offset = static_cast<unsigned>(plan.s_offset);
  g.p_offset = static_cast<unsigned>(plan.p_offset);
  g.o_offset = static_cast<unsigned>(plan.o_offset);
  return g;
}

// Launches the split kernel instance for plan.queries_per_block (1, 2, 4 or 8).
template <class S, int kVectorsPerLane>
void launch_decode_split(const SoftmaxDecodeCudaPlan& plan, const S* q, const S* k_new, const S* v_new, S* k_cache,
                         S* v_cache, float* workspace, S* out, const DecodeGeometry& g, CUstream_st* stream) {
  const dim3 grid(static_cast<unsigned>(plan.splits), static_cast<unsigned>(plan.head_blocks()));
  switch (plan.queries_per_block) {
    case 1:
      softmax_decode_split_kernel<S, kVectorsPerLane, 1><<<grid, plan.threads, plan.shared_bytes, stream>>>(
          q, k_new, v_new, k_cache, v_cache, workspace, out, g);
      break;
    case 2:
      softmax_decode_split_kernel<S, kVectorsPerLane, 2><<<grid, plan.threads, plan.shared_bytes, stream>>>(
          q, k_new, v_new, k_cache, v_cache, workspace, out, g);
      break;
    case 4:
      softmax_decode_split_kernel<S, kVectorsPerLane, 4><<<grid, plan.threads, plan.shared_bytes, stream>>>(
          q, k_new, v_new, k_cache, v_cache, workspace, out, g);
      break;
    case 8:
      softmax_decode_split_kernel<S, kVectorsPerLane, 8><<<grid, plan.threads, plan.shared_bytes, stream>>>(
          q, k_new, v_new, k_cache, v_cache, workspace, out, g);
      break;
    default:
      throw std::invalid_argument("launch_softmax_decode: queries_per_block must be 1, 2, 4 or 8");
  }
  check_launch("softmax_decode_split_kernel");
}

}  // namespace

template <class T>
void launch_softmax_decode(const SoftmaxDecodeCudaPlan& plan, const T* q, const T* k_new, const T* v_new,
                           T* k_cache, T* v_cache, std::int64_t append_row, float* workspace, T* out,
                           CUstream_st* stream) {
  using S = typename DeviceStorage<T>::type;
  if (append_row < 0 || append_row >= plan.context || plan.splits > kDecodeMaxSplits) {
    throw std::invalid_argument("launch_softmax_decode: the new token's row lies outside the planned context");
  }
  if (plan.group < 1 || plan.batch_heads % plan.group != 0 ||
      plan.query_slices * plan.queries_per_block < plan.group) {
    throw std::invalid_argument("launch_softmax_decode: the query slices do not cover the group");
  }
  DecodeGeometry g;
  g.capacity = plan.capacity;
  g.group = static_cast<int>(plan.group);
  g.query_slices = static_cast<int>(plan.query_slices);
  g.context = static_cast<int>(plan.context);
  g.append_row = static_cast<int>(append_row);
  g.splits = static_cast<int>(plan.splits);
  g.dim = static_cast<int>(plan.dim);
  g.vectors_per_row = plan.vectors_per_row;
  g.lanes_per_row = plan.lanes_per_row;
  g.scale_log2 = kLog2e / std::sqrt(static_cast<float>(plan.dim));
  const auto* q_s = reinterpret_cast<const S*>(q);
  const auto* k_new_s = reinterpret_cast<const S*>(k_new);
  const auto* v_new_s = reinterpret_cast<const S*>(v_new);
  auto* k_cache_s = reinterpret_cast<S*>(k_cache);
  auto* v_cache_s = reinterpret_cast<S*>(v_cache);
  auto* out_s = reinterpret_cast<S*>(out);
  if (plan.vectors_per_lane == 1) {
    launch_decode_split<S, 1>(plan, q_s, k_new_s, v_new_s, k_cache_s, v_cache_s, workspace, out_s, g, stream);
  } else if (plan.vectors_per_lane == 2 && sizeof(S) == 4) {
    // Only fp32 rows exceed 32 vectors (bf16 head_dim <= 256 is at most 32): no bf16 instance.
    if constexpr (sizeof(S) == 4) {
      launch_decode_split<S, 2>(plan, q_s, k_new_s, v_new_s, k_cache_s, v_cache_s, workspace, out_s, g, stream);
    }
  } else {
    throw std::invalid_argument("launch_softmax_decode: rows wider than 64 vectors per lane group");
  }
  if (plan.splits > 1) {
    softmax_decode_combine_kernel<S><<<static_cast<unsigned>(plan.batch_heads), plan.combine_threads, 0, stream>>>(
        workspace, out_s, g.splits, g.dim);
    check_launch("softmax_decode_combine_kernel");
  }
}

template <class T>
void configure_softmax_prefill(const SoftmaxPrefillCudaPlan& plan) {
  using S = typename DeviceStorage<T>::type;
  if (plan.path == SoftmaxPrefillPath::mma_bf16) {
    if constexpr (std::is_same_v<S, __nv_bfloat16>) {
      configure_softmax_prefill_mma(plan);
    } else {
      throw std::invalid_argument("configure_softmax_prefill: the mma path takes bf16 only");
    }
    return;
  }
  if (!plan.needs_shared_opt_in()) return;
  const int bytes = static_cast<int>(plan.shared_bytes);
  if (plan.path == SoftmaxPrefillPath::tensor_core_bf16) {
    ARCH_BENCH_CUDA_CHECK(cudaFuncSetAttribute(softmax_prefill_wmma_kernel,
                                               cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  } else {
    ARCH_BENCH_CUDA_CHECK(cudaFuncSetAttribute(softmax_prefill_simt_kernel<S>,
                                               cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  }
}

template <class T>
void launch_softmax_prefill(const SoftmaxPrefillCudaPlan& plan, const T* q, const T* k, const T* v, T* out,
                            CUstream_st* stream) {
  using S = typename DeviceStorage<T>::type;
  if (plan.tokens == 0) return;
  const PrefillGeometry g = prefill_geometry(plan);
  const dim3 grid(static_cast<unsigned>(plan.query_tiles), static_cast<unsigned>(plan.batch_heads));
  const auto* q_s = reinterpret_cast<const S*>(q);
  const auto* k_s = reinterpret_cast<const S*>(k);
  const auto* v_s = reinterpret_cast<const S*>(v);
  auto* out_s = reinterpret_cast<S*>(out);
  if (plan.path == SoftmaxPrefillPath::mma_bf16) {
    if constexpr (std::is_same_v<T, bf16>) {
      launch_softmax_prefill_mma(plan, q, k, v, out, stream);
    } else {
      throw std::invalid_argument("launch_softmax_prefill: the mma path takes bf16 only");
    }
  } else if (plan.path == SoftmaxPrefillPath::tensor_core_bf16) {
    if constexpr (std::is_same_v<S, __nv_bfloat16>) {
      softmax_prefill_wmma_kernel<<<grid, plan.threads, plan.shared_bytes, stream>>>(q_s, k_s, v_s, out_s, g);
      check_launch("softmax_prefill_wmma_kernel");
    } else {
      throw std::invalid_argument("launch_softmax_prefill: the tensor-core path takes bf16 only");
    }
  } else {
    softmax_prefill_simt_kernel<S><<<grid, plan.threads, plan.shared_bytes, stream>>>(q_s, k_s, v_s, out_s, g);
    check_launch("softmax_prefill_simt_kernel");
  }
}

#define ARCH_BENCH_INSTANTIATE(T)                                                                         \
  template void launch_softmax_decode<T>(const SoftmaxDecodeCudaPlan&, const T*, const T*, const T*, T*, T*, \
                                         std::int64_t, float*, T*, CUstream_st*);                         \
  template void configure_softmax_prefill<T>(const SoftmaxPrefillCudaPlan&);                              \
  template void launch_softmax_prefill<T>(const SoftmaxPrefillCudaPlan&, const T*, const T*, const T*, T*, \
                                          CUstream_st*);
ARCH_BENCH_INSTANTIATE(float)
ARCH_BENCH_INSTANTIATE(bf16)
#undef ARCH_BENCH_INSTANTIATE

}  // namespace arch_bench
