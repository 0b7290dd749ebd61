// The ISA variants of the compiled kernels (mechanisms/common/kernel_variant.hpp): every variant
// this build compiled and this CPU runs passes every built-in mechanism's fp64 check, and dispatch
// runs the variant it says it runs. A variant the CPU cannot run reports skipped.
#include <algorithm>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "mechanisms/common/cpu_isa.hpp"
#include "mechanisms/common/kernel_variant.hpp"
#include "mechanisms/registry.hpp"
#include "core/backends/cpu/cpu_backend.hpp"
#include "core/dtype.hpp"
#include "tests/support/mechanism_fixtures.hpp"
#include "tests/support/prepared_cells.hpp"

namespace arch_bench {
namespace {

class KernelVariants : public ::testing::TestWithParam<KernelVariant> {};

// Head widths 64 and 128 take both prefill forms where a mechanism has two (the recurrence while a
// head's state fits L1, the chunk form past it); 150 tokens are two full chunks of 64 and a tail.
TEST_P(KernelVariants, EveryMechanismPassesItsFp64CheckInBothPhasesAndDtypes) {
  const KernelVariant variant = GetParam();
  if (!cpu_runs_kernel_variant(variant)) GTEST_SKIP() << "this CPU cannot run " << kernel_variant_name(variant);
  const auto built = built_kernel_variants();
  if (std::find(built.begin(), built.end(), variant) == built.end()) {
    GTEST_SKIP() << "this build has no " << kernel_variant_name(variant) << " variant (a portable build's own is x86-64)";
  }
  const ScopedKernelVariant scoped(variant);
  ASSERT_EQ(dispatched_kernel_variant(), variant);
  CpuBackend backend;
  int checked = 0;
  for (const auto& mechanism : all_mechanisms()) {
    for (const std::int64_t dim : {64, 128}) {
      for (const DType dtype : {DType::float32, DType::bfloat16}) {
        for (const Phase phase : {Phase::decode, Phase::prefill}) {
          Cell cell = testing::small_cell(2, dim, 150, dtype, phase);
          cell.mechanism = mechanism->info().id;
          if (mechanism->unsupported(cell)) continue;
          const testing::PreparedRun run = testing::run_prepared(*mechanism, cell, 11, backend);
          const std::string where = cell.mechanism + " d=" + std::to_string(dim) + " " + dtype_name(dtype) + " " +
                                    phase_name(phase) + " on " + kernel_variant_name(variant);
          EXPECT_TRUE(run.accuracy.output_finite) << where;
          EXPECT_LT(run.accuracy.max_rel_error, dtype_tolerance(dtype)) << where;
          EXPECT_GT(run.accuracy.rows_checked, 0) << where;
          ++checked;
        }
      }
    }
  }
  EXPECT_GE(checked, 8 * 4);  // every built-in mechanism in at least one width
}

INSTANTIATE_TEST_SUITE_P(Built, KernelVariants,
                         ::testing::Values(KernelVariant::build, KernelVariant::x86_64, KernelVariant::x86_64_v3,
                                           KernelVariant::x86_64_v4),
                         [](const ::testing::TestParamInfo<KernelVariant>& info) {
                           std::string name = kernel_variant_name(info.param);
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

TEST(KernelVariant, NamesRoundTripAndUnknownNamesAreRejected) {
  for (const KernelVariant v :
       {KernelVariant::build, KernelVariant::x86_64, KernelVariant::x86_64_v3, KernelVariant::x86_64_v4}) {
    EXPECT_EQ(parse_kernel_variant(kernel_variant_name(v)), v);
  }
  EXPECT_FALSE(parse_kernel_variant("dispatched"));  // not a variant one can ask for
  EXPECT_FALSE(parse_kernel_variant("avx2"));
}

TEST(KernelVariant, DispatchChoosesABuiltVariantThisCpuRuns) {
  const KernelVariant chosen = dispatched_kernel_variant();
  EXPECT_TRUE(cpu_runs_kernel_variant(chosen));
  const auto built = built_kernel_variants();
  EXPECT_NE(std::find(built.begin(), built.end(), chosen), built.end());
  EXPECT_NE(std::find(built.begin(), built.end(), KernelVariant::build), built.end());
#if defined(ARCH_BENCH_NATIVE_BUILD)
  EXPECT_EQ(chosen, KernelVariant::build);  // a -march=native build's own code is this machine's
#else
  // A portable build takes the highest level the CPU has.
  for (const KernelVariant v : built) {
    if (cpu_runs_kernel_variant(v)) {
      EXPECT_EQ(chosen, v);
      break;
    }
  }
#endif
}

TEST(KernelVariant, ARowNamesTheVariantAndHowItWasChosen) {
  EXPECT_EQ(kernel_variant_isa(KernelVariant::x86_64_v4), "x86-64-v4 (run-time dispatch, compiler-vectorised)");
  EXPECT_EQ(kernel_variant_isa(KernelVariant::build), build_target_kernel_isa());
}

TEST(KernelVariant, AScopedVariantTheCpuCannotRunIsRefusedAndTheOverrideIsUndoneOnExit) {
  const KernelVariant before = dispatched_kernel_variant();
  {
    const ScopedKernelVariant scoped(KernelVariant::build);
    EXPECT_EQ(dispatched_kernel_variant(), KernelVariant::build);
  }
  EXPECT_EQ(dispatched_kernel_variant(), before);
  EXPECT_THROW(ScopedKernelVariant{KernelVariant::dispatched}, std::invalid_argument);
  if (!cpu_runs_kernel_variant(KernelVariant::x86_64_v4)) {
    EXPECT_THROW(ScopedKernelVariant{KernelVariant::x86_64_v4}, std::invalid_argument);
  }
}

}  // namespace
}  // namespace arch_bench
