#!/usr/bin/env bash
# bench/roofline.sh — every encoder of the CPU roofline table (docs/performance.md) at 1
# and N threads against the FMA peak, with its latency and its peak memory.
#
#   bash bench/roofline.sh [BUILD_DIR] [THREADS] [REPS] [CASE-FILTER]
#
# Per case, on a random-weight model of the published shape (`jepa synth`, cached in
# $JEPA_BENCH_MODELS, default /tmp/jepa-bench-models):
#   - `jepa bench encoder --json` (one process): the best of REPS encodes at 1 and at
#     THREADS threads, each as a % of the FMA peak measured between the encodes, the
#     scaling (time at THREADS / time at 1), and the first, warm and after-idle calls;
#   - `jepa embed --test-pattern` under GNU time (a fresh process): peak RSS, against the
#     weights' bytes (the file's tensor data, mapped) and the arena `bench encoder` planned;
#     "over" is what is left: the process's fixed cost, and where the CLI's arena is larger
#     than that one (the clip, written into the arena by jepa_ctx_embed_input, did not fit
#     the room the patch embedding leaves), the difference.
# Prints a markdown table. Needs a machine otherwise idle: on a shared one, compare
# percentages of the same run's peak, never milliseconds across runs.
set -eu
build=${1:-build}
threads=${2:-2}
reps=${3:-3}
filter=${4:-}
jepa=$build/cli/jepa
models=${JEPA_BENCH_MODELS:-/tmp/jepa-bench-models}
mkdir -p "$models"
[ -x "$jepa" ] || { echo "bench/roofline.sh: $jepa not built" >&2; exit 1; }
command -v /usr/bin/time >/dev/null || { echo "bench/roofline.sh: needs GNU time (apt-get install time)" >&2; exit 1; }

# name | synth arch | dtype | frames | size
cases="
lewm-tiny|lewm-tiny-224|f16|1|224
lewm-tiny|lewm-tiny-224|bf16|1|224
lewm-tiny|lewm-tiny-224|f32|1|224
lejepa-vits16|lejepa-vits16-224|f16|1|224
lejepa-vits16|lejepa-vits16-224|bf16|1|224
lejepa-vits16|lejepa-vits16-224|f32|1|224
vitb384-image|vjepa2_1-vitb-384|f16|1|384
vitb384-image|vjepa2_1-vitb-384|bf16|1|384
vitb384-image|vjepa2_1-vitb-384|f32|1|384
ijepa-vith14|ijepa-vith14-224|f16|1|224
vitl256-clip16|vjepa2-vitl-256|f16|16|256
vitb384-clip16|vjepa2_1-vitb-384|f16|16|384
levjepa-vitl16-clip16|levjepa-vitl16-224|f16|16|224
"

json_field() { sed -n "s/.*\"$1\": \"\{0,1\}\([^,\"}]*\).*/\1/p"; }

echo "| case | dtype | tokens | 1 thread ms | % of peak | $threads threads ms | % of peak | scaling | first / warm / after idle ms | weights + arena MiB | peak RSS MiB | over |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
echo "$cases" | while IFS='|' read -r name arch dtype frames size; do
    [ -n "$name" ] || continue
    case "$name-$dtype" in *"$filter"*) ;; *) continue ;; esac
    model=$models/$arch-$dtype.gguf
    [ -f "$model" ] || "$jepa" synth --arch "$arch" --dtype "$dtype" -o "$model" >/dev/null
    j=$("$jepa" bench encoder -m "$model" --frames "$frames" --size "$size" -t "$threads" --reps "$reps" --json)
    f() { echo "$j" | json_field "$1"; }
    rss_kb=$( { /usr/bin/time -f "rss_kb %M" "$jepa" embed -m "$model" --test-pattern "${frames}x${size}x${size}" \
                  --pool mean -t "$threads" -q; } 2>&1 >/dev/null | sed -n 's/^rss_kb \([0-9]*\)/\1/p')
    weights=$("$jepa" info "$model" 2>/dev/null | sed -n "s/^weights .*; \([0-9.]*\) MiB.*/\1/p" | head -1)
    [ -n "$weights" ] || weights=$(awk -v b="$(stat -c %s "$model")" 'BEGIN {printf "%.1f", b / 1048576}')
    awk -v n="$name" -v d="$dtype" -v tok="$(f tokens)" -v t1="$(f t1_best_ms)" -v p1="$(f pct_peak1)" \
        -v tn="$(f tn_best_ms)" -v pn="$(f pct_peakn)" -v sc="$(f scaling)" -v fi="$(f first_ms)" \
        -v wa="$(f warm_ms)" -v id="$(f after_idle_ms)" -v ar="$(f arena_mib)" -v w="$weights" -v rss="$rss_kb" \
        'BEGIN {printf "| %s | %s | %d | %.1f | %.1f %% | %.1f | %.1f %% | %.3f | %.1f / %.1f / %.1f | %.1f + %.1f | %.1f | %+.1f |\n",
                n, d, tok, t1, p1, tn, pn, sc, fi, wa, id, w, ar, rss / 1024, rss / 1024 - w - ar}'
done
