#pragma once
// Inline-PTX wrappers of the sm_80+ warp-level instructions the mma prefill (cuda_prefill_mma.cu)
// is built from: mma.sync m16n8k16 bf16 -> fp32 and ldmatrix (plain and transposed); its cp.async
// copies are common/cp_async.cuh's.
// Fragment layouts are the PTX ISA's ("Matrix Fragments for mma.m16n8k16 with floating point type"):
// with g = lane / 4 and t = lane % 4,
//   A (16 x 16, row major), 4 registers of 2 bf16: a0 = (row g, cols 2t, 2t+1), a1 = (row g + 8, cols
//     2t, 2t+1), a2 = (row g, cols 2t + 8, 2t + 9), a3 = (row g + 8, cols 2t + 8, 2t + 9);
//   B (16 x 8, "col": element (k, n)), 2 registers: b0 = (rows 2t, 2t+1, col g), b1 = (rows 2t + 8,
//     2t + 9, col g);
//   C/D (16 x 8 fp32), 4 floats: c0, c1 = (row g, cols 2t, 2t+1), c2, c3 = (row g + 8, cols 2t, 2t+1).
// ldmatrix .x4 loads four 8 x 8 b16 matrices; lanes 8i..8i+7 give the row addresses of matrix i and
// register i of lane l receives matrix i's (row l / 4, cols 2 (l % 4), +1), or with .trans its
// (rows 2 (l % 4), +1, col l / 4).
#include <cuda_bf16.h>

#include <cstdint>

#include "mechanisms/common/cp_async.cuh"

namespace arch_bench::mma_ptx {

using cp_async::shared_address;

// d = a b + d on one m16n8k16 tile.
__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                               std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row)));
}

// Two floats rounded to nearest even into one bf16x2 register (lo: the lower column).
__device__ __forceinline__ std::uint32_t pack_bf16x2(float lo, float hi) {
  const __nv_bfloat162 pair = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const std::uint32_t*>(&pair);
}

}  // namespace arch_bench::mma_ptx
