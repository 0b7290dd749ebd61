// `arch-bench conformance --device`: the manifest records whose kernels ran; `--device cuda` without a
// usable device (this machine has none, or the build has no nvcc) exits 2 with the probe's reason and
// writes nothing; a device that is neither cpu nor cuda is a usage error.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/backends/cuda/device_probe.hpp"
#include "runner/conformance/conformance.hpp"
#include "support/cli.hpp"

namespace arch_bench {
namespace {

using testing::CliResult;
using testing::run_cli;
using testing::TempFolder;
namespace fs = std::filesystem;

std::string quoted(const fs::path& path) { return "'" + path.string() + "'"; }

void generate(const TempFolder& folder, const std::string& mechanism) {
  // Each mechanism takes only the options it declares (mamba: --state-size, performer: --features).
  const std::string sizes = mechanism == "mamba" ? " --state-size 4" : mechanism == "performer" ? " --features 16" : "";
  const CliResult generated = run_cli("conformance --generate " + quoted(folder / "in") + " --mechanism " + mechanism +
                                      " --batch 1 --heads 2 --length 20 --dim 8" + sizes);
  ASSERT_EQ(generated.exit_code, 0) << generated.err;
}

TEST(ConformanceDevice, CpuRunsRecordTheCpuBackend) {
  TempFolder folder;
  generate(folder, "mamba");
  const CliResult result = run_cli("conformance --mechanism mamba --device cpu --inputs " + quoted(folder / "in") +
                                   " --outputs " + quoted(folder / "out"));
  ASSERT_EQ(result.exit_code, 0) << result.err << result.out;
  const nlohmann::json manifest = testing::read_json(folder / "out" / kConformanceManifest);
  EXPECT_EQ(manifest["device"]["backend"], "cpu");
  EXPECT_TRUE(manifest["passed"].get<bool>());
}

TEST(ConformanceDevice, CudaWithoutAUsableDeviceExitsTwoWithTheProbesReason) {
  const CudaProbe probe = probe_cuda();
  if (probe.usable) GTEST_SKIP() << "this machine has a usable CUDA device";
  ASSERT_FALSE(probe.reason.empty());
  for (const char* mechanism : {"softmax_kv", "linear_attention", "performer", "mamba"}) {
    TempFolder folder;
    generate(folder, mechanism);
    const CliResult result = run_cli(std::string("conformance --mechanism ") + mechanism + " --device cuda --inputs " +
                                     quoted(folder / "in") + " --outputs " + quoted(folder / "out"));
    EXPECT_EQ(result.exit_code, 2) << mechanism << result.out;
    EXPECT_NE(result.err.find("--device cuda"), std::string::npos) << result.err;
    EXPECT_NE(result.err.find(probe.reason), std::string::npos) << result.err;
    EXPECT_TRUE(!fs::exists(folder / "out") || fs::is_empty(folder / "out")) << mechanism;
  }
}

TEST(ConformanceDevice, UnknownDevicesAndGenerateWithADeviceAreUsageErrors) {
  TempFolder folder;
  generate(folder, "linear_attention");
  const CliResult unknown = run_cli("conformance --mechanism linear_attention --device tpu --inputs " +
                                    quoted(folder / "in") + " --outputs " + quoted(folder / "out"));
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("--device tpu"), std::string::npos) << unknown.err;
  const CliResult generate_on = run_cli("conformance --generate " + quoted(folder / "more") +
                                        " --mechanism linear_attention --device cuda");
  EXPECT_EQ(generate_on.exit_code, 2);
  EXPECT_NE(generate_on.err.find("--device"), std::string::npos) << generate_on.err;
}

}  // namespace
}  // namespace arch_bench
