#!/bin/sh
# test_cli_gpu.sh — the CLI's GPU path (-g 0) end to end: the jepa binary linked with a
# CUDA back end (in CI: jepa_emu, the SIMT emulator) against Meta's fixtures and against
# the CPU path, batching on the device, `jepa bench gpu`, and a missing device.
# usage: test_cli_gpu.sh JEPA DATA_DIR WORK_DIR NPY_COMPARE
set -u
JEPA_BIN=$1 DATA=$2 WORK=$3/cli_gpu CMP_BIN=$4
jepa() { "$JEPA_BIN" "$@"; }
rm -rf "$WORK" && mkdir -p "$WORK"
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
# run DESCRIPTION CMD... : must succeed
run() {
    what=$1
    shift
    if "$@" >"$WORK/out.txt" 2>"$WORK/err.txt"; then ok "$what"; else bad "$what"; cat "$WORK/err.txt"; fi
}
cmp() { "$CMP_BIN" "$@" >"$WORK/cmp.txt" 2>&1 || { cat "$WORK/cmp.txt"; return 1; }; }
V2=$DATA/vjepa2_tiny V21=$DATA/vjepa2_1_tiny

run "embed -g 0" jepa embed -q -g 0 -m "$V2/model.gguf" --input-tensor "$V2/input.npy" -o "$WORK/tok.npy"
cmp "$WORK/tok.npy" "$V2/tokens.npy" 0.9999 1e-2 && ok "GPU tokens match Meta" || bad "GPU tokens match Meta"
run "embed -g 0 --hier (2.1)" jepa embed -q -g 0 -m "$V21/model.gguf" --input-tensor "$V21/input_video.npy" \
    --hier -o "$WORK/hier.npy"
cmp "$WORK/hier.npy" "$V21/hier_video.npy" 0.9999 1e-2 && ok "GPU hier matches Meta" || bad "GPU hier matches Meta"
run "predict -g 0" jepa predict -q -g 0 -m "$V2/model.gguf" --input-tensor "$V2/input.npy" \
    --ctx "$V2/ctx_ids.npy" --tgt "$V2/tgt_ids.npy" --mask-index 0 -o "$WORK/pred.npy"
cmp "$WORK/pred.npy" "$V2/pred_split.npy" 0.9999 1e-2 && ok "GPU predict matches Meta" || bad "GPU predict matches Meta"
run "classify -g 0" jepa classify -q -g 0 -m "$V2/model.gguf" --input-tensor "$V2/input.npy" \
    --logits-out "$WORK/logits.npy"
cmp "$WORK/logits.npy" "$V2/logits.npy" 0.99999 1e-3 && ok "GPU logits match Meta" || bad "GPU logits match Meta"

# a batch of 3 test patterns on the device against the same batch on the CPU
run "embed -g 0 --batch 3" jepa embed -q -g 0 -m "$V2/model.gguf" --test-pattern 4x64x64 --batch 3 \
    --repeat 2 --time -o "$WORK/gb.npy"
grep -q "repeat 2: median" "$WORK/err.txt" && ok "--repeat prints the median" || bad "--repeat prints the median"
run "embed --batch 3 (CPU)" jepa embed -q -m "$V2/model.gguf" --test-pattern 4x64x64 --batch 3 -o "$WORK/cb.npy"
cmp "$WORK/gb.npy" "$WORK/cb.npy" 0.9999 1e-2 && ok "GPU batch matches CPU batch" || bad "GPU batch matches CPU batch"

# block-format weights on the device (gemm.cu decodes them to the f32 the CPU decodes):
# the same file quantized by jepa quantize, the GPU against the CPU
for qt in q8_0 q4_0 q5_1; do
    run "quantize $qt" jepa quantize "$V2/model.gguf" "$WORK/$qt.gguf" --type $qt
    run "embed -g 0 ($qt)" jepa embed -q -g 0 -m "$WORK/$qt.gguf" --input-tensor "$V2/input.npy" -o "$WORK/g_$qt.npy"
    run "embed ($qt, CPU)" jepa embed -q -m "$WORK/$qt.gguf" --input-tensor "$V2/input.npy" -o "$WORK/c_$qt.npy"
    cmp "$WORK/g_$qt.npy" "$WORK/c_$qt.npy" 0.9999 1e-2 && ok "GPU $qt matches CPU $qt" || bad "GPU $qt matches CPU $qt"
done

# the benchmark harness (smoke shapes) and its JSON lines
run "bench gpu --quick" jepa bench gpu -g 0 --quick --json
[ "$(grep -c '"tflops"' "$WORK/out.txt")" -ge 4 ] && ok "bench gpu prints JSON rows" || bad "bench gpu prints JSON rows"
run "bench gpu --kernel pipe" jepa bench gpu -g 0 --quick --json --op matmul --kernel pipe
w="bench gpu --kernel pipe: f16, bf16, q8_0, q4_K rows"
[ "$(grep -c '"kernel":"pipe"' "$WORK/out.txt")" -eq 4 ] && ok "$w" || bad "$w"
run "bench gpu --kernel wgmma" jepa bench gpu -g 0 --quick --json --op matmul --kernel wgmma
w="bench gpu --kernel wgmma: f16, bf16, q8_0, q4_K rows"
[ "$(grep -c '"kernel":"wgmma"' "$WORK/out.txt")" -eq 4 ] && ok "$w" || bad "$w"

# a device that does not exist: one line, exit 1, no output file
jepa embed -q -g 7 -m "$V2/model.gguf" --input-tensor "$V2/input.npy" -o "$WORK/none.npy" 2>"$WORK/err.txt"
rc=$?
[ $rc -eq 1 ] && [ "$(wc -l <"$WORK/err.txt")" -eq 1 ] && [ ! -e "$WORK/none.npy" ] &&
    ok "-g 7: one-line error, exit 1" || { bad "-g 7: one-line error, exit 1 (exit $rc)"; cat "$WORK/err.txt"; }

echo "$fails failure(s)"
[ $fails -eq 0 ]
