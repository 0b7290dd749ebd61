#pragma once
// Run-time dispatch of the compiler-vectorised CPU kernels (every mechanism but softmax_kv, whose
// hand-written AVX2 set is chosen by cpu_isa.hpp).
//
// A kernel file (one that ends in ARCH_BENCH_INSTANTIATE_KERNELS) is compiled once per ISA variant:
//   build      the build's own flags (-march=native by default; x86-64 baseline when ARCH_BENCH_NATIVE=OFF)
//   x86_64     -march=x86-64 (SSE2), in a -march=native build only (a portable build's own is this)
//   x86_64_v3  -march=x86-64-v3 (AVX2, FMA, F16C, BMI1/2: Haswell, Zen 1 and later)
//   x86_64_v4  -march=x86-64-v4 (AVX-512 F/BW/DQ/VL/CD: Skylake-SP, Zen 4 and later)
// The last three exist on x86-64 only. Each kernel is a template on its storage type T and a
// KernelVariant V, and each variant's compilation instantiates its own V only; callers leave V at
// `dispatched`, whose instantiation (in the build variant's compilation) calls the variant
// dispatched_kernel_variant() chose. This is the dispatch of PyTorch's DispatchStub and ggml's
// all-variants CPU backend, with templates in place of function tables.
//
// What keeps the variants apart at link time: an inline function that two variants both compile
// (a header helper, say) would be one weak symbol, and the linker keeps one copy of it for the whole
// program; an AVX-512 copy kept for code that runs on an AVX2 CPU dies of SIGILL. So the helpers that
// kernels inline (float8.hpp, chunk_matmul.hpp, fast_math.hpp, ...) sit in an inline namespace
// named after the variant (kernel_helpers.hpp), internal helpers of a kernel file sit in
// an anonymous namespace, and the test `KernelVariantSymbols` (tests/support/variant_symbols.sh)
// fails when an x86-64-v3/v4 object defines an external symbol outside its own variant.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/kernel_helpers.hpp"

namespace arch_bench {

// `dispatched` is what callers get (every kernel's default template argument); the others are compiled.
enum class KernelVariant { dispatched, build, x86_64, x86_64_v3, x86_64_v4 };

// The variant this translation unit is compiled as (kernel_helpers.hpp).
inline constexpr KernelVariant kThisKernelVariant = KernelVariant::ARCH_BENCH_KERNEL_VARIANT;

// The variants this build compiled, best first in the order dispatch prefers them.
std::vector<KernelVariant> built_kernel_variants();
// Whether the running CPU can execute `variant`'s code (always for build: the start-up check in
// main() refuses a binary whose build flags the CPU lacks).
bool cpu_runs_kernel_variant(KernelVariant variant);

// What the dispatched kernels run: ARCH_BENCH_KERNEL_VARIANT=<name> when set (an error when it names
// a variant this build lacks or this CPU cannot run), else the build variant in a -march=native
// build (it is this machine's own), else the best variant the CPU runs. Fixed at the first call.
KernelVariant dispatched_kernel_variant();
// Throws std::runtime_error when ARCH_BENCH_KERNEL_VARIANT is set to something dispatch cannot use
// (main() calls this at start-up so that the error comes before any work).
void check_kernel_variant_environment();

// For tests that compare variants: while alive, dispatch runs `variant`, which must be built and
// runnable here (else std::invalid_argument).
class ScopedKernelVariant {
 public:
  explicit ScopedKernelVariant(KernelVariant variant);
  ~ScopedKernelVariant();
  ScopedKernelVariant(const ScopedKernelVariant&) = delete;
  ScopedKernelVariant& operator=(const ScopedKernelVariant&) = delete;

 private:
  std::optional<KernelVariant> previous_;
};

// "build", "x86-64", "x86-64-v3", "x86-64-v4" (ARCH_BENCH_KERNEL_VARIANT's spelling).
const char* kernel_variant_name(KernelVariant variant);
std::optional<KernelVariant> parse_kernel_variant(std::string_view name);
// What a CPU row records for a compiler-vectorised kernel: "x86-64-v3 (run-time dispatch,
// compiler-vectorised)", or for the build variant "<build isa> (build target, compiler-vectorised)".
std::string kernel_variant_isa(KernelVariant variant);

// Calls run.template operator()<V>() for V = dispatched_kernel_variant(). Only variants this build
// compiled are instantiated, so a kernel's dispatched form names no symbol that does not exist.
template <class Run>
decltype(auto) dispatch_kernel(Run&& run) {
#if defined(ARCH_BENCH_X86_64_KERNEL_VARIANTS)
  switch (dispatched_kernel_variant()) {
    case KernelVariant::x86_64_v4:
      return std::forward<Run>(run).template operator()<KernelVariant::x86_64_v4>();
    case KernelVariant::x86_64_v3:
      return std::forward<Run>(run).template operator()<KernelVariant::x86_64_v3>();
#if defined(ARCH_BENCH_X86_64_BASELINE_VARIANT)
    case KernelVariant::x86_64:
      return std::forward<Run>(run).template operator()<KernelVariant::x86_64>();
#endif
    default:
      break;
  }
#endif
  return std::forward<Run>(run).template operator()<KernelVariant::build>();
}

}  // namespace arch_bench

// The end of every kernel file: LIST(PREFIX, T, V) writes the file's kernel declarations for storage
// type T and variant V, each after PREFIX (`template` or `extern template`). This explicitly
// instantiates the file's own variant for float and bf16, and in the build variant's compilation
// also the dispatched form, after declaring the other variants extern (defined in their own objects;
// without that, the dispatched form would instantiate them here, with the build's flags).
#if defined(ARCH_BENCH_X86_64_BASELINE_VARIANT)
#define ARCH_BENCH_KERNEL_EXTERN_BASELINE(LIST, T) LIST(extern template, T, KernelVariant::x86_64)
#else
#define ARCH_BENCH_KERNEL_EXTERN_BASELINE(LIST, T)
#endif
#if defined(ARCH_BENCH_X86_64_KERNEL_VARIANTS) && defined(ARCH_BENCH_KERNEL_DISPATCHER)
#define ARCH_BENCH_KERNEL_DISPATCH_FOR(LIST, T)          \
  ARCH_BENCH_KERNEL_EXTERN_BASELINE(LIST, T)             \
  LIST(extern template, T, KernelVariant::x86_64_v3)     \
  LIST(extern template, T, KernelVariant::x86_64_v4)     \
  LIST(template, T, KernelVariant::dispatched)
#elif defined(ARCH_BENCH_KERNEL_DISPATCHER)
#define ARCH_BENCH_KERNEL_DISPATCH_FOR(LIST, T) LIST(template, T, KernelVariant::dispatched)
#else
#define ARCH_BENCH_KERNEL_DISPATCH_FOR(LIST, T)
#endif
#define ARCH_BENCH_INSTANTIATE_KERNELS(LIST)                                                  \
  LIST(template, float, kThisKernelVariant)                                                   \
  LIST(template, bf16, kThisKernelVariant)                                                    \
  ARCH_BENCH_KERNEL_DISPATCH_FOR(LIST, float)                                                 \
  ARCH_BENCH_KERNEL_DISPATCH_FOR(LIST, bf16)

// The first statement of every kernel: its dispatched form calls the chosen variant with the same
// arguments (`call` is the kernel's name with <T, W> and its arguments, W being the variant).
#define ARCH_BENCH_DISPATCH_KERNEL(V, call)                                                   \
  if constexpr (V == ::arch_bench::KernelVariant::dispatched) {                               \
    return ::arch_bench::dispatch_kernel([&]<::arch_bench::KernelVariant W>() { return call; }); \
  }
