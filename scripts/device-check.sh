#!/usr/bin/env bash
# The one prepared script for a GPU machine (docs/design.md, "GPU checks"; docs/gpu-guide.md):
#   scripts/device-check.sh OUT_DIR
# Runs the binaries built on the CPU machine and carried in .device/prebuilt (scripts/device-bundle.sh)
# when they are there, else builds with CUDA for sm_90 (DEVICE_BUILD=1 forces that); runs the GPU tests (one small case under compute-sanitizer memcheck),
# the preflight of the CUDA profile, the seed's cell-5.2 command under --profile ARCH-CUDA-MECHANISM,
# linear_recurrence at batch 1 and 16 over L = 512, 2048, 8192, 32768 (decode) plus a causal
# prefill, the performer and mamba_scan modes (default matrices at batch 1, and L = 8192 at batch 16),
# softmax_kv prefill with the hand kernels and cuDNN's fused attention side by side (batch 1 and 16),
# and `conformance --device cuda` for every mechanism with CUDA kernels, leaving at most 12 files in
# OUT_DIR: the log, the preflight and the reports (conformance outputs stay in the build folder). Build
# dependencies come from .device/debs (scripts/collect-debs.sh), unpacked into a prefix, because the
# GPU machine has no package registry. Budget: 8 minutes on one H200, build included.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:?usage: scripts/device-check.sh OUT_DIR}"
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
# Runs a command, notes a failure without stopping: every later step still gives evidence.
check() { "$@" || { echo "device-check: FAILED ($?): $*"; status=1; }; }

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

PREBUILT="$ROOT/.device/prebuilt"
if [ -x "$PREBUILT/arch-bench" ] && [ -x "$PREBUILT/arch_bench_gpu_tests" ] && [ "${DEVICE_BUILD:-0}" != 1 ]; then
  # Built on the CPU machine (scripts/device-bundle.sh), carried: no compiler time on the device. The
  # build there already failed on any spill (-Xptxas -warn-spills -Werror) for sm_80 and sm_90.
  step "prebuilt binaries (.device/prebuilt, commit $(cut -c1-12 "$PREBUILT/commit" 2>/dev/null)); DEVICE_BUILD=1 builds here instead"
  mkdir -p "$BUILD"
  BIN="$PREBUILT/arch-bench"
  export LD_LIBRARY_PATH="$PREBUILT/lib:${LD_LIBRARY_PATH:-}"
  step "GPU tests (the prebuilt arch_bench_gpu_tests)"
  check bash -c "'$PREBUILT/arch_bench_gpu_tests' --gtest_brief=1 2>&1 | tail -40; exit \${PIPESTATUS[0]}"
  echo "CPU tests: not run here with prebuilt binaries (CI runs them on the commit above)"
else
  step "configure + build (CUDA sm_90; ptxas resource usage in build-ptxas.txt lines below)"
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DARCH_BENCH_MICRO=OFF -DVALIJSON_INCLUDE_DIR="$PREFIX/usr/include" "${CUDNN_ARGS[@]}" || exit 1
  cmake --build "$BUILD" -j "$(nproc)" > "$BUILD/build.txt" 2>&1 || { tail -60 "$BUILD/build.txt"; exit 1; }
  grep -E "ptxas info *: (Used|Compiling entry)|spill" "$BUILD/build.txt" | grep -B1 -E "Used|spill" | head -80

  step "GPU tests (ctest -L gpu)"
  check bash -c "cd '$BUILD' && ctest -L gpu --output-on-failure -j 1 | tail -40"
  step "CPU tests (the rest of the suite, also on this machine)"
  check bash -c "cd '$BUILD' && ctest -LE gpu --output-on-failure -j '$(nproc)' | tail -15"
fi

if command -v compute-sanitizer >/dev/null; then
  step "compute-sanitizer memcheck on a small decode + prefill"
  check compute-sanitizer --tool memcheck --error-exitcode 9 "$BIN" run --device cuda --sequence-lengths 100,700 \
    --phase decode,prefill --warmup 1 --repeats 3 --batch 2 --run-label memcheck --results-dir "$BUILD" --quiet
fi

cd "$ROOT"
step "devices, backends and kernels"
"$BIN" list
step "preflight ARCH-CUDA-MECHANISM"
check "$BIN" preflight --profile ARCH-CUDA-MECHANISM --json "$OUT/preflight_ARCH-CUDA-MECHANISM_${LABEL}.json"

step "seed cell 5.2 under the CUDA profile (bf16, B=1, L 512/2048/8192, warmup 10, repeats 100)"
check "$BIN" --mode linear_recurrence --output "$OUT/45_linear_recurrent_state_${LABEL}.json" \
  --semantic-id ARCH-RECURRENT-STATE-MECHANISM --workload-id arch-linear-recurrence-v2 --run-label "$LABEL" \
  --profile ARCH-CUDA-MECHANISM --sequence-lengths 512,2048,8192 --query-heads 8 --head-dim 64 \
  --dtype bfloat16 --warmup 10 --repeats 100

for batch in 1 16; do
  step "linear_recurrence decode, batch $batch, L 512..32768 (cuda_events_batched x 10, cold L2)"
  check "$BIN" run --device cuda --batch "$batch" --sequence-lengths 512,2048,8192,32768 --warmup 5 --repeats 50 \
    --run-label "${LABEL}-b${batch}" --workload-id "arch-linear-recurrence-gpu-b${batch}" --results-dir "$OUT"
done

step "linear_recurrence prefill, batch 1, L 2048/8192 (tensor-core bf16 softmax vs chunkwise linear)"
check "$BIN" run --device cuda --phase prefill --sequence-lengths 2048,8192 --warmup 3 --repeats 20 \
  --timing cuda_events --run-label "${LABEL}-prefill" --workload-id arch-linear-recurrence-gpu-prefill \
  --results-dir "$OUT"

# The library baseline against the hand kernels, in one run (issue 39 section 1): softmax_kv prefill,
# bf16, H 8, d 64, with --softmax-impl hand (the baseline arm) and cudnn (a candidate arm); the rows'
# gpu_kernel says what ran and the cuDNN version. About 30 s.
for batch in 1 16; do
  step "softmax_kv prefill hand vs cuDNN, batch $batch, L 2048/8192"
  check "$BIN" run --device cuda --phase prefill --batch "$batch" --sequence-lengths 2048,8192 --softmax-impl hand,cudnn \
    --warmup 3 --repeats 20 --timing cuda_events --run-label "${LABEL}-cudnn-b${batch}" \
    --workload-id "arch-softmax-cudnn-gpu-prefill-b${batch}" --results-dir "$OUT"
done
python3 - "$OUT" <<'PY' || true
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
check "$BIN" run --mode performer --device cuda --warmup 3 --repeats 10 --run-label "${LABEL}-performer-b1" \
  --workload-id arch-performer-gpu-b1 --results-dir "$OUT"
step "performer, batch 16, decode at L 8192, m 256"
check "$BIN" run --mode performer --device cuda --batch 16 --sequence-lengths 8192 --phase decode --features 256 \
  --warmup 3 --repeats 20 --run-label "${LABEL}-performer-b16" --workload-id arch-performer-gpu-b16 --results-dir "$OUT"
step "mamba_scan, batch 1, L 512/2048/8192 (default matrix)"
check "$BIN" run --mode mamba_scan --device cuda --warmup 3 --repeats 10 --run-label "${LABEL}-mamba-b1" \
  --workload-id arch-mamba-scan-gpu-b1 --results-dir "$OUT"
step "mamba_scan, batch 16, L 8192, decode + prefill"
check "$BIN" run --mode mamba_scan --device cuda --batch 16 --sequence-lengths 8192 --warmup 3 --repeats 20 \
  --run-label "${LABEL}-mamba-b16" --workload-id arch-mamba-scan-gpu-b16 --results-dir "$OUT"

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
  check "$BIN" conformance --generate "$CONF/$mechanism-in" --mechanism "$mechanism" --batch 2 --heads 4 \
    --length "$length" --dim 32 --features 64 --state-size 16 > /dev/null
  for dtype in float32 bfloat16; do
    check "$BIN" conformance --device cuda --mechanism "$mechanism" --dtype "$dtype" --inputs "$CONF/$mechanism-in" \
      --outputs "$CONF/$mechanism-$dtype"
  done
done
# softmax_kv's bf16 runs cuDNN's fused attention above where cuDNN works (--softmax-impl auto; the
# manifest's details.softmax_impl says which ran): its hand kernels too.
check "$BIN" conformance --device cuda --mechanism softmax_kv --dtype bfloat16 --softmax-impl hand \
  --inputs "$CONF/softmax_kv-in" --outputs "$CONF/softmax_kv-bfloat16-hand"

step "validate"
for file in "$OUT"/*.json; do
  case "$(basename "$file")" in
    preflight_*) check "$BIN" validate "$file" --schema preflight ;;
    *) check "$BIN" validate "$file" --schema result ;;
  esac
done
ls -la "$OUT"
echo "device-check: done (status $status); results in $OUT"
exit $status
