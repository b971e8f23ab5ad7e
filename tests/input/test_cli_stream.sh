#!/bin/sh
# test_cli_stream.sh — `jepa embed --stream` and `jepa plan --stream` (cli/cmd_stream.c,
# input/video.c's live reader) on FFmpeg's lavfi test source: the windows' vectors are
# byte-identical to `jepa embed --dense` on the same frames written to a file (and a plan to
# `jepa plan --start` on the frame as a PNG), over a pipe, a FIFO and HTTP on loopback; SIGINT
# and SIGTERM stop cleanly with whole records; a silent source hits the read timeout, a FIFO
# nobody writes the open timeout; memory stays bounded on a long stream (ulimit -v).
# usage: test_cli_stream.sh JEPA WORK_DIR
set -u
JEPA=$1 WORK=$2/cli_stream
command -v ffmpeg >/dev/null 2>&1 || { echo "no ffmpeg binary (the lavfi test source): skipped"; exit 77; }
jepa() { ${MESON_EXE_WRAPPER:-} "$JEPA" "$@"; }
rm -rf "$WORK" && mkdir -p "$WORK"
M=$WORK/v2.gguf LW=$WORK/lewm.gguf
jepa synth --arch vjepa2-tiny -o "$M" >/dev/null 2>&1 || { echo "cannot run $JEPA here: skipped"; exit 77; }
if ! jepa embed -m "$M" --stream /dev/null --open-timeout 1 2>"$WORK/err.txt" >/dev/null &&
   grep -q "no video decoding" "$WORK/err.txt"; then
    echo "this build has no video decoding (FFmpeg): skipped"; exit 77
fi
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
check() { if eval "$2"; then ok "$1"; else bad "$1"; [ -s "$WORK/err.txt" ] && head -3 "$WORK/err.txt"; fi; }
# testsrc frames: rawvideo RGB in NUT, a streamable container
src() {   # src FRAMES [ffmpeg output options...]: the test source on stdout
    n=$1; shift
    ffmpeg -nostdin -v error -f lavfi -i testsrc=size=96x80:rate=25 -frames:v "$n" -pix_fmt rgb24 -c:v rawvideo "$@" -f nut -
}
# The data bytes of a .npy (after its header: 10 + the little-endian u16 at bytes 8-9).
npy_data() { tail -c +$(( $(od -An -tu2 -j8 -N2 "$1") + 11 )) "$1"; }
# The data bytes of every .npy of a concatenated stream of records of one size.
npys_data() {   # npys_data STREAM RECORD_BYTES
    : >"$WORK/rows.bin"
    k=0 n=$(( $(wc -c <"$1") / $2 ))
    while [ $k -lt $n ]; do
        tail -c +$(( k * $2 + 1 )) "$1" | head -c "$2" >"$WORK/rec.npy"
        npy_data "$WORK/rec.npy" >>"$WORK/rows.bin"
        k=$((k + 1))
    done
    cat "$WORK/rows.bin"
}
REC=$((128 + 128 * 4))   # one [128] float32 record: a 128-byte header, 512 bytes

# ---- the pipe: windows == --dense on the same frames in a file ----
src 20 >"$WORK/src.nut" 2>"$WORK/err.txt"
jepa embed -q -m "$M" "$WORK/src.nut" --dense --frame-step 1 --stride 2 --pool mean -o "$WORK/dense.npy" 2>"$WORK/err.txt"
src 20 | jepa embed -m "$M" --stream - --stride 2 --format npy >"$WORK/s.npys" 2>"$WORK/err.txt"
check "pipe, npy: exit 0, 9 records" '[ $? -eq 0 ] && [ $(wc -c <"$WORK/s.npys") -eq $((9 * REC)) ]'
npy_data "$WORK/dense.npy" >"$WORK/a.bin"; npys_data "$WORK/s.npys" $REC >"$WORK/b.bin"
check "pipe: 9 windows byte-identical to --dense --stride 2 of the file" 'cmp -s "$WORK/a.bin" "$WORK/b.bin"'
src 20 | jepa embed -m "$M" --stream - --stride 2 >"$WORK/s.jsonl" 2>"$WORK/err.txt"
check "pipe, JSON lines: 9 lines" '[ $(wc -l <"$WORK/s.jsonl") -eq 9 ]'
check "window 2 covers frames 4..7 at 0.16 s" \
    'sed -n 3p "$WORK/s.jsonl" | grep -q "^{\"index\": 2, \"first_frame\": 4, \"last_frame\": 7, \"pts\": 0.160000, \"pts_last\": 0.280000, \"shape\": \[128\], \"embedding\": \["'
if python3 -c "import numpy" 2>/dev/null; then
    check "JSON values == --dense (numpy), np.load reads the npy stream" 'python3 - "$WORK" <<EOF
import json, sys, numpy as np
w = sys.argv[1]
d = np.load(w + "/dense.npy")
j = np.array([json.loads(l)["embedding"] for l in open(w + "/s.jsonl")], dtype=np.float32)
f = open(w + "/s.npys", "rb"); rows = []
while True:
    try: rows.append(np.load(f))
    except EOFError: break
sys.exit(0 if d.shape == j.shape and (d == j).all() and (np.stack(rows) == d).all() else 1)
EOF'
else
    echo "note: no numpy: the JSON values are not compared (the .npy records are)"
fi
# --frame-step 2 --stride 3: windows of 8 frames sampled as --dense samples them; tokens
jepa embed -q -m "$M" "$WORK/src.nut" --dense --frame-step 2 --stride 3 -o "$WORK/dense2.npy" 2>"$WORK/err.txt"
src 20 | jepa embed -m "$M" --stream - --frame-step 2 --stride 3 --pool none --format npy >"$WORK/s2.npys" 2>"$WORK/err.txt"
REC2=$((128 + 32 * 128 * 4))
npy_data "$WORK/dense2.npy" >"$WORK/a.bin"; npys_data "$WORK/s2.npys" $REC2 >"$WORK/b.bin"
check "--frame-step 2 --stride 3 --pool none: 5 windows of tokens == --dense" \
    '[ $(wc -c <"$WORK/s2.npys") -eq $((5 * REC2)) ] && cmp -s "$WORK/a.bin" "$WORK/b.bin"'
src 3 | jepa embed -m "$M" --stream - >"$WORK/s3.jsonl" 2>"$WORK/err.txt"
check "3 frames, fewer than a window: exit 0, nothing written, a note" \
    '[ $? -eq 0 ] && [ ! -s "$WORK/s3.jsonl" ] && grep -q "fewer than one window" "$WORK/err.txt"'

# ---- HTTP on loopback (ffmpeg -listen 1); the client retries until the server is up ----
port=$(( 20000 + $$ % 20000 ))
ffmpeg -nostdin -v error -f lavfi -i testsrc=size=96x80:rate=25 -frames:v 20 -pix_fmt rgb24 -c:v rawvideo \
    -f nut -listen 1 "http://127.0.0.1:$port" >/dev/null 2>&1 &
srv=$!
jepa embed -m "$M" --stream "http://127.0.0.1:$port" --reconnect 6 --stride 2 --format npy -q >"$WORK/h.npys" 2>"$WORK/err.txt"
rc=$?
kill $srv 2>/dev/null; wait $srv 2>/dev/null
npy_data "$WORK/dense.npy" >"$WORK/a.bin"; npys_data "$WORK/h.npys" $REC >"$WORK/b.bin"
check "http://127.0.0.1: exit 0, 9 windows == --dense" '[ $rc -eq 0 ] && cmp -s "$WORK/a.bin" "$WORK/b.bin"'
jepa embed -m "$M" --stream "tcp://127.0.0.1:1" --reconnect 1 --open-timeout 1 -q >/dev/null 2>"$WORK/err.txt"
check "nothing listening, --reconnect 1 -q: exit 1, one line" '[ $? -eq 1 ] && [ $(wc -l <"$WORK/err.txt") -eq 1 ]'

# ---- signals: SIGINT / SIGTERM mid-stream over a FIFO, a real-time source ----
for sig in INT TERM; do
    rm -f "$WORK/fifo"; mkfifo "$WORK/fifo"
    (exec ffmpeg -nostdin -v error -re -f lavfi -i testsrc=size=96x80:rate=25 -t 60 -pix_fmt rgb24 -c:v rawvideo \
        -f nut - >"$WORK/fifo" 2>/dev/null) &
    wpid=$!
    # emptied here, not by the background job's redirection: the poll below must never read
    # a file that is missing yet or the previous signal's records
    : >"$WORK/sig.npys"
    # exec: $! is jepa itself (a shell function in the background would be a subshell)
    (exec ${MESON_EXE_WRAPPER:-} "$JEPA" embed -m "$M" --stream "$WORK/fifo" --format npy) >"$WORK/sig.npys" \
        2>"$WORK/err.txt" &
    jpid=$!
    t=0
    while [ $(wc -c <"$WORK/sig.npys") -lt $((2 * REC)) ] && [ $t -lt 300 ]; do sleep 0.1; t=$((t + 1)); done
    kill -$sig $jpid
    wait $jpid; rc=$?
    kill $wpid 2>/dev/null; wait $wpid 2>/dev/null
    n=$(wc -c <"$WORK/sig.npys")
    check "SIG$sig mid-stream: exit $rc (0), whole records ($n bytes, after $t polls), said on stderr" \
        '[ $rc -eq 0 ] && [ $n -ge $((2 * REC)) ] && [ $((n % REC)) -eq 0 ] && grep -q "stopped by SIG$sig" "$WORK/err.txt"'
done

# ---- timeouts ----
rm -f "$WORK/fifo"; mkfifo "$WORK/fifo"
(src 10; exec sleep 60) >"$WORK/fifo" 2>/dev/null &
wpid=$!
start=$(date +%s)
jepa embed -m "$M" --stream "$WORK/fifo" --read-timeout 1 >"$WORK/to.jsonl" 2>"$WORK/err.txt"
rc=$? took=$(( $(date +%s) - start ))
kill $wpid 2>/dev/null; wait $wpid 2>/dev/null
check "a source that stops sending: exit 1 within the read timeout, one line, its windows written ($took s)" \
    '[ $rc -eq 1 ] && [ $took -lt 20 ] && [ $(wc -l <"$WORK/err.txt") -eq 1 ] && grep -q "nothing received for 1 s" "$WORK/err.txt" && [ $(wc -l <"$WORK/to.jsonl") -eq 2 ]'
rm -f "$WORK/fifo"; mkfifo "$WORK/fifo"
jepa embed -m "$M" --stream "$WORK/fifo" --open-timeout 1 >/dev/null 2>"$WORK/err.txt"
check "a FIFO nobody writes: exit 1 after the open timeout" '[ $? -eq 1 ] && grep -q "no video within 1 s" "$WORK/err.txt"'
# a regular file is followed and ends when it stops growing
jepa embed -m "$M" --stream "$WORK/src.nut" --stride 2 --read-timeout 1 --open-timeout 2 --format npy \
    >"$WORK/f.npys" 2>"$WORK/err.txt"
rc=$?
npy_data "$WORK/dense.npy" >"$WORK/a.bin"; npys_data "$WORK/f.npys" $REC >"$WORK/b.bin"
check "a file (followed): exit 0, the same 9 windows" '[ $rc -eq 0 ] && cmp -s "$WORK/a.bin" "$WORK/b.bin"'

# ---- bounded memory: 4000 frames through a window of 4 under ulimit -v ----
# (AddressSanitizer reserves terabytes of address space for its shadow, so under it a
# ulimit -v says nothing: that build says so and the other builds run the check)
if grep -q __asan_init "$JEPA" 2>/dev/null; then
    echo "skip the ulimit -v check: an AddressSanitizer build (its shadow memory is address space)"
else
    src 4000 -s 320x240 | (ulimit -v 500000 && exec "$JEPA" embed -m "$M" -t 1 --stream - --stride 40 --format npy -q) \
        >"$WORK/long.npys" 2>"$WORK/err.txt"
    check "4000 frames of 320x240 under ulimit -v 500 MB: exit 0, 100 windows" \
        '[ $? -eq 0 ] && [ $(wc -c <"$WORK/long.npys") -eq $((100 * REC)) ]'
fi

# ---- usage ----
jepa embed -m "$M" --stream - --format csv >/dev/null 2>"$WORK/err.txt" </dev/null
check "--format csv: usage error" '[ $? -eq 2 ] && [ $(wc -l <"$WORK/err.txt") -eq 1 ]'
jepa plan -m "$M" --stream - --start x.png --goal x.png >/dev/null 2>"$WORK/err.txt" </dev/null
check "plan --stream with --start: usage error" '[ $? -eq 2 ]'

# ---- plan --stream: the plan from frame 0 == jepa plan --start frame0.png ----
if jepa synth --arch lewm-pusht -o "$LW" >/dev/null 2>&1; then
    ffmpeg -nostdin -v error -y -f lavfi -i testsrc=size=224x224:rate=10 -frames:v 1 "$WORK/goal.png"
    ffmpeg -nostdin -v error -y -f lavfi -i testsrc=size=160x120:rate=25 -frames:v 1 "$WORK/start.png"
    P="--goal $WORK/goal.png --samples 8 --elites 2 --iters 2 --horizon 2 -q"
    jepa plan -m "$LW" --start "$WORK/start.png" $P -o "$WORK/plan.npy" 2>"$WORK/err.txt"
    ffmpeg -nostdin -v error -f lavfi -i testsrc=size=160x120:rate=25 -frames:v 1 -pix_fmt rgb24 -c:v rawvideo -f nut - |
        jepa plan -m "$LW" --stream - $P >"$WORK/plan.jsonl" 2>"$WORK/err.txt"
    check "plan --stream: exit 0, one JSON line" '[ $? -eq 0 ] && [ $(wc -l <"$WORK/plan.jsonl") -eq 1 ]'
    if python3 -c "import numpy" 2>/dev/null; then
        check "plan --stream's actions == plan --start of the frame" 'python3 - "$WORK" <<EOF
import json, sys, numpy as np
w = sys.argv[1]
a = np.load(w + "/plan.npy")
j = np.array(json.loads(open(w + "/plan.jsonl").readline())["actions"], dtype=np.float32)
sys.exit(0 if a.shape == j.shape and (a == j).all() else 1)
EOF'
    else
        echo "note: no numpy: the plan's actions are not compared"
    fi
fi

[ $fails -eq 0 ] && echo "all stream checks passed" || echo "$fails stream check(s) FAILED"
[ $fails -eq 0 ]
