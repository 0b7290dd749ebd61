#pragma once
// Whether a mechanism's info lists the CUDA backend. Every built-in mechanism has CUDA kernels, and a
// build without nvcc lists none of them as cuda (test_cli_device.cpp checks the same through
// `list --json`), so the listing follows the build.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "mechanisms/mechanism.hpp"

namespace arch_bench::testing {

inline void expect_lists_cuda_exactly_when_built(const Mechanism& mechanism) {
  const std::vector<std::string>& backends = mechanism.info().backends;
  const bool has_cuda = std::find(backends.begin(), backends.end(), "cuda") != backends.end();
#if ARCH_BENCH_HAVE_CUDA
  EXPECT_TRUE(has_cuda) << mechanism.info().id;
#else
  EXPECT_FALSE(has_cuda) << mechanism.info().id;
#endif
}

}  // namespace arch_bench::testing
