// `--device` and `list` on a machine without a usable GPU (every machine that builds this project):
// a CUDA request is refused up front with the probe's reason and writes nothing; auto falls back to
// the CPU and says so; list says which mechanisms have CUDA kernels in this build.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "core/backends/cuda/device_probe.hpp"
#include "support/cli.hpp"
#include "support/cli_refusals.hpp"

namespace arch_bench {
namespace {

using testing::read_json;
using testing::run_cli;
using testing::TempFolder;

TEST(CliDevice, CudaWithoutAUsableDeviceExits2WithTheProbesReasonAndWritesNothing) {
  if (probe_cuda().usable) GTEST_SKIP() << "a usable CUDA device is present";
  TempFolder folder;
  const auto result = run_cli("run --device cuda --sequence-lengths 16 --repeats 2 --results-dir '" +
                              folder.path().string() + "' --run-label gpu");
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("--device cuda: no usable CUDA device"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find(probe_cuda().reason), std::string::npos) << result.err;
  EXPECT_TRUE(std::filesystem::is_empty(folder.path()));
}

TEST(CliDevice, CudaTimingOnTheCpuBackendIsRefusedBeforeMeasuring) {
  testing::expect_run_refused("--device cpu --timing cuda_graph --sequence-lengths 16 --repeats 2",
                              "--timing cuda_graph needs the cuda backend");
}

TEST(CliDevice, AutoFallsBackToTheCpuAndRecordsWhyAndHowItTimed) {
  if (probe_cuda().usable) GTEST_SKIP() << "a usable CUDA device is present";
  TempFolder folder;
  const auto result = run_cli("run --device auto --sequence-lengths 16 --warmup 0 --repeats 2 --threads 1 "
                              "--quiet --results-dir '" + folder.path().string() + "' --run-label auto");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto report = read_json(folder / "45_linear_recurrent_state_auto.json");
  EXPECT_EQ(report["evidence_level"], "cpu_measured");
  EXPECT_EQ(report["hardware"]["backend"], "cpu");
  EXPECT_TRUE(report["hardware"]["gpu"].is_null());
  EXPECT_EQ(report["workload"]["timing_method"], "steady_clock");
  bool noted = false;
  for (const auto& note : report["notes"]) noted |= note.get<std::string>().find("--device auto") != std::string::npos;
  EXPECT_TRUE(noted) << report["notes"].dump();
  for (const auto& row : report["metrics"]["rows"]) {
    EXPECT_EQ(row["backend"], "cpu");
    EXPECT_EQ(row["timing_method"], "steady_clock");
    EXPECT_EQ(row["steps_per_sample"], 1);
    EXPECT_TRUE(row["launch_overhead_ms"].is_null());
    EXPECT_TRUE(row["failure_kind"].is_null());
  }
}

TEST(CliDevice, ListNamesCudaForEveryMechanismExactlyWhenTheBuildHasIt) {
  const auto result = run_cli("list --json");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto listing = nlohmann::json::parse(result.out);
  const bool cuda_build = probe_cuda().compiled_with_cuda;
  for (const auto& mechanism : listing["mechanisms"]) {
    const auto backends = mechanism["backends"].get<std::vector<std::string>>();
    const bool has_cuda = std::find(backends.begin(), backends.end(), "cuda") != backends.end();
    // Every built-in mechanism has CUDA kernels; a build without nvcc lists none of them as cuda.
    EXPECT_EQ(has_cuda, cuda_build) << mechanism["id"];
  }
}

}  // namespace
}  // namespace arch_bench
