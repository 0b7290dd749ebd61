#!/usr/bin/env bash
# Sets up and runs scripts/crosscheck.py: every mechanism against its published implementation.
#  1. Debian packages: python3-numpy, python3-torch (and python3-pip, which downloads the rest, with
#     python3-packaging and python3-setuptools, which pip's metadata step of mamba-ssm's source
#     distribution imports: without them a fresh machine fails there); when
#     Debian's torch cannot be imported, PyPI's torch wheel is installed into a virtual environment
#     in the cache folder instead.
#  2. The published packages, pinned, from PyPI (`pip download --no-deps`, at set-up time only),
#     unpacked into $CACHE/pkgs. Nothing is installed from them and nothing is built: crosscheck.py
#     loads only their pure-PyTorch reference functions by file path.
#  3. crosscheck.py with the arch-bench of $BUILD_DIR (default build/, else build/run/; built first,
#     as scripts/run.sh builds it, when there is none); arguments go to it (--shapes ci|full,
#     --only MECHANISMS).
# The cache folder is $ARCH_BENCH_CROSSCHECK_CACHE, else ${XDG_CACHE_HOME:-~/.cache}/arch-bench/crosscheck.
# The seeds (reference code outside the repository) are $ARCH_BENCH_SEEDS, else ../shared/seeds beside
# the tree, else beside the tree a clone was made from (git's origin, when it is a local folder).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
AB_TAG=crosscheck
AB_QUIET=1
source "$ROOT/scripts/setup.sh"
ab_arch_bench
BIN="$AB_BIN"
CACHE="${ARCH_BENCH_CROSSCHECK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/arch-bench/crosscheck}"
PY=/usr/bin/python3
# The versions whose reference functions docs/user-guide.md's mapping table describes.
PINS=(performer-pytorch==1.1.4 einops==0.8.2 fla-core==0.6.0)
MAMBA_PIN=mamba-ssm==2.3.2.post1

ab_apt_install python3-numpy python3-torch python3-pip python3-packaging python3-setuptools
mkdir -p "$CACHE"
if ! "$PY" -c "import numpy, torch" 2>/dev/null; then
  echo "crosscheck: Debian's torch does not import; using PyPI's torch in $CACHE/venv" >&2
  [ -x "$CACHE/venv/bin/python" ] || "$PY" -m venv --system-site-packages "$CACHE/venv"
  "$CACHE/venv/bin/python" -c "import torch" 2>/dev/null || "$CACHE/venv/bin/pip" install -q torch numpy >&2
  PY="$CACHE/venv/bin/python"
fi

stamp="$CACHE/pkgs/.complete-$(echo "${PINS[*]} $MAMBA_PIN" | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "crosscheck: downloading ${PINS[*]} $MAMBA_PIN into $CACHE" >&2
  rm -rf "$CACHE/download" "$CACHE/pkgs"
  mkdir -p "$CACHE/download" "$CACHE/pkgs"
  "$PY" -m pip download -q --no-deps --only-binary :all: -d "$CACHE/download" "${PINS[@]}" >&2
  # mamba-ssm is a source distribution only; MAMBA_SKIP_CUDA_BUILD keeps pip's metadata step from
  # looking for nvcc (nothing is built: only ops/selective_scan_interface.py is read).
  MAMBA_SKIP_CUDA_BUILD=TRUE "$PY" -m pip download -q --no-deps --no-build-isolation -d "$CACHE/download" \
    "$MAMBA_PIN" >&2
  for wheel in "$CACHE"/download/*.whl; do "$PY" -m zipfile -e "$wheel" "$CACHE/pkgs"; done
  tar -xzf "$CACHE"/download/mamba_ssm-*.tar.gz -C "$CACHE/download"
  cp -r "$CACHE"/download/mamba_ssm-*/mamba_ssm "$CACHE/pkgs/"
  touch "$stamp"
fi

SEEDS="${ARCH_BENCH_SEEDS:-$ROOT/../shared/seeds}"
if [ -z "${ARCH_BENCH_SEEDS:-}" ] && [ ! -d "$SEEDS" ]; then
  origin="$(git -C "$ROOT" remote get-url origin 2>/dev/null || true)"
  origin="${origin#file://}"
  [ -n "$origin" ] && [ -d "$origin/../shared/seeds" ] && SEEDS="$(cd "$origin/../shared/seeds" && pwd)"
fi
[ -d "$SEEDS" ] || echo "crosscheck: no seeds folder ($SEEDS); set ARCH_BENCH_SEEDS" >&2
exec "$PY" "$ROOT/scripts/crosscheck.py" --bin "$BIN" --cache "$CACHE" --seeds "$SEEDS" "$@"
