#!/usr/bin/env bash
# Usage: variant_symbols.sh VARIANT OBJECT...   (VARIANT: x86_64, x86_64_v3, x86_64_v4, or dispatch)
# Fails when an object compiled as ISA variant VARIANT (x86_64, x86_64_v3, x86_64_v4) defines an external
# symbol that is not its own: every such symbol must carry the variant, as a kernel template's
# argument ((arch_bench::KernelVariant)N) or as the helpers' inline namespace (variant_<VARIANT>).
# (DW.ref.__gxx_personality_v0, the exception personality's address, is data and one in every object.)
# Any other external definition is one the linker may merge with another variant's copy, and the
# program could then run, say, AVX-512 code on an AVX2 CPU (mechanisms/common/kernel_variant.hpp).
#
# `dispatch` checks the build variant's objects instead: their dispatched kernels must call the
# other variants' kernels (undefined references), not carry copies of them compiled with the
# build's flags. Its further arguments: the enum values of the variants built besides build.
set -euo pipefail
variant="$1"
shift
if [ "$variant" = dispatch ]; then
  values=()
  while [ "$#" -gt 0 ] && [[ "$1" =~ ^[0-9]+$ ]]; do values+=("$1"); shift; done
  for value in "${values[@]}"; do
    calls=$(nm -C --undefined-only "$@" | grep -c "(arch_bench::KernelVariant)$value" || true)
    copies=$(nm -C --defined-only "$@" | grep -c "(arch_bench::KernelVariant)$value" || true)
    if [ "$calls" -eq 0 ] || [ "$copies" -ne 0 ]; then
      echo "dispatch: the build objects call $calls and define $copies kernels of variant $value (want >0 and 0)" >&2
      exit 1
    fi
    echo "dispatch: the build objects call $calls kernels of variant $value and define none"
  done
  exit 0
fi
case "$variant" in
  x86_64) value=2 ;;
  x86_64_v3) value=3 ;;
  x86_64_v4) value=4 ;;
  *) echo "variant_symbols.sh: no check for variant '$variant'" >&2; exit 2 ;;
esac
[ "$#" -gt 0 ] || { echo "variant_symbols.sh: no objects given" >&2; exit 2; }
# The vector clones of an `omp declare simd` helper (_ZGV<isa><mask><lanes><args>_<its mangled name>)
# stay mangled under nm -C: they carry the variant as the length-prefixed name in the mangling
# (17variant_x86_64_v4; the length keeps x86_64 from matching x86_64_v4's).
mangled_variant="$(( ${#variant} + 8 ))variant_$variant"
strays=$(nm -C --defined-only --extern-only "$@" | awk 'NF >= 3 && $2 != "U"' | cut -d' ' -f3- |
         grep -v -e "(arch_bench::KernelVariant)$value" -e "::variant_$variant::" \
               -e "^_ZGV[A-Za-z0-9]*__ZN.*$mangled_variant" -e "^DW.ref.__gxx_personality_v0$" || true)
kernels=$(nm -C --defined-only --extern-only "$@" | grep -c "(arch_bench::KernelVariant)$value" || true)
if [ -n "$strays" ]; then
  echo "external symbols of the $variant objects outside their variant (wrap them in ARCH_BENCH_KERNEL_HELPERS_BEGIN, or an anonymous namespace):" >&2
  echo "$strays" >&2
  exit 1
fi
if [ "$kernels" -eq 0 ]; then
  echo "the $variant objects define no kernel of their variant: nothing was checked" >&2
  exit 1
fi
echo "$kernels kernel symbols of $variant in $# objects; no external symbol outside the variant"
