#pragma once
// Asynchronous 16-byte row copies from global to shared memory (sm_80+ cp.async, PTX ISA "Data
// Movement and Conversion Instructions: cp.async"), for a kernel that copies its next chunk's
// operands while it computes on this chunk's: each thread issues its copies, commits them as one
// group, and later waits for that group (cp.async.wait_group) before the block's barrier makes the
// rows visible to every thread. .cg caches in L2 only: each row is read once per block.
#include <cuda_bf16.h>

#include <cstdint>

namespace arch_bench::chunk_async {

__device__ __forceinline__ void copy_16_bytes(void* shared, const void* global) {
  const auto to = static_cast<std::uint32_t>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(to), "l"(global) : "memory");
}

// 16 bytes from global to shared memory, or 16 zero bytes where !fill (the source size 0: nothing is
// read, `global` need only be a valid address).
__device__ __forceinline__ void copy_16_bytes_or_zeros(void* shared, const void* global, bool fill) {
  const auto to = static_cast<std::uint32_t>(__cvta_generic_to_shared(shared));
  const int source_bytes = fill ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(to), "l"(global), "r"(source_bytes) : "memory");
}

// n floats (a multiple of 4, 16-byte aligned on both sides) from src to dst, issued, not waited for.
__device__ __forceinline__ void copy_floats_async(float* __restrict__ dst, const float* __restrict__ src, int n) {
  for (int e = threadIdx.x; e < n / 4; e += blockDim.x) copy_16_bytes(dst + 4 * e, src + 4 * e);
}

// rows x width bf16 (width a multiple of 8) from src (row stride src_ld) to dst (row stride ld),
// issued, not waited for: every row start is 16-byte aligned on both sides.
__device__ __forceinline__ void copy_rows_async(__nv_bfloat16* __restrict__ dst, int ld,
                                                const __nv_bfloat16* __restrict__ src, int src_ld, int rows,
                                                int width) {
  const int vectors = width / 8;
  for (int e = threadIdx.x; e < rows * vectors; e += blockDim.x) {
    const int r = e / vectors, c = e % vectors;
    copy_16_bytes(dst + r * ld + c * 8, src + r * src_ld + c * 8);
  }
}

// Closes this thread's copies issued since the last commit into one group (an empty group if none).
__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

// Waits until at most `kPending` of this thread's committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void wait_copies() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

}  // namespace arch_bench::chunk_async
