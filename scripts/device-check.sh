#!/usr/bin/env bash
# The one prepared script for a GPU machine (DESIGN.md, "GPU checks"):
#   scripts/device-check.sh OUT_DIR
# builds with CUDA for sm_90, runs the test suite, lists devices, runs preflight for both profiles
# and each mode's default matrix, and leaves the JSON results and a log in OUT_DIR. Build
# dependencies come from .device/debs (scripts/collect-debs.sh), unpacked into a prefix, because the
# GPU machine has no package registry.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:?usage: scripts/device-check.sh OUT_DIR}"
mkdir -p "$OUT"
LOG="$OUT/device-check.log"
exec > >(tee -a "$LOG") 2>&1
LABEL="${RUN_LABEL:-h200-$(date -u +%Y%m%d)}"
BUILD="$ROOT/build-device"
PREFIX="$ROOT/.device/prefix"

step() { echo; echo "== $(date -u +%H:%M:%S) $*"; }

step "machine"
nvidia-smi || true
command -v nvcc || export PATH="/usr/local/cuda/bin:$PATH"
nvcc --version | tail -1; cmake --version | head -1

if [ -d "$ROOT/.device/debs" ]; then
  step "unpacking $(ls "$ROOT/.device/debs" | wc -l) .deb files into $PREFIX"
  mkdir -p "$PREFIX"
  for deb in "$ROOT"/.device/debs/*.deb; do dpkg-deb -x "$deb" "$PREFIX"; done
  export CMAKE_PREFIX_PATH="$PREFIX/usr:${CMAKE_PREFIX_PATH:-}"
  export CPATH="$PREFIX/usr/include:${CPATH:-}"
  export LIBRARY_PATH="$PREFIX/usr/lib/x86_64-linux-gnu:${LIBRARY_PATH:-}"
  export LD_LIBRARY_PATH="$PREFIX/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
  # googletest ships sources only in some layouts; libgtest-dev carries the built libraries.
fi

step "configure + build (CUDA sm_90)"
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DVALIJSON_INCLUDE_DIR="$PREFIX/usr/include" || exit 1
cmake --build "$BUILD" -j "$(nproc)" || exit 1

step "tests"
(cd "$BUILD" && ctest --output-on-failure -j "$(nproc)") | tail -20

step "devices and backends"
"$BUILD/arch-bench" list

cd "$ROOT"
for profile in ARCH-CUDA-MECHANISM ARCH-CPU-MECHANISM; do
  step "preflight $profile"
  "$BUILD/arch-bench" preflight --profile "$profile" --json "$OUT/preflight_${profile}_${LABEL}.json"
done

for mode in linear_recurrence mamba_scan performer; do
  step "run --mode $mode (default matrix)"
  "$BUILD/arch-bench" run --mode "$mode" --run-label "$LABEL" --results-dir "$OUT" --device auto
done

step "validate"
for file in "$OUT"/*.json; do
  case "$(basename "$file")" in
    preflight_*) "$BUILD/arch-bench" validate "$file" --schema preflight ;;
    *) "$BUILD/arch-bench" validate "$file" --schema result ;;
  esac
done
echo "device-check: done; results in $OUT"
