#pragma once
// Run-time choice of the vector ISA for the hand-written CPU kernels. The build may use
// -march=native, but a kernel written for one ISA is only entered when the running CPU has it,
// so results stay correct on any x86-64 machine; the portable (compiler-vectorised) kernels are
// the fallback everywhere else.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace arch_bench {

// Ordered: a later set needs everything an earlier one does.
enum class CpuIsa { portable, avx2, avx512, avx512_bf16 };

// The best ISA the running CPU supports among those with kernels (avx2 = AVX2 + FMA; avx512 =
// AVX-512 F/BW/DQ/VL + FMA; avx512_bf16 = that + AVX512_BF16, softmax_kv's bf16 prefill on
// vdpbf16ps, where bf16_dot_products_pay()), lowered by ARCH_BENCH_CPU_ISA=portable|avx2|avx512
// when set (an ISA the CPU lacks is never chosen). ARCH_BENCH_CPU_ISA=avx512_bf16 enters the bf16
// set on any CPU that has it.
CpuIsa cpu_isa();

// Whether the bf16 dot products beat widening to fp32 on this CPU, so that avx512_bf16 is the
// default: on AMD (Zen 4) vdpbf16ps issues as often as an fp32 FMA and does twice its work, and the
// bf16 prefill ran 1.7x faster (14.4-15.2 against 25.2-25.3 ms at L = 2048, 8 x 64, 2 threads,
// alternated); on Intel (Sapphire Rapids) it issues half as often and ran 1.6x slower (results/cpu-kernels.md,
// softmax_kv CPU kernels).
bool bf16_dot_products_pay();

const char* cpu_isa_name(CpuIsa isa);
std::optional<CpuIsa> parse_cpu_isa(std::string_view name);

// Whether the running CPU can execute kernels written for `isa`.
bool cpu_supports(CpuIsa isa);

// Whether the running CPU is AMD's: the kernels' tuning choices that were measured to differ by
// vendor (bf16_dot_products_pay, softmax_kv's decode_prefetches_into_l2) ask this one question.
bool cpu_vendor_is_amd();

// The vector ISA the build compiled its portable kernels for (the compiler's target: "avx512",
// "avx2", "avx", "sse4.2" or "x86-64"), which is what a kernel without a hand-written set runs.
const char* build_isa_name();

// What a CPU row records as its kernel's ISA: "<isa> (run-time dispatch)" for a hand-written
// kernel set entered at run time, "<build isa> (build target, compiler-vectorised)" otherwise.
std::string dispatched_kernel_isa(CpuIsa isa);
std::string build_target_kernel_isa();

// The instruction-set extensions this build's code was compiled to use (from the compiler's target
// macros: with ARCH_BENCH_NATIVE, those of the build machine), e.g. {"avx", "avx2", "fma", "bmi2"}.
std::vector<std::string> build_isa_features();

// Those of `features` that `supported` says the running CPU lacks, in order.
std::vector<std::string> missing_isa_features(const std::vector<std::string>& features,
                                              const std::function<bool(const std::string&)>& supported);

// The build's features this CPU lacks (empty when it can run everything the build compiled). A
// -march=native binary copied to an older CPU would otherwise die of SIGILL in the first kernel,
// or worse, in the middle of a run; main() refuses to start instead, naming the features.
std::vector<std::string> build_isa_features_missing_here();

}  // namespace arch_bench
