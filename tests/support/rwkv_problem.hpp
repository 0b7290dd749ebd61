#pragma once
// The seeded layer the RWKV-6 and RWKV-7 CPU tests run their kernels on (test_rwkv6.cpp,
// test_rwkv7.cpp): the drawn inputs, the same inputs in the kernel's storage type T, and the error
// of an output against the generation's fp64 reference. Each test derives its Problem from this and
// adds how its generation's kernels and reference are called.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "mechanisms/rwkv/inputs.hpp"
#include "mechanisms/rwkv/layout.hpp"
#include "tests/support/mechanism_fixtures.hpp"

namespace arch_bench::testing {

template <class T>
struct RwkvProblem {
  RwkvProblem(const Cell& cell, std::int64_t tokens, std::uint64_t seed, RwkvVersion version)
      : in(make_rwkv_inputs(cell, tokens, seed, version)), shape{in.batch_heads, in.heads, in.dim} {
    restore();
  }
  // The kernel's inputs back to the drawn ones (after a test changed some).
  void restore() {
    for (int i = 0; i < kRwkvInputCount; ++i) storage[i] = to_storage<T>(in.sequence[i]);
  }
  // max |out - ref| / max |ref| over every row of every head of out [bh, tokens, dim], where
  // `reference(bh)` is head bh's fp64 result (outputs [tokens, dim]).
  template <class Reference>
  double relative_error_against(const std::vector<float>& out, Reference reference) const {
    double diff = 0, scale = 0;
    for (std::int64_t bh = 0; bh < in.batch_heads; ++bh) {
      const auto ref = reference(bh);
      for (std::int64_t i = 0; i < in.tokens * in.dim; ++i) {
        diff = std::fmax(diff, std::fabs(out[bh * in.tokens * in.dim + i] - ref.outputs.data[i]));
        scale = std::fmax(scale, std::fabs(ref.outputs.data[i]));
      }
    }
    return diff / scale;
  }
  RwkvInputs in;
  RwkvShape shape;
  std::array<std::vector<T>, kRwkvInputCount> storage;
};

}  // namespace arch_bench::testing
