#!/usr/bin/env bash
# CI checks on the result contract, after scripts/test.sh has built build/:
#  1. a small CPU matrix of the default mode, run twice under two run labels; both reports validate;
#  2. the two are diffed: timing verdicts are reported but do not fail (shared CI machines are
#     noisy), structural regressions (state bytes, finiteness, tolerance, status, decision) do;
#  3. a fresh run is diffed against the committed CPU baseline in results/ the same way;
#  4. `arch-bench report` (Markdown with charts, HTML) and `export` of the run's own JSON, read back
#     by gbench's compare.py and pandas; scripts/plot.py's tests (tests/test_plot.py);
#  5. the Google Benchmark target runs one case (it must keep working with gbench's tooling) and
#     has a decode and a prefill case of every registered mechanism;
#  then a 3-shard Slurm job array on a real single-node cluster, merged (scripts/slurm/, root only);
#  scripts/crosscheck.sh's small shape set; scripts/device-check.sh's commands as CPU dry runs; and the
#  GPU machine's bundle, where the build has CUDA.
# It reads the arch-bench and arch-bench-micro of $BUILD_DIR (default build/); run on its own, it
# builds the two there first when they are missing (as scripts/test.sh configures, no tests built).
# Each "== ci" line carries the seconds since the start.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
AB_TAG=ci-checks
source "$ROOT/scripts/setup.sh"
BIN="$BUILD_DIR"
if [ ! -x "$BIN/arch-bench" ] || [ ! -x "$BIN/arch-bench-micro" ]; then
  ab_phase install ab_install
  [ -f "$BIN/CMakeCache.txt" ] || ab_phase configure ab_configure all
  ab_phase build ab_build arch-bench arch-bench-micro
fi
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
cd "$ROOT"
CI_T0="$(date +%s.%N)"
section() { echo "== ci (+$(ab_elapsed "$CI_T0") s): $*"; }

# Keep in step with results/45_linear_recurrent_state_ci-cpu-baseline.json (same workload).
SMALL=(--sequence-lengths 256,1024 --repeats 30 --warmup 3 --results-dir "$OUT" --quiet)

section "two runs of a small CPU matrix"
"$BIN/arch-bench" run "${SMALL[@]}" --run-label ci-a > "$OUT/run-a.txt"
"$BIN/arch-bench" run "${SMALL[@]}" --run-label ci-b > "$OUT/run-b.txt"
cat "$OUT/run-b.txt"
"$BIN/arch-bench" validate "$OUT"/45_linear_recurrent_state_ci-a.json "$OUT"/45_linear_recurrent_state_ci-b.json

section "diff of the two runs (timing reported, structural regressions fail)"
"$BIN/arch-bench" diff "$OUT"/45_linear_recurrent_state_ci-a.json "$OUT"/45_linear_recurrent_state_ci-b.json \
  --fail-on never --format markdown

section "diff against the committed CPU baseline"
"$BIN/arch-bench" validate results/*.json results/*/*.json  # the CPU reports and each GPU run's folder
# The baseline was measured on the machine that committed it; CI runs on whatever host it is given, so
# the hardware may differ and diff would refuse it (exit 2). Allowed here on purpose, and said at the
# top of the output: timing is reported only (--fail-on never), the structural checks, REMOVED rows
# and a failed run are what this step gates, and those do not depend on the machine.
"$BIN/arch-bench" diff results/45_linear_recurrent_state_ci-cpu-baseline.json \
  "$OUT"/45_linear_recurrent_state_ci-b.json --fail-on never --allow-hardware-change

section "report and export of this run's own JSON (charts, gbench's compare.py, pandas)"
# Charts and the export consumers are Debian Python packages, not build dependencies: installed here.
ab_apt_install python3-matplotlib python3-pandas python3-scipy libbenchmark-tools
RUN_A="$OUT"/45_linear_recurrent_state_ci-a.json RUN_B="$OUT"/45_linear_recurrent_state_ci-b.json
"$BIN/arch-bench" report "$RUN_A" "$RUN_B" --plots "$OUT/plots" --output "$OUT/report.md"
"$BIN/arch-bench" report "$RUN_B" --format html --plots "$OUT/html-plots" --output "$OUT/report.html"
[ -n "${GITHUB_STEP_SUMMARY:-}" ] && cat "$OUT/report.md" >> "$GITHUB_STEP_SUMMARY"
"$BIN/arch-bench" export "$RUN_A" --format gbench --output "$OUT/gbench-a.json"
"$BIN/arch-bench" export "$RUN_B" --format gbench --output "$OUT/gbench-b.json"
/usr/bin/python3 /usr/share/benchmark/compare.py --no-color benchmarks "$OUT/gbench-a.json" "$OUT/gbench-b.json" \
  | grep -E "OVERALL_GEOMEAN|_median "
"$BIN/arch-bench" export "$RUN_B" --format csv --output "$OUT/rows.csv"
/usr/bin/python3 - "$OUT/rows.csv" "$RUN_B" <<'PY'
import json, sys, pandas
# round_trip: pandas' default fast float parser can be off by an ulp; the CSV holds shortest round-trip text.
frame = pandas.read_csv(sys.argv[1], float_precision="round_trip")
rows = json.load(open(sys.argv[2]))["metrics"]["rows"]
assert len(frame) == len(rows) and list(frame["median_step_ms"]) == [r["median_step_ms"] for r in rows]
print(f"pandas read {len(frame)} rows x {len(frame.columns)} columns, medians exact")
PY
BUILD_DIR="$BIN" /usr/bin/python3 tests/test_plot.py

section "arch-bench-micro smoke run"
"$BIN/arch-bench-micro" --benchmark_filter='linear_attention/decode/L=512/bfloat16' --benchmark_min_time=0.05
# Every registered mechanism has its decode and prefill cases (a mechanism whose default options it
# cannot run, as performer's were before arm_options, silently drops out of the list).
"$BIN/arch-bench-micro" --benchmark_list_tests=true >"$OUT/micro-cases.txt"
"$BIN/arch-bench" list --json | /usr/bin/python3 -c '
import json, sys
cases = open(sys.argv[1]).read().split()
missing = [f"{m}/{phase}" for m in (x["id"] for x in json.load(sys.stdin)["mechanisms"])
           for phase in ("decode", "prefill") if not any(c.startswith(f"{m}/{phase}/") for c in cases)]
assert not missing, f"arch-bench-micro has no case for {missing}"
print(f"arch-bench-micro: {len(cases)} cases, decode and prefill of every mechanism")
' "$OUT/micro-cases.txt"

section "an out-of-tree plugin built against the installed package (scripts/plugin-check.sh)"
BUILD_DIR="$BIN" "$ROOT/scripts/plugin-check.sh"

section "a 3-shard job array on a real single-node Slurm, merged (scripts/slurm/test-local-cluster.sh)"
if [[ $(id -u) -eq 0 ]]; then
  BUILD_DIR="$BIN" bash "$ROOT/scripts/slurm/test-local-cluster.sh"
else
  echo "skipped: the local Slurm cluster needs root (slurmd starts the jobs); CI runs as root"
fi

section "every mechanism against its published implementation (scripts/crosscheck.sh, small shape set)"
BUILD_DIR="$BIN" bash "$ROOT/scripts/crosscheck.sh" --shapes ci

section "scripts/device-check.sh's commands, as CPU dry runs of the same plans (DEVICE_CHECK_PLAN=1)"
# A misspelt option or a refused cell must fail here, not in the minutes of a lent GPU machine.
DEVICE_CHECK_PLAN=1 DEVICE_CHECK_BIN="$BIN/arch-bench" bash "$ROOT/scripts/device-check.sh" --part all "$OUT/device-plan" |
  grep -E "^== |FAILED|device-check:"

section "the GPU machine's bundle (scripts/device-bundle.sh; after crosscheck, whose cache has the fla peer): it must load on its own libraries"
if [ -x "$BIN/tests/arch_bench_gpu_tests" ] && ldd "$BIN/arch-bench" | grep -q libcudart; then
  BUILD_DIR="$BIN" bash "$ROOT/scripts/device-bundle.sh"
  # Without a GPU every test of the bundle's binary reports SKIPPED; what this proves is that it starts
  # with lib/ alone added to the loader path, as device-check.sh runs it.
  LD_LIBRARY_PATH="$ROOT/.device/prebuilt/lib" "$ROOT/.device/prebuilt/arch_bench_gpu_tests" --gtest_brief=1 | tail -3
  LD_LIBRARY_PATH="$ROOT/.device/prebuilt/lib" "$ROOT/.device/prebuilt/arch-bench" --version
else
  echo "skipped: this build has no CUDA binaries (no nvcc)"
fi

echo "ci-checks: all passed in $(ab_elapsed "$CI_T0") s"
