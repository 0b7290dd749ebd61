#pragma once
// What the AVX2 and AVX-512 decode splits (cpu_avx2.cpp, cpu_avx512.cpp) share around their kernels:
// the running state of a split's queries, and the choice of the prefetch locality the kernels are
// compiled for. Nothing here uses an ISA's instructions, so it needs no target attribute; it has
// internal linkage all the same, like the kernels it serves.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "mechanisms/softmax_kv/cpu.hpp"
#include "mechanisms/softmax_kv/decode_prefetch.hpp"
#include "mechanisms/softmax_kv/prefill_blocks.hpp"

namespace arch_bench {
namespace {

// One split's queries (1 .. kDecodeGroupSlice of one K/V head's group) as its kernel holds them: each
// query and accumulator in the kernel's lane order (`lane_of(c)` is where channel c lives; bf16 rows
// are split into even and odd channels), with the running max and sum of its online softmax.
struct DecodeSplitState {
  alignas(64) float q[kDecodeGroupSlice][prefill_blocks::kMaxDim];
  alignas(64) float acc[kDecodeGroupSlice][prefill_blocks::kMaxDim];
  float m[kDecodeGroupSlice], l[kDecodeGroupSlice];

  // queries [count][dim], already scaled by 1/sqrt(dim); nothing seen yet.
  template <class LaneOf>
  void start(const float* queries, std::int64_t count, std::int64_t dim, LaneOf lane_of) {
    for (std::int64_t g = 0; g < count; ++g) {
      for (std::int64_t c = 0; c < dim; ++c) q[g][lane_of(c)] = queries[g * dim + c];
      std::fill_n(acc[g], dim, 0.0f);
      m[g] = -INFINITY;
      l[g] = 0.0f;
    }
  }

  // Query g's partial {max, sum, acc[dim] in channel order} at partials + g * partial_stride.
  template <class LaneOf>
  void finish(float* partials, std::int64_t partial_stride, std::int64_t count, std::int64_t dim,
              LaneOf lane_of) const {
    for (std::int64_t g = 0; g < count; ++g) {
      float* partial = partials + g * partial_stride;
      partial[0] = m[g];
      partial[1] = l[g];
      for (std::int64_t c = 0; c < dim; ++c) partial[2 + c] = acc[g][lane_of(c)];
    }
  }
};

// Calls `split.template operator()<Locality>()` with the prefetch locality this CPU wants
// (decode_prefetch.hpp: L2 on AMD, L1 elsewhere), a template argument so the kernels' prefetches
// are constants.
template <class Split>
void with_decode_prefetch_locality(Split&& split) {
  if (decode_prefetches_into_l2()) {
    split.template operator()<kPrefetchIntoL2>();
  } else {
    split.template operator()<kPrefetchIntoL1>();
  }
}

}  // namespace
}  // namespace arch_bench
