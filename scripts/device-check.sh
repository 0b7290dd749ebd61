#!/usr/bin/env bash
# The one prepared script for a GPU machine (docs/design.md, "GPU checks"; docs/gpu-guide.md):
#   scripts/device-check.sh [--part core|landscape|all] OUT_DIR
# Runs the binaries built on the CPU machine and carried in .device/prebuilt (scripts/device-bundle.sh)
# when they are there, else builds with CUDA for sm_90 (DEVICE_BUILD=1 forces that). Two parts, so that
# each fits one `run` call (at most 10 minutes; budget about 5 each on one H200 with prebuilt binaries):
#   core (default): the GPU tests (one small case under compute-sanitizer memcheck), the preflight of
#     the CUDA profile, the seed's cell-5.2 command under --profile ARCH-CUDA-MECHANISM,
#     linear_recurrence at batch 1 and 16 over L = 512, 2048, 8192, 32768 (decode) plus a causal
#     prefill, the performer and mamba_scan modes, softmax_kv prefill with the hand kernels and cuDNN's
#     fused attention side by side, and `conformance --device cuda` for every mechanism with CUDA kernels;
#   landscape: grouped-query decode (32 query / 8 K/V heads x 128, hand and cuDNN) with sliding_window
#     at the cells of PyTorch SDPA's bar (issue 40), every mechanism's decode and prefill at B1 L8192 and
#     bf16 prefill at B16 H8 d64 L8192 (issue 41's cells), the fixed-state decode steps at B16 and RWKV-6's
#     chunked prefill at d 128, and the peers (scripts/device-peers.py: SDPA and flash-linear-attention) timed
#     in the same lease, then the table of arch-bench beside them (scripts/gpu-table.py).
# OUT_DIR gets the log, the preflight, the reports and peers.jsonl: commit it as results/<gpu>-<date>/
# (scripts/results-summary.sh makes its page). Build dependencies come from .device/debs
# (scripts/collect-debs.sh), unpacked into a prefix, because the GPU machine has no package registry.
# DEVICE_CHECK_PLAN=1 (no GPU needed; ci-checks runs it): every arch-bench run becomes a CPU --dry-run
# of the same plan (cuDNN arms dropped), and the GPU-only steps are skipped: a misspelt option fails here
# and not on a lent machine.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PART=core
if [ "${1:-}" = --part ]; then PART="${2:?--part core|landscape|all}"; shift 2; fi
case "$PART" in core|landscape|all) ;; *) echo "device-check: --part core, landscape or all, not '$PART'" >&2; exit 2 ;; esac
OUT="${1:?usage: scripts/device-check.sh [--part core|landscape|all] OUT_DIR}"
PLAN="${DEVICE_CHECK_PLAN:-0}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
LOG="$OUT/device-check.log"
exec > >(tee -a "$LOG") 2>&1
GPU_NAME="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | tr -c 'A-Za-z0-9\n' '-' | tr 'A-Z' 'a-z' | sed 's/-*$//; s/--*/-/g')"
LABEL="${RUN_LABEL:-${GPU_NAME:-gpu}-$(date -u +%Y%m%d)}"
BUILD="$ROOT/build-device"
PREFIX="$ROOT/.device/prefix"
BIN="$BUILD/arch-bench"
status=0

step() { echo; echo "== $(date -u +%H:%M:%S) $*"; }
# Runs a command, notes a failure without stopping: every later step still gives evidence. On the GPU
# each step has a time limit (LIMIT seconds, default 240; `LIMIT=60 check ...`): a kernel that has never
# run may hang, and one hung step must not take the rest of the call's minutes with it (SIGTERM, which
# arch-bench answers by stopping, then SIGKILL 10 s later).
check() {
  local rc=0
  if [ "$PLAN" = 1 ]; then "$@" || rc=$?; else timeout -k 10 "${LIMIT:-240}" bash -c '"$@"' _ "$@" || rc=$?; fi
  [ "$rc" = 0 ] && return 0
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    echo "device-check: FAILED (timed out after ${LIMIT:-240} s): $*"
  else
    echo "device-check: FAILED ($rc): $*"
  fi
  status=1
}
# arch-bench. In plan mode a run is a CPU dry run of the same plan: --device cuda becomes cpu, and the
# cuDNN arms and the CUDA timing method go (both need a GPU); everything else is passed as written.
ab() {
  if [ "$PLAN" != 1 ]; then "$BIN" "$@"; return; fi
  local args=() previous="" arg
  for arg in "$@"; do
    case "$previous" in
      --device) [ "$arg" = cuda ] && arg=cpu ;;
      --softmax-impl) arg=hand ;;
      --timing) unset 'args[${#args[@]}-1]'; previous=""; continue ;;
    esac
    args+=("$arg")
    previous="$arg"
  done
  "$BIN" "${args[@]}" --dry-run --quiet
}
export -f ab  # check runs its command in a child bash, under timeout
export PLAN BIN

if [ "$PLAN" = 1 ]; then
  export BIN="${DEVICE_CHECK_BIN:-$ROOT/build/arch-bench}"
  [ -x "$BIN" ] || { echo "device-check: plan mode needs a built arch-bench ($BIN; DEVICE_CHECK_BIN=...)" >&2; exit 2; }
  step "plan mode (DEVICE_CHECK_PLAN=1): CPU dry runs of part '$PART' with $BIN; GPU-only steps skipped"
fi
[ "$PLAN" = 1 ] || {
step "machine"
nvidia-smi || true
command -v nvcc >/dev/null || export PATH="/usr/local/cuda/bin:$PATH"
nvcc --version | tail -1; cmake --version | head -1

if [ -d "$ROOT/.device/debs" ]; then
  step "unpacking $(ls "$ROOT/.device/debs" | wc -l) .deb files into $PREFIX"
  mkdir -p "$PREFIX"
  for deb in "$ROOT"/.device/debs/*.deb; do dpkg-deb -x "$deb" "$PREFIX"; done
  export CMAKE_PREFIX_PATH="$PREFIX/usr:${CMAKE_PREFIX_PATH:-}"
  export CPATH="$PREFIX/usr/include:${CPATH:-}"
  export LIBRARY_PATH="$PREFIX/usr/lib/x86_64-linux-gnu:${LIBRARY_PATH:-}"
  export LD_LIBRARY_PATH="$PREFIX/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
fi

# cuDNN (softmax_kv's fused-attention baseline, docs/gpu-guide.md): this machine has it only in
# PyTorch's environment (site-packages/nvidia/cudnn: lib/ and include/), and no package registry, so
# cudnn-frontend's headers come unpacked with the tree: on the build machine,
#   scripts/fetch-cudnn-frontend.sh .device     (-> .device/_deps/cudnn-frontend/include)
# Without either, the build has no cuDNN variant and softmax_kv runs its hand kernels (list says why).
CUDNN_ARGS=()
TORCH_CUDNN="$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__))' 2>/dev/null || true)"
if [ -n "$TORCH_CUDNN" ] && [ -d "$TORCH_CUDNN/lib" ]; then
  export ARCH_BENCH_CUDNN_LIB="$TORCH_CUDNN/lib"
  export LD_LIBRARY_PATH="$TORCH_CUDNN/lib:${LD_LIBRARY_PATH:-}"  # its sub-libraries, whatever their RUNPATH
  [ -f "$TORCH_CUDNN/include/cudnn.h" ] && CUDNN_ARGS+=(-DCUDNN_INCLUDE_DIR="$TORCH_CUDNN/include")
fi
[ -f "$ROOT/.device/_deps/cudnn-frontend/include/cudnn_frontend.h" ] &&
  CUDNN_ARGS+=(-DCUDNN_FRONTEND_INCLUDE_DIR="$ROOT/.device/_deps/cudnn-frontend/include")
echo "cuDNN: library ${ARCH_BENCH_CUDNN_LIB:-not found}; cmake ${CUDNN_ARGS[*]:-(no cuDNN headers given)}"
}

PREBUILT="$ROOT/.device/prebuilt"
prebuilt() { [ -x "$PREBUILT/arch-bench" ] && [ -x "$PREBUILT/arch_bench_gpu_tests" ] && [ "${DEVICE_BUILD:-0}" != 1 ]; }
if [ "$PLAN" = 1 ]; then
  :
elif prebuilt; then
  # Built on the CPU machine (scripts/device-bundle.sh), carried: no compiler time on the device. The
  # build there already failed on any spill (-Xptxas -warn-spills -Werror) for sm_80 and sm_90.
  step "prebuilt binaries (.device/prebuilt, commit $(cut -c1-12 "$PREBUILT/commit" 2>/dev/null)); DEVICE_BUILD=1 builds here instead"
  mkdir -p "$BUILD"
  export BIN="$PREBUILT/arch-bench"
  export LD_LIBRARY_PATH="$PREBUILT/lib:${LD_LIBRARY_PATH:-}"
  [ -d "$PREBUILT/python" ] && export PYTHONPATH="$PREBUILT/python${PYTHONPATH:+:$PYTHONPATH}"
else
  # An incremental build when an earlier part built this folder on the same machine.
  step "configure + build (CUDA sm_90; ptxas resource usage below)"
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DARCH_BENCH_MICRO=OFF -DVALIJSON_INCLUDE_DIR="$PREFIX/usr/include" "${CUDNN_ARGS[@]}" || exit 1
  cmake --build "$BUILD" -j "$(nproc)" > "$BUILD/build.txt" 2>&1 || { tail -60 "$BUILD/build.txt"; exit 1; }
  grep -E "ptxas info *: (Used|Compiling entry)|spill" "$BUILD/build.txt" | grep -B1 -E "Used|spill" | head -80
fi
mkdir -p "$BUILD"
cd "$ROOT"

core_part() {
  if [ "$PLAN" != 1 ]; then
    if prebuilt; then
      # One process per test suite, each under its own limit: a kernel that hangs costs its suite's
      # results, not every suite after it.
      step "GPU tests (the prebuilt arch_bench_gpu_tests, one suite at a time)"
      suites="$("$PREBUILT/arch_bench_gpu_tests" --gtest_list_tests | grep -E '^[A-Za-z0-9_/]+\.( |$)' | cut -d' ' -f1)"
      [ -n "$suites" ] || { echo "device-check: FAILED: arch_bench_gpu_tests lists no test suite (does it start?)"; status=1; }
      for suite in $suites; do
        LIMIT=120 check bash -c "'$PREBUILT/arch_bench_gpu_tests' --gtest_filter='${suite}*' --gtest_brief=1 2>&1 |
          grep -E '^\[  (PASSED|FAILED|SKIPPED) |Failure|error' | sed 's|^|$suite |'; exit \${PIPESTATUS[0]}"
      done
      echo "CPU tests: not run here with prebuilt binaries (CI runs them on the commit above)"
    else
      step "GPU tests (ctest -L gpu)"
      LIMIT=400 check bash -c "cd '$BUILD' && ctest -L gpu --output-on-failure -j 1 | tail -40"
      step "CPU tests (the rest of the suite, also on this machine)"
      LIMIT=900 check bash -c "cd '$BUILD' && ctest -LE gpu --output-on-failure -j '$(nproc)' | tail -15"
    fi
    if command -v compute-sanitizer >/dev/null; then
      step "compute-sanitizer memcheck on a small decode + prefill"
      check compute-sanitizer --tool memcheck --error-exitcode 9 "$BIN" run --device cuda --sequence-lengths 100,700 \
        --phase decode,prefill --warmup 1 --repeats 3 --batch 2 --run-label memcheck --results-dir "$BUILD" --quiet
    fi
    step "devices, backends and kernels"
    "$BIN" list
    step "preflight ARCH-CUDA-MECHANISM"
    check "$BIN" preflight --profile ARCH-CUDA-MECHANISM --json "$OUT/preflight_ARCH-CUDA-MECHANISM_${LABEL}.json"
    # Under --profile a failed preflight writes a dry_run, so this one has no plan-mode form.
    step "seed cell 5.2 under the CUDA profile (bf16, B=1, L 512/2048/8192, warmup 10, repeats 100)"
    check "$BIN" --mode linear_recurrence --output "$OUT/45_linear_recurrent_state_${LABEL}.json" \
      --semantic-id ARCH-RECURRENT-STATE-MECHANISM --workload-id arch-linear-recurrence-v2 --run-label "$LABEL" \
      --profile ARCH-CUDA-MECHANISM --sequence-lengths 512,2048,8192 --query-heads 8 --head-dim 64 \
      --dtype bfloat16 --warmup 10 --repeats 100
  fi

  for batch in 1 16; do
    step "linear_recurrence decode, batch $batch, L 512..32768 (cuda_events_batched x 10, cold L2)"
    check ab run --device cuda --batch "$batch" --sequence-lengths 512,2048,8192,32768 --warmup 5 --repeats 50 \
      --run-label "${LABEL}-b${batch}" --workload-id "arch-linear-recurrence-gpu-b${batch}" --results-dir "$OUT"
  done

  step "linear_recurrence prefill, batch 1, L 2048/8192 (tensor-core bf16 softmax vs chunkwise linear)"
  check ab run --device cuda --phase prefill --sequence-lengths 2048,8192 --warmup 3 --repeats 20 \
    --timing cuda_events --run-label "${LABEL}-prefill" --workload-id arch-linear-recurrence-gpu-prefill \
    --results-dir "$OUT"

  # The library baseline against the hand kernels, in one run (issue 39 section 1): softmax_kv prefill,
  # bf16, H 8, d 64, with --softmax-impl hand (the baseline arm) and cudnn (a candidate arm); the rows'
  # gpu_kernel says what ran and the cuDNN version. About 30 s.
  for batch in 1 16; do
    step "softmax_kv prefill hand vs cuDNN, batch $batch, L 2048/8192"
    check ab run --device cuda --phase prefill --batch "$batch" --sequence-lengths 2048,8192 --softmax-impl hand,cudnn \
      --warmup 3 --repeats 20 --timing cuda_events --run-label "${LABEL}-cudnn-b${batch}" \
      --workload-id "arch-softmax-cudnn-gpu-prefill-b${batch}" --results-dir "$OUT"
  done
  [ "$PLAN" = 1 ] || python3 - "$OUT" <<'PY' || true
import glob, json, sys
for path in sorted(glob.glob(sys.argv[1] + "/*cudnn-b*.json")):
    rows = [r for r in json.load(open(path))["metrics"]["rows"] if r["mechanism"] == "softmax_kv" and r["status"] == "ok"]
    by = {}
    for r in rows:
        by.setdefault((r["batch"], r["sequence_length"]), {})[r["options"].get("softmax_impl")] = r
    for (b, length), impl in sorted(by.items()):
        if "hand" in impl and "cudnn" in impl:
            h, c = impl["hand"]["median_step_ms"], impl["cudnn"]["median_step_ms"]
            print(f"softmax_kv prefill B{b} L{length}: {impl['hand']['gpu_kernel']} {h:.4f} ms, {impl['cudnn']['gpu_kernel']} {c:.4f} ms, "
                  f"hand/cudnn time ratio {h / c:.2f}")
PY

  # The other two mechanisms of the card on the GPU. Their fp64 checks run on the host (the performer
  # reference is O(L m d) per head), so repeats are kept low and batch 16 is one length: L = 8192, where
  # the issue's targets sit (performer decode at m = 256 vs softmax_kv; mamba prefill vs the copy
  # bandwidth).
  step "performer, batch 1, L 512/2048/8192, m 64/128/256 favor+ and trig 256 (default matrix)"
  check ab run --mode performer --device cuda --warmup 3 --repeats 10 --run-label "${LABEL}-performer-b1" \
    --workload-id arch-performer-gpu-b1 --results-dir "$OUT"
  step "performer, batch 16, decode at L 8192, m 256"
  check ab run --mode performer --device cuda --batch 16 --sequence-lengths 8192 --phase decode --features 256 \
    --warmup 3 --repeats 20 --run-label "${LABEL}-performer-b16" --workload-id arch-performer-gpu-b16 --results-dir "$OUT"
  # Performer's bf16 prefill (features stored in bf16, chunk states and their prefix in one tensor-core
  # pass) at batch 16, where its bytes are the cost; batch 1, where the pass's L/64 dependent chunk
  # steps are, is in the default matrix above.
  step "performer bf16 prefill, batch 16, L 8192, m 256"
  check ab run --mode performer --device cuda --batch 16 --sequence-lengths 8192 --phase prefill --features 256 \
    --warmup 3 --repeats 10 --timing cuda_events --run-label "${LABEL}-performer-prefill-b16" \
    --workload-id arch-performer-gpu-prefill-b16 --results-dir "$OUT"
  # Mamba's two prefill kernels side by side: the warp scan and the thread per (channel, 4 state
  # entries), estimated at 15 and 10.2 issue slots per element (0.48 / 0.33 ms at B16 L8192 N 16),
  # `auto`'s choice at N 8 and 16 until this run measures them. Batch 1 runs their split paths.
  step "mamba_scan, batch 1, L 512/2048/8192 (default matrix), --scan-kernel lane,entry (the split paths)"
  check ab run --mode mamba_scan --device cuda --warmup 3 --repeats 10 --scan-kernel lane,entry \
    --run-label "${LABEL}-mamba-b1" --workload-id arch-mamba-scan-gpu-b1 --results-dir "$OUT"
  step "mamba_scan, batch 16, L 8192, decode + prefill, --scan-kernel lane,entry"
  check ab run --mode mamba_scan --device cuda --batch 16 --sequence-lengths 8192 --warmup 3 --repeats 20 \
    --scan-kernel lane,entry --run-label "${LABEL}-mamba-b16" --workload-id arch-mamba-scan-gpu-b16 \
    --results-dir "$OUT"
  step "mamba_scan, batch 16, L 8192, N 8, decode + prefill, --scan-kernel lane,entry"
  check ab run --mode mamba_scan --device cuda --batch 16 --sequence-lengths 8192 --state-size 8 --warmup 3 \
    --repeats 20 --scan-kernel lane,entry --run-label "${LABEL}-mamba-b16-n8" --workload-id arch-mamba-scan-gpu-b16-n8 \
    --results-dir "$OUT"

  [ "$PLAN" = 1 ] && return
  step "conformance --device cuda (every mechanism with CUDA kernels; fp32 and bf16)"
  CONF="$BUILD/conformance-gpu"
  rm -rf "$CONF"
  # Every mechanism whose `list` entry names the cuda backend, so a new GPU mechanism is checked here
  # without an edit to this script.
  cuda_mechanisms=$("$BIN" list --json | python3 -c '
import json, sys
print(" ".join(m["id"] for m in json.load(sys.stdin)["mechanisms"] if "cuda" in m["backends"]))')
  echo "mechanisms with CUDA kernels: $cuda_mechanisms"
  for mechanism in $cuda_mechanisms; do
    length=200; [ "$mechanism" = mamba ] && length=2100  # past several 256-token scan chunks, the last one partial
    LIMIT=60 check "$BIN" conformance --generate "$CONF/$mechanism-in" --mechanism "$mechanism" --batch 2 --heads 4 \
      --length "$length" --dim 32 --features 64 --state-size 16 > /dev/null
    for dtype in float32 bfloat16; do
      LIMIT=60 check "$BIN" conformance --device cuda --mechanism "$mechanism" --dtype "$dtype" --inputs "$CONF/$mechanism-in" \
        --outputs "$CONF/$mechanism-$dtype"
    done
  done
  # mamba's conformance above ran the default prefill kernel (at N 16 the per-entry one): the warp scan too.
  LIMIT=60 check "$BIN" conformance --device cuda --mechanism mamba --dtype bfloat16 --scan-kernel lane \
    --inputs "$CONF/mamba-in" --outputs "$CONF/mamba-bfloat16-lane"
  # softmax_kv's bf16 runs cuDNN's fused attention above where cuDNN works (--softmax-impl auto; the
  # manifest's details.softmax_impl says which ran): its hand kernels too.
  LIMIT=60 check "$BIN" conformance --device cuda --mechanism softmax_kv --dtype bfloat16 --softmax-impl hand \
    --inputs "$CONF/softmax_kv-in" --outputs "$CONF/softmax_kv-bfloat16-hand"
}

landscape_part() {
  # Issue 40's bar: PyTorch SDPA with enable_gqa at 32 query / 8 K/V heads x 128, bf16, one query token
  # (23.0 / 50.5 us at B1 L8192 / L32768, 135 / 490 us at B16 on the 2026-12-04 H200), against the hand
  # kernels and cuDNN; sliding_window at Mistral's W 4096 on the same heads.
  for batch in 1 16; do
    step "grouped-query decode 32/8 x 128, batch $batch, L 8192/32768: softmax_kv hand and cuDNN, sliding_window"
    check ab run --mode landscape --candidates sliding_window --device cuda --phase decode --batch "$batch" \
      --sequence-lengths 8192,32768 --query-heads 32 --kv-heads 8 --head-dim 128 --softmax-impl hand,cudnn \
      --warmup 5 --repeats 30 --run-label "${LABEL}-gqa-b${batch}" --workload-id "arch-gqa-decode-gpu-b${batch}" \
      --results-dir "$OUT"
  done
  # Every mechanism on the GPU, decode and prefill at B1 (8 heads: the host's fp64 checks are cheap), then
  # issue 41's cells: bf16 prefill at B16 H8 d64 L8192, where fla's numbers are. One length, few
  # repeats: each row's fp64 check runs on the host, O(L d^2) per head for the fixed-state mechanisms
  # (performer, O(L m d) per head, is measured at B16 in the core part and left out here).
  # retnet, mamba2 and linear_attention run both state passes of their bf16 prefill (--state-pass
  # fused,three_kernel: one arm each) at B16 here and at B1 below, so that the two runs decide `auto`'s
  # rule, an estimate until then (fused where its grid is one wave covering the SMs: B16, not B1).
  step "landscape, every mechanism, batch 1, H 8 x 64, L 8192, decode + prefill"
  check ab run --mode landscape --device cuda --phase decode,prefill --batch 1 --sequence-lengths 8192 \
    --warmup 3 --repeats 20 --run-label "${LABEL}-landscape-b1" --workload-id arch-landscape-gpu-b1 --results-dir "$OUT"
  step "landscape prefill, batch 16, H 8 x 64, L 8192 (issue 41's cells)"
  check ab run --mode landscape --device cuda --phase prefill --batch 16 --sequence-lengths 8192 \
    --candidates linear_attention,mamba,mamba2,retnet,gated_deltanet,rwkv4,rwkv6,rwkv7,sliding_window \
    --state-pass fused,three_kernel \
    --warmup 2 --repeats 10 --timing cuda_events --run-label "${LABEL}-landscape-prefill-b16" \
    --workload-id arch-landscape-gpu-prefill-b16 --results-dir "$OUT"
  # The peers right after the cells they are compared with, before the extra steps below: a step that
  # overruns its time limit must not cost the lease the peers' numbers.
  if [ "$PLAN" != 1 ]; then
    step "peers in the same lease (scripts/device-peers.py --quick: PyTorch SDPA, flash-linear-attention)"
    LIMIT=300 check bash -c "python3 '$ROOT/scripts/device-peers.py' --quick > '$OUT/peers.jsonl'"
  fi
  # Issue 41's decode kernels (one fused step, the state read and written once) at batch 16, and RWKV-6's
  # chunked prefill at head_dim 128, where its shared memory now allows two output blocks per SM.
  step "fixed-state decode at batch 16, H 8 x 64, L 8192: retnet, gated_deltanet, rwkv4, rwkv6, rwkv7"
  check ab run --mode landscape --candidates retnet,gated_deltanet,rwkv4,rwkv6,rwkv7 --device cuda --phase decode \
    --batch 16 --sequence-lengths 8192 --warmup 10 --repeats 50 --run-label "${LABEL}-fixed-decode-b16" \
    --workload-id arch-fixed-state-decode-gpu-b16 --results-dir "$OUT"
  # Issue 41's second delta-rule cell (fla's chunk_gated_delta_rule 5.78 ms at B16 L32768 on the
  # 2026-12-04 H200; RWKV-7 is asked within 1.5x of it): the double-buffered passes' 512-step walks.
  step "gated_deltanet, rwkv7 bf16 prefill, batch 16, H 8 x 64, L 32768"
  check ab run --mode landscape --candidates gated_deltanet,rwkv7 --device cuda --phase prefill --batch 16 \
    --sequence-lengths 32768 --warmup 2 --repeats 5 --timing cuda_events --run-label "${LABEL}-delta-rule-prefill-l32k" \
    --workload-id arch-delta-rule-gpu-prefill-l32k --results-dir "$OUT"
  step "scalar-decay bf16 prefill, both state passes, batch 1, H 8 x 64, L 8192: retnet, mamba2, linear_attention"
  check ab run --mode landscape --candidates retnet,mamba2,linear_attention --device cuda --phase prefill --batch 1 \
    --sequence-lengths 8192 --state-pass fused,three_kernel --warmup 3 --repeats 20 --timing cuda_events \
    --run-label "${LABEL}-state-pass-b1" --workload-id arch-scalar-decay-state-pass-gpu-b1 --results-dir "$OUT"
  step "rwkv6 chunked prefill at head_dim 128, batch 16, L 8192"
  check ab run --mode landscape --candidates rwkv6 --device cuda --phase prefill --batch 16 --head-dim 128 \
    --sequence-lengths 8192 --warmup 3 --repeats 10 --timing cuda_events --run-label "${LABEL}-rwkv6-chunk-d128" \
    --workload-id arch-rwkv6-chunk-gpu-d128 --results-dir "$OUT"
  [ "$PLAN" = 1 ] && return
  step "arch-bench beside the peers (scripts/gpu-table.py)"
  check python3 "$ROOT/scripts/gpu-table.py" "$OUT"
}

case "$PART" in
  core) core_part ;;
  landscape) landscape_part ;;
  all) core_part; landscape_part ;;
esac

step "validate"
for file in "$OUT"/*.json; do
  [ -e "$file" ] || continue
  case "$(basename "$file")" in
    preflight_*) check "$BIN" validate "$file" --schema preflight ;;
    *) check "$BIN" validate "$file" --schema result ;;
  esac
done
ls -la "$OUT"
echo "device-check: part $PART done (status $status); results in $OUT"
exit $status
