#!/usr/bin/env bash
# Installs what is missing, builds everything (arch-bench, the tests, arch-bench-micro; CUDA whenever
# nvcc is found, for CMakeLists.txt's architectures unless CUDA_ARCHS names others) in build/
# (BUILD_DIR), and runs the whole test suite with ctest; arguments go to ctest. Prints a line per
# phase (install, configure, build, test) with its seconds. ccache when installed.
#   scripts/test.sh                  # everything
#   scripts/test.sh -R Cli           # the tests whose names match
#   CUDA_ARCHS=90 scripts/test.sh    # the CUDA code compiled for these architectures only
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
AB_TAG=test.sh
source "$ROOT/scripts/setup.sh"
ab_phase install ab_install
ab_phase configure ab_configure all
ab_phase build ab_build
cd "$BUILD_DIR"
ab_phase test ctest --output-on-failure -j "$JOBS" "$@"
