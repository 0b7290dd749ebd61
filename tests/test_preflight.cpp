// Preflight: the checks against made-up machines (a GPU is never needed), and the CLI on this
// machine: the CUDA profile fails cleanly without a GPU, the CPU profile passes.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/backends/cuda/device_probe.hpp"
#include "runner/preflight/checks.hpp"
#include "runner/preflight/preflight_report.hpp"
#include "runner/profiles/profile.hpp"
#include "runner/report/schema_validation.hpp"
#include "support/cli.hpp"
#include "support/cli_refusals.hpp"

namespace arch_bench {
namespace {

using testing::CliResult;
using testing::read_json;
using testing::read_text;
using testing::run_cli;
using testing::TempFolder;

constexpr std::int64_t kGiB = std::int64_t{1} << 30;

PlanFacts small_plan(DType dtype = DType::bfloat16) {
  return PlanFacts{"linear_recurrence", 6, 16 * (std::int64_t{1} << 20), dtype, {}};
}

MachineFacts host_only(const std::string& governor = "performance") {
  MachineFacts facts;
  facts.host = {{"cpu_model", "Test CPU"}, {"logical_cores", 8}, {"frequency_governor", governor}, {"hypervisor", false}};
  facts.host_available_bytes = 64 * kGiB;
  facts.cuda.compiled_with_cuda = true;
  facts.cuda.runtime_version = "12.4";
  facts.cuda.reason = "cudaGetDeviceCount failed: CUDA driver version is insufficient for CUDA runtime version";
  return facts;
}

MachineFacts with_gpu(const std::string& capability, const std::string& driver = "12.6") {
  MachineFacts facts = host_only();
  facts.cuda.usable = true;
  facts.cuda.device_count = 1;
  facts.cuda.reason.clear();
  facts.cuda.driver_version = driver;
  facts.cuda.devices = nlohmann::json::array(
      {{{"index", 0}, {"name", "Test GPU"}, {"compute_capability", capability}, {"memory_bytes", 80 * kGiB}}});
  return facts;
}

const Check& find_check(const std::vector<Check>& checks, const std::string& id) {
  const auto it = std::find_if(checks.begin(), checks.end(), [&](const Check& c) { return c.id == id; });
  if (it == checks.end()) throw std::runtime_error("no check " + id);
  return *it;
}

bool any_failed(const std::vector<Check>& checks) {
  return std::any_of(checks.begin(), checks.end(), [](const Check& c) { return c.status == CheckStatus::fail; });
}

TEST(PreflightChecks, CpuProfilePassesOnAnOrdinaryHost) {
  const auto checks = run_checks(load_profile("ARCH-CPU-MECHANISM"), small_plan(), host_only());
  EXPECT_FALSE(any_failed(checks));
  EXPECT_EQ(find_check(checks, "host_memory").status, CheckStatus::pass);
  EXPECT_EQ(find_check(checks, "cpu_governor").status, CheckStatus::pass);
}

TEST(PreflightChecks, PowersaveOrUnreadableGovernorWarnsButDoesNotFail) {
  const Profile cpu = load_profile("ARCH-CPU-MECHANISM");
  const auto powersave = run_checks(cpu, small_plan(), host_only("powersave"));
  EXPECT_EQ(find_check(powersave, "cpu_governor").status, CheckStatus::warn);
  MachineFacts unreadable = host_only();
  unreadable.host["frequency_governor"] = nullptr;
  const auto checks = run_checks(cpu, small_plan(), unreadable);
  EXPECT_EQ(find_check(checks, "cpu_governor").status, CheckStatus::warn);
  EXPECT_FALSE(any_failed(checks));
}

TEST(PreflightChecks, BusyMachineWarnsButDoesNotFail) {
  const Profile cpu = load_profile("ARCH-CPU-MECHANISM");
  MachineFacts busy = host_only();  // 8 logical cores
  busy.load_average = 7.5;
  const auto checks = run_checks(cpu, small_plan(), busy);
  EXPECT_EQ(find_check(checks, "load").status, CheckStatus::warn);
  EXPECT_FALSE(any_failed(checks));
  MachineFacts quiet = host_only();
  quiet.load_average = 0.3;
  EXPECT_EQ(find_check(run_checks(cpu, small_plan(), quiet), "load").status, CheckStatus::pass);
}

TEST(PreflightChecks, TooLittleFreeMemoryForThePlanFails) {
  MachineFacts facts = host_only();
  facts.host_available_bytes = 20 * (std::int64_t{1} << 20);  // 20 MiB < 2 x 16 MiB
  const auto checks = run_checks(load_profile("ARCH-CPU-MECHANISM"), small_plan(), facts);
  const Check& memory = find_check(checks, "host_memory");
  EXPECT_EQ(memory.status, CheckStatus::fail);
  EXPECT_EQ(memory.required, 32 * (std::int64_t{1} << 20));
}

// Issue 42, item 6: the host must hold the cell's whole process share (its inputs, staging and fp64
// reference), under the tightest of MemAvailable and the cgroup's limit, which the message names.
TEST(PreflightChecks, HostMemoryIsCheckedAgainstThePredictedProcessBytesAndNamesTheLimit) {
  PlanFacts plan = small_plan();                           // 16 MiB of buffers
  plan.max_predicted_process_bytes = 100 * (std::int64_t{1} << 20);  // 100 MiB for the process
  MachineFacts facts = host_only();
  facts.host_available_bytes = 64 * (std::int64_t{1} << 20);  // room for 2 x the buffers, not the process
  facts.host_available_source = "cgroup v2 memory.max";
  const auto checks = run_checks(load_profile("ARCH-CPU-MECHANISM"), plan, facts);
  const Check& memory = find_check(checks, "host_memory");
  EXPECT_EQ(memory.status, CheckStatus::fail) << memory.message;
  EXPECT_EQ(memory.required, 200 * (std::int64_t{1} << 20));
  EXPECT_NE(memory.message.find("cgroup v2 memory.max"), std::string::npos) << memory.message;
  EXPECT_NE(memory.message.find("process"), std::string::npos) << memory.message;
}

TEST(PreflightChecks, DtypeOutsideTheProfileFails) {
  Profile cpu = load_profile("ARCH-CPU-MECHANISM");
  cpu.device.dtypes = {DType::bfloat16};
  const auto checks = run_checks(cpu, small_plan(DType::float32), host_only());
  const Check& dtype = find_check(checks, "dtype");
  EXPECT_EQ(dtype.status, CheckStatus::fail);
  EXPECT_NE(dtype.message.find("--dtype bfloat16"), std::string::npos) << dtype.message;
}

TEST(PreflightChecks, CudaProfileWithoutDeviceFailsWithTheProbeReasonAndSkipsDeviceChecks) {
  const auto checks = run_checks(load_profile("ARCH-CUDA-MECHANISM"), small_plan(), host_only());
  const Check& backend = find_check(checks, "backend");
  EXPECT_EQ(backend.status, CheckStatus::fail);
  EXPECT_NE(backend.message.find("driver version is insufficient"), std::string::npos) << backend.message;
  EXPECT_EQ(find_check(checks, "device_count").status, CheckStatus::fail);
  EXPECT_EQ(find_check(checks, "driver_version").status, CheckStatus::fail);
  for (const char* id : {"compute_capability", "device_memory", "dtype", "gpu_clocks"}) {
    EXPECT_EQ(find_check(checks, id).status, CheckStatus::skip) << id;
  }
}

TEST(PreflightChecks, CapableGpuWithKernelsPasses) {
  const auto checks = run_checks(load_profile("ARCH-CUDA-MECHANISM"), small_plan(), with_gpu("9.0"));
  EXPECT_FALSE(any_failed(checks));
  EXPECT_EQ(find_check(checks, "compute_capability").status, CheckStatus::pass);
  EXPECT_EQ(find_check(checks, "dtype").status, CheckStatus::pass);
  // The probe reports total, not free, device memory: enough of it is a warning, not a pass.
  EXPECT_EQ(find_check(checks, "device_memory").status, CheckStatus::warn);
}

TEST(PreflightChecks, MissingCudaKernelsFailEvenOnACapableGpu) {
  PlanFacts plan = small_plan();
  plan.mechanisms_without_backend = {"softmax_kv", "linear_attention"};
  const auto checks = run_checks(load_profile("ARCH-CUDA-MECHANISM"), plan, with_gpu("9.0"));
  const Check& kernels = find_check(checks, "kernels");
  EXPECT_EQ(kernels.status, CheckStatus::fail);
  EXPECT_NE(kernels.message.find("softmax_kv, linear_attention"), std::string::npos);
}

TEST(PreflightChecks, OldGpuFailsComputeCapabilityAndBfloat16) {
  const auto checks = run_checks(load_profile("ARCH-CUDA-MECHANISM"), small_plan(), with_gpu("7.5"));
  EXPECT_EQ(find_check(checks, "compute_capability").status, CheckStatus::fail);
  EXPECT_EQ(find_check(checks, "dtype").status, CheckStatus::fail);
}

TEST(PreflightChecks, DriverOlderThanTheRuntimeFails) {
  const auto checks = run_checks(load_profile("ARCH-CUDA-MECHANISM"), small_plan(), with_gpu("9.0", "12.2"));
  EXPECT_EQ(find_check(checks, "driver_version").status, CheckStatus::fail);
}

TEST(PreflightCli, CpuProfilePassesAndItsJsonReportValidates) {
  TempFolder folder;
  const auto json = folder / "preflight.json";
  const CliResult cli = run_cli("preflight --profile ARCH-CPU-MECHANISM --sequence-lengths 64,128 --json '" +
                                json.string() + "'");
  ASSERT_EQ(cli.exit_code, 0) << cli.out << cli.err;
  EXPECT_NE(cli.out.find("PASS  backend"), std::string::npos) << cli.out;
  EXPECT_NE(cli.out.find("preflight ARCH-CPU-MECHANISM: PASS"), std::string::npos) << cli.out;
  const nlohmann::json report = read_json(json);
  EXPECT_EQ(schema_errors(report, "preflight"), std::vector<std::string>{});
  EXPECT_EQ(report["passed"], true);
  EXPECT_EQ(report["plan"]["sequence_lengths"], nlohmann::json({64, 128}));
  EXPECT_EQ(report["profile"]["id"], "ARCH-CPU-MECHANISM");

  // Never overwritten: a second run with the same --json is bad input and leaves the file alone.
  testing::expect_overwrite_refused("preflight --profile ARCH-CPU-MECHANISM --json '" + json.string() + "'", json);
}

TEST(PreflightCli, CudaProfileFailsCleanlyWithTheReasonWithoutAGpu) {
  if (probe_cuda().usable) GTEST_SKIP() << "a usable CUDA device is present";
  TempFolder folder;
  const auto json = folder / "preflight.json";
  const CliResult cli = run_cli("preflight --profile ARCH-CUDA-MECHANISM --sequence-lengths 64,128 --json '" +
                                json.string() + "'");
  EXPECT_EQ(cli.exit_code, 1) << cli.out << cli.err;
  EXPECT_NE(cli.out.find("FAIL  backend"), std::string::npos) << cli.out;
  EXPECT_NE(cli.out.find("no usable CUDA device"), std::string::npos) << cli.out;
  EXPECT_NE(cli.out.find("preflight ARCH-CUDA-MECHANISM: FAIL"), std::string::npos) << cli.out;
  const nlohmann::json report = read_json(json);
  EXPECT_EQ(schema_errors(report, "preflight"), std::vector<std::string>{});
  EXPECT_EQ(report["passed"], false);
  EXPECT_EQ(report["machine"]["cuda"]["usable"], false);
}

TEST(PreflightCli, BadInputExitsTwo) {
  EXPECT_EQ(run_cli("preflight").exit_code, 2);  // --profile is required
  EXPECT_EQ(run_cli("preflight --profile NO-SUCH-PROFILE").exit_code, 2);
  EXPECT_EQ(run_cli("preflight --profile ARCH-CPU-MECHANISM --sequence-lengths 0").exit_code, 2);
  EXPECT_EQ(run_cli("preflight --profile ARCH-CPU-MECHANISM --mode no_such_mode").exit_code, 2);
}

// A check's message carries text read from the machine (/proc/cpuinfo's model name, a GPU's name):
// terminal control bytes in it are shown escaped on the preflight's lines, never acted on.
TEST(PreflightReport, ControlBytesInACheckMessageAreShownEscaped) {
  PreflightResult result;
  result.checks.push_back(Check{"cpu", CheckStatus::warn, "model \x1b[2Jfake\x07", nullptr, nullptr});
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  print_preflight(out, load_profile("ARCH-CPU-MECHANISM"), result);
  std::rewind(out);
  std::string text;
  for (int c = std::fgetc(out); c != EOF; c = std::fgetc(out)) text += static_cast<char>(c);
  std::fclose(out);
  EXPECT_NE(text.find("model \\x1b[2Jfake\\x07"), std::string::npos) << text;
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_EQ(text.find('\x07'), std::string::npos);
}

}  // namespace
}  // namespace arch_bench
