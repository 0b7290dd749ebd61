#include "mechanisms/common/kernel_variant.hpp"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "mechanisms/common/cpu_isa.hpp"

namespace arch_bench {

namespace {

// Set by ScopedKernelVariant (tests); not thread-safe, and not meant to be.
std::optional<KernelVariant>& overridden_variant() {
  static std::optional<KernelVariant> variant;
  return variant;
}

KernelVariant variant_from_environment_or_best() {
  if (const char* env = std::getenv("ARCH_BENCH_KERNEL_VARIANT"); env != nullptr && *env != '\0') {
    const std::optional<KernelVariant> wanted = parse_kernel_variant(env);
    const std::vector<KernelVariant> built = built_kernel_variants();
    if (!wanted || std::find(built.begin(), built.end(), *wanted) == built.end()) {
      std::string names;
      for (KernelVariant v : built) names += std::string(names.empty() ? "" : ", ") + kernel_variant_name(v);
      throw std::runtime_error(std::string("ARCH_BENCH_KERNEL_VARIANT='") + env +
                               "' is not a kernel variant of this build; it has " + names);
    }
    if (!cpu_runs_kernel_variant(*wanted)) {
      throw std::runtime_error(std::string("ARCH_BENCH_KERNEL_VARIANT='") + env +
                               "': this CPU cannot run that variant's instructions");
    }
    return *wanted;
  }
  for (KernelVariant v : built_kernel_variants()) {
    if (cpu_runs_kernel_variant(v)) return v;
  }
  return KernelVariant::build;
}

#if defined(__x86_64__)
// GCC checks a psABI level as one name (every feature, and the OS's saving of the vector state).
// Clang 14 knows no level names and not f16c/lzcnt/movbe, so it checks the level's defining
// features; every CPU with AVX2, FMA and BMI1/2 also has the rest of x86-64-v3 (Haswell, Zen 1 on).
bool cpu_has_x86_64_v3() {
#if defined(__clang__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi") &&
         __builtin_cpu_supports("bmi2");
#else
  return __builtin_cpu_supports("x86-64-v3") != 0;
#endif
}

bool cpu_has_x86_64_v4_extras() {
#if defined(__clang__)
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512cd");
#else
  return __builtin_cpu_supports("x86-64-v4") != 0;
#endif
}
#endif

}  // namespace

std::vector<KernelVariant> built_kernel_variants() {
#if defined(ARCH_BENCH_NATIVE_BUILD)
  // A -march=native build's own variant is tuned for this very machine: preferred to a generic level.
  std::vector<KernelVariant> variants = {KernelVariant::build};
#if defined(ARCH_BENCH_X86_64_KERNEL_VARIANTS)
  variants.push_back(KernelVariant::x86_64_v4);
  variants.push_back(KernelVariant::x86_64_v3);
#endif
#if defined(ARCH_BENCH_X86_64_BASELINE_VARIANT)
  variants.push_back(KernelVariant::x86_64);  // for comparisons and tests: never preferred to build
#endif
#else
  std::vector<KernelVariant> variants;
#if defined(ARCH_BENCH_X86_64_KERNEL_VARIANTS)
  variants = {KernelVariant::x86_64_v4, KernelVariant::x86_64_v3};
#endif
  variants.push_back(KernelVariant::build);
#endif
  return variants;
}

bool cpu_runs_kernel_variant(KernelVariant variant) {
  switch (variant) {
    case KernelVariant::dispatched:
    case KernelVariant::build:
      return true;
#if defined(__x86_64__)
    case KernelVariant::x86_64:
      return true;
    case KernelVariant::x86_64_v3:
      return cpu_has_x86_64_v3();
    case KernelVariant::x86_64_v4:
      return cpu_has_x86_64_v3() && cpu_has_x86_64_v4_extras();
#else
    default:
      return false;  // the psABI levels are x86-64's
#endif
  }
  return false;
}

KernelVariant dispatched_kernel_variant() {
  if (const std::optional<KernelVariant>& forced = overridden_variant()) return *forced;
  static const KernelVariant chosen = variant_from_environment_or_best();
  return chosen;
}

void check_kernel_variant_environment() { (void)variant_from_environment_or_best(); }

ScopedKernelVariant::ScopedKernelVariant(KernelVariant variant) : previous_(overridden_variant()) {
  const std::vector<KernelVariant> built = built_kernel_variants();
  if (std::find(built.begin(), built.end(), variant) == built.end() || !cpu_runs_kernel_variant(variant)) {
    throw std::invalid_argument(std::string("ScopedKernelVariant: ") + kernel_variant_name(variant) +
                                " is not a variant this build has and this CPU runs");
  }
  overridden_variant() = variant;
}

ScopedKernelVariant::~ScopedKernelVariant() { overridden_variant() = previous_; }

const char* kernel_variant_name(KernelVariant variant) {
  switch (variant) {
    case KernelVariant::dispatched:
      return "dispatched";
    case KernelVariant::build:
      return "build";
    case KernelVariant::x86_64:
      return "x86-64";
    case KernelVariant::x86_64_v3:
      return "x86-64-v3";
    case KernelVariant::x86_64_v4:
      return "x86-64-v4";
  }
  return "unknown";
}

std::optional<KernelVariant> parse_kernel_variant(std::string_view name) {
  for (KernelVariant v :
       {KernelVariant::build, KernelVariant::x86_64, KernelVariant::x86_64_v3, KernelVariant::x86_64_v4}) {
    if (name == kernel_variant_name(v)) return v;
  }
  return std::nullopt;
}

std::string kernel_variant_isa(KernelVariant variant) {
  if (variant == KernelVariant::build || variant == KernelVariant::dispatched) return build_target_kernel_isa();
  return std::string(kernel_variant_name(variant)) + " (run-time dispatch, compiler-vectorised)";
}

}  // namespace arch_bench
