#pragma once
// Row copies from global to shared memory by 16-byte cp.async (cp_async.cuh), for a chunkwise kernel
// that copies its next chunk's operands while it computes on this chunk's: each thread issues its
// copies, commits them as one group (cp_async::commit), and waits for that group (cp_async::wait)
// before the block's barrier makes the rows visible to every thread.
#include <cuda_bf16.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "mechanisms/common/cp_async.cuh"

namespace arch_bench::chunk_async {

// n floats (a multiple of 4, 16-byte aligned on both sides) from src to dst, issued, not waited for.
__device__ __forceinline__ void copy_floats_async(float* __restrict__ dst, const float* __restrict__ src, int n) {
  for (int e = threadIdx.x; e < n / 4; e += blockDim.x) cp_async::copy_16(dst + 4 * e, src + 4 * e);
}

// rows x width bf16 (width a multiple of 8) from src (row stride src_ld) to dst (row stride ld),
// issued, not waited for: every row start is 16-byte aligned on both sides.
__device__ __forceinline__ void copy_rows_async(__nv_bfloat16* __restrict__ dst, int ld,
                                                const __nv_bfloat16* __restrict__ src, int src_ld, int rows,
                                                int width) {
  const int vectors = width / 8;
  for (int e = threadIdx.x; e < rows * vectors; e += blockDim.x) {
    const int r = e / vectors, c = e % vectors;
    cp_async::copy_16(dst + r * ld + c * 8, src + r * src_ld + c * 8);
  }
}

// Host side, before a launch: the rows a kernel copies 16 bytes at a time start at `base` plus
// multiples of 16 bytes, so `base` itself must be 16-byte aligned. cudaMalloc's buffers are; a view
// into the middle of one need not be, and would fault on the device ("misaligned address"): refuse.
inline void require_16_byte_aligned(const void* base, const char* what) {
  if (reinterpret_cast<std::uintptr_t>(base) % 16 != 0) {
    throw std::invalid_argument(std::string(what) +
                                " must be 16-byte aligned: the chunkwise kernels copy its rows by 16-byte cp.async");
  }
}

}  // namespace arch_bench::chunk_async
