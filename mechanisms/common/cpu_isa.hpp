#pragma once
// Run-time choice of the vector ISA for the hand-written CPU kernels. The build may use
// -march=native, but a kernel written for one ISA is only entered when the running CPU has it,
// so results stay correct on any x86-64 machine; the portable (compiler-vectorised) kernels are
// the fallback everywhere else.
#include <optional>
#include <string_view>

namespace arch_bench {

enum class CpuIsa { portable, avx2 };

// The best ISA the running CPU supports among those with kernels (avx2 = AVX2 + FMA), lowered by
// ARCH_BENCH_CPU_ISA=portable|avx2 when set (an ISA the CPU lacks is never chosen).
CpuIsa cpu_isa();

const char* cpu_isa_name(CpuIsa isa);
std::optional<CpuIsa> parse_cpu_isa(std::string_view name);

// Whether the running CPU can execute kernels written for `isa`.
bool cpu_supports(CpuIsa isa);

}  // namespace arch_bench
