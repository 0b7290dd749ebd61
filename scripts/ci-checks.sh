#!/usr/bin/env bash
# CI checks on the result contract, after scripts/test.sh has built build/:
#  1. a small CPU matrix of the default mode, run twice under two run labels; both reports validate;
#  2. the two are diffed: timing verdicts are reported but do not fail (shared CI machines are
#     noisy), structural regressions (state bytes, finiteness, tolerance, status, decision) do;
#  3. a fresh run is diffed against the committed CPU baseline in results/ the same way;
#  4. the Google Benchmark target runs one case (it must keep working with gbench's tooling).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${BUILD_DIR:-$ROOT/build}"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
cd "$ROOT"

# Keep in step with results/45_linear_recurrent_state_ci-cpu-baseline.json (same workload).
SMALL=(--sequence-lengths 256,1024 --repeats 30 --warmup 3 --results-dir "$OUT" --quiet)

echo "== ci: two runs of a small CPU matrix"
"$BIN/arch-bench" run "${SMALL[@]}" --run-label ci-a > "$OUT/run-a.txt"
"$BIN/arch-bench" run "${SMALL[@]}" --run-label ci-b > "$OUT/run-b.txt"
cat "$OUT/run-b.txt"
"$BIN/arch-bench" validate "$OUT"/45_linear_recurrent_state_ci-a.json "$OUT"/45_linear_recurrent_state_ci-b.json

echo "== ci: diff of the two runs (timing reported, structural regressions fail)"
"$BIN/arch-bench" diff "$OUT"/45_linear_recurrent_state_ci-a.json "$OUT"/45_linear_recurrent_state_ci-b.json \
  --fail-on never --format markdown

echo "== ci: diff against the committed CPU baseline"
"$BIN/arch-bench" validate results/*.json
"$BIN/arch-bench" diff results/45_linear_recurrent_state_ci-cpu-baseline.json \
  "$OUT"/45_linear_recurrent_state_ci-b.json --fail-on never

echo "== ci: arch-bench-micro smoke run"
"$BIN/arch-bench-micro" --benchmark_filter='linear_attention/decode/L=512/bfloat16' --benchmark_min_time=0.05

echo "ci-checks: all passed"
