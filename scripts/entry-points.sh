#!/usr/bin/env bash
# Proves that the documented entry points work from a fresh clone, each on its own, as a newcomer
# runs them (no BUILD_DIR, no CUDA_ARCHS): `git clone` of this checkout (its committed state) into a
# temporary folder, then there
#   1. scripts/run.sh with a small, quick matrix: installs, builds arch-bench alone in build/run
#      (CPU only without a GPU), runs; the report validates;
#   2. scripts/results-summary.sh, scripts/plugin-check.sh and scripts/crosscheck.sh (one mechanism)
#      with no BUILD_DIR: they find run.sh's build/run;
#   3. scripts/cli-reference.sh --check against docs/cli-reference.md;
#   4. scripts/collect-debs.sh (downloads the build dependencies' .deb files);
#   5. scripts/device-check.sh, device-peers.py and the Slurm scripts parse (device-check needs a GPU;
#      ci-checks runs its plan mode).
# scripts/test.sh, ci-checks.sh and fuzz.sh are CI's own steps (.ci/run). The builds go through
# ccache as everywhere (paths relative to the clone), so a second run compiles nothing.
#   scripts/entry-points.sh            # KEEP=1 keeps the clone and prints where
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
AB_TAG=entry-points
source "$ROOT/scripts/setup.sh"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/arch-bench-entry-points.XXXXXX")"
[ "${KEEP:-0}" = 1 ] && echo "entry-points: the clone stays in $WORK/clone" >&2 || trap 'rm -rf "$WORK"' EXIT
# The newcomer's environment: none of the build settings a caller (CI) may have exported.
unset BUILD_DIR CUDA_ARCHS ARCH_BENCH_CUDA CMAKE_ARGS CCACHE_BASEDIR AB_TAG AB_QUIET AB_USER_BUILD_DIR
T0="$(date +%s.%N)"
git clone --quiet "$ROOT" "$WORK/clone"
CLONE="$WORK/clone"
cd "$CLONE"

echo "== entry-points: scripts/run.sh from a fresh clone"
bash scripts/run.sh --sequence-lengths 256 --repeats 3 --warmup 1 --run-label entry-points \
  --results-dir "$WORK/out" --quiet
build/run/arch-bench validate "$WORK"/out/*_entry-points.json

echo "== entry-points: scripts/results-summary.sh (build/run's arch-bench)"
bash scripts/results-summary.sh
git diff --quiet -- results/README.md || echo "entry-points: note: results/README.md is not current (scripts/results-summary.sh changes it)"

echo "== entry-points: scripts/plugin-check.sh (build/run installed)"
bash scripts/plugin-check.sh

echo "== entry-points: scripts/crosscheck.sh --only linear_attention"
bash scripts/crosscheck.sh --shapes ci --only linear_attention

if [ -f docs/cli-reference.md ] && [ -x scripts/cli-reference.sh ]; then
  echo "== entry-points: scripts/cli-reference.sh --check"
  bash scripts/cli-reference.sh --check build/run docs/cli-reference.md
fi

echo "== entry-points: scripts/collect-debs.sh"
bash scripts/collect-debs.sh > "$WORK/debs.txt"
echo "$(grep -c '\.deb$' "$WORK/debs.txt") .deb files in .device/debs"

echo "== entry-points: the scripts that need a GPU or a cluster parse"
for script in scripts/device-check.sh scripts/device-bundle.sh scripts/slurm/*.sh; do bash -n "$script"; done
# The peers' timer imports torch, which a CPU machine may lack: it must at least compile.
python3 -m py_compile scripts/device-peers.py scripts/gpu-table.py

echo "entry-points: all passed in $(ab_elapsed "$T0") s"
