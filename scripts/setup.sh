#!/usr/bin/env bash
# Shared set-up for scripts/run.sh and scripts/test.sh: installs the Debian packages arch-bench
# builds with (when missing), then configures and builds a Release build in $BUILD_DIR.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
PACKAGES=(build-essential cmake ninja-build git nlohmann-json3-dev libcli11-dev libfmt-dev libbenchmark-dev
          googletest libgtest-dev nettle-dev)

missing=()
for package in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# valijson is header-only, but Debian's libvalijson-dev depends on the headers of every JSON library
# it has an adapter for (Qt5, Poco, MariaDB client, yaml-cpp, jsoncpp, picojson, RapidJSON): on a
# fresh Debian 12 the build's packages are 269 with it and 95 without (203 MB vs 116 MB of .debs).
# arch-bench uses its nlohmann adapter only, so the .deb alone (75 KB) is unpacked into a
# build-local prefix, where CMakeLists.txt's find_path looks first.
VALIJSON_PREFIX="$BUILD_DIR/_deps/valijson"
if [ ! -f "$VALIJSON_PREFIX/usr/include/valijson/validator.hpp" ]; then
  mkdir -p "$VALIJSON_PREFIX/debs"
  if ! (cd "$VALIJSON_PREFIX/debs" && apt-get download -qq libvalijson-dev 2>/dev/null); then
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    (cd "$VALIJSON_PREFIX/debs" && apt-get download -qq libvalijson-dev)
  fi
  dpkg-deb -x "$(ls "$VALIJSON_PREFIX"/debs/libvalijson-dev_*.deb | head -1)" "$VALIJSON_PREFIX"
  echo "setup: valijson headers unpacked into $VALIJSON_PREFIX" >&2
fi

# nvcc is optional: the CUDA language is enabled when it is found (on PATH or in /usr/local/cuda).
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi

JOBS="${JOBS:-$(nproc)}"
cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release ${CMAKE_ARGS:-} >&2
cmake --build "$BUILD_DIR" -j "$JOBS" >&2
