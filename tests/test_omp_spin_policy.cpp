// The spin arch-bench asks libgomp for (runner/cli/omp_spin_policy.hpp): long only for a measuring
// run on a machine with nothing else runnable; the bounded spin otherwise, with the reason.
#include <gtest/gtest.h>

#include "runner/cli/omp_spin_policy.hpp"

namespace arch_bench {
namespace {

TEST(OmpSpinPolicy, OnlyAMeasuringRunOnAnIdleMachineSpinsLong) {
  EXPECT_EQ(choose_omp_spin(true, 0, 2).spin_count, kMeasuringSpinCount);
  for (const SpinChoice& bounded : {choose_omp_spin(false, 0, 2), choose_omp_spin(true, 1, 2),
                                    choose_omp_spin(true, 7, 64), choose_omp_spin(true, std::nullopt, 2)}) {
    EXPECT_EQ(bounded.spin_count, kBoundedSpinCount) << bounded.reason;
    EXPECT_EQ(bounded.reason.rfind("bounded spin: ", 0), 0u) << bounded.reason;
  }
  EXPECT_EQ(choose_omp_spin(true, 3, 2).reason, "bounded spin: 3 other runnable task(s) on 2 CPU(s) at the start");
}

TEST(OmpSpinPolicy, OnlyCommandsThatRunKernelsExecuteThemselvesForASpin) {
  for (const std::string command : {"run", "conformance", "preflight"}) {
    EXPECT_TRUE(runs_openmp_teams({command, "--device", "cpu"})) << command;
  }
  for (const std::string command : {"list", "validate", "diff", "merge", "report", "export", "--help", "--version"}) {
    EXPECT_FALSE(runs_openmp_teams({command, "x.json"})) << command;
  }
  EXPECT_FALSE(runs_openmp_teams({}));
  // The subcommand is the first word only: a file or value named `run` elsewhere does not count.
  EXPECT_FALSE(runs_openmp_teams({"report", "run"}));
}

TEST(OmpSpinPolicy, RunnableTasksAreReadFromProcStat) {
  const std::optional<int> others = other_runnable_tasks(3);
  ASSERT_TRUE(others.has_value()) << "/proc/stat has no procs_running line";
  EXPECT_GE(*others, 0);
}

}  // namespace
}  // namespace arch_bench
