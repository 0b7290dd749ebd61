#!/usr/bin/env bash
# Runs one arch-bench plan as a Slurm job array and merges the shards into one report:
#
#   scripts/slurm/sweep.sh --shards 4 --output results/full.json -- --mode landscape --sequence-lengths 512,8192
#
# submits scripts/slurm/arch-bench.sbatch with `sbatch --array=0-3` (each task runs
# `arch-bench run --shard auto` + the options after --), waits for the array to leave the queue,
# then runs `arch-bench merge` on the shard reports. A shard that failed or was killed leaves no
# report, and the merge refuses naming the missing shard; re-run it by hand with --shard I/N.
#
# Options:
#   --shards N         number of array tasks / shards (required)
#   --output FILE      the merged report (required; never overwritten)
#   --results DIR      where the shard reports go (default: <output folder>/shards-<job id>)
#   --bin PATH         the arch-bench executable the tasks run (default: build/arch-bench, else PATH)
#   --gpus-per-task G  GPUs per task (default 1 when the options name a CUDA profile or --device cuda)
#   --timeout SECONDS  give up (and scancel the array) after this long in the queue (default 86400)
#   --sbatch ARG       one more argument for sbatch (repeatable), e.g. --sbatch --partition=gpu
#   --merge ARG        one more argument for arch-bench merge (repeatable), e.g. --merge --ceiling-tolerance=40%
# Exit: merge's code (0 merged, 1 a cell failed, 2 refused), or 1 when the array timed out.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

shards="" output="" results="" bin="" gpus="" timeout_s=86400
sbatch_extra=()
merge_extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --shards) shards=$2; shift 2 ;;
    --output) output=$2; shift 2 ;;
    --results) results=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --gpus-per-task) gpus=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --sbatch) sbatch_extra+=("$2"); shift 2 ;;
    --merge) merge_extra+=("$2"); shift 2 ;;
    --) shift; break ;;
    *) echo "sweep.sh: unknown option '$1' (the run options go after --)" >&2; exit 2 ;;
  esac
done
run_options=("$@")
[[ "$shards" =~ ^[1-9][0-9]*$ ]] || { echo "sweep.sh: --shards must be a whole number >= 1 (got '${shards}')" >&2; exit 2; }
[[ -n "$output" ]] || { echo "sweep.sh: --output FILE is required" >&2; exit 2; }
[[ ! -e "$output" ]] || { echo "sweep.sh: --output $output exists; the merge never overwrites" >&2; exit 2; }
[[ "$timeout_s" =~ ^[0-9]+$ ]] || { echo "sweep.sh: --timeout must be whole seconds" >&2; exit 2; }
if [[ -z "$bin" ]]; then
  if [[ -x "$ROOT/build/arch-bench" ]]; then bin="$ROOT/build/arch-bench"; else bin=$(command -v arch-bench || true); fi
fi
[[ -n "$bin" && -x "$bin" ]] || { echo "sweep.sh: no arch-bench executable; give --bin PATH" >&2; exit 2; }
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
mkdir -p "$(dirname "$output")"

# The CUDA profile (or --device cuda) needs one GPU per task.
if [[ -z "$gpus" ]]; then
  for word in "${run_options[@]}"; do
    if [[ "$word" == *CUDA* || "$word" == "cuda" ]]; then gpus=1; fi
  done
fi
gpu_args=()
if [[ -n "$gpus" ]]; then gpu_args=(--gpus-per-task="$gpus"); fi

# Refuse a bad plan here, before anything is queued (the dry run is cheap and writes nowhere that matters).
check=$(mktemp -d)
trap 'rm -rf "$check"' EXIT
"$bin" run "${run_options[@]}" --dry-run --shard "0/${shards}" --output "$check/plan.json" > /dev/null

stamp=$(date -u +%Y%m%dT%H%M%SZ)
if [[ -z "$results" ]]; then results="$(dirname "$output")/shards-${stamp}"; fi
mkdir -p "$results"
results=$(cd "$results" && pwd)

job=$(sbatch --parsable --array="0-$((shards - 1))" --job-name=arch-bench \
  --output="$results/slurm-%A_%a.out" "${gpu_args[@]}" "${sbatch_extra[@]}" \
  --export=ALL,ARCH_BENCH_BIN="$bin",ARCH_BENCH_RESULTS="$results" \
  "$ROOT/scripts/slurm/arch-bench.sbatch" "${run_options[@]}")
job=${job%%;*}
echo "sweep: submitted job array ${job} (${shards} shards) -> ${results}"

deadline=$((SECONDS + timeout_s))
while [[ -n "$(squeue -h -j "$job" -o %i 2>/dev/null)" ]]; do
  if ((SECONDS >= deadline)); then
    echo "sweep: job ${job} still queued or running after ${timeout_s}s; cancelling it" >&2
    scancel "$job" || true
    exit 1
  fi
  sleep 2
done
echo "sweep: job array ${job} finished; merging"

shopt -s nullglob
reports=("$results"/shard-*-of-"${shards}".json)
if [[ ${#reports[@]} -eq 0 ]]; then
  echo "sweep: no shard wrote a report; see $results/slurm-${job}_*.out" >&2
  tail -n 5 "$results"/slurm-"${job}"_*.out >&2 || true
  exit 1
fi
status=0
"$bin" merge "${reports[@]}" --output "$output" "${merge_extra[@]}" || status=$?
if [[ $status -eq 2 ]]; then echo "sweep: the task logs are $results/slurm-${job}_*.out" >&2; fi
exit "$status"
