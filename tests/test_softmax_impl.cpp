// softmax_kv's choice of GPU implementation (--softmax-impl, mechanisms/softmax_kv/softmax_impl.hpp),
// the run-time loading of cuDNN (mechanisms/common/cudnn_library.hpp) and the set-up script that
// fetches cudnn-frontend's headers: everything of the cuDNN variant that runs without a GPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/errors.hpp"
#include "mechanisms/common/cudnn_library.hpp"
#include "mechanisms/registry.hpp"
#include "mechanisms/softmax_kv/cuda_plan.hpp"
#include "mechanisms/softmax_kv/softmax_impl.hpp"
#include "runner/modes/mode.hpp"
#include "runner/report/report.hpp"
#include "runner/report/schema_validation.hpp"
#include "runner/shard/report_rows.hpp"
#include "support/cli.hpp"
#include "support/report_rows.hpp"
#include "support/mechanism_fixtures.hpp"
#include "tests/support/build_paths.hpp"

namespace arch_bench {
namespace {
using testing::run_cli;
using testing::small_cell;
using testing::TempFolder;

SoftmaxImplFacts usable_cuda_bf16(const std::string& requested) {
  return {.requested = requested,
          .backend = "cuda",
          .dtype = DType::bfloat16,
          .head_dim = 64,
          .library_usable = true};
}

TEST(SoftmaxImplOption, DeclaredOnSoftmaxKvWithAutoByDefault) {
  const Mechanism* softmax = find_mechanism("softmax_kv");
  ASSERT_NE(softmax, nullptr);
  bool declared = false;
  for (const OptionSpec& spec : softmax->option_specs()) {
    if (spec.key != "softmax_impl") continue;
    declared = true;
    EXPECT_EQ(std::get<std::string>(spec.default_value), "auto");
    EXPECT_TRUE(spec.axis);  // `run --softmax-impl hand,cudnn`: one arm each
    EXPECT_FALSE(spec.shapes_inputs);
  }
  EXPECT_TRUE(declared);
  EXPECT_EQ(std::get<std::string>(softmax_impl_option().parse("cudnn")), "cudnn");
  EXPECT_EQ(std::get<std::string>(softmax_impl_option().parse("hand")), "hand");
  EXPECT_THROW(softmax_impl_option().parse("flash"), UsageError);
}

TEST(SoftmaxImplChoice, AutoTakesCudnnOnlyForBf16OnCudaWithTheLibrary) {
  auto choice = choose_softmax_impl(usable_cuda_bf16("auto"));
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->impl, SoftmaxImpl::cudnn);
  EXPECT_EQ(choice->fallback_reason, "");

  SoftmaxImplFacts fp32 = usable_cuda_bf16("auto");
  fp32.dtype = DType::float32;
  choice = choose_softmax_impl(fp32);
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->impl, SoftmaxImpl::hand);
  EXPECT_NE(choice->fallback_reason.find("bfloat16"), std::string::npos) << choice->fallback_reason;

  SoftmaxImplFacts cpu = usable_cuda_bf16("auto");
  cpu.backend = "cpu";
  EXPECT_EQ(choose_softmax_impl(cpu)->impl, SoftmaxImpl::hand);

  SoftmaxImplFacts absent = usable_cuda_bf16("auto");
  absent.library_usable = false;
  absent.library_reason = "libcudnn.so.9 is not on the loader path";
  choice = choose_softmax_impl(absent);
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->impl, SoftmaxImpl::hand);
  EXPECT_EQ(choice->fallback_reason, absent.library_reason);

  SoftmaxImplFacts odd_dim = usable_cuda_bf16("auto");
  odd_dim.head_dim = 36;
  EXPECT_EQ(choose_softmax_impl(odd_dim)->impl, SoftmaxImpl::hand);
}

TEST(SoftmaxImplChoice, HandIsAlwaysHandAndCudnnIsRefusedWhereItCannotRun) {
  EXPECT_EQ(choose_softmax_impl(usable_cuda_bf16("hand"))->impl, SoftmaxImpl::hand);
  EXPECT_EQ(choose_softmax_impl(usable_cuda_bf16("hand"))->fallback_reason, "");
  EXPECT_EQ(choose_softmax_impl(usable_cuda_bf16("cudnn"))->impl, SoftmaxImpl::cudnn);
  SoftmaxImplFacts fp32 = usable_cuda_bf16("cudnn");
  fp32.dtype = DType::float32;
  EXPECT_FALSE(choose_softmax_impl(fp32));
  SoftmaxImplFacts absent = usable_cuda_bf16("cudnn");
  absent.library_usable = false;
  EXPECT_FALSE(choose_softmax_impl(absent));
}

TEST(SoftmaxImplChoice, CudnnOnTheCpuIsUnsupportedWithTheReason) {
  const Mechanism* softmax = find_mechanism("softmax_kv");
  Cell cell = small_cell(4, 64, 128, DType::bfloat16);
  cell.mechanism = "softmax_kv";
  EXPECT_EQ(softmax->unsupported_on(cell, "cpu"), std::nullopt);  // auto: the CPU kernels
  cell.options.set("softmax_impl", std::string("cudnn"));
  const auto reason = softmax->unsupported_on(cell, "cpu");
  ASSERT_TRUE(reason);
  EXPECT_NE(reason->find("--softmax-impl cudnn"), std::string::npos) << *reason;
  EXPECT_NE(reason->find("--device cuda"), std::string::npos) << *reason;
  cell.dtype = DType::float32;
  const auto fp32 = softmax->unsupported_on(cell, "cuda");
  ASSERT_TRUE(fp32);
}

TEST(CudnnLibrary, AnExplicitPathThatDoesNotExistIsUnusableWithTheVariableNamed) {
  const CudnnLibrary missing = open_cudnn_library("/nonexistent/libcudnn.so.9");
  EXPECT_FALSE(missing.usable());
  EXPECT_NE(missing.reason.find("ARCH_BENCH_CUDNN_LIB=/nonexistent/libcudnn.so.9"), std::string::npos)
      << missing.reason;
  // A folder stands for the libcudnn.so.9 inside it (PyTorch's nvidia/cudnn/lib).
  TempFolder empty;
  const CudnnLibrary folder = open_cudnn_library(empty.path().c_str());
  EXPECT_FALSE(folder.usable());
  EXPECT_EQ(folder.path, (empty.path() / "libcudnn.so.9").string());
  // Not a cuDNN: a library without cudnnGetVersion.
  const CudnnLibrary not_cudnn = open_cudnn_library("libm.so.6");
  EXPECT_FALSE(not_cudnn.usable());
  EXPECT_NE(not_cudnn.reason.find("cudnnGetVersion"), std::string::npos) << not_cudnn.reason;
}

TEST(CudnnLibrary, VersionText) {
  EXPECT_EQ(cudnn_version_text(91900), "9.19.0");
  EXPECT_EQ(cudnn_version_text(90102), "9.1.2");
}

TEST(CudnnLibrary, ListSaysWhyItIsNotUsable) {
  const auto result = run_cli("list", {});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("option --softmax-impl"), std::string::npos);
  ASSERT_NE(result.out.find("libraries:"), std::string::npos) << result.out;
  const std::string command = "list";
  ::setenv("ARCH_BENCH_CUDNN_LIB", "/nonexistent/cudnn", 1);
  const auto pointed = run_cli(command);
  ::unsetenv("ARCH_BENCH_CUDNN_LIB");
  ASSERT_EQ(pointed.exit_code, 0) << pointed.err;
  const auto line = pointed.out.substr(pointed.out.find("libraries:"));
  EXPECT_NE(line.find("cudnn"), std::string::npos) << line;
  EXPECT_NE(line.find("not usable"), std::string::npos) << line;
  EXPECT_NE(line.find("hand-written"), std::string::npos) << line;
  if (cudnn_built()) {
    EXPECT_NE(line.find("ARCH_BENCH_CUDNN_LIB=/nonexistent/cudnn"), std::string::npos) << line;
  } else {
    EXPECT_NE(line.find("no cuDNN variant"), std::string::npos) << line;
  }
}

TEST(CudnnLibrary, PreflightWarnsWithTheReasonWhereItCannotBeOpened) {
  TempFolder folder;
  const auto json = folder / "preflight.json";
  ::setenv("ARCH_BENCH_CUDNN_LIB", "/nonexistent/cudnn", 1);
  const auto cli = run_cli("preflight --profile ARCH-CUDA-MECHANISM --sequence-lengths 64 --json '" + json.string() + "'");
  ::unsetenv("ARCH_BENCH_CUDNN_LIB");
  const nlohmann::json report = testing::read_json(json);
  bool found = false;
  for (const auto& check : report["checks"]) {
    if (check["id"] != "cudnn") continue;
    found = true;
    EXPECT_EQ(check["status"], "warn") << check.dump();  // the hand kernels run: not a failure
    EXPECT_NE(check["message"].get<std::string>().find("hand-written"), std::string::npos) << check.dump();
  }
  EXPECT_TRUE(found) << report.dump(2) << cli.err;
}

TEST(FetchCudnnFrontend, AFailedDownloadFailsCleanlyAndWritesNothing) {
  TempFolder build;
  const std::string script = std::string(testing::source_dir()) + "/scripts/fetch-cudnn-frontend.sh";
  TempFolder capture;
  const std::string command = "ARCH_BENCH_PIP=false bash '" + script + "' '" + build.path().string() + "' 2> '" +
                              (capture / "err").string() + "'";
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  const std::string err = testing::read_text(capture / "err");
  EXPECT_NE(err.find("will not be built"), std::string::npos) << err;
  EXPECT_FALSE(std::filesystem::exists(build.path() / "_deps"));
}

TEST(FetchCudnnFrontend, HeadersAlreadyInPlaceAreKept) {
  TempFolder build;
  std::filesystem::create_directories(build.path() / "_deps/cudnn-frontend/include");
  { std::ofstream(build.path() / "_deps/cudnn-frontend/include/cudnn_frontend.h") << "// present\n"; }
  const std::string script = std::string(testing::source_dir()) + "/scripts/fetch-cudnn-frontend.sh";
  // pip is never asked: `false` would fail.
  const std::string command = "ARCH_BENCH_PIP=false bash '" + script + "' '" + build.path().string() + "' 2>/dev/null";
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(testing::read_text(build.path() / "_deps/cudnn-frontend/include/cudnn_frontend.h"), "// present\n");
}

// The row records which implementation ran (gpu_kernel): written, validated, read back by merge.
TEST(GpuKernelField, WrittenValidatedAndReadBack) {
  RunReport report;
  report.identity = {"ARCH-RECURRENT-STATE-MECHANISM", "arch-linear-recurrence-v2", "unit", "ARCH-CUDA-MECHANISM",
                     "linear_recurrence", "2026-12-05T00:00:00Z", "arch-bench run", 0};
  report.workload.sequence_lengths = {512};
  report.arms = find_mode("linear_recurrence")->arms(report.workload);
  Row row = testing::softmax_kv_baseline_row(Phase::prefill);
  report.rows.push_back(row);  // a row that names nothing: null
  row.gpu_kernel = "cudnn_sdpa (cuDNN 9.19.0)";
  report.rows.push_back(row);
  report.decision.verdict = "inconclusive";
  report.decision.next_action = "measure more lengths";
  nlohmann::json document = to_json(report);
  EXPECT_EQ(document["schema_version"], "1.1.0");
  EXPECT_TRUE(document["metrics"]["rows"][0]["gpu_kernel"].is_null());
  EXPECT_EQ(document["metrics"]["rows"][1]["gpu_kernel"], "cudnn_sdpa (cuDNN 9.19.0)");
  const std::vector<std::string> errors = schema_errors(document, "result");
  EXPECT_TRUE(errors.empty()) << (errors.empty() ? "" : errors.front());
  EXPECT_EQ(row_from_json(document["metrics"]["rows"][1]).gpu_kernel, "cudnn_sdpa (cuDNN 9.19.0)");
  // A 1.0.0 report has no such field, and still validates.
  document["schema_version"] = "1.0.0";
  for (auto& written : document["metrics"]["rows"]) written.erase("gpu_kernel");
  EXPECT_TRUE(schema_errors(document, "result").empty());
  document["metrics"]["rows"][1]["gpu_kernel"] = 5;
  EXPECT_FALSE(schema_errors(document, "result").empty());
}

// `gpu_kernel` names the hand kernel that ran, as the prefill plan chooses it, not just "hand".
TEST(SoftmaxHandKernelName, NamesThePrefillPathThePlanTakesAndTheDecodeKernel) {
  struct Case {
    DType dtype;
    std::int64_t dim;
    const char* prefill;
  };
  for (const Case& c : {Case{DType::bfloat16, 64, "hand: prefill mma_bf16"}, Case{DType::bfloat16, 128, "hand: prefill mma_bf16"},
                        Case{DType::bfloat16, 96, "hand: prefill wmma_bf16"}, Case{DType::bfloat16, 40, "hand: prefill simt"},
                        Case{DType::float32, 64, "hand: prefill simt"}}) {
    SCOPED_TRACE(::testing::Message() << dtype_name(c.dtype) << " d" << c.dim);
    EXPECT_EQ(softmax_hand_kernel_name(Phase::prefill, c.dtype, c.dim), c.prefill);
    EXPECT_EQ(std::string("hand: prefill ") + softmax_prefill_path_name(plan_softmax_prefill_cuda(8, 256, c.dim, c.dtype).path),
              c.prefill);
    EXPECT_EQ(softmax_hand_kernel_name(Phase::decode, c.dtype, c.dim), "hand: decode simt");
    EXPECT_EQ(softmax_hand_conformance_kernels(c.dtype, c.dim), std::string(c.prefill) + ", decode simt");
  }
}

}  // namespace
}  // namespace arch_bench
