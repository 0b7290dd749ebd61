#!/usr/bin/env bash
# Fuzzes every reader of untrusted input (README "Fuzzing"): installs clang and libFuzzer when
# missing, builds the libFuzzer targets of cmake/Fuzzing.cmake (address + undefined sanitizers) in
# build-fuzz/, replays the committed corpus (tests/fuzz/corpus/<target>/, which holds the inputs that
# once crashed arch-bench), then fuzzes each target for SECONDS (default 30). Exit 1 when any input
# crashes, hangs or leaks; the input is saved as build-fuzz/artifacts/<target>-crash-*.
#   scripts/fuzz.sh [SECONDS]        e.g. scripts/fuzz.sh 600 for a longer session
#   TARGETS="fuzz_npy" scripts/fuzz.sh 60
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

# clang, its libFuzzer/sanitizer runtimes and OpenMP for clang, plus what every arch-bench build needs.
PACKAGES=(clang libclang-rt-dev libomp-dev cmake ninja-build nlohmann-json3-dev libcli11-dev libfmt-dev
          libvalijson-dev)
missing=()
for package in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "fuzz: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  if ! { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
         --no-install-recommends "${missing[@]}" >&2; }; then
    echo "fuzz: SKIPPED: could not install ${missing[*]} (no package registry?); nothing was fuzzed" >&2
    exit 0
  fi
fi
if ! command -v clang++ >/dev/null 2>&1; then
  echo "fuzz: SKIPPED: clang++ not found after installing clang; nothing was fuzzed" >&2
  exit 0
fi

launcher=()
command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# -O1 -g: fast enough to fuzz, quick to build, and stack traces that point at lines.
cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" -DARCH_BENCH_FUZZ=ON -DARCH_BENCH_TESTS=OFF -DARCH_BENCH_MICRO=OFF \
  -DARCH_BENCH_CUDA=OFF -DARCH_BENCH_NATIVE=OFF "${launcher[@]}" >&2 || { echo "fuzz: configure failed" >&2; exit 1; }
# shellcheck disable=SC2086
cmake --build "$BUILD_DIR" -j "$JOBS" --target $TARGETS >&2 || { echo "fuzz: build failed" >&2; exit 1; }

export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
mkdir -p "$BUILD_DIR/artifacts" "$BUILD_DIR/work"
failed=()
summary=()
for target in $TARGETS; do
  name="${target#fuzz_}"
  seeds="$ROOT/tests/fuzz/corpus/$name"
  work="$BUILD_DIR/work/$name"
  log="$BUILD_DIR/$target.log"
  mkdir -p "$work"
  common=(-timeout=20 -rss_limit_mb=4096 -artifact_prefix="$BUILD_DIR/artifacts/$target-" -print_final_stats=1)
  # 1. Replay: every committed input once, the regression inputs of issue 8 among them.
  if ! "$BUILD_DIR/$target" "${common[@]}" -runs=0 "$seeds" >"$log.replay" 2>&1; then
    echo "fuzz: $target CRASHED replaying tests/fuzz/corpus/$name:" >&2
    tail -40 "$log.replay" >&2
    failed+=("$target (replay)")
    continue
  fi
  # 2. Fuzz: new inputs go to the working corpus in the build folder, never to tests/.
  if [ "$SECONDS_PER_TARGET" -gt 0 ]; then
    if ! "$BUILD_DIR/$target" "${common[@]}" -max_total_time="$SECONDS_PER_TARGET" "$work" "$seeds" \
        >"$log" 2>&1; then
      echo "fuzz: $target CRASHED; see $log and build-fuzz/artifacts/$target-*" >&2
      tail -60 "$log" >&2
      failed+=("$target")
      continue
    fi
    runs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)"
    summary+=("$target: ${runs:-?} executions in ${SECONDS_PER_TARGET}s, corpus $(ls "$work" | wc -l) + $(ls "$seeds" | wc -l) seeds, no crash")
  else
    summary+=("$target: corpus replayed, no crash")
  fi
done

for line in "${summary[@]}"; do echo "fuzz: $line"; done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: FAILED: ${failed[*]}" >&2
  echo "fuzz: replay a crash with: build-fuzz/<target> build-fuzz/artifacts/<target>-crash-<hash>" >&2
  exit 1
fi
echo "fuzz: all targets clean"
