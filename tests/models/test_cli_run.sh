#!/bin/sh
# test_cli_run.sh — `jepa embed | predict | classify | synth | quantize` end to end on the
# fixtures, batches (--batch, 5-D inputs), -g without a GPU, and their error behaviour (one
# line on stderr, exit 1 for bad files and values, 2 for usage, no output file left behind
# on failure).
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
# --prepack: the same bytes as without (128 tokens: every matmul over 64 rows packs)
expect 0 "embed 4x128x128" jepa embed -q -m "$WORK/syn.gguf" --test-pattern 4x128x128 -o "$WORK/pp0.npy"
expect 0 "embed 4x128x128 --prepack" jepa embed -q -m "$WORK/syn.gguf" --test-pattern 4x128x128 --prepack -o "$WORK/pp1.npy"
cmp -s "$WORK/pp0.npy" "$WORK/pp1.npy" && ok "--prepack: the same bytes" || bad "--prepack: the same bytes"
expect 1 "--prepack on the scalar kernels" jepa embed -m "$WORK/syn.gguf" --test-pattern 4x128x128 --prepack --cpu scalar \
    -o "$WORK/never.npy"
grep -q "pack no weights" "$WORK/err.txt" && [ ! -e "$WORK/never.npy" ] && ok "--prepack --cpu scalar: says why, writes nothing" ||
    bad "--prepack --cpu scalar: says why, writes nothing"

# errors: one line, right exit code, no output left behind
expect 1 "missing model" jepa embed -m "$WORK/nope.gguf" --input-tensor "$V2/input.npy"
expect 1 "missing input" jepa embed -m "$V2/model.gguf" --input-tensor "$WORK/nope.npy"
expect 1 "input of the wrong size" jepa embed -m "$V2/model.gguf" --test-pattern 4x15x64 -o "$WORK/never.npy"
[ ! -e "$WORK/never.npy" ] && ok "no output after a failure" || bad "no output after a failure"
# frames, rows and columns that do not fill a tubelet / patch are dropped, as the reference
# patch embedding drops them (the test pattern is a function of c, t, y, x: the 3x70x67
# pattern cropped is the 2x64x64 one); -v says so
jepa embed -m "$V2/model.gguf" --test-pattern 3x70x67 -v -o "$WORK/ragged.npy" 2>"$WORK/err.txt" &&
    jepa embed -q -m "$V2/model.gguf" --test-pattern 2x64x64 -o "$WORK/cropped.npy" &&
    cmp -s "$WORK/ragged.npy" "$WORK/cropped.npy" &&
    grep -q "the last 1 frame(s), 6 row(s) and 3 column(s) of the 3x70x67 input .* dropped" "$WORK/err.txt" &&
    ok "ragged input: the cropped input's bits, and a note with -v" ||
    { bad "ragged input: the cropped input's bits, and a note with -v"; cat "$WORK/err.txt"; }
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
# numbers are parsed strictly: the whole value, in range (no atoi / sscanf prefixes, no wrap)
M="$V2/model.gguf" X="$V2/input.npy"
expect 2 "--mask-index foo" jepa predict -m "$M" --input-tensor "$X" --ctx "$V2/ctx_ids.npy" --tgt "$V2/tgt_ids.npy" -o "$WORK/p.npy" --mask-index foo
expect 2 "-t 2x" jepa embed -m "$M" --input-tensor "$X" -t 2x
expect 2 "-t 0" jepa embed -m "$M" --input-tensor "$X" -t 0
expect 2 "-k 3.5" jepa classify -m "$M" --input-tensor "$X" -k 3.5
expect 2 "--test-pattern 4294967298x16x16" jepa embed -m "$M" --test-pattern 4294967298x16x16
expect 2 "--test-pattern 4x64x64x" jepa embed -m "$M" --test-pattern 4x64x64x
expect 2 "--test-pattern 4x-64x64" jepa embed -m "$M" --test-pattern 4x-64x64
expect 2 "--repeat 1e3" jepa embed -m "$M" --input-tensor "$X" --repeat 1e3
expect 2 "--frames-per-clip 4frames" jepa embed -m "$M" -i "$DATA/../input/data/e2e.png" --frames-per-clip 4frames
expect 2 "synth --seed banana" jepa synth --arch vjepa2-tiny --seed banana -o "$WORK/s.gguf"
expect 2 "synth --seed -1" jepa synth --arch vjepa2-tiny --seed -1 -o "$WORK/s.gguf"
[ -e "$WORK/s.gguf" ] && bad "a refused synth left a file" || ok "a refused synth wrote nothing"
expect 2 "bench -t 2x" jepa bench kernels -t 2x

# bench encoder on LeVJEPA (block-causal): the token count of Meta's output for the same
# clip shape, and the visible share of query-key pairs against a brute-force count of the
# mask rule (CLS query sees all, a patch query of frame f the patches of frames <= f).
# Not under qemu: its FMA-peak loops take minutes there.
LV=$DATA/levjepa
if [ -z "${MESON_EXE_WRAPPER:-}" ]; then
    expect 0 "bench encoder" jepa bench encoder -m "$LV/model.gguf" --frames 4 --reps 1 -t 2 --json
    want_tok=$(head -c 128 "$LV/tokens.npy" | tr -d '\000' | LC_ALL=C sed -n "s/.*'shape': (\([0-9]*\),.*/\1/p")
    case $want_tok in '' | *[!0-9]*) want_tok=0 ;; esac   # (awk below loops up to it)
    got_tok=$(sed -n 's/.*"tokens": \([0-9]*\),.*/\1/p' "$WORK/out.txt")
    [ -n "$want_tok" ] && [ "$got_tok" = "$want_tok" ] && ok "bench encoder: $got_tok tokens, as Meta's output" ||
        bad "bench encoder tokens ($got_tok, Meta's output has $want_tok)"
    want_vis=$(awk -v n="$want_tok" 'BEGIN { P = 4; c = n - 4 * P; v = 0
        for (i = 0; i < n; i++) for (j = 0; j < n; j++) {
            fi = i < c ? 1e9 : int((i - c) / P); fj = j < c ? 1e9 : int((j - c) / P)
            if (fi >= fj) v++ }
        printf "%.4f", v / (n * n) }')
    got_vis=$(sed -n 's/.*"visible_pairs": \([0-9.]*\).*/\1/p' "$WORK/out.txt")
    [ "$got_vis" = "$want_vis" ] && ok "bench encoder: visible pairs $got_vis" ||
        bad "bench encoder visible pairs ($got_vis, brute force $want_vis)"
    awk -v l="$(sed -n 's/.*"pct_peak1": \([0-9.]*\).*/\1/p' "$WORK/out.txt")" 'BEGIN { exit !(l > 0 && l < 150) }' &&
        ok "bench encoder: a % of peak in (0, 150)" || { bad "bench encoder % of peak"; cat "$WORK/out.txt"; }
else
    echo "skip bench encoder (under $MESON_EXE_WRAPPER)"
fi
expect 2 "bench encoder without -m" jepa bench encoder --reps 1
expect 2 "bench encoder --size 0" jepa bench encoder -m "$LV/model.gguf" --size 0
expect 1 "bench encoder, a missing model" jepa bench encoder -m "$WORK/none.gguf" --reps 1
expect 1 "bench encoder, a size the model refuses" jepa bench encoder -m "$LV/model.gguf" --size 8 --reps 1

# outputs: never an input, never redirected, all or none, no temporary left behind (on
# copies: a binary that fails these must not destroy the repository's fixtures)
cp "$X" "$WORK/in.npy" && cp "$WORK/in.npy" "$WORK/in.orig"
cp "$V2/model.gguf" "$WORK/model.gguf" && M="$WORK/model.gguf"
expect 2 "-o is the input tensor" jepa embed -m "$M" --input-tensor "$WORK/in.npy" -o "$WORK/in.npy"
expect 2 "-o is the input by another path" jepa embed -m "$M" --input-tensor "$WORK/in.npy" -o "$WORK/./in.npy"
ln -f "$WORK/in.npy" "$WORK/in_link.npy"
expect 2 "-o is a hard link to the input" jepa embed -m "$M" --input-tensor "$WORK/in.npy" -o "$WORK/in_link.npy"
cmp -s "$WORK/in.npy" "$WORK/in.orig" && ok "the input is untouched" || bad "the input is untouched"
expect 2 "-o is the model" jepa embed -m "$M" --input-tensor "$X" -o "$M"
expect 2 "--logits-out is the model" jepa classify -m "$M" --input-tensor "$X" --logits-out "$M"
cmp -s "$M" "$V2/model.gguf" && ok "the model is untouched" || bad "the model is untouched"
cp "$V21/model.gguf" "$WORK/model21.gguf"
expect 2 "two outputs, one file" jepa predict -m "$WORK/model21.gguf" --input-tensor "$V21/input_video.npy" \
    --ctx "$V21/h_ctx_ids.npy" --tgt "$V21/h_tgt_ids.npy" -o "$WORK/pc.npy" --ctx-out "$WORK/pc.npy"
expect 2 "quantize onto its input by another path" jepa quantize "$M" "$(dirname "$M")/./$(basename "$M")" --type f16
echo keep >"$WORK/victim"
ln -sf "$WORK/victim" "$WORK/out.npy.tmp"
expect 0 "a symlink planted at OUT.tmp" jepa embed -q -m "$M" --input-tensor "$X" -o "$WORK/out.npy"
[ "$(cat "$WORK/victim")" = keep ] && [ -f "$WORK/out.npy" ] && [ ! -L "$WORK/out.npy" ] &&
    ok "the write did not follow the planted symlink" || bad "the write did not follow the planted symlink"
rm -f "$WORK/big.npy"
expect 1 "an output cut short by the file size limit" sh -c 'ulimit -f 4 && exec "$@"' sh \
    ${MESON_EXE_WRAPPER:-} "$JEPA_BIN" embed -q -m "$M" --input-tensor "$X" -o "$WORK/big.npy"
[ ! -e "$WORK/big.npy" ] && ok "nothing at the output path after EFBIG" || bad "nothing at the output path after EFBIG"
# non-finite values: an input tensor with a NaN is refused; a model whose weights hold a
# NaN gives a non-finite output, which is not written
if command -v python3 >/dev/null; then
    python3 - "$X" "$WORK/nan.npy" "$V2/model.gguf" "$WORK/nanw.gguf" <<'PY'
import struct, sys
x = bytearray(open(sys.argv[1], "rb").read())
x[-4:] = struct.pack("<f", float("nan"))            # the last element of the tensor
open(sys.argv[2], "wb").write(bytes(x))
g = bytearray(open(sys.argv[3], "rb").read())
# enc.norm.bias (f32): find its tensor info, then its data at data_start + offset
def rd(fmt, o): return struct.unpack_from(fmt, g, o)[0]
n_t, n_kv = rd("<Q", 8), rd("<Q", 16)
o = 24
def skip_val(t, o):
    if t in (0, 1, 7): return o + 1
    if t in (2, 3): return o + 2
    if t in (4, 5, 6): return o + 4
    if t in (10, 11, 12): return o + 8
    if t == 8: return o + 8 + rd("<Q", o)
    et, n = rd("<I", o), rd("<Q", o + 4); o += 12
    for _ in range(n): o = skip_val(et, o)
    return o
align = 32
for _ in range(n_kv):
    kl = rd("<Q", o); key = g[o + 8:o + 8 + kl].decode(); o += 8 + kl
    t = rd("<I", o); o += 4
    if key == "general.alignment": align = rd("<I", o)
    o = skip_val(t, o)
target = None
for _ in range(n_t):
    nl = rd("<Q", o); name = g[o + 8:o + 8 + nl].decode(); o += 8 + nl
    nd = rd("<I", o); o += 4 + 8 * nd
    ty, off = rd("<I", o), rd("<Q", o + 4); o += 12
    if name == "enc.norm.bias": target = off
start = (o + align - 1) // align * align
g[start + target:start + target + 4] = struct.pack("<f", float("nan"))
open(sys.argv[4], "wb").write(bytes(g))
PY
    expect 1 "a NaN in the input tensor" jepa embed -m "$M" --input-tensor "$WORK/nan.npy" -o "$WORK/nan_out.npy"
    grep -q "is NaN" "$WORK/err.txt" && ok "the NaN is named" || bad "the NaN is named"
    expect 1 "a NaN weight gives a non-finite output" jepa embed -m "$WORK/nanw.gguf" --input-tensor "$X" -o "$WORK/nan_out.npy"
    grep -q "non-finite weights" "$WORK/err.txt" && ok "the non-finite output is named" || bad "the non-finite output is named"
    grep -qF "output row 0 (token 0), dim 0 is NaN" "$WORK/err.txt" && ok "  by its token and dim" ||
        bad "  by its token and dim: $(cat "$WORK/err.txt")"
    expect 1 "a NaN weight, two images (items)" jepa embed -m "$WORK/nanw.gguf" -i "$DATA/../input/data/e2e.png" \
        -i "$DATA/../input/data/e2e.png" --pool mean -o "$WORK/nan_out.npy"
    grep -qF "output row 0 (item 0 $DATA/../input/data/e2e.png), dim 0 is NaN" "$WORK/err.txt" && ok "  by its item's row, path and dim" ||
        bad "  by its item's row, path and dim: $(cat "$WORK/err.txt")"
    [ ! -e "$WORK/nan_out.npy" ] && ok "no output written for non-finite values" || bad "no output written for non-finite values"
fi
left=$(ls -A "$WORK" | grep -c '^\..*\.[A-Za-z0-9]\{6\}$')
[ "$left" -eq 0 ] && ok "no temporary left in the output directory" || { bad "temporaries left: $left"; ls -A "$WORK"; }

# batches (--batch, 5-D input tensors): stacked outputs, the same values as single runs
expect 0 "embed --test-pattern --batch 3" jepa embed -q -m "$V2/model.gguf" --test-pattern 4x64x64 --batch 3 \
    --pool mean -o "$WORK/b3.npy"
expect 0 "embed --batch 1 on a test pattern is a single run" jepa embed -q -m "$V2/model.gguf" \
    --test-pattern 4x64x64 --batch 1 --pool mean -o "$WORK/b1.npy"
expect 0 "embed single test pattern" jepa embed -q -m "$V2/model.gguf" --test-pattern 4x64x64 --pool mean \
    -o "$WORK/b0.npy"
npy_compare "$WORK/b1.npy" "$WORK/b0.npy" 0.999999 0 && ok "--batch 1 = no --batch" || bad "--batch 1 = no --batch"
expect 0 "embed --repeat" jepa embed -q -m "$V2/model.gguf" --test-pattern 4x64x64 --batch 2 --repeat 2
grep -q "repeat 2: median [0-9.]* ms ([0-9.]* ms per clip, [0-9.]* tokens/s, [0-9.]* GFLOP/s)" "$WORK/err.txt" &&
    ok "--repeat prints the median" || { bad "--repeat prints the median"; cat "$WORK/err.txt"; }
# a [B, C, T, H, W] tensor made of the fixture twice (python3 only to write the .npy)
stack_npy() {   # OUT IN... : same-shape float32 .npy files stacked on a new leading axis
    python3 - "$@" <<'PY'
import ast, struct, sys
def read(path):
    b = open(path, "rb").read()
    major = b[6]
    hl, off = (struct.unpack("<H", b[8:10])[0], 10) if major == 1 else (struct.unpack("<I", b[8:12])[0], 12)
    h = ast.literal_eval(b[off:off + hl].decode("latin1"))
    return h, b[off + hl:]
hs = [read(p) for p in sys.argv[2:]]
h0 = hs[0][0]
assert h0["descr"] == "<f4" and not h0["fortran_order"] and all(h["shape"] == h0["shape"] for h, _ in hs)
shape = (len(hs),) + tuple(h0["shape"])
head = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % (shape,)
head += " " * ((64 - (10 + len(head) + 1) % 64) % 64) + "\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode("latin1"))
    for _, data in hs:
        f.write(data)
PY
}
if command -v python3 >/dev/null && stack_npy "$WORK/x2.npy" "$V2/input.npy" "$V2/input.npy" &&
   stack_npy "$WORK/t2.npy" "$V2/tokens.npy" "$V2/tokens.npy"; then
    expect 0 "embed a 5-D input tensor" jepa embed -q -m "$V2/model.gguf" --input-tensor "$WORK/x2.npy" -o "$WORK/tok2.npy"
    npy_compare "$WORK/tok2.npy" "$WORK/t2.npy" 0.99999 1e-4 && ok "[2, n, D] tokens match Meta's twice" ||
        bad "[2, n, D] tokens match Meta's twice"
    expect 0 "embed a 5-D input tensor, --batch 1" jepa embed -q -m "$V2/model.gguf" --input-tensor "$WORK/x2.npy" \
        --batch 1 --cpu scalar -o "$WORK/tok2a.npy"
    expect 0 "embed a 5-D input tensor, one pass" jepa embed -q -m "$V2/model.gguf" --input-tensor "$WORK/x2.npy" \
        --cpu scalar -o "$WORK/tok2b.npy"
    npy_compare "$WORK/tok2a.npy" "$WORK/tok2b.npy" 0.999999 0 && ok "one pass = one clip per pass (scalar: same bits)" ||
        bad "one pass = one clip per pass (scalar: same bits)"
    expect 1 "classify refuses a 5-D tensor" jepa classify -m "$V2/model.gguf" --input-tensor "$WORK/x2.npy"
else
    echo "skip the 5-D input checks: no python3 to write the .npy"
fi
expect 2 "--batch 2 on one clip" jepa embed -m "$V2/model.gguf" --input-tensor "$V2/input.npy" --batch 2
expect 2 "--batch 0" jepa embed -m "$V2/model.gguf" --test-pattern 4x64x64 --batch 0
expect 2 "--batch is embed's" jepa classify -m "$V2/model.gguf" --test-pattern 4x64x64 --batch 2
expect 2 "-g takes a number" jepa embed -m "$V2/model.gguf" --test-pattern 4x64x64 -g x

# --precision (docs/precision.md): exact is the default's bits; bf16 stays within the bf16
# tier's bar of Meta's tokens (test_tiers has the figures) on every machine (where the CPU
# has no bf16 dot product the tier runs exact); an unknown tier is a usage error naming it
expect 0 "embed --precision exact" jepa embed -q -m "$V2/model.gguf" --input-tensor "$V2/input.npy" -o "$WORK/tok_exact.npy" -t 2 --precision exact
cmp -s "$WORK/tok_exact.npy" "$WORK/tok.npy" && ok "--precision exact = the default, bit for bit" || bad "--precision exact = the default, bit for bit"
expect 0 "embed --precision bf16" jepa embed -q -m "$V2/model.gguf" --input-tensor "$V2/input.npy" -o "$WORK/tok_bf16.npy" -t 2 --precision bf16
npy_compare "$WORK/tok_bf16.npy" "$V2/tokens.npy" 0.9995 5e-2 && ok "bf16 tokens near Meta's" || bad "bf16 tokens near Meta's"
JEPA_PRECISION=bf16 jepa embed -q -m "$V2/model.gguf" --input-tensor "$V2/input.npy" -o "$WORK/tok_env.npy" -t 2 &&
    cmp -s "$WORK/tok_env.npy" "$WORK/tok_bf16.npy" && ok "JEPA_PRECISION=bf16 = --precision bf16" || bad "JEPA_PRECISION=bf16 = --precision bf16"
expect 2 "--precision fp8" jepa embed -m "$V2/model.gguf" --input-tensor "$V2/input.npy" -o "$WORK/never.npy" --precision fp8
grep -q "precision 'fp8'" "$WORK/err.txt" && ok "the error names the tier" || bad "the error names the tier"
expect 2 "classify --precision fp8" jepa classify -m "$V2/model.gguf" --input-tensor "$V2/input.npy" --precision fp8
expect 0 "jepa cpu --precision bf16" jepa cpu --precision bf16
grep -q "^  bf16 .*<- in force" "$WORK/out.txt" && ok "jepa cpu shows the tier in force" || bad "jepa cpu shows the tier in force"
expect 2 "jepa cpu --precision fp8" jepa cpu --precision fp8
if jepa serve --help >/dev/null 2>&1; then   # a build with the server
    expect 2 "serve --precision fp8" jepa serve -m "$V2/model.gguf" --port 0 --precision fp8
else
    echo "skip serve --precision: this build has no server"
fi

# GPUs: without one, -g N fails with one line (exit 1) on every command
if jepa cpu | grep -q "^cuda devices: none"; then
    expect 1 "embed -g 0 without a GPU" jepa embed -m "$V2/model.gguf" --test-pattern 4x64x64 -g 0 -o "$WORK/never.npy"
    grep -q "cuda" "$WORK/err.txt" && ok "the reason names CUDA" || bad "the reason names CUDA"
    [ ! -e "$WORK/never.npy" ] && ok "no output after a failure" || bad "no output after a failure"
    expect 1 "classify -g 1 without a GPU" jepa classify -m "$V2/model.gguf" --test-pattern 4x64x64 --gpu 1
    expect 1 "predict -g 0 without a GPU" jepa predict -m "$V2/model.gguf" --input-tensor "$V2/input.npy" \
        --ctx "$V2/ctx_ids.npy" --tgt "$V2/tgt_ids.npy" -o "$WORK/never.npy" -g 0
    expect 1 "bench gpu without a GPU" jepa bench gpu --quick
else
    echo "skip the no-GPU checks: this machine has a CUDA device"
fi

echo "cli_run: $fails failure(s)"
[ "$fails" -eq 0 ]
