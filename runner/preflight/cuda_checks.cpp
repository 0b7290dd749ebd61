// The checks of a cuda profile. Facts come from probe_cuda(); on a machine without a usable device
// (cudaGetDeviceCount fails without a driver) the backend check fails with the probe's reason and
// the checks that need a device are skipped, never attempted.
#include <algorithm>

#include <fmt/format.h>

#include "mechanisms/common/cudnn_library.hpp"
#include "runner/preflight/check_helpers.hpp"

namespace arch_bench::preflight_detail {

namespace {

// bfloat16 arithmetic and storage in CUDA kernels need Ampere (compute capability 8.0) or newer.
constexpr Version kBf16MinimumCapability{8, 0};

// Devices whose compute capability meets `minimum` (all of them when there is none).
std::vector<const nlohmann::json*> capable_devices(const CudaProbe& cuda, std::optional<Version> minimum) {
  std::vector<const nlohmann::json*> capable;
  for (const nlohmann::json& device : cuda.devices) {
    const auto capability = parse_version(device.value("compute_capability", std::string()));
    if (!minimum || (capability && *capability >= *minimum)) capable.push_back(&device);
  }
  return capable;
}

std::string device_list(const CudaProbe& cuda) {
  std::vector<std::string> names;
  for (const nlohmann::json& device : cuda.devices) {
    names.push_back(fmt::format("{} (cc {})", device.value("name", std::string("?")),
                                device.value("compute_capability", std::string("?"))));
  }
  return fmt::format("{}", fmt::join(names, ", "));
}

void cuda_version_checks(const Profile& profile, const MachineFacts& machine, std::vector<Check>& checks) {
  const CudaProbe& cuda = machine.cuda;
  if (!cuda.compiled_with_cuda) {
    checks.push_back(skipped("driver_version", "arch-bench was built without CUDA (see backend)"));
    checks.push_back(skipped("runtime_version", "arch-bench was built without CUDA (see backend)"));
    return;
  }
  const auto driver = parse_version(cuda.driver_version);
  const auto runtime = parse_version(cuda.runtime_version);
  const auto driver_min = profile.device.driver_version_min ? parse_version(*profile.device.driver_version_min)
                                                            : std::nullopt;
  const nlohmann::json driver_required = profile.device.driver_version_min
                                             ? nlohmann::json(*profile.device.driver_version_min)
                                             : nlohmann::json(cuda.runtime_version);
  if (!driver) {
    checks.push_back(make("driver_version", CheckStatus::fail,
                          "no NVIDIA driver found (cudaDriverGetVersion reports none); install the driver or run "
                          "on a GPU machine",
                          nullptr, driver_required));
  } else if (driver_min && *driver < *driver_min) {
    checks.push_back(make("driver_version", CheckStatus::fail,
                          fmt::format("driver supports CUDA {} < {} required; update the NVIDIA driver",
                                      cuda.driver_version, *profile.device.driver_version_min),
                          cuda.driver_version, driver_required));
  } else if (runtime && *driver < *runtime) {
    checks.push_back(make("driver_version", CheckStatus::fail,
                          fmt::format("driver supports CUDA {}, older than the CUDA runtime {} arch-bench was built "
                                      "with; update the driver or build with an older toolkit",
                                      cuda.driver_version, cuda.runtime_version),
                          cuda.driver_version, driver_required));
  } else {
    checks.push_back(make("driver_version", CheckStatus::pass,
                          fmt::format("driver supports CUDA {} (runtime {})", cuda.driver_version, cuda.runtime_version),
                          cuda.driver_version, driver_required));
  }
  const auto runtime_min = profile.device.runtime_version_min ? parse_version(*profile.device.runtime_version_min)
                                                              : std::nullopt;
  const nlohmann::json runtime_required = profile.device.runtime_version_min
                                              ? nlohmann::json(*profile.device.runtime_version_min)
                                              : nlohmann::json(nullptr);
  if (runtime_min && (!runtime || *runtime < *runtime_min)) {
    checks.push_back(make("runtime_version", CheckStatus::fail,
                          fmt::format("CUDA runtime {} < {} required; rebuild arch-bench with a newer CUDA toolkit",
                                      cuda.runtime_version.empty() ? "unknown" : cuda.runtime_version,
                                      *profile.device.runtime_version_min),
                          cuda.runtime_version, runtime_required));
  } else {
    checks.push_back(make("runtime_version", CheckStatus::pass, fmt::format("CUDA runtime {}", cuda.runtime_version),
                          cuda.runtime_version, runtime_required));
  }
}

Check device_memory_check(const Profile& profile, const PlanFacts& plan, const CudaProbe& cuda) {
  const std::int64_t needed = required_free_bytes(profile, plan.max_predicted_peak_bytes);
  // The probe may report only the total; then a pass is a warn, since other processes may hold
  // part of it.
  std::int64_t smallest = -1;
  bool free_known = true;
  for (const nlohmann::json& device : cuda.devices) {
    const bool has_free = device.contains("free_memory_bytes");
    free_known = free_known && has_free;
    const std::int64_t bytes = device.value(has_free ? "free_memory_bytes" : "memory_bytes", std::int64_t{0});
    smallest = smallest < 0 ? bytes : std::min(smallest, bytes);
  }
  const std::string what = free_known ? "free" : "total (free not reported by the probe)";
  if (smallest < needed) {
    return make("device_memory", CheckStatus::fail,
                fmt::format("device memory {} {} < {}; plan smaller cells (--sequence-lengths, --batch)",
                            what, human_bytes(std::max<std::int64_t>(smallest, 0)), requirement_text(profile, plan)),
                smallest, needed);
  }
  return make("device_memory", free_known ? CheckStatus::pass : CheckStatus::warn,
              fmt::format("device memory {} {} >= {}", what, human_bytes(smallest), requirement_text(profile, plan)),
              smallest, needed);
}

// cuDNN, opened at run time: a pass says softmax_kv's default GPU baseline is cuDNN's fused attention,
// a warn that it falls back to the hand-written kernels (the run goes on either way).
Check cudnn_check() {
  const CudnnLibrary& cudnn = cudnn_library();
  if (cudnn.usable()) {
    return make("cudnn", CheckStatus::pass,
                fmt::format("{}: softmax_kv (bfloat16) runs cuDNN's fused attention", cudnn_library_summary(cudnn)),
                cudnn_version_text(cudnn.version), nullptr);
  }
  return make("cudnn", CheckStatus::warn,
              fmt::format("{}; softmax_kv runs its hand-written CUDA kernels (--softmax-impl cudnn cells are "
                          "unsupported)",
                          cudnn.reason),
              nullptr, nullptr);
}

}  // namespace

void cuda_checks(const Profile& profile, const PlanFacts& plan, const MachineFacts& machine,
                 std::vector<Check>& checks) {
  const CudaProbe& cuda = machine.cuda;
  const std::string no_device = "no usable CUDA device (see backend)";
  if (!cuda.compiled_with_cuda) {
    checks.push_back(make("backend", CheckStatus::fail,
                          fmt::format("no usable CUDA device: {}; rebuild with nvcc on PATH, or use --profile "
                                      "ARCH-CPU-MECHANISM",
                                      cuda.reason),
                          "none", "cuda"));
  } else if (!cuda.usable) {
    checks.push_back(make("backend", CheckStatus::fail,
                          fmt::format("no usable CUDA device: {}; run on a machine with an NVIDIA GPU and driver, or "
                                      "use --profile ARCH-CPU-MECHANISM",
                                      cuda.reason),
                          "none", "cuda"));
  } else {
    checks.push_back(make("backend", CheckStatus::pass, fmt::format("CUDA: {}", device_list(cuda)), "cuda", "cuda"));
  }
  checks.push_back(kernels_check(profile, plan));

  const std::int64_t count = cuda.usable ? static_cast<std::int64_t>(cuda.devices.size()) : 0;
  const std::int64_t count_min = std::max<std::int64_t>(1, profile.device.device_count_min);
  checks.push_back(make("device_count", count >= count_min ? CheckStatus::pass : CheckStatus::fail,
                        fmt::format("{} usable CUDA device(s), {} required", count, count_min), count, count_min));

  if (!cuda.usable) {
    checks.push_back(skipped("compute_capability", no_device));
  } else {
    const auto minimum = profile.device.compute_capability_min ? parse_version(*profile.device.compute_capability_min)
                                                               : std::nullopt;
    const std::int64_t capable = static_cast<std::int64_t>(capable_devices(cuda, minimum).size());
    const std::string min_text = profile.device.compute_capability_min.value_or("any");
    checks.push_back(make("compute_capability", capable >= count_min ? CheckStatus::pass : CheckStatus::fail,
                          fmt::format("{} of {} device(s) have compute capability >= {}: {}{}", capable, count,
                                      min_text, device_list(cuda),
                                      capable >= count_min ? "" : "; run on a newer GPU"),
                          capable, min_text));
  }
  cuda_version_checks(profile, machine, checks);
  checks.push_back(host_memory_check(profile, plan, machine));
  checks.push_back(cuda.usable ? device_memory_check(profile, plan, cuda) : skipped("device_memory", no_device));

  Check dtype = dtype_in_profile(profile, plan);
  if (dtype.status == CheckStatus::pass) {
    if (!cuda.usable) {
      dtype = skipped("dtype", no_device);
    } else if (plan.dtype == DType::bfloat16 &&
               capable_devices(cuda, kBf16MinimumCapability).size() < cuda.devices.size()) {
      dtype = make("dtype", CheckStatus::fail,
                   fmt::format("bfloat16 kernels need compute capability >= 8.0 ({}); pass --dtype float32 or run "
                               "on a newer GPU", device_list(cuda)),
                   "bfloat16", "compute capability >= 8.0");
    } else {
      dtype = make("dtype", CheckStatus::pass, fmt::format("{} supported by every device", dtype_name(plan.dtype)),
                   dtype_name(plan.dtype), dtype_name(plan.dtype));
    }
  }
  checks.push_back(std::move(dtype));

  if (!cuda.usable) {
    checks.push_back(skipped("gpu_clocks", no_device));
  } else if (!cuda.devices.empty() && cuda.devices.front().contains("clock_mhz")) {
    checks.push_back(make("gpu_clocks", CheckStatus::pass,
                          fmt::format("SM clock {} MHz", cuda.devices.front().at("clock_mhz").dump()),
                          cuda.devices.front().at("clock_mhz"), nullptr));
  } else {
    checks.push_back(make("gpu_clocks", CheckStatus::warn,
                          "GPU clocks are not read by this build; lock them (`nvidia-smi --lock-gpu-clocks`) so "
                          "boost and thermal throttling do not move the timings"));
  }
  checks.push_back(cudnn_check());
  // The host thread launches every kernel: its clock shows up in launch overhead.
  checks.push_back(cpu_governor_check(machine));
  checks.push_back(hypervisor_check(machine));
  checks.push_back(load_check(machine));
}

}  // namespace arch_bench::preflight_detail
