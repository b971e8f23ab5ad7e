#!/usr/bin/env bash
# bench/outputs.sh — write the outputs of `jepa embed | predict | classify` on every
# fixture family and on small synth models of real architectures, at each CPU kernel level
# this machine runs, into one folder, so that two builds (say the commit before a
# refactor and the one after) can be compared byte for byte:
#
#   bash bench/outputs.sh BUILD_DIR OUT_DIR      # once per build
#   bash bench/outputs.sh --compare DIR_A DIR_B  # every file identical? (exit 1 if not)
#
# A cross build runs through MESON_EXE_WRAPPER (e.g. "qemu-aarch64-static -L
# /usr/aarch64-linux-gnu") with JEPA_LEVELS="scalar neon"; JEPA_LEVELS overrides the
# kernel levels, which are otherwise those this CPU has.
# Inputs are the repository's own fixtures (tests/data) and `jepa synth` models written by
# the build under test (synth is deterministic for a seed, and its files are compared too).
set -eu
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--compare" ]; then
    a=$2 b=$3 diffs=0 n=0
    for f in "$a"/*; do
        n=$((n + 1))
        name=$(basename "$f")
        if ! cmp -s "$f" "$b/$name"; then echo "DIFFERS: $name"; diffs=$((diffs + 1)); fi
    done
    for f in "$b"/*; do [ -e "$a/$(basename "$f")" ] || { echo "ONLY IN $b: $(basename "$f")"; diffs=$((diffs + 1)); }; done
    echo "$n files compared, $diffs differ"
    [ $diffs -eq 0 ]
    exit
fi

build=$1 out=$2
jepa() { ${MESON_EXE_WRAPPER:-} "$build/cli/jepa" "$@"; }
mkdir -p "$out"
D=tests/data V2=$D/vjepa2_tiny V21=$D/vjepa2_1_tiny

levels="scalar"
grep -qw avx2 /proc/cpuinfo && levels="$levels avx2"
grep -qw avx512f /proc/cpuinfo && levels="$levels avx512"
[ "$(uname -m)" = aarch64 ] && levels="$levels neon"
levels=${JEPA_LEVELS:-$levels}

jepa synth --arch vjepa2-tiny --dtype f16 -o "$out/synth-vjepa2-tiny-f16.gguf" >/dev/null
jepa synth --arch vjepa2_1-tiny --dtype bf16 -o "$out/synth-vjepa2_1-tiny-bf16.gguf" >/dev/null
jepa synth --arch vjepa2-tiny --dtype q8_0 -o "$out/synth-vjepa2-tiny-q8_0.gguf" >/dev/null
jepa synth --arch lewm-tiny-224 --dtype f16 -o "$out/synth-lewm-f16.gguf" >/dev/null

for cpu in $levels; do
    e() { name=$1; shift; jepa "$@" --cpu "$cpu" -t 2 -q -o "$out/$cpu-$name.npy"; }
    e v2-tokens embed -m "$V2/model.gguf" --input-tensor "$V2/input.npy"
    e v2-mean embed -m "$V2/model.gguf" --input-tensor "$V2/input.npy" --pool mean
    e v2-pred predict -m "$V2/model.gguf" --input-tensor "$V2/input.npy" --ctx "$V2/ctx_ids.npy" \
        --tgt "$V2/tgt_ids.npy" --mask-index 0
    jepa classify -m "$V2/model.gguf" --input-tensor "$V2/input.npy" --cpu "$cpu" -q -k 3 \
        --logits-out "$out/$cpu-v2-logits.npy" >"$out/$cpu-v2-top3.txt"
    e v21-hier embed -m "$V21/model.gguf" --input-tensor "$V21/input_video.npy" --hier
    e v21-image embed -m "$V21/model.gguf" --input-tensor "$V21/input_image.npy"
    e v21-pred predict -m "$V21/model.gguf" --input-tensor "$V21/input_video.npy" \
        --ctx "$V21/h_ctx_ids.npy" --tgt "$V21/h_tgt_ids.npy"
    e hfv2-tokens embed -m "$D/hf_vjepa2/model_f16.gguf" --input-tensor "$D/hf_vjepa2/input.npy"
    e ijepa-tokens embed -m "$D/hf_ijepa/model.gguf" --input-tensor "$D/hf_ijepa/input_84x70.npy"
    e hfvit-cls embed -m "$D/hf_vit/model_ls.gguf" --input-tensor "$D/hf_vit/input_96x80.npy" --pool cls
    e levjepa-tokens embed -m "$D/levjepa/model.gguf" --input-tensor "$D/levjepa/input.npy"
    e lewm-emb embed -m "$D/lewm/model.gguf" --input-tensor "$D/lewm/input.npy" --pool lewm
    e synth-v2-f16 embed -m "$out/synth-vjepa2-tiny-f16.gguf" --test-pattern 4x64x64
    e synth-v21-bf16 embed -m "$out/synth-vjepa2_1-tiny-bf16.gguf" --test-pattern 1x64x64 --hier
    e synth-v2-q8 embed -m "$out/synth-vjepa2-tiny-q8_0.gguf" --test-pattern 2x64x64 --pool mean
    e synth-lewm embed -m "$out/synth-lewm-f16.gguf" --test-pattern 1x224x224 --pool lewm
    # pixel inputs through the CLI's decoders and clip planner
    I=tests/input/data
    e v2-png embed -m "$V2/model.gguf" -i "$I/e2e.png"
    e v21-png embed -m "$V21/model.gguf" -i "$I/e2e.png" --pool mean
    e levjepa-still embed -m "$D/levjepa/model.gguf" -i "$I/e2e.png" --pool cls
    e v2-frames embed -m "$V2/model.gguf" --frames-npy "$I/e2e_frames.npy"
    if jepa embed -m "$V2/model.gguf" "$I/video_601.mp4" -q -o /dev/null 2>/dev/null; then
        e v2-video embed -m "$V2/model.gguf" "$I/video_601.mp4" --frames-per-clip 4 --frame-step 3
        e v2-dense embed -m "$V2/model.gguf" "$I/video_601.mp4" --frames-per-clip 4 --dense --stride 5 --pool mean
        jepa classify -m "$V2/model.gguf" "$I/video_601.mp4" --frames-per-clip 4 --frame-step 2 --num-clips 3 \
            -k 3 --cpu "$cpu" -q --logits-out "$out/$cpu-v2-clips-logits.npy" >"$out/$cpu-v2-clips-top3.txt"
        jepa classify -m "$V2/model.gguf" "$I/video_601.mp4" --frames-per-clip 4 --frame-step 2 --dense --stride 5 \
            -k 1 --cpu "$cpu" -q >"$out/$cpu-v2-dense-top1.txt"
    fi
done
echo "$(ls "$out" | wc -l) files in $out (kernel levels: $levels)"
