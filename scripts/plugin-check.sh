#!/usr/bin/env bash
# The installed-package path of "Plugins" (docs/adding-a-mechanism.md), end to end:
#  1. installs the build in $BUILD_DIR (default build/, else build/run/; built first, as scripts/run.sh
#     builds it, when there is none) to a temporary prefix;
#  2. configures and builds examples/plugin/ as a separate CMake project against that prefix only
#     (find_package(arch_bench 0.1 REQUIRED) + arch_bench::mechanism_sdk);
#  3. runs the installed arch-bench in `landscape` with the example plugin against the baseline and a
#     built-in on a small matrix, validates the report, and checks that the plugin's rows are
#     measured, within tolerance of its fp64 reference and name the plugin file's SHA-256;
#  4. checks that a plugin refused by the loader exits 2 (the same library under a wrong contract
#     is covered by tests/test_plugins.cpp).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
AB_TAG=plugin-check
AB_QUIET=1
source "$ROOT/scripts/setup.sh"
ab_arch_bench
BIN="$BUILD_DIR"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
PREFIX="$WORK/prefix"

echo "== plugin-check: install $BIN to a temporary prefix"
cmake --install "$BIN" --prefix "$PREFIX" > "$WORK/install.log"
test -x "$PREFIX/bin/arch-bench"
test -f "$PREFIX/lib/cmake/arch_bench/arch_benchConfig.cmake"

echo "== plugin-check: build examples/plugin against the installed package"
launcher=()
command -v ccache > /dev/null && [ "${ARCH_BENCH_CCACHE:-on}" != off ] && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$ROOT/examples/plugin" -B "$WORK/example" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$PREFIX" "${launcher[@]}" > "$WORK/configure.log"
cmake --build "$WORK/example" > "$WORK/build.log"
PLUGIN="$WORK/example/libwindow_softmax.so"
test -f "$PLUGIN"

echo "== plugin-check: landscape with the plugin against the built-ins"
"$PREFIX/bin/arch-bench" run --mode landscape --plugin "$PLUGIN" --candidates window_softmax,linear_attention,mamba \
  --sequence-lengths 256,1024 --heads 2 --head-dim 32 --repeats 5 --warmup 1 --run-label plugin-check \
  --results-dir "$WORK" --quiet
REPORT="$WORK/landscape_plugin-check.json"
"$PREFIX/bin/arch-bench" validate "$REPORT"
python3 - "$REPORT" "$(sha256sum "$PLUGIN" | cut -d' ' -f1)" <<'PY'
import json, sys
report, sha = json.load(open(sys.argv[1])), sys.argv[2]
rows = [r for r in report["metrics"]["rows"] if r["mechanism"] == "window_softmax"]
assert len(rows) == 4, f"expected 4 window_softmax rows (2 lengths x 2 phases), got {len(rows)}"
for r in rows:
    assert r["status"] == "ok", r.get("reason")
    assert r["within_tolerance"], f"max_rel_error {r['max_rel_error']} above {r['tolerance']}"
    assert r["plugin"]["sha256"] == sha, "the row names another file than the one built"
    assert r["cpu_kernel_isa"] is None, "a plugin that states no kernel ISA gets null, not the host's build target"
builtins = [r for r in report["metrics"]["rows"] if "plugin" not in r]
assert builtins and all(r["cpu_kernel_isa"] for r in builtins), "every built-in CPU row names its kernel's ISA"
decode = {r["state_bytes"] for r in rows if r["phase"] == "decode"}
assert len(decode) == 1, f"the window's state must not grow with L: {decode}"
assert [p["sha256"] for p in report["plugins"]] == [sha]
verdict = report["decision"]["details"]["candidates"]["window_softmax"]["verdict"]
print(f"window_softmax: verdict {verdict}, state {decode.pop()} bytes at every L, "
      f"max_rel_error {max(r['max_rel_error'] for r in rows):.2e}, sha256 {sha[:16]}...")
PY

echo "== plugin-check: a file that is not a plugin is refused with exit 2"
status=0
"$PREFIX/bin/arch-bench" list --plugin "$PREFIX/lib/cmake/arch_bench/arch_benchConfig.cmake" 2> "$WORK/refused.txt" || status=$?
test "$status" -eq 2
grep -q "not a shared object" "$WORK/refused.txt"

echo "plugin-check: all passed"
