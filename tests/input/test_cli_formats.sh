#!/bin/sh
# test_cli_formats.sh — `jepa embed` on the still-image formats of input/image.c: the
# decoder goes by the file's bytes, so `-i FILE` and a positional FILE give byte-identical
# outputs for every format; a missing file and a file that is no image or video get one
# message whichever way they are named; --exif-rotate turns an EXIF-oriented JPEG (and
# leaves orientation 1 alone). The pixels themselves are checked against PIL by
# test_formats.c.
# usage: test_cli_formats.sh JEPA FORMATS_DIR FIXTURES_DIR WORK_DIR
set -u
JEPA=$1 D=$2 FIX=$3 WORK=$4/cli_formats
. "$(dirname "$0")/../cli_prelude.sh"
M=$FIX/vjepa2_tiny/model.gguf
run() { jepa embed -m "$M" "$@" 2>"$WORK/err.txt"; }
for f in bmp_p8.bmp gif_p_trns.gif tga_rgba_rle.tga tif_rgb_tiff_lzw.tif jpeg_cmyk.jpg; do
    if run -i "$D/$f" -o "$WORK/a.npy" >/dev/null; then
        if run "$D/$f" -o "$WORK/b.npy" >/dev/null && cmp -s "$WORK/a.npy" "$WORK/b.npy"; then
            ok "$f: -i and positional give the same bytes"
        else
            bad "$f: positional differs from -i ($(cat "$WORK/err.txt"))"
        fi
    elif grep -q "this build has no" "$WORK/err.txt"; then
        ok "$f: not in this build: $(cat "$WORK/err.txt")"
    else
        bad "$f: -i failed: $(cat "$WORK/err.txt")"
    fi
done
# one message for a missing file, whichever way it is named
run -i "$WORK/none.bmp" -o "$WORK/x.npy"; rc1=$?; m1=$(cat "$WORK/err.txt")
run "$WORK/none.bmp" -o "$WORK/x.npy"; rc2=$?; m2=$(cat "$WORK/err.txt")
if [ "$rc1" -eq 1 ] && [ "$rc2" -eq 1 ] && [ "$m1" = "$m2" ] && [ "$m1" = "jepa: $WORK/none.bmp: no such file" ]; then
    ok "missing file: one message ($m1)"
else
    bad "missing file: '$m1' (exit $rc1) / '$m2' (exit $rc2)"
fi
# a text file is neither an image nor a video
echo "hello" >"$WORK/notes.txt"
for how in -i positional; do
    if [ "$how" = -i ]; then run -i "$WORK/notes.txt" -o "$WORK/x.npy"; else run "$WORK/notes.txt" -o "$WORK/x.npy"; fi
    rc=$?
    # (a build without video decoding cannot tell a text file from a video it cannot read)
    if [ "$rc" -eq 1 ] && [ "$(wc -l <"$WORK/err.txt")" -eq 1 ] &&
        { grep -q "not an image or video jepa reads" "$WORK/err.txt" ||
          { jepa --version | grep -qx "video: no" && grep -q "this build has no video decoding" "$WORK/err.txt"; }; }; then
        ok "text file ($how): $(cat "$WORK/err.txt")"
    else
        bad "text file ($how): exit $rc: $(cat "$WORK/err.txt")"
    fi
done
# --exif-rotate: orientation 6 turns the 12x20 picture (another output), 1 leaves it
if run -i "$D/exif6.jpg" -o "$WORK/r0.npy" >/dev/null; then
    run --exif-rotate -i "$D/exif6.jpg" -o "$WORK/r1.npy" >/dev/null || bad "--exif-rotate: $(cat "$WORK/err.txt")"
    cmp -s "$WORK/r0.npy" "$WORK/r1.npy" && bad "--exif-rotate left orientation 6 as stored" || ok "--exif-rotate turns orientation 6"
    run -i "$D/exif1.jpg" -o "$WORK/s0.npy" >/dev/null && run --exif-rotate "$D/exif1.jpg" -o "$WORK/s1.npy" >/dev/null &&
        cmp -s "$WORK/s0.npy" "$WORK/s1.npy" && ok "--exif-rotate leaves orientation 1" || bad "--exif-rotate on orientation 1"
else
    grep -q "this build has no JPEG" "$WORK/err.txt" && ok "no JPEG in this build: --exif-rotate not run" || bad "exif6.jpg: $(cat "$WORK/err.txt")"
fi
echo "cli_formats: $fails failed"
[ "$fails" -eq 0 ]
