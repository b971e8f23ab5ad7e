#!/bin/sh
# test_cli_run.sh — `jepa embed | predict | classify | synth | quantize` end to end on the
# fixtures, and their error behaviour (one line on stderr, exit 1 for bad files and
# values, 2 for usage, no output file left behind on failure).
# usage: test_cli_run.sh JEPA DATA_DIR WORK_DIR NPY_COMPARE
set -u
JEPA_BIN=$1 DATA=$2 WORK=$3/cli_run CMP_BIN=$4
# MESON_EXE_WRAPPER (qemu in a cross build) runs the cross-built binaries
jepa() { ${MESON_EXE_WRAPPER:-} "$JEPA_BIN" "$@"; }
npy_compare() { ${MESON_EXE_WRAPPER:-} "$CMP_BIN" "$@"; }
rm -rf "$WORK" && mkdir -p "$WORK"
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
# expect CODE DESCRIPTION CMD... : exit code and, for failures, exactly one stderr line
expect() {
    want=$1 what=$2
    shift 2
    "$@" >"$WORK/out.txt" 2>"$WORK/err.txt"
    rc=$?
    lines=$(wc -l <"$WORK/err.txt")
    if [ "$rc" -ne "$want" ]; then bad "$what (exit $rc, expected $want)"; cat "$WORK/err.txt"; return; fi
    if [ "$want" -ne 0 ] && [ "$lines" -ne 1 ]; then bad "$what ($lines stderr lines, expected 1)"; cat "$WORK/err.txt"; return; fi
    ok "$what"
}
V2=$DATA/vjepa2_tiny V21=$DATA/vjepa2_1_tiny

# embed: tokens against Meta's reference (fixture A)
expect 0 "embed V-JEPA 2 tokens" jepa embed -q -m "$V2/model.gguf" --input-tensor "$V2/input.npy" -o "$WORK/tok.npy" -t 2
npy_compare "$WORK/tok.npy" "$V2/tokens.npy" 0.99999 1e-4 && ok "embed tokens match Meta" || bad "embed tokens match Meta"
# --hier on V-JEPA 2.1 (fixture E) and the image path from a [C, H, W] tensor (fixture F)
expect 0 "embed V-JEPA 2.1 --hier" jepa embed -q -m "$V21/model.gguf" --input-tensor "$V21/input_video.npy" --hier -o "$WORK/hier.npy"
npy_compare "$WORK/hier.npy" "$V21/hier_video.npy" 0.99999 1e-4 && ok "embed --hier matches Meta" || bad "embed --hier matches Meta"
expect 0 "embed V-JEPA 2.1 image" jepa embed -q -m "$V21/model.gguf" --input-tensor "$V21/input_image.npy" -o "$WORK/img.npy"
npy_compare "$WORK/img.npy" "$V21/tokens_image.npy" 0.99999 1e-4 && ok "image path matches Meta" || bad "image path matches Meta"
expect 0 "embed --pool mean" jepa embed -q -m "$V2/model.gguf" --input-tensor "$V2/input.npy" --pool mean -o "$WORK/mean.npy"

# predict: C's split (mask_index 0) from our own encoding of the input
expect 0 "predict split" jepa predict -q -m "$V2/model.gguf" --input-tensor "$V2/input.npy" \
    --ctx "$V2/ctx_ids.npy" --tgt "$V2/tgt_ids.npy" --mask-index 0 -o "$WORK/pred.npy"
npy_compare "$WORK/pred.npy" "$V2/pred_split.npy" 0.99999 1e-4 && ok "predict matches Meta" || bad "predict matches Meta"
expect 0 "predict 2.1 --ctx-out" jepa predict -q -m "$V21/model.gguf" --input-tensor "$V21/input_video.npy" \
    --ctx "$V21/h_ctx_ids.npy" --tgt "$V21/h_tgt_ids.npy" -o "$WORK/p21.npy" --ctx-out "$WORK/c21.npy"
npy_compare "$WORK/p21.npy" "$V21/h_pred.npy" 0.99999 1e-4 && ok "2.1 predict matches Meta" || bad "2.1 predict matches Meta"
npy_compare "$WORK/c21.npy" "$V21/h_ctx_out.npy" 0.99999 1e-4 && ok "2.1 ctx-out matches Meta" || bad "2.1 ctx-out matches Meta"

# classify: logits and the top-1 label (fixture D: argmax 1 = c1)
expect 0 "classify" jepa classify -q -m "$V2/model.gguf" --input-tensor "$V2/input.npy" -k 3 --logits-out "$WORK/logits.npy"
head -1 "$WORK/out.txt" | grep -q "^1	.*	c1$" && ok "classify top-1 is c1" || { bad "classify top-1 is c1"; cat "$WORK/out.txt"; }
npy_compare "$WORK/logits.npy" "$V2/logits.npy" 0.99999 1e-4 && ok "logits match Meta" || bad "logits match Meta"

# quantize: f16 weights give tokens close to f32 (weight rounding only), and load again
expect 0 "quantize f16" jepa quantize "$V2/model.gguf" "$WORK/f16.gguf" --type f16
expect 0 "embed f16 file" jepa embed -q -m "$WORK/f16.gguf" --input-tensor "$V2/input.npy" -o "$WORK/tok16.npy"
npy_compare "$WORK/tok16.npy" "$V2/tokens.npy" 0.999 1e-1 && ok "f16 tokens near f32" || bad "f16 tokens near f32"
expect 0 "quantize q8_0" jepa quantize "$V21/model.gguf" "$WORK/q8.gguf" --type q8_0

# synth: a random tiny model runs on a test pattern and says it is random
expect 0 "synth vjepa2-tiny" jepa synth --arch vjepa2-tiny --dtype f16 -o "$WORK/syn.gguf"
expect 0 "info on synth" jepa info "$WORK/syn.gguf"
grep -qi "random" "$WORK/out.txt" && ok "info says random" || bad "info says random"
expect 0 "embed synth test pattern" jepa embed -q -m "$WORK/syn.gguf" --test-pattern 1x64x64 --pool mean -o "$WORK/syn.npy"
expect 0 "classify synth" jepa classify -q -m "$WORK/syn.gguf" --test-pattern 4x64x64

# errors: one line, right exit code, no output left behind
expect 1 "missing model" jepa embed -m "$WORK/nope.gguf" --input-tensor "$V2/input.npy"
expect 1 "missing input" jepa embed -m "$V2/model.gguf" --input-tensor "$WORK/nope.npy"
expect 1 "input of the wrong size" jepa embed -m "$V2/model.gguf" --test-pattern 4x50x64 -o "$WORK/never.npy"
[ ! -e "$WORK/never.npy" ] && ok "no output after a failure" || bad "no output after a failure"
expect 1 "odd frame count" jepa embed -m "$V2/model.gguf" --test-pattern 3x64x64
expect 1 "ids out of range" jepa predict -m "$V2/model.gguf" --input-tensor "$V2/input.npy" \
    --ctx "$V2/ctx_ids.npy" --tgt "$V2/input.npy" -o "$WORK/never.npy"
expect 1 "no predictor" jepa predict -m "$DATA/hf_vit/model.gguf" --test-pattern 1x64x64 --ctx "$V2/ctx_ids.npy" --tgt "$V2/tgt_ids.npy" -o "$WORK/never.npy"
expect 1 "no head" jepa classify -m "$V21/model.gguf" --input-tensor "$V21/input_video.npy"
expect 1 "output in a missing folder" jepa embed -m "$V2/model.gguf" --input-tensor "$V2/input.npy" -o "$WORK/no/such/dir.npy"
mkfifo "$WORK/fifo"
expect 1 "synth refuses to replace a FIFO" jepa synth --arch vjepa2-tiny -o "$WORK/fifo"
[ -p "$WORK/fifo" ] && ok "the FIFO is still a FIFO" || bad "the FIFO is still a FIFO"
expect 2 "unknown option" jepa embed -m "$V2/model.gguf" --frobnicate
expect 2 "no input" jepa embed -m "$V2/model.gguf"
expect 2 "--pool cls without CLS" jepa embed -m "$V2/model.gguf" --input-tensor "$V2/input.npy" --pool cls
expect 2 "unknown cpu" jepa embed -m "$V2/model.gguf" --input-tensor "$V2/input.npy" --cpu z80

echo "cli_run: $fails failure(s)"
[ "$fails" -eq 0 ]
