#!/bin/sh
# test_cli_corpus.sh — corpus runs that cannot lie (cli/run_many.c, cli/many_index.c):
# index.jsonl appended per input (a run stopped by SIGINT or SIGKILL keeps the rows of
# what it finished, and --resume runs only the rest), the fingerprint of the model and
# options (another model, another --pool: recomputed), statuses kept across resumes, a
# tampered output or a changed input detected, class folders with --recursive (outputs
# mirror the input paths, classes in the index), a DIR with subfolders without
# --recursive named on one line, a symbolic link loop walked once.
# usage: test_cli_corpus.sh JEPA INPUT_DATA_DIR WORK_DIR
set -u
JEPA=$1 D=$2 WORK=$3/cli_corpus
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
# MESON_EXE_WRAPPER runs a cross-built binary; without one, a binary that cannot run here
# skips the test (77)
jepa() { ${MESON_EXE_WRAPPER:-} "$JEPA" "$@"; }
jepa --help >/dev/null 2>&1; st=$?
[ $st -ne 126 ] || { echo "cannot execute $JEPA here: skipped"; exit 77; }
rm -rf "$WORK" && mkdir -p "$WORK"
run() {   # run WANT_EXIT DESCRIPTION CMD...: stderr in $WORK/err.txt
    want=$1 what=$2
    shift 2
    "$@" >"$WORK/out.txt" 2>"$WORK/err.txt"
    rc=$?
    if [ "$rc" -eq "$want" ]; then ok "$what"; else bad "$what (exit $rc, expected $want)"; cat "$WORK/err.txt"; fi
}
has() {   # has DESCRIPTION FILE PATTERN: grep -q
    if grep -q -- "$3" "$2"; then ok "$1"; else bad "$1"; cat "$2"; fi
}
outputs() { grep -o '"output": "[^"]*", "status": "ok"' "$1" | sort -u | wc -l | tr -d ' '; }   # outputs with a row
rows() { if [ -f "$1" ]; then grep -c '"status"' "$1"; else echo 0; fi; }   # input rows of an index
M1=$WORK/m1.gguf M2=$WORK/m2.gguf
jepa synth --arch vjepa2_1-tiny --seed 1 -o "$M1" >/dev/null 2>&1 &&
    jepa synth --arch vjepa2_1-tiny --seed 2 -o "$M2" >/dev/null 2>&1 || { bad "jepa synth"; exit 1; }

# class folders: cat/x.png and dog/x.png no longer collide; outputs mirror the paths
DS=$WORK/ds OD=$WORK/feats
mkdir -p "$DS/cat" "$DS/dog/puppies"
cp "$D/png/rgb8.png" "$DS/cat/x.png" && cp "$D/png/grey8.png" "$DS/dog/x.png"
cp "$D/png/palette8.png" "$DS/dog/puppies/y.png" && cp "$D/e2e.png" "$DS/top.png"
ln -s .. "$DS/dog/puppies/up"   # a loop: walked once
run 0 "a DIR with subfolders, no --recursive" jepa embed -m "$M1" --pool mean --out-dir "$WORK/flat" "$DS"
has "its subfolders named on one line" "$WORK/err.txt" "ds: 2 subfolders not walked (--recursive walks them)"
[ "$(rows "$WORK/flat/index.jsonl")" = 1 ] && ok "the top file alone" || bad "the top file alone"
mkdir -p "$WORK/onlysub/a" && cp "$D/png/rgb8.png" "$WORK/onlysub/a/"
run 2 "only subfolders, no --recursive: no inputs" jepa embed -m "$M1" --out-dir "$WORK/flat2" "$WORK/onlysub"
has "the usage error names --recursive" "$WORK/err.txt" "no inputs (a directory lists only images and videos; --recursive walks its subfolders)"
run 0 "--recursive over class folders" jepa embed -m "$M1" --pool mean --out-dir "$OD" --recursive "$DS"
has "the loop passed over, said once" "$WORK/err.txt" "1 folder passed over: a symbolic link to a folder above it"
for f in cat/x.png dog/x.png dog/puppies/y.png top.png; do
    [ -f "$OD/$f.npy" ] || bad "output $f.npy mirrors the input's path"
done
[ "$(rows "$OD/index.jsonl")" = 4 ] && ok "4 outputs, 4 rows" || { bad "4 outputs, 4 rows"; cat "$OD/index.jsonl"; }
has "class cat" "$OD/index.jsonl" '"output": "cat/x.png.npy", "status": "ok", "clips": 1, "class": "cat"'
has "class dog, from the first folder" "$OD/index.jsonl" '"output": "dog/puppies/y.png.npy", "status": "ok", "clips": 1, "class": "dog"'
grep '"top.png.npy"' "$OD/index.jsonl" | grep -q '"class"' && bad "a top-level file has no class" || ok "a top-level file has no class"
run 0 "the same image alone" jepa embed -m "$M1" --pool mean -i "$DS/dog/x.png" -o "$WORK/dogx.npy"
cmp -s "$WORK/dogx.npy" "$OD/dog/x.png.npy" && ok "mirrored output == the single run's" || bad "mirrored output == the single run's"
has "a header row: model identity, fingerprint, the options" "$OD/index.jsonl" '^{"run": {.*"model_id": "[0-9a-f]\{16\}", "fingerprint": "[0-9a-f]\{16\}", "numbers": {"cmd": "embed", "pool": "mean"'

# --resume: the same run keeps everything; another --pool, another model recompute
run 0 "--resume, nothing changed" jepa embed -m "$M1" --pool mean --out-dir "$OD" -r --resume "$DS"
has "all 4 kept" "$WORK/err.txt" "0 written, 0 failed, 4 kept by --resume (0 to run again)"
[ "$(rows "$OD/index.jsonl")" = 4 ] && ok "kept outputs get no new row" || bad "kept outputs get no new row"
run 0 "--resume with another --pool" jepa embed -m "$M1" --pool none --out-dir "$OD" -r --resume "$DS"
has "another --pool: all 4 recomputed" "$WORK/err.txt" "4 written, 0 failed, 0 kept by --resume (4 to run again: 4 made by another model or options)"
grep -aq "'shape': (16, 64)" "$OD/cat/x.png.npy" && ok "the tokens replaced the pooled vector" || bad "the tokens replaced the pooled vector"
run 0 "--resume with another model (another seed: same header, other weights)" jepa embed -m "$M2" --out-dir "$OD" -r --resume "$DS"
has "another model: all 4 recomputed" "$WORK/err.txt" "4 written, 0 failed, 0 kept by --resume (4 to run again: 4 made by another model or options)"
run 0 "the second model alone" jepa embed -m "$M2" -i "$DS/cat/x.png" -o "$WORK/m2cat.npy"
cmp -s "$WORK/m2cat.npy" "$OD/cat/x.png.npy" && ok "the output is the second model's" || bad "the output is the second model's"
# a tampered output (same size), a changed input, a removed output
printf 'x' | dd of="$OD/cat/x.png.npy" bs=1 seek=200 conv=notrunc 2>/dev/null
cp "$D/png/rgb16.png" "$DS/dog/x.png"
rm "$OD/top.png.npy"
run 0 "--resume after tampering" jepa embed -m "$M2" --out-dir "$OD" -r --resume "$DS"
has "each reason counted" "$WORK/err.txt" "3 written, 0 failed, 1 kept by --resume (3 to run again: 1 not done, 1 input changed, 1 output changed)"
cmp -s "$WORK/m2cat.npy" "$OD/cat/x.png.npy" && ok "the tampered output rewritten" || bad "the tampered output rewritten"
# statuses kept: a failure is a row, a resume appends; the latest row of an output is its state
head -c 100 "$D/e2e.png" >"$DS/cat/cut.png"
run 1 "a truncated image fails" jepa embed -q -m "$M2" --out-dir "$OD" -r --resume "$DS"
has "its error row" "$OD/index.jsonl" '"output": "cat/cut.png.npy", "status": "error", "class": "cat", "error": ".*truncated PNG'
n_before=$(rows "$OD/index.jsonl")
cp "$D/png/rgb8.png" "$DS/cat/cut.png"
run 0 "--resume once it is fixed" jepa embed -m "$M2" --out-dir "$OD" -r --resume "$DS"
has "failed before: run again" "$WORK/err.txt" "1 written, 0 failed, 4 kept by --resume (1 to run again: 1 failed before)"
[ "$(rows "$OD/index.jsonl")" = $((n_before + 1)) ] && [ "$(grep -c '"status": "error"' "$OD/index.jsonl")" = 1 ] &&
    tail -1 "$OD/index.jsonl" | grep -q '"output": "cat/cut.png.npy", "status": "ok"' &&
    ok "the error row stays, the ok row follows it" || { bad "the error row stays, the ok row follows it"; cat "$OD/index.jsonl"; }
rm "$OD/index.jsonl"
run 0 "--resume without an index" jepa embed -m "$M2" --out-dir "$OD" -r --resume "$DS"
has "outputs without rows are run again" "$WORK/err.txt" "5 written, 0 failed, 0 kept by --resume (5 to run again: 5 output without an index row)"

# stopped runs: SIGKILL keeps the finished rows whole; SIGINT stops after the current
# input (exit 130); --resume runs only what is left, without redoing a finished one
MANY=$WORK/many MO=$WORK/many_out N=40
mkdir -p "$MANY"
i=0
while [ $i -lt $N ]; do cp "$D/png/rgb8.png" "$MANY/i$i.png"; i=$((i + 1)); done
wait_rows() {   # wait_rows PID N: until the index has N rows or the run ended (at most 120 s)
    t=0
    while kill -0 "$1" 2>/dev/null && [ "$(rows "$MO/index.jsonl")" -lt "$2" ] && [ $t -lt 6000 ]; do
        sleep 0.02; t=$((t + 1))
    done
}
# (the binary itself in the background, so that the signals reach it)
${MESON_EXE_WRAPPER:-} "$JEPA" embed -q -m "$M1" --pool mean --out-dir "$MO" "$MANY" 2>"$WORK/err.txt" &
pid=$!
wait_rows $pid 3
kill -KILL $pid 2>/dev/null
wait $pid
killed=$?
n_kill=$(rows "$MO/index.jsonl")
if [ $killed -ne 137 ]; then
    # 40 inputs take seconds and the signal goes after 3 rows: an ended run is a defect
    bad "the run ended (exit $killed) before SIGKILL after 3 of $N rows"
else
    bad_lines=$(grep -vc '^{.*}$' "$MO/index.jsonl")
    [ "$n_kill" -ge 3 ] && [ "$n_kill" -lt $N ] && [ "$bad_lines" = 0 ] &&
        ok "SIGKILL: $n_kill whole rows kept" || { bad "SIGKILL: rows kept ($n_kill, $bad_lines cut short)"; cat "$MO/index.jsonl"; }
    ls -i "$MO"/*.npy >"$WORK/inodes_before.txt"
    ${MESON_EXE_WRAPPER:-} "$JEPA" embed -q -m "$M1" --pool mean --out-dir "$MO" --resume "$MANY" 2>"$WORK/err.txt" &
    pid=$!
    wait_rows $pid $((n_kill + 3))
    kill -INT $pid 2>/dev/null
    wait $pid
    rc=$?
    n_int=$(outputs "$MO/index.jsonl")
    if [ $rc -eq 130 ]; then
        grep -q "stopped by SIGINT with $((N - n_int)) not run (--resume runs them)" "$WORK/err.txt" &&
            [ "$n_int" -lt $N ] && ok "SIGINT: exit 130, $n_int rows, the rest named" ||
            { bad "SIGINT: exit 130, the rest named"; cat "$WORK/err.txt"; }
    else
        bad "the resumed run ended (exit $rc) before SIGINT"
    fi
    run 0 "--resume completes the rest" jepa embed -m "$M1" --pool mean --out-dir "$MO" --resume "$MANY"
    has "the finished ones kept" "$WORK/err.txt" "$((N - n_int)) written, 0 failed, $n_int kept by --resume"
    [ "$(outputs "$MO/index.jsonl")" = $N ] && ok "rows for the $N outputs" || bad "rows for the $N outputs"
    ls -i "$MO"/*.npy | grep -F -x -f "$WORK/inodes_before.txt" | wc -l >"$WORK/same.txt"
    [ "$(cat "$WORK/same.txt")" -ge "$n_kill" ] && ok "the outputs finished before SIGKILL were not rewritten" ||
        bad "the outputs finished before SIGKILL were not rewritten"
fi

# stacked: the parts folder has its own appended index; the stacked index records the
# stacked file's size and hash
run 0 "stacked with --recursive" jepa embed -m "$M1" --pool mean -r "$DS" -o "$WORK/st.npy"
has "stacked index: a class per row" "$WORK/st.index.jsonl" '"output": ".*st.npy", "row": 0, "rows": 1, "status": "ok", "clips": 1, "class": "cat"'
sz=$(wc -c <"$WORK/st.npy" | tr -d ' ')
has "stacked index: the stacked file's size" "$WORK/st.index.jsonl" "^{\"run\": .*\"bytes\": $sz, \"hash\": \"fnv1a64:"
[ ! -e "$WORK/st.npy.parts" ] && ok "the parts removed, subfolders too" || bad "the parts removed, subfolders too"

[ $fails -eq 0 ] && echo "all passed" || echo "$fails failed"
[ $fails -eq 0 ]
