#!/usr/bin/env bash
# Unpacks NVIDIA's header-only cudnn-frontend (the include/ folder of its PyPI wheel,
# nvidia-cudnn-frontend) into BUILD_DIR/_deps/cudnn-frontend, where cmake/Cudnn.cmake looks for it:
# softmax_kv's cuDNN fused-attention variant compiles against it. Never vendored into git, never
# fetched by the build or at run time; scripts/setup.sh calls this for a CUDA configure.
#
#   scripts/fetch-cudnn-frontend.sh [BUILD_DIR]     (default: build/)
#
# Environment: CUDNN_FRONTEND_VERSION (default 1.32.0, the version this code was compiled against;
# empty: the newest), ARCH_BENCH_PIP (default "python3 -m pip").
# Exit 0 when the headers are in place (already, or now); 1 when they could not be fetched, with the
# reason on stderr and nothing written: the build then goes on without the variant, and `arch-bench
# list` says why it is unavailable.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${1:-${BUILD_DIR:-$ROOT/build}}"
PREFIX="$BUILD_DIR/_deps/cudnn-frontend"
VERSION="${CUDNN_FRONTEND_VERSION-1.32.0}"
PIP="${ARCH_BENCH_PIP:-python3 -m pip}"
TAG="fetch-cudnn-frontend"

if [ -f "$PREFIX/include/cudnn_frontend.h" ]; then
  echo "$TAG: headers already in $PREFIX/include" >&2
  exit 0
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
spec="nvidia-cudnn-frontend${VERSION:+==$VERSION}"
# shellcheck disable=SC2086
if ! $PIP download --quiet --no-deps --disable-pip-version-check -d "$WORK/wheel" "$spec" > "$WORK/pip.log" 2>&1; then
  echo "$TAG: could not download $spec with '$PIP download' ($(tail -1 "$WORK/pip.log" 2>/dev/null || true));" \
       "softmax_kv's cuDNN variant will not be built (the hand-written kernels run)" >&2
  exit 1
fi
wheel="$(ls "$WORK"/wheel/*.whl 2>/dev/null | head -1 || true)"
if [ -z "$wheel" ]; then
  echo "$TAG: '$PIP download' left no wheel for $spec; softmax_kv's cuDNN variant will not be built" >&2
  exit 1
fi
# Only include/ (the wheel's Python module and its compiled extension are not used). Unpacked beside
# the prefix and moved into place, so that a failure leaves nothing half-written.
if ! python3 - "$wheel" "$WORK/unpacked" <<'PY'
import sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as archive:
    names = [n for n in archive.namelist() if n.startswith("include/") and ".." not in n]
    if "include/cudnn_frontend.h" not in names:
        sys.exit("no include/cudnn_frontend.h in " + wheel)
    for name in names:
        archive.extract(name, dest)
PY
then
  echo "$TAG: $wheel has no usable include/ folder; softmax_kv's cuDNN variant will not be built" >&2
  exit 1
fi
mkdir -p "$(dirname "$PREFIX")"
rm -rf "$PREFIX"
mv "$WORK/unpacked" "$PREFIX"
echo "$TAG: $(basename "$wheel") headers in $PREFIX/include" >&2
