#!/usr/bin/env bash
# Installs what is missing, builds arch-bench alone, and runs `arch-bench run` with the arguments
# given (none: the default experiment, linear_recurrence, on the CPU when there is no usable GPU).
#   scripts/run.sh                                   # default experiment, run label "default"
#   scripts/run.sh --run-label mybox --repeats 50    # any `arch-bench run` option
#   ARCH_BENCH_CUDA=on scripts/run.sh                # CUDA although no GPU answers nvidia-smi
#   CUDA_ARCHS=90 scripts/run.sh                     # CUDA for these architectures
# It builds in build/run (BUILD_DIR), apart from scripts/test.sh's build/: only the arch-bench target,
# no tests, micro benchmarks or fuzzers, and CUDA only for the GPU that is present (its compute
# capability from nvidia-smi), or none without one. ccache when installed (it is installed here).
# Prints a line per phase (install, configure, build, run) with its seconds; the configure and
# build output goes to build/run/configure.log and build.log (shown on failure; AB_QUIET=0 shows it).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export BUILD_DIR="${BUILD_DIR:-$ROOT/build/run}"
AB_TAG=run.sh
AB_QUIET="${AB_QUIET:-1}"
source "$ROOT/scripts/setup.sh"
T0="$(date +%s.%N)"
ab_phase install ab_install run
ab_phase configure ab_configure run
ab_phase build ab_build arch-bench
echo "run.sh: set-up $(ab_elapsed "$T0") s; running $BUILD_DIR/arch-bench run $*" >&2
cd "$ROOT"
T1="$(date +%s.%N)"
status=0
"$BUILD_DIR/arch-bench" run "$@" || status=$?
echo "run.sh: run $(ab_elapsed "$T1") s (exit $status); $(ab_elapsed "$T0") s in all; the binary is $BUILD_DIR/arch-bench" >&2
exit "$status"
