#!/usr/bin/env bash
# Fuzzes every reader of untrusted input (docs/user-guide.md, "Fuzzing and sanitizers"): installs clang and libFuzzer when
# missing, builds the libFuzzer targets of cmake/Fuzzing.cmake (address + undefined sanitizers) in
# build-fuzz/, replays the committed corpus (tests/fuzz/corpus/<target>/, which holds the inputs that
# once crashed arch-bench), then fuzzes each target for SECONDS (default 30). Exit 1 when any input
# crashes, hangs or leaks; the input is saved as build-fuzz/artifacts/<target>-crash-*.
#   scripts/fuzz.sh [SECONDS]        e.g. scripts/fuzz.sh 600 for a longer session
#   TARGETS="fuzz_npy" scripts/fuzz.sh 60
# The targets are fuzzed FUZZ_JOBS at a time (default: the number of CPUs), each on one core. The
# build uses ccache when installed (as scripts/setup.sh's builds do).
# When clang cannot be installed (no package registry), it says so and exits 0: fuzzing is skipped,
# not failed.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SECONDS_PER_TARGET="${1:-30}"
BUILD_DIR="${FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
TARGETS="${TARGETS:-fuzz_report fuzz_profile fuzz_npy fuzz_cli}"
JOBS="${JOBS:-2}"

if ! [[ "$SECONDS_PER_TARGET" =~ ^[0-9]+$ ]]; then
  echo "usage: scripts/fuzz.sh [SECONDS per target, default 30]" >&2
  exit 2
fi

# clang, its libFuzzer/sanitizer runtimes and OpenMP for clang, plus what every arch-bench build needs
# (scripts/setup.sh: the Debian packages, and valijson's headers unpacked into the build folder).
AB_TAG=fuzz
source "$ROOT/scripts/setup.sh"
set +e  # setup.sh sets -e; this script checks each step itself
BUILD_DIR="${FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
if ! { ab_install run && ab_apt_install clang libclang-rt-dev libomp-dev; }; then
  echo "fuzz: SKIPPED: could not install the build dependencies or clang (no package registry?); nothing was fuzzed" >&2
  exit 0
fi
if ! command -v clang++ >/dev/null 2>&1; then
  echo "fuzz: SKIPPED: clang++ not found after installing clang; nothing was fuzzed" >&2
  exit 0
fi

launcher=()
if command -v ccache >/dev/null 2>&1 && [ "${ARCH_BENCH_CCACHE:-on}" != off ]; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # Paths relative to the tree, and (-g) the build folder's path left out of the hash: another
  # clone's fuzz build hits the same cache.
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$ROOT}" CCACHE_NOHASHDIR=1
fi
t0="$(date +%s.%N)"
# -O1 -g: fast enough to fuzz, quick to build, and stack traces that point at lines.
cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" -DARCH_BENCH_FUZZ=ON -DARCH_BENCH_TESTS=OFF -DARCH_BENCH_MICRO=OFF \
  -DARCH_BENCH_CUDA=OFF -DARCH_BENCH_NATIVE=OFF "${launcher[@]}" ${CMAKE_ARGS:-} >&2 || { echo "fuzz: configure failed" >&2; exit 1; }
# shellcheck disable=SC2086
cmake --build "$BUILD_DIR" -j "$JOBS" --target $TARGETS >&2 || { echo "fuzz: build failed" >&2; exit 1; }
echo "fuzz: build $(ab_elapsed "$t0") s" >&2

export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
mkdir -p "$BUILD_DIR/artifacts" "$BUILD_DIR/work"
# One target: replay, then fuzz; the outcome in $BUILD_DIR/<target>.result ("ok ..." or "failed ...").
fuzz_one() {
  local target="$1" name="${1#fuzz_}" seeds work log result runs
  seeds="$ROOT/tests/fuzz/corpus/$name"
  work="$BUILD_DIR/work/$name"
  log="$BUILD_DIR/$target.log"
  result="$BUILD_DIR/$target.result"
  mkdir -p "$work"
  local common=(-timeout=20 -rss_limit_mb=4096 -artifact_prefix="$BUILD_DIR/artifacts/$target-" -print_final_stats=1)
  # 1. Replay: every committed input once, the regression inputs of issue 8 among them.
  if ! "$BUILD_DIR/$target" "${common[@]}" -runs=0 "$seeds" >"$log.replay" 2>&1; then
    { echo "fuzz: $target CRASHED replaying tests/fuzz/corpus/$name:"; tail -40 "$log.replay"; } >&2
    echo "failed $target (replay)" > "$result"
    return
  fi
  # 2. Fuzz: new inputs go to the working corpus in the build folder, never to tests/.
  if [ "$SECONDS_PER_TARGET" -gt 0 ]; then
    if ! "$BUILD_DIR/$target" "${common[@]}" -max_total_time="$SECONDS_PER_TARGET" "$work" "$seeds" \
        >"$log" 2>&1; then
      { echo "fuzz: $target CRASHED; see $log and build-fuzz/artifacts/$target-*"; tail -60 "$log"; } >&2
      echo "failed $target" > "$result"
      return
    fi
    runs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)"
    echo "ok $target: ${runs:-?} executions in ${SECONDS_PER_TARGET}s, corpus $(ls "$work" | wc -l) + $(ls "$seeds" | wc -l) seeds, no crash" > "$result"
  else
    echo "ok $target: corpus replayed, no crash" > "$result"
  fi
}

FUZZ_JOBS="${FUZZ_JOBS:-$(nproc)}"
t0="$(date +%s.%N)"
running=0
for target in $TARGETS; do
  rm -f "$BUILD_DIR/$target.result"
  if [ "$running" -ge "$FUZZ_JOBS" ]; then wait -n; running=$((running - 1)); fi
  fuzz_one "$target" &
  running=$((running + 1))
done
wait
failed=()
summary=()
for target in $TARGETS; do
  line="$(cat "$BUILD_DIR/$target.result" 2>/dev/null || echo "failed $target (no result)")"
  case "$line" in ok\ *) summary+=("${line#ok }") ;; *) failed+=("${line#failed }") ;; esac
done
echo "fuzz: replay and fuzzing $(ab_elapsed "$t0") s, $FUZZ_JOBS targets at a time" >&2
for line in "${summary[@]}"; do echo "fuzz: $line"; done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: FAILED: ${failed[*]}" >&2
  echo "fuzz: replay a crash with: build-fuzz/<target> build-fuzz/artifacts/<target>-crash-<hash>" >&2
  exit 1
fi
echo "fuzz: all targets clean"
