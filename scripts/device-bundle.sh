#!/usr/bin/env bash
# Prepares the binaries a lent GPU machine runs, so that scripts/device-check.sh spends its device
# minutes measuring, not compiling (issue 39: built here and carried, the 2026-12-04 H200 check took
# 5.4 minutes with the machine's start; a build there costs minutes of the 15 a session gets):
#   scripts/test.sh                  # here: builds build/ with CUDA (80-real + 90: sm_90 SASS included)
#   scripts/device-bundle.sh         # -> .device/prebuilt: arch-bench, arch_bench_gpu_tests, lib/
# then run scripts/device-check.sh on the GPU machine with .device/prebuilt carried (`run`'s carry).
# lib/ holds the shared libraries the binaries need beyond glibc and the compiler's C++ runtime
# (libfmt, libnettle, libgomp, libcudart), which the GPU machine, without a package registry, may lack.
# python/ holds flash-linear-attention (fla-core) and einops, the peers scripts/device-peers.py times
# beside arch-bench, unpacked from the wheels scripts/crosscheck.sh pins and keeps in its cache (the
# GPU machine has PyTorch and Triton but cannot install packages); without that cache the bundle has
# none and the peers are PyTorch's SDPA alone.
# Exit 2 when build/ has no CUDA binaries.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${BUILD_DIR:-$ROOT/build}"
OUT="$ROOT/.device/prebuilt"
BINARIES=("$BUILD/arch-bench" "$BUILD/tests/arch_bench_gpu_tests")
for binary in "${BINARIES[@]}"; do
  [ -x "$binary" ] || { echo "device-bundle: $binary is missing: run scripts/test.sh (with nvcc) first" >&2; exit 2; }
done
ldd "$BUILD/arch-bench" | grep -q libcudart ||
  { echo "device-bundle: $BUILD/arch-bench has no CUDA backend (built without nvcc?)" >&2; exit 2; }
rm -rf "$OUT"
mkdir -p "$OUT/lib"
cp "${BINARIES[@]}" "$OUT/"
# The libraries ldd resolves for either binary, less the ones every Linux machine has in step with its
# own glibc and compiler (copying those would break them).
ldd "${BINARIES[@]}" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u |
  grep -E '/lib(fmt|nettle|gomp|cudart)\.so' | while read -r library; do cp -L "$library" "$OUT/lib/"; done
PEER_PACKAGES="${ARCH_BENCH_CROSSCHECK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/arch-bench/crosscheck}/pkgs"
if [ -d "$PEER_PACKAGES/fla" ] && [ -d "$PEER_PACKAGES/einops" ]; then
  mkdir -p "$OUT/python"
  cp -r "$PEER_PACKAGES/fla" "$PEER_PACKAGES/einops" "$PEER_PACKAGES"/fla_core-*.dist-info "$OUT/python/"
  find "$OUT/python" -name __pycache__ -prune -exec rm -rf {} +
else
  echo "device-bundle: no fla-core in $PEER_PACKAGES (scripts/crosscheck.sh fetches it): the peers will be SDPA only" >&2
fi
git -C "$ROOT" rev-parse HEAD > "$OUT/commit" 2>/dev/null || echo unknown > "$OUT/commit"
echo "device-bundle: $(du -sh "$OUT" | cut -f1) in $OUT (commit $(cut -c1-12 "$OUT/commit")):"
ls -la "$OUT" "$OUT/lib" | awk 'NF > 5 { print "  " $5, $NF }'
