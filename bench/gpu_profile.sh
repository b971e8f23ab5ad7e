#!/usr/bin/env bash
# bench/gpu_profile.sh — where an encode's time goes on the GPU, in one run of about two
# minutes: for each case, the median of 10 encodes with the tokens downloaded and with only
# the pooled vector downloaded (their difference is the download of [B, N, D] floats),
# and one encode under Nsight Compute timing every kernel (gpu__time_duration, one pass,
# clocks left alone), summed per kernel name. Writes OUT_DIR/profile.md and the logs.
#
#   bash bench/gpu_profile.sh [OUT_DIR]     (default: $OUT, else gpu-profile)
#
# Environment: JEPA_GPU_BUILD (a CUDA build or a bench/gpu_bundle.sh folder, default
# build-gpu), JEPA_BENCH_MODELS (folder for the jepa synth files, default OUT_DIR/models),
# NCU (the ncu binary; default: ncu on the PATH, else the newest under /opt/nvidia).
set -u
cd "$(dirname "$0")/.."
out=${1:-${OUT:-gpu-profile}}
build=${JEPA_GPU_BUILD:-build-gpu}
mkdir -p "$out"
out=$(cd "$out" && pwd)
models=${JEPA_BENCH_MODELS:-$out/models}
mkdir -p "$models"
jepa=$build/cli/jepa
[ -x "$jepa" ] || { echo "gpu_profile.sh: $jepa not built" >&2; exit 1; }
[ -d "$build/lib" ] && export LD_LIBRARY_PATH=$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
ncu=${NCU:-$(command -v ncu || ls -d /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)}
report=$out/profile.md
{
    echo "# bench/gpu_profile.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) (commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'))"
    echo
    echo "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"
    echo "build: $build ($("$jepa" --version 2>&1 | head -1))"
    echo "ncu: ${ncu:-not found}"
} >"$report"

# name | synth arch | dtype | test pattern | batch
cases="
vitl256-clip16|vjepa2-vitl-256|bf16|16x256x256|1
vitl256-clip16|vjepa2-vitl-256|bf16|16x256x256|8
vitb384-image|vjepa2_1-vitb-384|f16|1x384x384|1
"
echo "$cases" | while IFS='|' read -r name arch dtype pattern batch; do
    [ -n "$name" ] || continue
    gguf=$models/$arch-$dtype.gguf
    [ -f "$gguf" ] || timeout 120 "$jepa" synth --arch "$arch" --dtype "$dtype" -o "$gguf" \
        >"$out/synth-$arch-$dtype.log" 2>&1 || { echo "synth $arch $dtype failed" >>"$report"; continue; }
    tag=$name-$dtype-b$batch
    run=("$jepa" embed -m "$gguf" -g 0 --test-pattern "$pattern" --batch "$batch")
    {
        echo
        echo "## $tag"
        echo
        for pool in none mean; do
            timeout 120 "${run[@]}" --pool "$pool" --repeat 10 --time -o "$out/$tag.npy" \
                >"$out/time-$tag-$pool.log" 2>&1
            echo "- --pool $pool: $(grep -m1 'repeat' "$out/time-$tag-$pool.log")"
        done
        rm -f "$out/$tag.npy"
    } >>"$report"
    [ -n "$ncu" ] || continue
    timeout 240 "$ncu" --clock-control none --metrics gpu__time_duration.sum --csv \
        --log-file "$out/ncu-$tag.csv" "${run[@]}" --pool mean -o "$out/$tag.npy" \
        >"$out/ncu-$tag.log" 2>&1 || echo "ncu failed on $tag (exit $?): see ncu-$tag.log" >>"$report"
    rm -f "$out/$tag.npy"
    python3 - "$out/ncu-$tag.csv" >>"$report" 2>&1 <<'EOF'
import csv, re, sys
rows = []
with open(sys.argv[1]) as f:
    lines = [l for l in f if l.startswith('"')]
for r in csv.DictReader(lines):
    if r.get("Metric Name") != "gpu__time_duration.sum":
        continue
    v = float(r["Metric Value"].replace(",", ""))
    unit = r.get("Metric Unit", "ns")
    v *= {"ns": 1e-6, "us": 1e-3, "usecond": 1e-3, "nsecond": 1e-6, "ms": 1.0, "msecond": 1.0}.get(unit, 1e-6)
    name = re.sub(r"^void ", "", re.sub(r"\([^()]*\)$", "", r["Kernel Name"].strip()))
    rows.append((name.replace("(anonymous namespace)::", ""), v))
tot = sum(v for _, v in rows)
print(f"\nncu: {len(rows)} kernels, {tot:.3f} ms of kernel time in all (one encode, kernels serialised)\n")
print("| kernel | launches | ms | share |")
print("| --- | ---: | ---: | ---: |")
agg = {}
for name, v in rows:
    key = name if len(name) < 100 else name[:97] + "..."
    a = agg.setdefault(key, [0, 0.0])
    a[0] += 1
    a[1] += v
for key, (n, v) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
    print(f"| `{key}` | {n} | {v:.3f} | {100 * v / tot:.1f} % |")
EOF
done
cat "$report"
