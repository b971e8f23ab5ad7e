#!/usr/bin/env bash
# bench/e2e.sh — end-to-end encoder timings at real model sizes, on random-weight models
# made by `jepa synth` (same shapes and dtypes as the published GGUFs; the weights' values
# do not change the work done).
#
#   bash bench/e2e.sh [BUILD_DIR] [THREADS] [REPS] [CASE-FILTER]
#
# For every case: REPS runs of `jepa embed --time` (each a fresh process, so the weights
# are paged in every time, as a user's first run would), the median encode time, tokens/s,
# achieved GFLOP/s (matmuls + attention, counted as in cli/cmd_run.c), and the peak RSS
# of the whole process (GNU time). Prints a markdown table; needs an otherwise idle machine
# for meaningful numbers (a busy second core distorts 2-thread timings badly).
set -eu
build=${1:-build}
threads=${2:-2}
reps=${3:-3}
filter=${4:-}
jepa=$build/cli/jepa
models=${JEPA_BENCH_MODELS:-/tmp/jepa-bench-models}
mkdir -p "$models"
[ -x "$jepa" ] || { echo "bench/e2e.sh: $jepa not built" >&2; exit 1; }
command -v /usr/bin/time >/dev/null || { echo "bench/e2e.sh: needs GNU time (apt-get install time)" >&2; exit 1; }

# name | synth arch | dtype | test pattern (frames x h x w)
cases="
vitb384-image|vjepa2_1-vitb-384|f16|1x384x384
vitb384-image|vjepa2_1-vitb-384|f32|1x384x384
vitb384-clip16|vjepa2_1-vitb-384|f16|16x384x384
vitb384-clip16|vjepa2_1-vitb-384|f32|16x384x384
vitl256-clip16|vjepa2-vitl-256|f16|16x256x256
vitl256-clip16|vjepa2-vitl-256|f32|16x256x256
ijepa-vith14|ijepa-vith14-224|f16|1x224x224
lejepa-vits16|lejepa-vits16-224|f16|1x224x224
levjepa-vitl16-clip16|levjepa-vitl16-224|f16|16x224x224
lewm-tiny|lewm-tiny-224|f16|1x224x224
"

echo "| case | dtype | tokens | encode ms (median of $reps) | tokens/s | GFLOP/s | peak RSS MiB |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
echo "$cases" | while IFS='|' read -r name arch dtype pattern; do
    [ -n "$name" ] || continue
    case "$name" in *"$filter"*) ;; *) continue ;; esac
    model=$models/$arch-$dtype.gguf
    [ -f "$model" ] || "$jepa" synth --arch "$arch" --dtype "$dtype" -o "$model" >/dev/null
    times="" rss="" tokens="" gflops=""
    for r in $(seq "$reps"); do
        out=$( { /usr/bin/time -f "rss_kb %M" "$jepa" embed -m "$model" --test-pattern "$pattern" \
                   --pool mean -t "$threads" --time -v; } 2>&1 >/dev/null )
        ms=$(echo "$out" | sed -n 's/.*encode \([0-9.]*\) ms.*/\1/p')
        gflops="$gflops $(echo "$out" | sed -n 's/.*, \([0-9.]*\) GFLOP\/s.*/\1/p')"
        tokens=$(echo "$out" | sed -n 's/.*: \([0-9]*\) tokens (.*/\1/p')
        rss="$rss $(echo "$out" | sed -n 's/^rss_kb \([0-9]*\)/\1/p')"
        times="$times $ms"
    done
    med=$(echo $times | tr ' ' '\n' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    gmed=$(echo $gflops | tr ' ' '\n' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    rmax=$(echo $rss | tr ' ' '\n' | sort -g | tail -1)
    tps=$(awk -v n="$tokens" -v ms="$med" 'BEGIN {printf "%.0f", n / (ms / 1000)}')
    echo "| $name | $dtype | $tokens | $med | $tps | $gmed | $((rmax / 1024)) |"
done
