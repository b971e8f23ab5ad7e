#!/usr/bin/env bash
# bench/gpu.sh — everything the CUDA path needs a GPU for, in one run of under 10 minutes:
# GPU kernel tests, GPU-vs-fixture parity, end-to-end parity against the CPU at real model
# sizes, our kernel and end-to-end timings, and the PyTorch / cuBLAS baselines on the same
# GPU. Results go to one folder: logs, JSON lines and summary.md (the tables for
# docs/performance.md).
#
#   bash bench/gpu.sh [OUT_DIR]          (default: $JEPA_GPU_OUT, else $OUT, else gpu-results)
#
# Environment:
#   JEPA_GPU_BUILD   build folder with the CUDA build (default build-gpu). Used as it is
#                    when it holds cli/jepa (e.g. built here and carried to the GPU
#                    machine); otherwise configured and built with meson (needs nvcc).
#   JEPA_GPU_QUICK=1 smoke mode: tiny shapes, no PyTorch end-to-end; for debugging this
#                    script on a machine without a GPU (the GPU steps then report SKIP).
#   JEPA_GPU_PY      python with torch + transformers for the baselines (default python3)
#   JEPA_BENCH_MODELS folder for the random-weight GGUFs (default $OUT_DIR/models)
# Every step has its own time limit and its log in OUT_DIR; a failing step is recorded in
# summary.md and the script goes on, so one run yields everything it can.
set -u
cd "$(dirname "$0")/.."
out=${1:-${JEPA_GPU_OUT:-${OUT:-gpu-results}}}
build=${JEPA_GPU_BUILD:-build-gpu}
quick=${JEPA_GPU_QUICK:-0}
py=${JEPA_GPU_PY:-python3}
mkdir -p "$out"
out=$(cd "$out" && pwd)
models=${JEPA_BENCH_MODELS:-$out/models}
mkdir -p "$models"
summary=$out/summary.md
: >"$summary"
t_start=$(date +%s)

note() { echo "$*" | tee -a "$summary"; }
# step NAME SECONDS CMD...: run with a time limit, log to OUT/NAME.log, record the outcome.
step() {
    local name=$1 limit=$2
    shift 2
    local t0=$(date +%s)
    timeout --kill-after=5 "$limit" "$@" >"$out/$name.log" 2>&1
    local rc=$?
    local verdict=ok
    [ $rc -eq 77 ] && verdict=SKIP
    [ $rc -ne 0 ] && [ $rc -ne 77 ] && verdict="FAIL (exit $rc)"
    [ $rc -eq 124 ] && verdict="FAIL (over ${limit}s)"
    note "- $name: $verdict, $(( $(date +%s) - t0 )) s (log: $name.log)"
    return $rc
}

note "# bench/gpu.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) (commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'))"
note ""
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 ||
  echo "nvidia-smi: not available"; } >"$out/device.txt"
note "device: $(tail -n +2 "$out/device.txt" | head -1)"
note ""
note "## steps"

# ---- build ----
if [ ! -x "$build/cli/jepa" ]; then
    step build 420 bash -c "meson setup '$build' --buildtype=release -Dcuda=enabled && ninja -C '$build'" ||
        { note "no build: stopping"; exit 1; }
fi
jepa=$build/cli/jepa
cmp=$build/tests/models/npy_compare
# a bundle (bench/gpu_bundle.sh) carries the shared libraries it needs in lib/
[ -d "$build/lib" ] && export LD_LIBRARY_PATH=$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# ---- GPU kernel tests and fixture parity (skip with exit 77 without a GPU) ----
for t in device ops gemm attn; do
    step "test_cuda_${t}" 120 "$build/tests/cuda/test_cuda_${t}_gpu"
done
step gpu_parity 180 "$build/tests/cuda/test_gpu_parity_gpu" tests/data

# ---- our kernels ----
if [ "$quick" = 1 ]; then bq=--quick; else bq=; fi
step bench_gpu 240 "$jepa" bench gpu -g 0 --json $bq
grep '^{' "$out/bench_gpu.log" >"$out/bench_gpu.jsonl" 2>/dev/null
# the pipelined matmul (JEPA_CUDA_KERNELS=pipe, not the default yet): f16 / bf16, q8_0 / q4_K
# rows; at M = 577 with the forward's workspace (split-K where its rule splits) and "no split-K"
step bench_gpu_pipe 120 "$jepa" bench gpu -g 0 --json --op matmul --kernel pipe $bq
grep '"kernel":"pipe"' "$out/bench_gpu_pipe.log" >>"$out/bench_gpu.jsonl" 2>/dev/null
# the wgmma matmul (JEPA_CUDA_KERNELS=wgmma, sm_90 only, not the default yet): f16 / bf16 rows
step bench_gpu_wgmma 120 "$jepa" bench gpu -g 0 --json --op matmul --kernel wgmma $bq
grep '"kernel":"wgmma"' "$out/bench_gpu_wgmma.log" >>"$out/bench_gpu.jsonl" 2>/dev/null

# ---- end to end: random-weight models at real sizes (jepa synth), GPU vs CPU ----
# name | synth arch | dtype | test pattern | batch [| JEPA_CUDA_KERNELS: pipe or wgmma, tagged
# dtype+pipe / dtype+wgmma: the rows that decide the default switch of issue 47]
if [ "$quick" = 1 ]; then
    cases="
tiny|vjepa2-tiny|f16|4x64x64|1
tiny|vjepa2-tiny|bf16|4x64x64|2
tiny|vjepa2-tiny|f32|4x64x64|1
tiny|vjepa2-tiny|f32|4x64x64|1|pipe
tiny|vjepa2-tiny|bf16|4x64x64|1|pipe
tiny|vjepa2-tiny|bf16|4x64x64|2|wgmma
"
else
    cases="
vitl256-clip16|vjepa2-vitl-256|f16|16x256x256|1
vitl256-clip16|vjepa2-vitl-256|f16|16x256x256|8
vitl256-clip16|vjepa2-vitl-256|bf16|16x256x256|1
vitl256-clip16|vjepa2-vitl-256|bf16|16x256x256|8
vitl256-clip16|vjepa2-vitl-256|f32|16x256x256|1
vitl256-clip16|vjepa2-vitl-256|f32|16x256x256|1|pipe
vitl256-clip16|vjepa2-vitl-256|bf16|16x256x256|1|pipe
vitl256-clip16|vjepa2-vitl-256|bf16|16x256x256|8|pipe
vitl256-clip16|vjepa2-vitl-256|f16|16x256x256|8|pipe
vitl256-clip16|vjepa2-vitl-256|bf16|16x256x256|1|wgmma
vitl256-clip16|vjepa2-vitl-256|bf16|16x256x256|8|wgmma
vitb384-image|vjepa2_1-vitb-384|f16|1x384x384|1
vitb384-clip16|vjepa2_1-vitb-384|f16|16x384x384|1
vitb384-clip16|vjepa2_1-vitb-384|bf16|16x384x384|1
vitb384-clip16|vjepa2_1-vitb-384|bf16|16x384x384|1|pipe
"
fi
reps=$([ "$quick" = 1 ] && echo 2 || echo 10)
echo "$cases" | while IFS='|' read -r name arch dtype pattern batch kern; do
    [ -n "$name" ] || continue
    gguf=$models/$arch-$dtype.gguf
    [ -f "$gguf" ] || step "synth-$arch-$dtype" 120 "$jepa" synth --arch "$arch" --dtype "$dtype" -o "$gguf" || continue
    tag=$name-$dtype${kern:++$kern}-b$batch
    # GPU timing: --repeat runs the forward that many times in one context and reports
    # the median (the first run, which uploads nothing but may JIT / warm caches, excluded)
    step "e2e-$tag" 120 env ${kern:+JEPA_CUDA_KERNELS=$kern} "$jepa" embed -m "$gguf" -g 0 --test-pattern "$pattern" --batch "$batch" \
        --repeat "$reps" --time -o "$out/gpu-$tag.npy" || continue
    # parity against the CPU path on the same file and input (batch 1 only: one CPU run per
    # file, kept for a row of other kernels on it)
    if [ "$batch" = 1 ]; then
        cpu=$out/cpu-$name-$dtype.npy
        { [ -f "$cpu" ] || step "cpu-$tag" 240 "$jepa" embed -m "$gguf" --test-pattern "$pattern" -o "$cpu"; } &&
            step "parity-$tag" 60 "$cmp" "$out/gpu-$tag.npy" "$cpu" 0.9999 0.01
    fi
    rm -f "$out/gpu-$tag.npy"
done
rm -f "$out"/cpu-*.npy

# ---- block formats: a q8_0 encode with the default kernels (bf16x3) and with the pipelined
# table (JEPA_CUDA_KERNELS=pipe: the integer codes on f16 tensor cores, never run on a GPU
# before), then the two outputs against each other ----
if [ "$quick" = 1 ]; then qn=tiny qa=vjepa2-tiny qp=4x64x64 qb=2; else
    qn=vitl256-clip16 qa=vjepa2-vitl-256 qp=16x256x256 qb=8; fi
gguf=$models/$qa-q8_0.gguf
if [ -f "$gguf" ] || step "synth-$qa-q8_0" 120 "$jepa" synth --arch "$qa" --dtype q8_0 -o "$gguf"; then
    for kern in mma pipe; do
        step "e2e-$qn.$kern-q8_0-b$qb" 120 env JEPA_CUDA_KERNELS=$kern "$jepa" embed -m "$gguf" -g 0 \
            --test-pattern "$qp" --batch "$qb" --repeat "$reps" --time -o "$out/gpu-q8_0-$kern.npy"
    done
    step parity-q8_0-pipe-vs-mma 60 "$cmp" "$out/gpu-q8_0-pipe.npy" "$out/gpu-q8_0-mma.npy" 0.9999 0.01
    rm -f "$out/gpu-q8_0-mma.npy" "$out/gpu-q8_0-pipe.npy"
fi

# ---- PyTorch baselines on the same GPU ----
if [ "$quick" = 1 ]; then
    step torch 300 "$py" bench/gpu_torch.py --smoke --skip-e2e --out "$out/torch.jsonl"
else
    step torch 300 "$py" bench/gpu_torch.py --out "$out/torch.jsonl"
fi

# ---- tables ----
"$py" bench/gpu_report.py "$out" >>"$summary" 2>"$out/report.log" ||
    note "(gpu_report.py failed: see report.log)"
note ""
note "total: $(( $(date +%s) - t_start )) s"
