#!/usr/bin/env bash
# The proof that a mechanism is one folder: copies the tracked files (git ls-files) to a scratch
# folder, adds the template tests/new_mechanism/ as mechanisms/causal_mean/ (no other file is edited),
# builds arch-bench there (no tests, no micro benchmarks, no CUDA; ccache when installed), and runs the
# new mechanism through
#   1. `run --mode landscape` with a tiny workload: causal_mean must be among the default candidates;
#   2. `run` with the mechanism's own option (--mean-power 2), recorded in its rows;
#   3. `conformance --generate`, then `conformance` on those inputs: the manifest must pass;
#   4. `list`: causal_mean is listed, after the built-ins.
# Every step must succeed and causal_mean's rows must be in each report. Exit 0 when all hold.
#
#   scripts/new-mechanism-check.sh [SCRATCH]
# SCRATCH (default: a fresh folder under ${TMPDIR:-/tmp}) is removed at the end unless KEEP=1. The
# ctest `new_mechanism_check` (label `new_mechanism`) runs it with SCRATCH under the build folder,
# inside the checkout that CCACHE_BASEDIR names (scripts/setup.sh): the scratch build's paths are then
# the same relative ones in every clone, and a second run takes every unchanged object from the cache.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOY=causal_mean
TEMPLATE="$ROOT/tests/new_mechanism"

if [ $# -ge 1 ]; then
  SCRATCH="$1"
  rm -rf "$SCRATCH"
  mkdir -p "$SCRATCH"
else
  SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/arch-bench-new-mechanism.XXXXXX")"
fi
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$SCRATCH"' EXIT
# The same layout whatever the checkout is called (the build folder inside the source, as build/ is):
# ccache hashes paths relative to CCACHE_BASEDIR, so every clone's scratch build hits one cache.
SRC="$SCRATCH/src"
BUILD="$SRC/build"
OUT="$SCRATCH/out"
mkdir -p "$SRC" "$BUILD" "$OUT"
step() { echo "new-mechanism-check: $*" >&2; }
fail() { echo "new-mechanism-check: FAILED: $*" >&2; exit 1; }

step "copying the tracked files and the template to $SRC/mechanisms/$TOY"
git -C "$ROOT" ls-files -z | (cd "$ROOT" && xargs -0 cp --parents -t "$SRC" 2>/dev/null || true)
[ -f "$SRC/CMakeLists.txt" ] || fail "the tree was not copied (is $ROOT a git checkout?)"
[ ! -e "$SRC/mechanisms/$TOY" ] || fail "mechanisms/$TOY already exists in the tree"
mkdir -p "$SRC/mechanisms/$TOY"
cp "$TEMPLATE"/*.cpp "$TEMPLATE"/*.hpp "$SRC/mechanisms/$TOY/"

step "configuring and building arch-bench"
configure=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DARCH_BENCH_TESTS=OFF -DARCH_BENCH_MICRO=OFF -DARCH_BENCH_CUDA=OFF)
command -v ccache >/dev/null && configure+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# Where the enclosing build found its dependencies (the ctest passes them), else CMake looks itself.
for variable in VALIJSON_INCLUDE_DIR NETTLE_INCLUDE_DIR NETTLE_LIBRARY; do
  [ -n "${!variable:-}" ] && configure+=("-D$variable=${!variable}")
done
start=$SECONDS
cmake -S "$SRC" -B "$BUILD" "${configure[@]}" >"$OUT/configure.log" 2>&1 || { tail -20 "$OUT/configure.log"; fail "configure"; }
cmake --build "$BUILD" --target arch-bench -j "${JOBS:-2}" >"$OUT/build.log" 2>&1 || { grep -m 20 -B2 -A8 "error" "$OUT/build.log"; fail "build"; }
step "built in $((SECONDS - start)) s"
BIN="$BUILD/arch-bench"

# The rows of `mechanism` in a report, with status ok and within tolerance; prints their count.
rows_ok() {  # report mechanism [option key=value]
  python3 - "$@" <<'EOF'
import json, sys
report, mechanism = sys.argv[1], sys.argv[2]
rows = [r for r in json.load(open(report))["metrics"]["rows"] if r["mechanism"] == mechanism]
bad = [r for r in rows if r["status"] != "ok" or not r["within_tolerance"]]
if len(sys.argv) > 3:
    key, value = sys.argv[3].split("=")
    bad += [r for r in rows if str((r.get("options") or {}).get(key)) != value]
if not rows or bad:
    sys.exit(f"{report}: {len(rows)} rows of {mechanism}, {len(bad)} not ok: {bad[:1]}")
print(len(rows))
EOF
}

step "list"
"$BIN" list >"$OUT/list.txt" || fail "arch-bench list"
grep -q "$TOY" "$OUT/list.txt" || fail "arch-bench list does not name $TOY"

tiny=(--sequence-lengths 16,64 --phase decode,prefill --heads 2 --head-dim 16 --warmup 1 --repeats 3 --threads 1
      --cache hot --team-trial off --quiet)
step "run --mode landscape (every registered mechanism, $TOY among the candidates)"
"$BIN" run --mode landscape "${tiny[@]}" --output "$OUT/landscape.json" >"$OUT/landscape.txt" 2>&1 ||
  { tail -20 "$OUT/landscape.txt"; fail "run --mode landscape"; }
n=$(rows_ok "$OUT/landscape.json" "$TOY") || fail "landscape report"
step "landscape: $n rows of $TOY, ok"

# The toy's one option, declared in its folder only: the CLI flag comes from that declaration.
option=(--mean-power 2)
check_option=(mean_power=2)
step "run --mode landscape --candidates $TOY ${option[*]}"
"$BIN" run --mode landscape --candidates "$TOY" "${option[@]}" "${tiny[@]}" --output "$OUT/option.json" \
  >"$OUT/option.txt" 2>&1 || { tail -20 "$OUT/option.txt"; fail "run with the option"; }
n=$(rows_ok "$OUT/option.json" "$TOY" "${check_option[@]}") || fail "report of the run with the option"
step "run with the option: $n rows of $TOY, ok"

step "conformance --generate, then conformance"
"$BIN" conformance --generate "$OUT/in" --mechanism "$TOY" --batch 1 --heads 2 --length 33 --dim 16 --seed 7 \
  "${option[@]}" >"$OUT/generate.txt" 2>&1 || { cat "$OUT/generate.txt"; fail "conformance --generate"; }
"$BIN" conformance --mechanism "$TOY" --inputs "$OUT/in" --outputs "$OUT/conformance" "${option[@]}" \
  >"$OUT/conformance.txt" 2>&1 || { cat "$OUT/conformance.txt"; fail "conformance"; }
python3 - "$OUT/conformance/conformance.json" "$TOY" <<'EOF' || fail "conformance manifest"
import json, sys
manifest = json.load(open(sys.argv[1]))
if manifest.get("mechanism") != sys.argv[2] or manifest.get("passed") is not True:
    sys.exit(f"{sys.argv[1]}: mechanism {manifest.get('mechanism')}, passed {manifest.get('passed')}")
EOF
step "conformance: passed"
step "OK: mechanisms/$TOY ran through list, landscape, run and conformance with no other file edited " \
     "($((SECONDS - start)) s after the copy)"
