#!/usr/bin/env bash
# Installs what is missing, builds, and runs `arch-bench run` with the arguments given (none: the
# default experiment, linear_recurrence, on the CPU when there is no usable GPU).
#   scripts/run.sh                                   # default experiment, run label "default"
#   scripts/run.sh --run-label mybox --repeats 50    # any `arch-bench run` option
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
source "$ROOT/scripts/setup.sh"
cd "$ROOT"
exec "$BUILD_DIR/arch-bench" run "$@"
