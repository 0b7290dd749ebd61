#include "mechanisms/common/cpu_isa.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace arch_bench {

bool cpu_supports(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::portable:
      return true;
    case CpuIsa::avx2:
#if defined(__x86_64__) || defined(__i386__)
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
      return false;
#endif
  }
  return false;
}

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::portable:
      return "portable";
    case CpuIsa::avx2:
      return "avx2";
  }
  return "unknown";
}

std::optional<CpuIsa> parse_cpu_isa(std::string_view name) {
  if (name == "portable") return CpuIsa::portable;
  if (name == "avx2") return CpuIsa::avx2;
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

std::string build_target_kernel_isa() { return std::string(build_isa_name()) + " (build target, compiler-vectorised)"; }

CpuIsa cpu_isa() {
  static const CpuIsa chosen = [] {
    CpuIsa best = cpu_supports(CpuIsa::avx2) ? CpuIsa::avx2 : CpuIsa::portable;
    // An override can only lower the choice: a kernel the CPU cannot run is never entered.
    if (const char* env = std::getenv("ARCH_BENCH_CPU_ISA")) {
      const std::optional<CpuIsa> wanted = parse_cpu_isa(env);
      if (!wanted) {
        throw std::runtime_error(std::string("ARCH_BENCH_CPU_ISA='") + env +
                                 "' is not an ISA with kernels; use portable or avx2");
      }
      if (cpu_supports(*wanted) && *wanted < best) best = *wanted;
    }
    return best;
  }();
  return chosen;
}

}  // namespace arch_bench
