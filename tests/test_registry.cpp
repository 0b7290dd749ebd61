// The built-in mechanisms register themselves (ARCH_BENCH_REGISTER_MECHANISM at the bottom of each
// mechanisms/<id>/mechanism.cpp): every one is there, once, in rank order, linked in although nothing
// references its object file, and each declares its conformance adapter (and, in a CUDA build, the
// GPU conformance of those with CUDA kernels).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mechanisms/common/conformance_adapter.hpp"
#include "mechanisms/registry.hpp"
#include "runner/conformance/on_cuda.hpp"

namespace arch_bench {
namespace {

std::vector<std::string> builtin_ids() {
  std::vector<std::string> ids;
  for (const auto& mechanism : all_mechanisms()) {
    if (plugin_origin(mechanism->info().id) == nullptr) ids.push_back(mechanism->info().id);
  }
  return ids;
}

TEST(Registry, EveryBuiltinRegistersItselfInRankOrder) {
  // The order `arch-bench list` and the landscape show, whatever order static initialisation ran in.
  const std::vector<std::string> expected = {"softmax_kv", "sliding_window", "linear_attention", "mamba",
                                             "mamba2",     "performer",      "retnet",           "gated_deltanet",
                                             "rwkv4",      "rwkv6",          "rwkv7"};
  EXPECT_EQ(builtin_ids(), expected);
}

TEST(Registry, EveryBuiltinDeclaresItsConformanceAdapter) {
  for (const auto& mechanism : all_mechanisms()) {
    if (plugin_origin(mechanism->info().id) != nullptr) continue;
    EXPECT_NE(mechanism->conformance(), nullptr) << mechanism->info().id;
    EXPECT_EQ(find_mechanism(mechanism->info().id), mechanism.get());
  }
}

TEST(Registry, GpuConformanceIsDeclaredByTheMechanismsWithCudaKernels) {
#if ARCH_BENCH_HAVE_CUDA
  const std::vector<std::string> expected = {"softmax_kv", "sliding_window", "linear_attention", "mamba",
                                             "mamba2",     "performer",      "retnet",           "gated_deltanet",
                                             "rwkv4",      "rwkv6",          "rwkv7"};
#else
  const std::vector<std::string> expected = {};
#endif
  EXPECT_EQ(cuda_conformance_mechanisms(), expected);
}

TEST(Registry, RegisteringAfterTheRegistryIsBuiltIsRefused) {
  (void)all_mechanisms();
  EXPECT_THROW(register_builtin_mechanism(1, [] { return std::unique_ptr<Mechanism>(); }), std::logic_error);
}

}  // namespace
}  // namespace arch_bench
