#!/bin/sh
# test_cli_input.sh — `jepa embed / classify` on pixel inputs (cli/inputs.c, input/clips.c): every path
# must give outputs byte-identical to --input-tensor on the tensor torchvision / the HF
# processor made from the same pixels (tests/gen/gen_preprocess.py), plus the multi-clip
# and dense runs, the per-family rules and the usage errors (exit 2, one stderr line).
# usage: test_cli_input.sh JEPA INPUT_DATA_DIR FIXTURES_DIR WORK_DIR
set -u
JEPA=$1 D=$2 FIX=$3 WORK=$4/cli_input
# MESON_EXE_WRAPPER (e.g. qemu-aarch64-static -L SYSROOT) runs a cross-built binary; without
# one, a binary this machine cannot execute skips the test (exit 77)
jepa() { ${MESON_EXE_WRAPPER:-} "$JEPA" "$@"; }
rm -rf "$WORK" && mkdir -p "$WORK"
jepa --help >/dev/null 2>&1
[ $? -eq 126 ] && { echo "cannot execute $JEPA here (cross build without an exe wrapper): skipped"; exit 77; }
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
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
expect 0 "two images form a clip" jepa embed -m "$V2" -i "$D/e2e.png" -i "$D/e2e.png" -o "$WORK/a.npy"
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
expect 1 "odd clip for a tubelet-2 model" jepa embed -m "$V2" -i "$D/e2e.png" -i "$D/e2e.png" -i "$D/e2e.png"

echo "$fails failed"
[ "$fails" -eq 0 ]
