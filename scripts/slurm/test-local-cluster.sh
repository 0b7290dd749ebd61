#!/usr/bin/env bash
# The real Slurm test of `run --shard` / `merge` (docs/cluster-guide.md): starts a
# single-node cluster (local-cluster.sh), runs a small CPU matrix as a 3-task job array through
# sweep.sh, and checks that
#   1. the merged report validates and `diff` (and `report`, where built) accept it;
#   2. it holds exactly the unsharded plan's cells, in plan order (against a --dry-run of the plan),
#      each row naming its shard and host, with a decision over the whole matrix;
#   3. a shard killed mid-run (its report missing) makes the merge refuse, naming the missing shard.
# The cluster is stopped on every exit path (trap), so no daemon outlives the test.
# Installs slurm-wlm, munge (and jq) with apt-get when they are missing (needs root, as the cluster does).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BIN="${BUILD_DIR:-$ROOT/build}/arch-bench"
[[ -x "$BIN" ]] || { echo "test-local-cluster: $BIN not built (scripts/test.sh builds it)" >&2; exit 1; }

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null ||
   ! command -v jq >/dev/null; then
  echo "== slurm: installing slurm-wlm, munge and jq"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends slurm-wlm munge jq >/dev/null 2>&1 ||
    { apt-get update >/dev/null && apt-get install -y --no-install-recommends slurm-wlm munge jq >/dev/null; }
fi

WORK=$(mktemp -d /tmp/arch-bench-slurm-test.XXXXXX)
CLUSTER=""
cleanup() {
  local status=$?
  if [[ -n "$CLUSTER" ]]; then "$ROOT/scripts/slurm/local-cluster.sh" stop "$CLUSTER" || true; fi
  rm -rf "$WORK"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() { echo "test-local-cluster: FAILED: $*" >&2; exit 1; }

echo "== slurm: starting a single-node cluster"
CLUSTER=$("$ROOT/scripts/slurm/local-cluster.sh" start "$WORK/cluster" | tail -n 1)
export SLURM_CONF="$CLUSTER/slurm.conf"
sinfo

# 2 arms x 2 lengths x 2 phases = 8 cells: small enough for a loaded 2-core CI machine.
MATRIX=(--sequence-lengths 64,256 --phase decode,prefill --repeats 5 --warmup 1 --query-heads 2 --head-dim 16
        --device cpu --run-label slurm-test)
"$BIN" run "${MATRIX[@]}" --dry-run --output "$WORK/plan.json" --quiet > /dev/null

echo "== slurm: 3-shard job array of the matrix, then merge"
# The three tasks share one small node and may measure its ceilings at the same moment, so their
# readings can differ by more than merge's 25% between nodes of a cluster: widened here on purpose.
"$ROOT/scripts/slurm/sweep.sh" --shards 3 --bin "$BIN" --results "$WORK/shards" --output "$WORK/merged.json" \
  --timeout 600 --merge --ceiling-tolerance=300% -- "${MATRIX[@]}" --quiet || fail "sweep.sh exited $?"
ls "$WORK/shards"

echo "== slurm: the merged report"
"$BIN" validate "$WORK/merged.json"
"$BIN" diff "$WORK/merged.json" "$WORK/merged.json" --fail-on never > /dev/null || fail "diff refused the merged report"
if "$BIN" report --help > /dev/null 2>&1; then
  "$BIN" report "$WORK/merged.json" > /dev/null || fail "report refused the merged report"
fi
planned=$(jq -c '[.plan[] | [.mechanism, .variant, .phase, .sequence_length]]' "$WORK/plan.json")
merged=$(jq -c '[.metrics.rows[] | [.mechanism, .variant, .phase, .sequence_length]]' "$WORK/merged.json")
[[ "$planned" == "$merged" ]] || fail "merged rows $merged are not the plan's cells $planned"
echo "rows = the unsharded plan's $(jq '.plan | length' "$WORK/plan.json") cells, in plan order"
jq -e '[.metrics.rows[] | select(.status != "ok")] | length == 0' "$WORK/merged.json" > /dev/null ||
  fail "a merged row is not ok"
jq -e '[.metrics.rows[].shard] | unique == [0, 1, 2]' "$WORK/merged.json" > /dev/null ||
  fail "the rows do not come from shards 0, 1 and 2"
jq -e 'all(.metrics.rows[]; (.host.hostname | type) == "string")' "$WORK/merged.json" > /dev/null ||
  fail "a row does not name its host"
jq -e '.merged_from.count == 3 and (.shard | not) and .evidence_level == "cpu_measured"' "$WORK/merged.json" \
  > /dev/null || fail "merged_from / evidence_level"
jq -e '.decision.verdict != "inconclusive"' "$WORK/merged.json" > /dev/null ||
  fail "the merged decision is still a shard's partial one"
jq -e 'all(.decision.details.time_ratio_candidate_over_baseline[]; length == 2)' "$WORK/merged.json" > /dev/null ||
  fail "the decision does not span both lengths of each phase"
for shard in "$WORK"/shards/shard-*-of-3.json; do
  jq -e '.decision.verdict == "inconclusive" and (.decision.reasons[0] | startswith("partial matrix"))' "$shard" \
    > /dev/null || fail "$shard: a shard's decision must be inconclusive (partial matrix)"
done
echo "decision over the whole matrix: $(jq -r .decision.verdict "$WORK/merged.json")"

echo "== slurm: a shard killed mid-run leaves no report; the merge refuses naming it"
mkdir "$WORK/partial"
cp "$WORK"/shards/shard-0-of-3.json "$WORK"/shards/shard-2-of-3.json "$WORK/partial/"
status=0
"$BIN" merge "$WORK"/partial/*.json --output "$WORK/partial.json" 2> "$WORK/refusal.txt" || status=$?
cat "$WORK/refusal.txt"
[[ $status -eq 2 ]] || fail "merge of 2 of 3 shards exited $status, not 2"
grep -q "missing shard 1 of 3" "$WORK/refusal.txt" || fail "the refusal does not name shard 1"
[[ ! -e "$WORK/partial.json" ]] || fail "a refused merge wrote a file"

echo "test-local-cluster: all passed"
