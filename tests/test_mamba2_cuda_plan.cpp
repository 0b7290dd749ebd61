// mamba2 CUDA launch planning, on the CPU: one block per (batch, head) row, a thread for every state
// column in whole warps within the launch bound, the group rows the kernel reads equal to the CPU
// kernels', the shared B_t/C_t staging within 48 KiB, and the refusals of shapes it cannot launch.
#include <gtest/gtest.h>

#include "mechanisms/mamba2/cuda_plan.hpp"
#include "support/mechanism_fixtures.hpp"

namespace arch_bench {
namespace {

TEST(Mamba2CudaPlan, OneBlockPerRowAndOneThreadPerColumnInWholeWarps) {
  for (const std::int64_t p : {1, 31, 32, 33, 48, 64, 256}) {
    for (const std::int64_t n : {1, 40, 128, 256}) {
      const Mamba2Shape shape{3, 8, 2, p, n};
      const Mamba2CudaPlan plan = plan_mamba2_cuda(shape, 100);
      EXPECT_EQ(plan.blocks, 24);
      EXPECT_EQ(plan.threads % 32, 0) << p;
      EXPECT_GE(plan.threads, p);
      EXPECT_LT(plan.threads - p, 32) << p;  // no whole idle warp
      EXPECT_LE(plan.threads, kMamba2CudaMaxThreads);
      EXPECT_EQ(plan.shared_bytes, static_cast<std::size_t>(2 * n * 4));
      EXPECT_LE(plan.shared_bytes, std::size_t{48 * 1024});
      EXPECT_EQ(plan.tokens, 100);
    }
  }
  EXPECT_EQ(plan_mamba2_cuda({1, 8, 1, 64, 128}, 1).threads, 64);
}

TEST(Mamba2CudaPlan, GroupRowsAreTheCpuKernelsGroupRows) {
  for (const std::int64_t groups : {1, 2, 4, 8}) {
    const Mamba2Shape shape{3, 8, groups, 64, 16};
    for (std::int64_t bh = 0; bh < shape.rows(); ++bh) {
      const std::int64_t g = mamba2_cuda_group_row(bh, 8, static_cast<int>(groups));
      EXPECT_EQ(g, shape.group_row(bh));
      EXPECT_EQ(g / groups, bh / 8);                          // the row's own batch element
      EXPECT_EQ(g % groups, (bh % 8) / (8 / groups));          // heads / groups consecutive heads per group
    }
  }
}

TEST(Mamba2CudaPlan, ShapesTheKernelCannotLaunchAreRefused) {
  Cell cell = testing::mechanism_cell("mamba2", 8, 64, 128, DType::bfloat16);
  EXPECT_FALSE(mamba2_cuda_unsupported(cell).has_value());
  cell.head_dim = 257;
  EXPECT_TRUE(mamba2_cuda_unsupported(cell).has_value());
  cell.head_dim = 64;
  cell.options.set("n_groups", std::int64_t{3});
  EXPECT_TRUE(mamba2_cuda_unsupported(cell).has_value());
  cell.options.set("n_groups", std::int64_t{1});
  cell.batch = std::int64_t{1} << 30;  // 2^33 blocks
  EXPECT_TRUE(mamba2_cuda_unsupported(cell).has_value());
}

}  // namespace
}  // namespace arch_bench
