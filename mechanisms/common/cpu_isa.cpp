#include "mechanisms/common/cpu_isa.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>

namespace arch_bench {

bool cpu_supports(CpuIsa isa) {
#if defined(__x86_64__) || defined(__i386__)
  switch (isa) {
    case CpuIsa::portable:
      return true;
    case CpuIsa::avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case CpuIsa::avx512:
      return cpu_supports(CpuIsa::avx2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512vl");
    case CpuIsa::avx512_bf16:
      return cpu_supports(CpuIsa::avx512) && __builtin_cpu_supports("avx512bf16");
  }
  return false;
#else
  return isa == CpuIsa::portable;  // hand-written kernels exist for x86 only
#endif
}

bool cpu_vendor_is_amd() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool amd = __builtin_cpu_is("amd");
  return amd;
#else
  return false;
#endif
}

namespace {
// Every ISA with its name, one table for both directions (cpu_isa_name, parse_cpu_isa).
constexpr std::pair<CpuIsa, const char*> kIsaNames[] = {
    {CpuIsa::portable, "portable"}, {CpuIsa::avx2, "avx2"}, {CpuIsa::avx512, "avx512"},
    {CpuIsa::avx512_bf16, "avx512_bf16"}};
}  // namespace

const char* cpu_isa_name(CpuIsa isa) {
  for (const auto& [known, name] : kIsaNames) {
    if (known == isa) return name;
  }
  return "unknown";
}

std::optional<CpuIsa> parse_cpu_isa(std::string_view name) {
  for (const auto& [isa, known] : kIsaNames) {
    if (name == known) return isa;
  }
  return std::nullopt;
}

const char* build_isa_name() {
#if defined(__AVX512F__)
  return "avx512";
#elif defined(__AVX2__) && defined(__FMA__)
  return "avx2";
#elif defined(__AVX__)
  return "avx";
#elif defined(__SSE4_2__)
  return "sse4.2";
#else
  return "x86-64";
#endif
}

std::string dispatched_kernel_isa(CpuIsa isa) {
  if (isa == CpuIsa::portable) return build_target_kernel_isa();
  return std::string(cpu_isa_name(isa)) + " (run-time dispatch)";
}

std::vector<std::string> build_isa_features() {
  std::vector<std::string> features;
  // Only names __builtin_cpu_supports knows, so each can be checked on the running CPU.
#if defined(__SSE4_2__)
  features.push_back("sse4.2");
#endif
#if defined(__POPCNT__)
  features.push_back("popcnt");
#endif
#if defined(__AVX__)
  features.push_back("avx");
#endif
#if defined(__AVX2__)
  features.push_back("avx2");
#endif
#if defined(__FMA__)
  features.push_back("fma");
#endif
#if defined(__BMI__)
  features.push_back("bmi");
#endif
#if defined(__BMI2__)
  features.push_back("bmi2");
#endif
#if defined(__AVX512F__)
  features.push_back("avx512f");
#endif
#if defined(__AVX512VL__)
  features.push_back("avx512vl");
#endif
#if defined(__AVX512BW__)
  features.push_back("avx512bw");
#endif
#if defined(__AVX512DQ__)
  features.push_back("avx512dq");
#endif
#if defined(__AVX512VNNI__)
  features.push_back("avx512vnni");
#endif
#if defined(__AVX512BF16__)
  features.push_back("avx512bf16");
#endif
  return features;
}

std::vector<std::string> missing_isa_features(const std::vector<std::string>& features,
                                              const std::function<bool(const std::string&)>& supported) {
  std::vector<std::string> missing;
  for (const std::string& feature : features) {
    if (!supported(feature)) missing.push_back(feature);
  }
  return missing;
}

namespace {
bool running_cpu_supports(const std::string& feature) {
#if defined(__x86_64__) || defined(__i386__)
  // __builtin_cpu_supports wants a string literal, so each name the build can list is spelled out.
  static const std::vector<std::pair<std::string, bool>> known = {
      {"sse4.2", __builtin_cpu_supports("sse4.2") != 0},   {"popcnt", __builtin_cpu_supports("popcnt") != 0},
      {"avx", __builtin_cpu_supports("avx") != 0},         {"avx2", __builtin_cpu_supports("avx2") != 0},
      {"fma", __builtin_cpu_supports("fma") != 0},         {"bmi", __builtin_cpu_supports("bmi") != 0},
      {"bmi2", __builtin_cpu_supports("bmi2") != 0},       {"avx512f", __builtin_cpu_supports("avx512f") != 0},
      {"avx512vl", __builtin_cpu_supports("avx512vl") != 0}, {"avx512bw", __builtin_cpu_supports("avx512bw") != 0},
      {"avx512dq", __builtin_cpu_supports("avx512dq") != 0},
      {"avx512vnni", __builtin_cpu_supports("avx512vnni") != 0},
      {"avx512bf16", __builtin_cpu_supports("avx512bf16") != 0},
  };
  for (const auto& [name, present] : known) {
    if (name == feature) return present;
  }
  return false;
#else
  (void)feature;
  return false;
#endif
}
}  // namespace

std::vector<std::string> build_isa_features_missing_here() {
  return missing_isa_features(build_isa_features(), running_cpu_supports);
}

std::string build_target_kernel_isa() { return std::string(build_isa_name()) + " (build target, compiler-vectorised)"; }

bool bf16_dot_products_pay() { return cpu_vendor_is_amd() && cpu_supports(CpuIsa::avx512_bf16); }

CpuIsa cpu_isa() {
  static const CpuIsa chosen = [] {
    CpuIsa best = CpuIsa::portable;
    for (CpuIsa isa : {CpuIsa::avx2, CpuIsa::avx512}) {
      if (cpu_supports(isa)) best = isa;
    }
    if (bf16_dot_products_pay()) best = CpuIsa::avx512_bf16;
    // An override can only lower the choice: a kernel the CPU cannot run is never entered.
    if (const char* env = std::getenv("ARCH_BENCH_CPU_ISA")) {
      const std::optional<CpuIsa> wanted = parse_cpu_isa(env);
      if (!wanted) {
        throw std::runtime_error(std::string("ARCH_BENCH_CPU_ISA='") + env +
                                 "' is not an ISA with kernels; use portable, avx2, avx512 or avx512_bf16");
      }
      // Where bf16 dot products do not pay (bf16_dot_products_pay), avx512_bf16 is entered when
      // asked for: the one way the variable raises the choice.
      if (*wanted == CpuIsa::avx512_bf16 && best == CpuIsa::avx512 && cpu_supports(*wanted)) best = *wanted;
      if (cpu_supports(*wanted) && *wanted < best) best = *wanted;
    }
    return best;
  }();
  return chosen;
}

}  // namespace arch_bench
