#!/usr/bin/env bash
# Shared set-up of the scripts that build arch-bench. Sourced (scripts/run.sh, scripts/test.sh,
# scripts/ci-checks.sh, ...), it defines the steps below as functions; run on its own,
#   BUILD_DIR=build bash scripts/setup.sh
# it installs what is missing, then configures and builds everything in $BUILD_DIR (default build/),
# as scripts/test.sh does, without running the tests.
#
#   ab_install [KIND]     the Debian packages arch-bench builds with (apt-get, when missing), ccache
#                         among them (KIND run: not GoogleTest and Google Benchmark), and valijson's
#                         headers (below)
#   ab_configure KIND     cmake -G Ninja, Release. KIND "run": arch-bench only (no tests, micro
#                         benchmarks or fuzzers), CUDA only for the GPU that is present; KIND "all":
#                         every target, CUDA whenever nvcc is found (the architectures CMakeLists.txt
#                         names unless CUDA_ARCHS says otherwise)
#   ab_build [TARGET...]  cmake --build, all targets when none is named
#   ab_phase NAME CMD...  runs CMD and prints "<script>: NAME N s" on stderr
#
# Environment: BUILD_DIR; JOBS (default nproc); CMAKE_ARGS (more cmake arguments);
#   ARCH_BENCH_CUDA=auto|on|off  auto (default): KIND run compiles CUDA only when a GPU answers
#                         nvidia-smi, KIND all whenever nvcc is found; on: CUDA whenever nvcc is found;
#                         off: never;
#   CUDA_ARCHS=90 (or "80-real;90")  the CUDA architectures (implies CUDA where nvcc is found);
#   ARCH_BENCH_CCACHE=off builds without ccache (on by default when ccache is installed);
#   AB_QUIET=1            configure and build output go to $BUILD_DIR/{configure,build}.log (shown on
#                         failure) instead of the terminal (scripts/run.sh sets it).
set -euo pipefail

AB_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
AB_TAG="${AB_TAG:-setup}"
AB_USER_BUILD_DIR="${BUILD_DIR:-}"
AB_INSTALLED=()
BUILD_DIR="${BUILD_DIR:-$AB_ROOT/build}"
JOBS="${JOBS:-$(nproc)}"
# What every build needs; then what the tests and arch-bench-micro add (not installed for KIND run).
AB_PACKAGES=(build-essential cmake ninja-build git ccache nlohmann-json3-dev libcli11-dev libfmt-dev nettle-dev)
AB_TEST_PACKAGES=(libbenchmark-dev googletest libgtest-dev)

# Seconds since T0 (date +%s.%N), one decimal.
ab_elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# ab_phase NAME CMD...: runs CMD, then prints "<tag>: NAME N s[ (detail)]", where the detail is what
# CMD left in AB_DETAIL. CMD runs under set -e (not in an || list, where bash would ignore it): a
# failure stops the script with CMD's own message.
ab_phase() {
  local name="$1" t0
  shift
  t0="$(date +%s.%N)"
  AB_DETAIL=""
  "$@"
  echo "$AB_TAG: $name $(ab_elapsed "$t0") s${AB_DETAIL:+ ($AB_DETAIL)}" >&2
}

# apt-get install of the named packages that are not installed yet; sudo when not root.
ab_apt_install() {
  local missing=() sudo="" installed
  # One dpkg-query for all (one a package is slow on a loaded machine).
  installed="$(dpkg-query -W -f='${Package} ${Status}\n' "$@" 2>/dev/null | awk '/install ok installed$/ { print $1 }' || true)"
  mapfile -t missing < <(printf '%s\n' "$@" | grep -vxF -f <(echo "$installed") || true)
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "$AB_TAG: installing ${missing[*]}" >&2
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  AB_INSTALLED+=("${missing[@]}")
}

ab_install() {
  AB_INSTALLED=()
  if [ "${1:-all}" = run ]; then ab_apt_install "${AB_PACKAGES[@]}"
  else ab_apt_install "${AB_PACKAGES[@]}" "${AB_TEST_PACKAGES[@]}"; fi
  # valijson is header-only, but Debian's libvalijson-dev depends on the headers of every JSON library
  # it has an adapter for (Qt5, Poco, MariaDB client, yaml-cpp, jsoncpp, picojson, RapidJSON): on a
  # fresh Debian 12 the build's packages are 269 with it and 95 without (203 MB vs 116 MB of .debs).
  # arch-bench uses its nlohmann adapter only, so the .deb alone (75 KB) is unpacked into a
  # build-local prefix, where CMakeLists.txt's find_path looks first.
  local prefix="$BUILD_DIR/_deps/valijson" sudo=""
  if [ ! -f "$prefix/usr/include/valijson/validator.hpp" ]; then
    mkdir -p "$prefix/debs"
    if ! (cd "$prefix/debs" && apt-get download -qq libvalijson-dev 2>/dev/null); then
      [ "$(id -u)" -ne 0 ] && sudo="sudo"
      $sudo apt-get update -qq
      (cd "$prefix/debs" && apt-get download -qq libvalijson-dev)
    fi
    dpkg-deb -x "$(ls "$prefix"/debs/libvalijson-dev_*.deb | head -1)" "$prefix"
    AB_INSTALLED+=(valijson-headers)
  fi
  if [ ${#AB_INSTALLED[@]} -gt 0 ]; then AB_DETAIL="installed ${AB_INSTALLED[*]}"; else AB_DETAIL="nothing missing"; fi
}

# The compute capabilities of the GPUs a driver answers for, as CMake architectures ("90", "80;90"),
# or nothing.
ab_gpu_archs() {
  command -v nvidia-smi >/dev/null 2>&1 || return 0
  timeout 20 nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null |
    tr -d ' .' | grep -E '^[0-9]+$' | sort -un | paste -sd';' || true
}

ab_find_nvcc() {
  # nvcc is optional: the CUDA language is enabled when it is found (on PATH or in /usr/local/cuda).
  if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
    export PATH="/usr/local/cuda/bin:$PATH"
  fi
  command -v nvcc >/dev/null 2>&1
}

# Fills AB_CMAKE_ARGS for KIND (run | all) and AB_CUDA_NOTE, the phrase the configure line prints.
ab_options() {
  local kind="$1" want="${ARCH_BENCH_CUDA:-auto}" archs="${CUDA_ARCHS:-}" gpu="" cuda=off
  want="$(echo "$want" | tr 'A-Z' 'a-z')"
  case "$want" in on|1|yes|true) want=on ;; off|0|no|false) want=off ;; *) want=auto ;; esac
  AB_CMAKE_ARGS=(-DCMAKE_BUILD_TYPE=Release)
  if [ "$kind" = run ]; then
    # The build's own kernel variant only: the portable ISA copies are for the tests.
    AB_CMAKE_ARGS+=(-DARCH_BENCH_TESTS=OFF -DARCH_BENCH_MICRO=OFF -DARCH_BENCH_FUZZ=OFF -DARCH_BENCH_ISA_VARIANTS=OFF)
  else
    AB_CMAKE_ARGS+=(-DARCH_BENCH_TESTS=ON -DARCH_BENCH_MICRO=ON -DARCH_BENCH_ISA_VARIANTS=ON)
  fi
  if [ "$want" != off ] && ab_find_nvcc; then
    if [ -n "$archs" ] || [ "$want" = on ] || [ "$kind" = all ]; then
      cuda=on
    else
      gpu="$(ab_gpu_archs)"
      [ -n "$gpu" ] && cuda=on && archs="$gpu"
    fi
    if [ "$cuda" = on ] && [ -z "$archs" ] && [ "$kind" = run ]; then
      gpu="$(ab_gpu_archs)"
      archs="$gpu"
    fi
  fi
  AB_CUDA="$cuda"
  if [ "$cuda" = on ]; then
    AB_CMAKE_ARGS+=(-DARCH_BENCH_CUDA=ON)
    if [ -n "$archs" ]; then
      AB_CMAKE_ARGS+=("-DCMAKE_CUDA_ARCHITECTURES=$archs")
      AB_CUDA_NOTE="CUDA for $archs${gpu:+ (the GPU present)}"
    else
      # Unset, so that CMakeLists.txt's default (the product's architectures) applies, not whatever
      # an earlier configure of this folder was given.
      AB_CMAKE_ARGS+=(-UCMAKE_CUDA_ARCHITECTURES)
      AB_CUDA_NOTE="CUDA for CMakeLists.txt's default architectures"
    fi
  else
    AB_CMAKE_ARGS+=(-DARCH_BENCH_CUDA=OFF -UCMAKE_CUDA_ARCHITECTURES)
    if [ "$want" = off ]; then AB_CUDA_NOTE="no CUDA (ARCH_BENCH_CUDA=off)"
    elif ! command -v nvcc >/dev/null 2>&1; then AB_CUDA_NOTE="no CUDA (no nvcc)"
    else AB_CUDA_NOTE="no CUDA (no GPU answers nvidia-smi; ARCH_BENCH_CUDA=on or CUDA_ARCHS=90 compiles it)"
    fi
  fi
  # ccache for every compiler the build uses (nvcc too), when installed. Paths under the source tree
  # are hashed relative to it (CCACHE_BASEDIR), so that another clone's build hits the same cache.
  local ccache_on=0
  case "$(echo "${ARCH_BENCH_CCACHE:-on}" | tr 'A-Z' 'a-z')" in off|0|no|false) ;; *)
    command -v ccache >/dev/null 2>&1 && ccache_on=1 ;; esac
  if [ "$ccache_on" = 1 ]; then
    export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$AB_ROOT}"
    AB_CMAKE_ARGS+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    if [ "$cuda" = on ]; then AB_CMAKE_ARGS+=(-DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
    else AB_CMAKE_ARGS+=(-UCMAKE_CUDA_COMPILER_LAUNCHER); fi
    AB_CUDA_NOTE="$AB_CUDA_NOTE, ccache"
  else
    AB_CMAKE_ARGS+=(-UCMAKE_CXX_COMPILER_LAUNCHER -UCMAKE_CUDA_COMPILER_LAUNCHER)
  fi
}

# Runs "$@", its output to the terminal, or to LOG when AB_QUIET=1 (then its tail on failure).
ab_logged() {
  local log="$1" status=0
  shift
  if [ "${AB_QUIET:-0}" = 1 ]; then
    "$@" > "$log" 2>&1 || status=$?
    if [ "$status" -ne 0 ]; then
      tail -40 "$log" >&2
      echo "$AB_TAG: FAILED ($status): $*; the whole output is in $log" >&2
      return "$status"
    fi
  else
    "$@" >&2
  fi
}

ab_configure() {
  ab_options "${1:-all}"
  mkdir -p "$BUILD_DIR"
  # softmax_kv's cuDNN variant compiles against cudnn-frontend's headers, unpacked into the build
  # folder before cmake looks for them; without them (no network, no pip) the build goes on without it.
  if [ "$AB_CUDA" = on ] && ! bash "$AB_ROOT/scripts/fetch-cudnn-frontend.sh" "$BUILD_DIR"; then
    AB_CUDA_NOTE="$AB_CUDA_NOTE, no cuDNN variant (fetch-cudnn-frontend.sh failed)"
  fi
  # shellcheck disable=SC2086
  ab_logged "$BUILD_DIR/configure.log" cmake -S "$AB_ROOT" -B "$BUILD_DIR" -G Ninja "${AB_CMAKE_ARGS[@]}" ${CMAKE_ARGS:-}
  AB_DETAIL="$BUILD_DIR; $AB_CUDA_NOTE"
}

ab_build() {
  local targets=() target
  for target in "$@"; do targets+=(--target "$target"); done
  ab_logged "$BUILD_DIR/build.log" cmake --build "$BUILD_DIR" -j "$JOBS" "${targets[@]}"
  AB_DETAIL="${*:-all targets}, $JOBS jobs"
}

# Sets AB_BIN to an arch-bench to run, for the scripts that only read its output (crosscheck.sh,
# results-summary.sh, plugin-check.sh): $BUILD_DIR's when BUILD_DIR is set (built there when missing,
# as test.sh's build); else build/'s (test.sh's) when there is one; else build/run's (run.sh's),
# installed, configured and built first when missing.
ab_arch_bench() {
  if [ -n "${AB_USER_BUILD_DIR:-}" ]; then
    if [ ! -x "$BUILD_DIR/arch-bench" ]; then
      ab_phase install ab_install
      [ -f "$BUILD_DIR/CMakeCache.txt" ] || ab_phase configure ab_configure all
      ab_phase build ab_build arch-bench
    fi
  elif [ -x "$AB_ROOT/build/arch-bench" ]; then
    BUILD_DIR="$AB_ROOT/build"
  else
    BUILD_DIR="$AB_ROOT/build/run"
    if [ ! -x "$BUILD_DIR/arch-bench" ]; then
      ab_phase install ab_install run
      ab_phase configure ab_configure run
      ab_phase build ab_build arch-bench
    fi
  fi
  AB_BIN="$BUILD_DIR/arch-bench"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  ab_phase install ab_install
  ab_phase configure ab_configure all
  ab_phase build ab_build
fi
