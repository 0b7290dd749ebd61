// `arch-bench conformance --device cuda` on a real device: for every mechanism with CUDA kernels,
// generated inputs run through the GPU kernels agree with the fp64 reference and decode agrees with
// prefill at the dtype tolerance, and the manifest names the GPU. Skipped without a device.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "core/backends/cuda/device_probe.hpp"
#include "mechanisms/common/cudnn_library.hpp"
#include "runner/conformance/conformance.hpp"
#include "runner/conformance/on_cuda.hpp"

namespace arch_bench {
namespace {

namespace fs = std::filesystem;

// A fresh temporary folder, removed with everything in it.
struct Scratch {
  Scratch() {
    std::string pattern = (fs::temp_directory_path() / "arch-bench-gpu-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~Scratch() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  fs::path path;
};

TEST(ConformanceGpu, EveryMechanismWithCudaKernelsPassesOnTheDevice) {
  const CudaProbe probe = probe_cuda();
  if (!probe.usable) GTEST_SKIP() << "no usable CUDA device: " << probe.reason;
  ASSERT_GE(cuda_conformance_mechanisms().size(), 4u);  // softmax_kv, linear_attention, mamba, performer, ...
  for (const std::string& mechanism : cuda_conformance_mechanisms()) {
    for (const DType dtype : {DType::float32, DType::bfloat16}) {
      const Scratch scratch;
      const fs::path& folder = scratch.path;
      MechanismOptions options;
      options.set("features", std::int64_t{32});
      options.set("state_size", std::int64_t{8});
      // Past one prefill chunk (64 tokens; mamba's scan chunk is 1024: 1100 crosses it).
      const ConformanceShape shape{2, 2, mechanism == "mamba" ? 1100 : 80, 16};
      generate_conformance_inputs({folder / "in", mechanism, shape, options, 7, dtype});
      ConformanceRequest request{mechanism, folder / "in", folder / "out", dtype, options, false};
      request.device = "cuda";
      const ConformanceResult result = run_conformance(request);
      EXPECT_TRUE(result.passed) << mechanism << " " << dtype_name(dtype) << "\n" << result.manifest.dump(2);
      EXPECT_EQ(result.manifest["device"]["backend"], "cuda");
    }
  }
}

// softmax_kv's --softmax-impl in conformance: cudnn (prefill, and decode through one padded graph),
// hand, and auto on fp32 (which cuDNN does not take) all pass against the fp64 reference, and the
// manifest names what ran. Grouped-query (4 query heads on 2 K/V heads) past one 64-row tile.
TEST(ConformanceGpu, SoftmaxKvThroughCudnnAndTheHandKernelsPassesAndSaysWhichRan) {
  const CudaProbe probe = probe_cuda();
  if (!probe.usable) GTEST_SKIP() << "no usable CUDA device: " << probe.reason;
  if (!cudnn_library().usable()) GTEST_SKIP() << "cuDNN not usable: " << cudnn_library().reason;
  struct Case {
    const char* impl;
    DType dtype;
    const char* ran;  // how details.softmax_impl begins
  };
  for (const Case& c : {Case{"cudnn", DType::bfloat16, "cudnn_sdpa (cuDNN 9."}, Case{"hand", DType::bfloat16, "hand: prefill mma_bf16, decode simt"},
                        Case{"auto", DType::bfloat16, "cudnn_sdpa (cuDNN 9."}, Case{"auto", DType::float32, "hand: prefill simt, decode simt (auto: "}}) {
    SCOPED_TRACE(::testing::Message() << c.impl << " " << dtype_name(c.dtype));
    const Scratch scratch;
    const fs::path& folder = scratch.path;
    MechanismOptions options;
    options.set("kv_heads", std::int64_t{2});
    options.set("softmax_impl", std::string(c.impl));
    generate_conformance_inputs({folder / "in", "softmax_kv", ConformanceShape{2, 4, 100, 64}, options, 11, c.dtype});
    ConformanceRequest request{"softmax_kv", folder / "in", folder / "out", c.dtype, options, false};
    request.device = "cuda";
    const ConformanceResult result = run_conformance(request);
    EXPECT_TRUE(result.passed) << result.manifest.dump(2);
    const std::string ran = result.manifest["details"].value("softmax_impl", std::string());
    EXPECT_EQ(ran.rfind(c.ran, 0), 0u) << ran;
  }
}

}  // namespace
}  // namespace arch_bench
