#!/bin/sh
# test_cli_input.sh — `jepa embed / classify` on pixel inputs (cli/inputs.c, input/clips.c): every path
# must give outputs byte-identical to --input-tensor on the tensor torchvision / the HF
# processor made from the same pixels (tests/gen/gen_preprocess.py), plus the multi-clip
# and dense runs, items (one output row per image), --as-clip, the per-family rules and the
# usage errors (exit 2, one stderr line).
# usage: test_cli_input.sh JEPA INPUT_DATA_DIR FIXTURES_DIR WORK_DIR NPY_COMPARE
set -u
JEPA=$1 D=$2 FIX=$3 WORK=$4/cli_input NPC=$5
. "$(dirname "$0")/../cli_prelude.sh"
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
same() {   # same DESCRIPTION A.npy B.npy: byte-identical outputs
    if cmp -s "$2" "$3"; then ok "$1"; else bad "$1"; fi
}
V2=$FIX/vjepa2_tiny/model.gguf V21=$FIX/vjepa2_1_tiny/model.gguf LV=$FIX/levjepa/model.gguf

# a PNG: stb_image + jepa_preprocess_rgb == HF VJEPA2VideoProcessor's tensor -> same tokens
expect 0 "embed -i PNG" jepa embed -m "$V2" -i "$D/e2e.png" -o "$WORK/a.npy"
expect 0 "embed its HF tensor" jepa embed -m "$V2" --input-tensor "$D/e2e_png_input.npy" -o "$WORK/b.npy"
same "image tokens == tensor tokens (V-JEPA 2, tubelet filled)" "$WORK/a.npy" "$WORK/b.npy"
expect 0 "embed -i PNG, V-JEPA 2.1" jepa embed -m "$V21" -i "$D/e2e.png" --pool mean -o "$WORK/a.npy"
expect 0 "embed its HF tensor, V-JEPA 2.1" jepa embed -m "$V21" --input-tensor "$D/e2e_png_input.npy" --pool mean -o "$WORK/b.npy"
same "image path of V-JEPA 2.1 == tensor" "$WORK/a.npy" "$WORK/b.npy"
# a PNG or a JPEG named without -i goes through the image decoder, as -i does (in a build
# without FFmpeg too): the same bytes out
expect 0 "embed -i PNG" jepa embed -m "$V2" -i "$D/e2e.png" -o "$WORK/c.npy"
expect 0 "embed PNG as a positional" jepa embed -m "$V2" "$D/e2e.png" -o "$WORK/d.npy"
same "positional PNG == -i PNG" "$WORK/c.npy" "$WORK/d.npy"
if jepa embed -q -m "$V21" -i "$D/jpeg/q90_420.jpg" --pool mean -o "$WORK/c.npy" 2>"$WORK/err.txt"; then
    expect 0 "embed JPEG as a positional" jepa embed -m "$V21" "$D/jpeg/q90_420.jpg" --pool mean -o "$WORK/d.npy"
    same "positional JPEG == -i JPEG" "$WORK/c.npy" "$WORK/d.npy"
elif grep -q "no JPEG decoding" "$WORK/err.txt"; then
    echo "note: this build has no JPEG decoder: the positional JPEG case is not run"
else
    bad "embed -i JPEG"; cat "$WORK/err.txt"
fi
if jepa embed -q -m "$V21" -i "$D/webp/lossy_q80.webp" --pool mean -o "$WORK/c.npy" 2>"$WORK/err.txt"; then
    expect 0 "embed WebP as a positional" jepa embed -m "$V21" "$D/webp/lossy_q80.webp" --pool mean -o "$WORK/d.npy"
    same "positional WebP == -i WebP" "$WORK/c.npy" "$WORK/d.npy"
    expect 0 "a DIR lists its WebP files" jepa embed -q -m "$V21" --pool mean --out-dir "$WORK/many_webp" "$D/webp"
    [ "$(ls "$WORK/many_webp"/*.webp.npy | wc -l)" = 7 ] && ok "7 WebP outputs" || bad "7 WebP outputs"
elif grep -q "no WebP decoding" "$WORK/err.txt"; then
    echo "note: this build has no WebP decoder: the WebP cases are not run"
else
    bad "embed -i WebP"; cat "$WORK/err.txt"
fi
expect 2 "a positional image takes no clip sampling" jepa embed -m "$V2" "$D/e2e.png" --frame-step 2 -o "$WORK/never.npy"
# many inputs per process: --out-dir, one output per input named after it, index.jsonl,
# a bad input reported and skipped (exit 1), --resume
OD=$WORK/many
head -c 100 "$D/e2e.png" >"$WORK/cut.png"   # a truncated PNG: refused with a reason
printf '%s\n' "# a list" "$D/e2e.png" "" "$WORK/cut.png" >"$WORK/list.txt"
many_fails() {   # many_fails DESCRIPTION CMD...: exit 1, one line for the bad input and the count
    what=$1
    shift
    "$@" >"$WORK/out.txt" 2>"$WORK/err.txt"
    rc=$?
    if [ $rc -eq 1 ] && [ "$(wc -l <"$WORK/err.txt")" -eq 2 ] && grep -q "^jepa: .*cut.png: truncated PNG" "$WORK/err.txt" &&
       grep -q "1 failed" "$WORK/err.txt"; then ok "$what"; else bad "$what (exit $rc)"; cat "$WORK/err.txt"; fi
}
# the 20 PNGs of png/ (every colour type), e2e.png, and a truncated PNG
many_fails "embed --out-dir: a directory and a list (the truncated PNG fails)" jepa embed -q -m "$V21" --pool mean \
    --out-dir "$OD" "$D/png" --inputs "$WORK/list.txt"
n_ok=$(grep -c '"status": "ok"' "$OD/index.jsonl" 2>/dev/null)
n_err=$(grep -c '"status": "error"' "$OD/index.jsonl" 2>/dev/null)
[ "$n_ok" = 21 ] && [ "$n_err" = 1 ] && ok "index: 21 ok, 1 error" || bad "index: $n_ok ok, $n_err error"
grep '"status": "error"' "$OD/index.jsonl" | grep -q 'cut.png", "output": "cut.png.npy", "status": "error", "error": ".*truncated PNG' &&
    ok "index names the failure and its reason" || bad "index names the failure and its reason"
[ ! -e "$OD/cut.png.npy" ] && ok "no output for the failed input" || bad "no output for the failed input"
expect 0 "the same image alone" jepa embed -m "$V21" --pool mean -i "$D/png/rgba8.png" -o "$WORK/c.npy"
same "--out-dir output == the single run's" "$OD/rgba8.png.npy" "$WORK/c.npy"
sed -n 2p "$OD/index.jsonl" | grep -q '"source": ".*/png/grey1.png"' && tail -1 "$OD/index.jsonl" |
    grep -q 'cut.png' && ok "index in list order" || bad "index in list order"
rm "$OD/grey8.png.npy"
many_fails "--resume" jepa embed -q -m "$V21" --pool mean --out-dir "$OD" --resume "$D/png" --inputs "$WORK/list.txt"
grep -q "1 written, 1 failed, 20 kept by --resume (2 to run again: 1 not done, 1 failed before)" "$WORK/err.txt" &&
    [ -e "$OD/grey8.png.npy" ] && [ "$(grep -c '"status"' "$OD/index.jsonl")" = 24 ] &&
    ok "--resume keeps the 20 complete outputs and redoes the missing one (2 rows appended)" || bad "--resume"
# --batch N: inputs of one shape are encoded N per forward. Each output must lie within the
# batch bar of tests/models/test_batch.c (row cosine >= 0.9999999, rel <= 1e-5) of the
# one-at-a-time outputs above; the truncated PNG is still reported on its own line
many_fails "--batch 8: the same inputs, 8 per forward" jepa embed -q -m "$V21" --pool mean --batch 8 \
    --out-dir "$WORK/many_b" "$D/png" --inputs "$WORK/list.txt"
nb_bad=0 nb_same=0
for f in "$OD"/*.png.npy; do
    g=$WORK/many_b/$(basename "$f")
    ${MESON_EXE_WRAPPER:-} "$NPC" "$g" "$f" 0.9999999 1e-5 >/dev/null 2>&1 || nb_bad=$((nb_bad + 1))
    cmp -s "$f" "$g" && nb_same=$((nb_same + 1))
done
[ $nb_bad -eq 0 ] && [ "$(ls "$WORK/many_b"/*.png.npy | wc -l)" = 21 ] &&
    ok "--batch 8: 21 outputs within the batch bar of one at a time ($nb_same bit-identical)" ||
    bad "--batch 8: $nb_bad outputs outside the batch bar"
expect 0 "--batch 8 -v" jepa embed -v -m "$V21" --pool mean --batch 8 --out-dir "$WORK/many_bv" "$D/png"
grep -q "^jepa embed: 8 inputs of 1x64x64 in one forward" "$WORK/err.txt" && ok "-v: forwards of 8 inputs" ||
    { bad "-v: forwards of 8 inputs"; cat "$WORK/err.txt"; }
# the two commands that read the token grid of a batch: embed --pool none writes it, classify
# classifies it (the per-clip vectors alone are kept when nothing reads it: --pool mean above)
near() {   # near DESCRIPTION A.npy B.npy: within the batch bar
    if ${MESON_EXE_WRAPPER:-} "$NPC" "$2" "$3" 0.9999999 1e-5 >/dev/null 2>&1; then ok "$1"; else bad "$1"; fi
}
three="$D/png/rgb8.png $D/png/grey8.png $D/png/palette8.png"
# shellcheck disable=SC2086
expect 0 "--batch 4 --pool none: token grids" jepa embed -q -m "$V21" --batch 4 --out-dir "$WORK/many_bt" $three
expect 0 "the token grid of one alone" jepa embed -q -m "$V21" -i "$D/png/grey8.png" -o "$WORK/t1.npy"
near "--batch 4 --pool none: the grid of grey8.png == one at a time" "$WORK/many_bt/grey8.png.npy" "$WORK/t1.npy"
# shellcheck disable=SC2086
expect 0 "classify --batch 4 of three inputs" jepa classify -q -m "$V2" --batch 4 --out-dir "$WORK/many_cb" $three
expect 0 "classify one alone" jepa classify -q -m "$V2" -i "$D/png/palette8.png" --logits-out "$WORK/l1.npy"
near "classify --batch 4: the logits of palette8.png == one at a time" "$WORK/many_cb/palette8.png.logits.npy" "$WORK/l1.npy"
expect 2 "classify --batch with one input" jepa classify -m "$V2" --batch 4 "$D/e2e.png"
expect 0 "classify --out-dir: labels in the index" jepa classify -q -m "$V2" --out-dir "$WORK/many_c" "$D/e2e.png"
grep -q '"label": "c' "$WORK/many_c/index.jsonl" && [ -e "$WORK/many_c/e2e.png.logits.npy" ] &&
    ok "classify index has the top label, logits written" || bad "classify index has the top label, logits written"
expect 2 "two inputs with one file name" jepa embed -m "$V21" --out-dir "$WORK/many_d" "$D/e2e.png" "$D/./e2e.png"
expect 2 "--out-dir with -o" jepa embed -m "$V21" --out-dir "$WORK/many_d" "$D/e2e.png" -o "$WORK/x.npy"
expect 2 "--resume without --out-dir" jepa embed -m "$V21" --resume "$D/e2e.png"
expect 2 "an empty directory" jepa embed -m "$V21" --out-dir "$WORK/many_d" "$WORK/many_c"
# stacked: -o FEATS.npy takes the rows of every output in list order (a uint8 frame
# array named in the list mixes in), FEATS.index.jsonl says which row is whose
npy_data() {   # the data bytes of a .npy (after the 10-byte preamble and its header)
    hl=$(od -An -tu2 -j8 -N2 "$1" | tr -d ' ')
    tail -c +$((10 + hl + 1)) "$1"
}
printf '%s\n' "$D/png/rgb8.png" "$D/e2e_frames.npy" "$D/png/grey8.png" >"$WORK/list3.txt"
expect 0 "stacked: one array for a list" jepa embed -q -m "$V21" --pool mean --inputs "$WORK/list3.txt" -o "$WORK/st.npy"
expect 0 "the same list, one file each" jepa embed -q -m "$V21" --pool mean --inputs "$WORK/list3.txt" --out-dir "$WORK/st_sep"
{ npy_data "$WORK/st_sep/rgb8.png.npy"; npy_data "$WORK/st_sep/e2e_frames.npy.npy"; npy_data "$WORK/st_sep/grey8.png.npy"; } >"$WORK/st_cat.bin"
npy_data "$WORK/st.npy" >"$WORK/st.bin"
cmp -s "$WORK/st.bin" "$WORK/st_cat.bin" && grep -aq "'shape': (3, 64)" "$WORK/st.npy" &&
    ok "stacked rows == the per-input outputs, in list order" || bad "stacked rows == the per-input outputs, in list order"
sed -n 3p "$WORK/st.index.jsonl" | grep -q '"source": ".*e2e_frames.npy", "output": ".*st.npy", "row": 1, "rows": 1, "status": "ok"' &&
    [ ! -e "$WORK/st.npy.parts" ] && ok "stacked index: row and row count; the parts removed" ||
    { bad "stacked index: row and row count; the parts removed"; cat "$WORK/st.index.jsonl"; }
printf '%s\n' "$D/png/rgb8.png" "$WORK/cut.png" >"$WORK/list4.txt"
many_fails "stacked with a bad input" jepa embed -q -m "$V21" --pool mean --inputs "$WORK/list4.txt" -o "$WORK/st4.npy"
grep -aq "'shape': (1, 64)" "$WORK/st4.npy" && [ -e "$WORK/st4.npy.parts/rgb8.png.npy" ] &&
    grep -q '"source": ".*cut.png", "output": null, "status": "error"' "$WORK/st4.index.jsonl" &&
    ok "stacked with a failure: the good rows, the parts kept for --resume" || bad "stacked with a failure: the good rows, the parts kept for --resume"
mkdir -p "$WORK/inout" && cp "$D/png/rgb8.png" "$WORK/inout/" && cp "$D/e2e_frames.npy" "$WORK/inout/rgb8.png.npy"
expect 2 "an output that would replace an input" jepa embed -m "$V21" --out-dir "$WORK/inout" "$WORK/inout/rgb8.png" \
    "$WORK/inout/rgb8.png.npy"
expect 2 "the output directory is an input directory" jepa embed -m "$V21" --out-dir "$WORK/inout" "$WORK/inout"
expect 0 "two images form a clip with --as-clip" jepa embed -m "$V2" --as-clip -i "$D/e2e.png" -i "$D/e2e.png" -o "$WORK/a.npy"
grep -aq "'shape': (16, 128)" "$WORK/a.npy" && ok "two images: one tubelet, 1x4x4 tokens" || bad "two images: one tubelet, 1x4x4 tokens"

# uint8 frames
expect 0 "embed --frames-npy" jepa embed -m "$V2" --frames-npy "$D/e2e_frames.npy" -o "$WORK/a.npy"
expect 0 "embed its HF tensor" jepa embed -m "$V2" --input-tensor "$D/e2e_frames_input.npy" -o "$WORK/b.npy"
same "frames tokens == tensor tokens" "$WORK/a.npy" "$WORK/b.npy"

# LeVJEPA takes a still as 16 repeated frames: 1 + 16 * 2 * 2 tokens
expect 0 "LeVJEPA still image" jepa embed -m "$LV" -i "$D/e2e.png" -o "$WORK/a.npy"
grep -aq "'shape': (65, 64)" "$WORK/a.npy" && ok "LeVJEPA: 16 repeated frames" || bad "LeVJEPA: 16 repeated frames"

# video: decoded with FFmpeg, sampled with np.linspace -> the frames PyAV gives at those indices
if jepa embed -m "$V2" "$D/video_601.mp4" --frames-per-clip 4 --frame-step 3 -o "$WORK/a.npy" 2>"$WORK/err.txt"; then
    ok "embed VIDEO"
    expect 0 "embed the PyAV frames" jepa embed -m "$V2" --frames-npy "$D/e2e_video_frames.npy" -o "$WORK/b.npy"
    same "video tokens == PyAV frames tokens" "$WORK/a.npy" "$WORK/b.npy"
    expect 0 "--out-dir mixes a video and an image" jepa embed -q -m "$V2" --frames-per-clip 4 --frame-step 3 \
        --out-dir "$WORK/many_v" "$D/video_601.mp4" "$D/e2e.png"
    same "--out-dir video output == the single run's" "$WORK/many_v/video_601.mp4.npy" "$WORK/a.npy"
    expect 0 "--batch 4 with a video and an image (two shapes)" jepa embed -q -m "$V2" --frames-per-clip 4 \
        --frame-step 3 --batch 4 --out-dir "$WORK/many_vb" "$D/video_601.mp4" "$D/e2e.png"
    same "two shapes: each runs alone, the same bytes" "$WORK/many_vb/video_601.mp4.npy" "$WORK/a.npy"
    expect 0 "verbose video prints its frame indices" jepa embed -v -m "$V2" "$D/video_601.mp4" --frames-per-clip 4 --frame-step 3
    grep -q "frames 0 4 8 11$" "$WORK/err.txt" && ok "indices 0 4 8 11" || { bad "indices 0 4 8 11"; cat "$WORK/err.txt"; }
    # three sampled clips: one video-level top-k from the mean softmax, logits per clip
    expect 0 "classify --num-clips 3" jepa classify -m "$V2" "$D/video_601.mp4" --frames-per-clip 4 --frame-step 2 \
        --num-clips 3 -k 3 --logits-out "$WORK/l.npy"
    [ "$(wc -l <"$WORK/out.txt")" -eq 3 ] && ok "video-level top-3" || { bad "video-level top-3"; cat "$WORK/out.txt"; }
    grep -aq "'shape': (3, 7)" "$WORK/l.npy" && ok "per-clip logits [3, 7]" || bad "per-clip logits [3, 7]"
    # dense: 40 frames, windows of 8 every 5 frames + a tail window = 8 clips, top-1 each
    expect 0 "classify --dense --stride 5" jepa classify -m "$V2" "$D/video_601.mp4" --frames-per-clip 4 \
        --frame-step 2 --dense --stride 5 -k 1
    [ "$(wc -l <"$WORK/out.txt")" -eq 8 ] && ok "dense: 8 clips" || { bad "dense: 8 clips"; cat "$WORK/out.txt"; }
    grep -q "^7	32	39	" "$WORK/out.txt" && ok "dense tail clip ends on the last frame" || bad "dense tail clip ends on the last frame"
    expect 0 "embed --dense --pool mean" jepa embed -m "$V2" "$D/video_601.mp4" --frames-per-clip 4 --dense \
        --pool mean -o "$WORK/d.npy"
    grep -aq "'shape': (3, 128)" "$WORK/d.npy" && ok "dense embeddings [3, 128]" || bad "dense embeddings [3, 128]"
    expect 2 "predict refuses several clips" jepa predict -m "$V2" "$D/video_601.mp4" --num-clips 2 \
        --ctx x.npy --tgt y.npy -o z.npy
    expect 1 "missing video" jepa embed -m "$V2" "$WORK/none.mp4"
    expect 1 "not a video" jepa embed -m "$V2" "$D/e2e_png_input.npy"
    # FFmpeg is opened at the first video (runtime/dynlib.c): a libavutil of the right name
    # without its functions, found first through LD_LIBRARY_PATH, is one line and exit 1
    avutil=$(ls /usr/lib/*/libavutil.so.[0-9]* /usr/lib/libavutil.so.[0-9]* 2>/dev/null | head -1)
    avutil=$(basename "${avutil:-none}" | sed 's/^\(libavutil\.so\.[0-9]*\).*/\1/')
    mkdir -p "$WORK/fake_ff"
    if [ -z "${MESON_EXE_WRAPPER:-}" ] && [ "$avutil" != none ] &&
       echo "int jepa_test_fake_avutil;" | ${CC:-cc} -shared -fPIC -x c - -o "$WORK/fake_ff/$avutil" 2>/dev/null; then
        expect 1 "a $avutil without its functions" \
            env LD_LIBRARY_PATH="$WORK/fake_ff" "$JEPA" embed -m "$V2" "$D/video_601.mp4" -o "$WORK/f.npy"
        grep -q "video decoding needs FFmpeg: lib.* \(did not load\|has no av\)" "$WORK/err.txt" &&
            ok "  names FFmpeg's library" || { bad "  names FFmpeg's library"; cat "$WORK/err.txt"; }
        [ ! -e "$WORK/f.npy" ] && ok "  no output file" || bad "  no output file"
    else
        echo "skip the FFmpeg load failure (no libavutil found, no C compiler, or an emulated build)"
    fi
else
    grep -q "no video decoding" "$WORK/err.txt" && ok "video: not built (skipped)" || { bad "embed VIDEO"; cat "$WORK/err.txt"; }
fi

# preprocessing options reach the library: cv2 resize differs, the default does not
expect 0 "--no-antialias" jepa embed -m "$V2" -i "$D/e2e.png" --no-antialias -o "$WORK/c.npy"
expect 0 "--norm sequential --resize-short 64" jepa embed -m "$V2" -i "$D/e2e.png" --norm sequential \
    --resize-short 64 -o "$WORK/s.npy"
expect 0 "embed -i PNG again" jepa embed -m "$V2" -i "$D/e2e.png" -o "$WORK/a.npy"
cmp -s "$WORK/a.npy" "$WORK/c.npy" && bad "--no-antialias changed nothing" || ok "--no-antialias changes the pixels"

# usage errors (exit 2) and bad files (exit 1)
expect 2 "two inputs" jepa embed -m "$V2" -i "$D/e2e.png" --frames-npy "$D/e2e_frames.npy"
expect 2 "tensor and image" jepa embed -m "$V2" -i "$D/e2e.png" --input-tensor "$D/e2e_png_input.npy"
expect 2 "preprocessing a tensor" jepa embed -m "$V2" --input-tensor "$D/e2e_png_input.npy" --no-antialias
expect 2 "sampling an image" jepa embed -m "$V2" -i "$D/e2e.png" --frame-step 2
expect 2 "--stride without --dense" jepa embed -m "$V2" "$D/video_601.mp4" --stride 4
expect 2 "--dense with --num-clips" jepa embed -m "$V2" "$D/video_601.mp4" --dense --num-clips 2
expect 2 "two videos" jepa embed -m "$V2" "$D/video_601.mp4" "$D/video_full.mp4"
expect 2 "bad --frames-per-clip" jepa embed -m "$V2" "$D/video_601.mp4" --frames-per-clip 0
expect 2 "bad --norm" jepa embed -m "$V2" -i "$D/e2e.png" --norm half
expect 2 "-i without a value" jepa embed -m "$V2" -i
expect 1 "missing image" jepa embed -m "$V2" -i "$WORK/none.png"
expect 1 "not an image" jepa embed -m "$V2" -i "$D/manifest.txt"
expect 1 "float frames array" jepa embed -m "$V2" --frames-npy "$D/e2e_png_input.npy"
# three frames for a tubelet of 2: the third is dropped, as the reference's Conv3d drops it
jepa embed -q -m "$V2" --as-clip -i "$D/e2e.png" -i "$D/e2e.png" -i "$D/e2e.png" -o "$WORK/three.npy" &&
    jepa embed -q -m "$V2" --as-clip -i "$D/e2e.png" -i "$D/e2e.png" -o "$WORK/two.npy" &&
    cmp -s "$WORK/three.npy" "$WORK/two.npy" && ok "a 3-frame clip for a tubelet-2 model = its first 2 frames" ||
    bad "a 3-frame clip for a tubelet-2 model = its first 2 frames"

# hostile images (made here, a few bytes each): refused before any pixel is decoded, in
# bounded memory (a 300 MB address-space limit: a decode of the declared size would need
# gigabytes), with one line naming the problem
png_sig='\211PNG\r\n\032\n'
printf "${png_sig}"'\000\000\000\015IHDR\000\000\352\140\000\000\352\140\010\002\000\000\000\000\000\000\000' >"$WORK/bomb.png"
printf 'BM\066\000\000\000\000\000\000\000\066\000\000\000\050\000\000\000\000\020\000\000\000\020\000\000' >"$WORK/a.bmp"
printf 'GIF89a\000\020\000\020\000\000\000' >"$WORK/a.gif"
# a JPEG whose header declares 16x16 and whose scan stops before the end-of-image marker
printf '\377\330\377\300\000\021\010\000\020\000\020\003\001\042\000\002\021\001\003\021\001\377\332\000\014\003\001\000\002\021\003\021\000\077\000\012\012' >"$WORK/cut.jpg"
# a JPEG header declaring 65000 x 65000
printf '\377\330\377\300\000\021\010\375\350\375\350\003\001\042\000\002\021\001\003\021\001\377\331' >"$WORK/huge.jpg"
head -c 100 "$D/e2e.png" >"$WORK/cut.png"
# lim CMD...: run CMD under a 300 MB address-space limit, where the build allows one (an
# ASan build reserves terabytes of shadow address space and cannot start under it: there
# the sizes are still refused first, only without the limit to prove it)
lim() {
    if [ -z "${lim_ok:-}" ]; then
        if sh -c 'ulimit -v 300000 && exec "$@"' sh ${MESON_EXE_WRAPPER:-} "$JEPA" --version >/dev/null 2>&1; then
            lim_ok=1
        else
            lim_ok=0
            echo "note: no address-space limit in this build (sanitizers or emulation); the checks run without it"
        fi
    fi
    if [ "$lim_ok" = 1 ]; then sh -c 'ulimit -v 300000 && exec "$@"' sh "$@"; else "$@"; fi
}
expect 1 "PNG bomb (60000 x 60000 declared in 33 bytes)" lim ${MESON_EXE_WRAPPER:-} "$JEPA" embed -m "$V2" -i "$WORK/bomb.png"
grep -q "larger than" "$WORK/err.txt" && ok "the bomb is refused by its declared size" || bad "the bomb is refused by its declared size"
expect 1 "truncated BMP" jepa embed -m "$V2" -i "$WORK/a.bmp"
grep -q "truncated BMP header" "$WORK/err.txt" && ok "BMP truncation named" || bad "BMP truncation named"
expect 1 "truncated GIF" jepa embed -m "$V2" -i "$WORK/a.gif"
expect 1 "truncated JPEG" jepa embed -m "$V2" -i "$WORK/cut.jpg"
grep -q "truncated JPEG" "$WORK/err.txt" && ok "truncation named" || bad "truncation named"
expect 1 "JPEG header of 65000 x 65000" lim ${MESON_EXE_WRAPPER:-} "$JEPA" embed -m "$V2" -i "$WORK/huge.jpg"
expect 1 "truncated PNG" jepa embed -m "$V2" -i "$WORK/cut.png"

# sizes from a file or an option bounded before anything is allocated: 100000 frames of
# 1x1 pixels (300 KB) would be 5 GB of preprocessed clip
if command -v python3 >/dev/null; then
    python3 -c "import sys; h=\"{'descr': '|u1', 'fortran_order': False, 'shape': (100000, 1, 1, 3), }\"; h += ' ' * (117 - len(h)) + '\\n'; sys.stdout.buffer.write(b'\\x93NUMPY\\x01\\x00' + len(h).to_bytes(2, 'little') + h.encode() + bytes(300000))" >"$WORK/many.npy"
    expect 1 "100000 1x1 frames" lim ${MESON_EXE_WRAPPER:-} "$JEPA" embed -m "$V2" --frames-npy "$WORK/many.npy"
    grep -q "more than 1024 MiB" "$WORK/err.txt" && ok "the clip size is refused first" || bad "the clip size is refused first"
fi
if [ -s "$D/video_601.mp4" ] && jepa embed -m "$V2" "$D/video_601.mp4" -q -o "$WORK/v.npy" 2>/dev/null; then
    expect 1 "a plan of 10^5 clips" lim ${MESON_EXE_WRAPPER:-} "$JEPA" embed -m "$V2" "$D/video_601.mp4" --num-clips 100000 --frames-per-clip 64
    grep -q "plan of more than" "$WORK/err.txt" && ok "the plan size is refused first" || bad "the plan size is refused first"
fi


# the memory ceiling: a tiny model whose file asks for long clips (jepa.enc.n_frames, the
# default clip length) runs a 7 KB video into memory it cannot have (4096 frames: 200 MB of
# clip, 32768 tokens, 520 MB peak RSS without a limit; 8192 frames: 400 MB of clip alone):
# under the 300 MB limit an allocation fails and the run ends with one line and exit 1
# instead of being killed. Only where the limit can be set: without it these would be long
# runs, not refusals.
set_u32() {  # set_u32 IN OUT KEY VALUE: the uint32 value of KEY replaced in place
    python3 - "$@" <<'PY'
import struct, sys
src, dst, key, val = sys.argv[1], sys.argv[2], sys.argv[3].encode(), int(sys.argv[4])
b = bytearray(open(src, "rb").read())
k = struct.pack("<Q", len(key)) + key
i = b.index(k) + len(k)
assert struct.unpack_from("<I", b, i)[0] == 4, "not a uint32 key"
struct.pack_into("<I", b, i + 4, val)
open(dst, "wb").write(bytes(b))
PY
}
lim true >/dev/null
if [ "$lim_ok" = 1 ] && command -v python3 >/dev/null && [ -s "$D/video_601.mp4" ] &&
   jepa embed -m "$V2" "$D/video_601.mp4" -q -o "$WORK/v.npy" 2>/dev/null; then
    for nf in 4096 8192; do
        set_u32 "$V2" "$WORK/frames_$nf.gguf" jepa.enc.n_frames $nf
        rm -f "$WORK/ceil.npy"
        expect 1 "n_frames $nf under a 300 MB limit" lim ${MESON_EXE_WRAPPER:-} "$JEPA" embed -m "$WORK/frames_$nf.gguf" "$D/video_601.mp4" -o "$WORK/ceil.npy"
        grep -Eq "cannot allocate|out of memory" "$WORK/err.txt" && ok "n_frames $nf: the allocation failure is named" || bad "n_frames $nf: the allocation failure is named"
        [ ! -e "$WORK/ceil.npy" ] && ok "n_frames $nf: no output file" || bad "n_frames $nf: no output file"
    done
else
    echo "skip the memory-ceiling checks: no address-space limit, python3 or video decoder in this build"
fi

# ---- inputs are items: each image, named with or without -i, and each row of --images-npy
# gives one output row, on image and video models alike, bit-identical to that image alone;
# --as-clip (images or a DIR) makes one clip, bit-identical to the same pixels as
# --frames-npy; an image-only model refuses a video until its frames are said. Rows are
# compared byte for byte past each .npy header.
check() { if "$@" 2>/dev/null; then ok "$what"; else bad "$what"; fi; }
# npy_data F: the array's bytes (past the version 1 header: 10 bytes + its length)
npy_data() {
    hl=$(od -An -tu2 -j8 -N2 "$1" | tr -d ' ')
    tail -c +$((10 + hl + 1)) "$1"
}
# rows_are DESCRIPTION STACKED.npy ROW0.npy ROW1.npy ...: the stacked array's data is the
# rows' data, in order, byte for byte
rows_are() {
    what=$1 st=$2
    shift 2
    : >"$WORK/rows.bin"
    for f in "$@"; do npy_data "$f" >>"$WORK/rows.bin"; done
    npy_data "$st" >"$WORK/st.bin"
    if [ -s "$WORK/st.bin" ] && cmp -s "$WORK/rows.bin" "$WORK/st.bin"; then ok "$what"; else bad "$what"; fi
}
shape_is() {   # shape_is DESCRIPTION F.npy "(2, 16, 128)"
    if grep -aq "'shape': $3" "$2"; then ok "$1"; else bad "$1 (expected $3)"; head -c 120 "$2"; echo; fi
}
# u8_npy OUT "(N, H, W, 3)" A.npy B.npy ...: a uint8 array of the arrays' data, stacked
u8_npy() {
    out=$1 shape=$2
    shift 2
    dict="{'descr': '|u1', 'fortran_order': False, 'shape': $shape, }"
    pad=$((118 - ${#dict} - 1))
    { printf '\223NUMPY\001\000\166\000%s' "$dict"; printf "%${pad}s\n" ""; for f in "$@"; do npy_data "$f"; done; } >"$out"
}
VIT=$FIX/hf_vit/model_ls.gguf
A=$D/e2e.png B=$D/png/rgb8.png   # 90x120 and 13x17: two sizes, each preprocessed on its own

# a video model (V-JEPA 2), two photos of different sizes: two rows, each the image alone
expect 0 "embed A alone" jepa embed -m "$V2" "$A" -o "$WORK/a.npy"
expect 0 "embed B alone" jepa embed -m "$V2" -i "$B" -o "$WORK/b.npy"
shape_is "one image: no item axis, as before" "$WORK/a.npy" "(16, 128)"
expect 0 "embed A B (positional)" jepa embed -m "$V2" "$A" "$B" -o "$WORK/ab.npy"
shape_is "two images: two rows of tokens" "$WORK/ab.npy" "(2, 16, 128)"
rows_are "two images: each row == the image alone (bit-identical)" "$WORK/ab.npy" "$WORK/a.npy" "$WORK/b.npy"
expect 0 "embed -i A -i B" jepa embed -m "$V2" -i "$A" -i "$B" -o "$WORK/ab_i.npy"
what="-i A -i B == A B"; check cmp -s "$WORK/ab.npy" "$WORK/ab_i.npy"
expect 0 "embed B A --pool mean" jepa embed -m "$V2" "$B" "$A" --pool mean -o "$WORK/ba_mean.npy"
what="  said: for each of 2 items"; check grep -q "for each of 2 items" "$WORK/err.txt"
expect 0 "embed A --pool mean" jepa embed -m "$V2" "$A" --pool mean -o "$WORK/a_mean.npy"
expect 0 "embed B --pool mean" jepa embed -m "$V2" "$B" --pool mean -o "$WORK/b_mean.npy"
shape_is "pooled items: [2, D]" "$WORK/ba_mean.npy" "(2, 128)"
rows_are "pooled rows in the order given" "$WORK/ba_mean.npy" "$WORK/b_mean.npy" "$WORK/a_mean.npy"
expect 0 "embed A B A --batch 3" jepa embed -m "$V2" "$A" "$B" "$A" --batch 3 --pool mean -o "$WORK/aba_b3.npy"
expect 0 "embed A B A one by one" jepa embed -m "$V2" "$A" "$B" "$A" --pool mean -o "$WORK/aba.npy"
what="--batch 3: one forward, the rows within rounding"
check ${MESON_EXE_WRAPPER:-} "$NPC" "$WORK/aba_b3.npy" "$WORK/aba.npy" 0.99999 1e-4
expect 0 "-v says one pass of 3" jepa embed -v -m "$V2" "$A" "$B" "$A" --batch 3 --pool mean -o "$WORK/aba_b3.npy"
what="  B = 3 clips, 3 per forward pass"; check grep -q "B = 3 clips, 3 per forward pass" "$WORK/err.txt"
expect 0 "no -o: one summary line per item" jepa embed -m "$V2" "$A" "$B"
what="  item 0 and item 1 named"
check grep -q "^item 1 .*rgb8.png pooled mean" "$WORK/out.txt"

# --as-clip: the images are the frames of one clip, as -i A -i B was before; the same
# pixels as a uint8 frame array give the same bytes (PIL's pixels of png/*.png are .npy)
C=$D/png/palette8.png
u8_npy "$WORK/frames.npy" "(2, 13, 17, 3)" "$D/png/rgb8.npy" "$D/png/palette8.npy"
expect 0 "--as-clip B C" jepa embed -m "$V2" --as-clip "$B" "$C" -o "$WORK/clip.npy"
expect 0 "--frames-npy [B, C]" jepa embed -m "$V2" --frames-npy "$WORK/frames.npy" -o "$WORK/clip_ref.npy"
shape_is "--as-clip: one clip, one tubelet" "$WORK/clip.npy" "(16, 128)"
what="--as-clip B C == --frames-npy of their pixels (bit-identical)"; check cmp -s "$WORK/clip.npy" "$WORK/clip_ref.npy"
expect 0 "--as-clip -i B -i C" jepa embed -m "$V2" -i "$B" --as-clip -i "$C" -o "$WORK/clip_i.npy"
what="--as-clip with -i == positional"; check cmp -s "$WORK/clip.npy" "$WORK/clip_i.npy"
expect 0 "--as-clip C B" jepa embed -m "$V2" --as-clip "$C" "$B" -o "$WORK/clip_cb.npy"
cmp -s "$WORK/clip.npy" "$WORK/clip_cb.npy" && bad "--as-clip keeps the order (C B != B C)" ||
    ok "--as-clip keeps the order (C B != B C)"
mkdir -p "$WORK/frames_dir" && cp "$C" "$WORK/frames_dir/2.png" && cp "$B" "$WORK/frames_dir/1.png" &&
    echo "not an image" >"$WORK/frames_dir/notes.txt"
expect 0 "--as-clip DIR" jepa embed -m "$V2" --as-clip "$WORK/frames_dir" -o "$WORK/clip_dir.npy"
what="--as-clip DIR: its images by name == --as-clip 1.png 2.png"; check cmp -s "$WORK/clip.npy" "$WORK/clip_dir.npy"

# --images-npy: N items, stacked (also N = 1), each == that image alone
u8_npy "$WORK/images.npy" "(2, 13, 17, 3)" "$D/png/rgb8.npy" "$D/png/palette8.npy"
u8_npy "$WORK/image1.npy" "(1, 13, 17, 3)" "$D/png/rgb8.npy"
expect 0 "embed C alone" jepa embed -m "$V2" "$C" -o "$WORK/c.npy"
expect 0 "--images-npy [2, H, W, 3]" jepa embed -m "$V2" --images-npy "$WORK/images.npy" -o "$WORK/imgs.npy"
rows_are "--images-npy rows == each image alone" "$WORK/imgs.npy" "$WORK/b.npy" "$WORK/c.npy"
expect 0 "--images-npy [1, H, W, 3]" jepa embed -m "$V2" --images-npy "$WORK/image1.npy" -o "$WORK/img1.npy"
shape_is "--images-npy of one image: still stacked" "$WORK/img1.npy" "(1, 16, 128)"

# an image-only model (HF ViT, 17 tokens with the CLS): items work, rows == alone
expect 0 "image model: A alone" jepa embed -m "$VIT" "$A" -o "$WORK/va.npy"
expect 0 "image model: B alone" jepa embed -m "$VIT" "$B" -o "$WORK/vb.npy"
expect 0 "image model: two images" jepa embed -m "$VIT" "$A" "$B" -o "$WORK/vab.npy"
shape_is "image model: [2, 17, 64]" "$WORK/vab.npy" "(2, 17, 64)"
rows_are "image model: rows == each image alone" "$WORK/vab.npy" "$WORK/va.npy" "$WORK/vb.npy"
expect 0 "image model: --pool mean" jepa embed -m "$VIT" "$A" --pool mean -o "$WORK/vm.npy"
what="the mean is of the 16 patch rows, said so"; check grep -q "the mean of 16 patch tokens" "$WORK/err.txt"
expect 2 "image model: --as-clip is refused, naming items" jepa embed -m "$VIT" --as-clip "$A" "$B"
what="  says to give them without --as-clip"; check grep -q "without --as-clip" "$WORK/err.txt"
expect 2 "image model: a frame array is refused, naming --images-npy" jepa embed -m "$VIT" --frames-npy "$WORK/frames.npy"

# classify items: k lines per item, led by its index and path; logits [2, K] == each alone
expect 0 "classify A B" jepa classify -m "$V2" "$A" "$B" -k 2 --logits-out "$WORK/lab.npy"
[ "$(wc -l <"$WORK/out.txt")" -eq 4 ] && [ "$(grep -c "^1	.*rgb8.png	[0-9]*	0\.[0-9]*	" "$WORK/out.txt")" -eq 2 ] &&
    ok "classify items: k = 2 lines each, led by item and path" ||
    { bad "classify items: k = 2 lines each, led by item and path"; cat "$WORK/out.txt"; }
expect 0 "classify A" jepa classify -m "$V2" "$A" --logits-out "$WORK/la.npy"
expect 0 "classify B" jepa classify -m "$V2" "$B" --logits-out "$WORK/lb.npy"
rows_are "classify items: logits rows == each alone" "$WORK/lab.npy" "$WORK/la.npy" "$WORK/lb.npy"
expect 2 "predict takes one clip" jepa predict -m "$V2" "$A" "$B" --ctx "$WORK/x.npy" --tgt "$WORK/y.npy" -o "$WORK/p.npy"

# usage
expect 2 "--as-clip without images" jepa embed -m "$V2" --as-clip --frames-npy "$WORK/frames.npy"
expect 2 "--as-clip with --images-npy" jepa embed -m "$V2" --as-clip --images-npy "$WORK/images.npy"
expect 2 "images and --images-npy" jepa embed -m "$V2" "$A" --images-npy "$WORK/images.npy"
expect 2 "a DIR for predict without --as-clip" jepa predict -m "$V2" "$WORK/frames_dir" --ctx x --tgt y -o p
expect 2 "--as-clip with --out-dir" jepa embed -m "$V2" --as-clip --out-dir "$WORK/od" "$WORK/frames_dir"
expect 1 "--images-npy of float data" jepa embed -m "$V2" --images-npy "$WORK/a.npy"
expect 1 "a bad model path" jepa embed -m "$WORK/none.gguf" "$A"
what="  the path printed once"; check [ "$(grep -o "none.gguf" "$WORK/err.txt" | wc -l)" -eq 1 ]

# a video on an image-only model: refused until the frames are said, then one row each
if jepa embed -q -m "$V2" "$D/video_601.mp4" --frames-per-clip 4 -o "$WORK/v.npy" 2>"$WORK/err.txt"; then
    expect 2 "image model: a video without a frame choice" jepa embed -m "$VIT" "$D/video_601.mp4"
    what="  says how to pick frames"; check grep -q -- "--frames-per-clip 1 --num-clips C" "$WORK/err.txt"
    expect 0 "image model: --frames-per-clip 1 --num-clips 3" jepa embed -m "$VIT" "$D/video_601.mp4" \
        --frames-per-clip 1 --num-clips 3 --pool cls -o "$WORK/vv.npy"
    shape_is "  three frames, three rows" "$WORK/vv.npy" "(3, 64)"
    expect 2 "image model: --frames-per-clip 4" jepa embed -m "$VIT" "$D/video_601.mp4" --frames-per-clip 4
    expect 2 "a video and an image" jepa embed -m "$V2" "$D/video_601.mp4" "$A"
else
    grep -q "no video decoding" "$WORK/err.txt" && echo "note: no video decoding in this build: the video cases are not run" ||
        { bad "embed VIDEO"; cat "$WORK/err.txt"; }
fi

echo "$fails failed"
[ "$fails" -eq 0 ]
