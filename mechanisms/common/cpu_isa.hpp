#pragma once
// Run-time choice of the vector ISA for the hand-written CPU kernels. The build may use
// -march=native, but a kernel written for one ISA is only entered when the running CPU has it,
// so results stay correct on any x86-64 machine; the portable (compiler-vectorised) kernels are
// the fallback everywhere else.
#include <optional>
#include <string>
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

// The vector ISA the build compiled its portable kernels for (the compiler's target: "avx512",
// "avx2", "avx", "sse4.2" or "x86-64"), which is what a kernel without a hand-written set runs.
const char* build_isa_name();

// What a CPU row records as its kernel's ISA: "<isa> (run-time dispatch)" for a hand-written
// kernel set entered at run time, "<build isa> (build target, compiler-vectorised)" otherwise.
std::string dispatched_kernel_isa(CpuIsa isa);
std::string build_target_kernel_isa();

}  // namespace arch_bench
