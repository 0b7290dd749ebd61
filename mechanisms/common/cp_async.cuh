#pragma once
// sm_80+ asynchronous copies from global to shared memory (PTX ISA, "Data Movement and Conversion
// Instructions: cp.async"), the one set of wrappers every kernel that double-buffers its tiles uses
// (softmax_kv's mma prefill, mamba's entry scan, the chunkwise passes through chunk_async_rows.cuh):
// each thread issues its copies, commits them as one group, and later waits for that group before
// the block's barrier makes the data visible to every thread. .cg caches in L2 only.
#include <cstdint>

namespace arch_bench::cp_async {

// The shared-state-space address of a pointer into shared memory (what cp.async and ldmatrix take).
__device__ __forceinline__ std::uint32_t shared_address(const void* pointer) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(pointer));
}

// 16 bytes from global to shared memory.
__device__ __forceinline__ void copy_16(void* shared, const void* global) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared_address(shared)), "l"(global) : "memory");
}

// 16 bytes to shared memory of which only the first `source_bytes` (0..16) are read from `global`,
// the rest zeroed (cp.async's src-size): rows past a sequence become zeros, never garbage, and with
// 0 nothing is read (`global` need only be a valid address).
__device__ __forceinline__ void copy_16_partial(std::uint32_t shared, const void* global, int source_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared), "l"(global), "r"(source_bytes)
               : "memory");
}

// 16 bytes from global, or 16 zero bytes where !fill.
__device__ __forceinline__ void copy_16_or_zeros(void* shared, const void* global, bool fill) {
  copy_16_partial(shared_address(shared), global, fill ? 16 : 0);
}

// Closes this thread's copies issued since the last commit into one group (an empty group if none).
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

// Waits until at most `kPending` of this thread's committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

}  // namespace arch_bench::cp_async
