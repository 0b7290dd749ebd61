#include "runner/diff/hardware_identity.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace arch_bench {

namespace {
using nlohmann::json;

constexpr const char* kNone = "(none)";

const json& at(const json& document, const char* pointer) {
  static const json kNull = nullptr;
  try {
    const json::json_pointer where(pointer);
    return document.contains(where) ? document.at(where) : kNull;
  } catch (const json::exception&) {  // a path through a non-object (fuzzed input)
    return kNull;
  }
}

// Values come from files that are not validated yet when merge groups them: quote only their start.
std::string shown(const json& value) {
  if (value.is_null()) return kNone;
  std::string text = value.is_string() ? value.get<std::string>() : value.dump();
  return text.size() > 80 ? text.substr(0, 77) + "..." : text;
}

// Every GPU's name, in the report's order: `hardware.gpu` is null (a CPU run), one device object or
// an array of them.
std::string gpu_names(const json& document) {
  const json& gpu = at(document, "/hardware/gpu");
  std::vector<std::string> names;
  auto add = [&names](const json& device) {
    if (device.is_object() && device.contains("name")) names.push_back(shown(device.at("name")));
  };
  if (gpu.is_array()) {
    for (const json& device : gpu) add(device);
  } else {
    add(gpu);
  }
  if (names.empty()) return kNone;
  return fmt::format("{}", fmt::join(names, ", "));
}

constexpr const char* kCeilings[] = {"memory_read_gbps", "memory_triad_gbps", "peak_gflops", "device_copy_gbps",
                                     "gemm_bf16_gflops"};
}  // namespace

std::vector<HardwareDifference> hardware_differences(const json& first, const std::string& first_file,
                                                     const json& second, const std::string& second_file,
                                                     std::optional<double> ceiling_tolerance) {
  std::vector<HardwareDifference> differences;
  auto differ = [&](const std::string& field, const std::string& a, const std::string& b, const std::string& why) {
    differences.push_back({field, a, b,
                           fmt::format("{} differs: '{}' in {} vs '{}' in {}{}", field, a, first_file, b, second_file,
                                       why)});
  };
  const std::string first_backend = shown(at(first, "/hardware/backend"));
  const std::string second_backend = shown(at(second, "/hardware/backend"));
  if (first_backend != second_backend) differ("hardware.backend", first_backend, second_backend, "");
  const std::string first_cpu = shown(at(first, "/hardware/host/cpu_model"));
  const std::string second_cpu = shown(at(second, "/hardware/host/cpu_model"));
  if (first_cpu != second_cpu) differ("hardware.host.cpu_model", first_cpu, second_cpu, "");
  const std::string first_gpu = gpu_names(first), second_gpu = gpu_names(second);
  if (first_gpu != second_gpu) differ("hardware.gpu.name", first_gpu, second_gpu, "");

  if (!ceiling_tolerance) return differences;
  const json& first_ceilings = at(first, "/hardware/ceilings");
  const json& second_ceilings = at(second, "/hardware/ceilings");
  if (!first_ceilings.is_object() || !second_ceilings.is_object()) return differences;  // a dry run measures none
  for (const char* name : kCeilings) {
    const auto a = first_ceilings.find(name), b = second_ceilings.find(name);
    if (a == first_ceilings.end() || b == second_ceilings.end() || !a->is_number() || !b->is_number()) continue;
    const double x = a->get<double>(), y = b->get<double>();
    if (!(x > 0) || !(y > 0) || !std::isfinite(x) || !std::isfinite(y)) continue;
    const double ratio = std::max(x, y) / std::min(x, y);
    if (ratio <= 1 + *ceiling_tolerance) continue;
    differ(fmt::format("hardware.ceilings.{}", name), fmt::format("{:.4g}", x), fmt::format("{:.4g}", y),
           fmt::format(" ({:.0f}% apart, beyond the {:.0f}% tolerance)", 100 * (ratio - 1), 100 * *ceiling_tolerance));
  }
  return differences;
}

}  // namespace arch_bench
