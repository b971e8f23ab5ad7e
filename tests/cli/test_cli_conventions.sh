#!/bin/bash
# test_cli_conventions.sh — the command line's conventions (cli/options.c): --name=value on
# several commands, a flag given =value refused, short options as they were; '-o -' puts
# the same .npy bytes on stdout as a file gets and nothing else there; '-' as an input
# reads stdin (an image, a float32 .npy) with the same outputs as the file; --json of
# info / embed / classify / the run summaries (many inputs, rollout, plan) against the text
# output and the .npy; '-' refused where the output is not a .npy; the bash completion
# loads and completes; the man page renders. Usage errors are exit 2 with one stderr line.
# usage: test_cli_conventions.sh JEPA FIXTURES_DIR INPUT_DATA_DIR WORK_DIR COMPLETION MANPAGE
set -u
JEPA=$1 FIX=$2 D=$3 WORK=$4/cli_conventions COMPL=$5 MAN=$6
. "$(dirname "$0")/../cli_prelude.sh"
expect() {   # expect EXIT DESCRIPTION CMD...: the exit status; one stderr line for an error
    local want=$1 what=$2 rc lines
    shift 2
    "$@" >"$WORK/out.txt" 2>"$WORK/err.txt" </dev/null
    rc=$?
    lines=$(wc -l <"$WORK/err.txt")
    if [ "$rc" -ne "$want" ]; then bad "$what (exit $rc, expected $want)"; cat "$WORK/err.txt"; return; fi
    if [ "$want" -ne 0 ] && [ "$lines" -ne 1 ]; then bad "$what ($lines stderr lines, expected 1)"; cat "$WORK/err.txt"; return; fi
    ok "$what"
}
same() { if cmp -s "$2" "$3"; then ok "$1"; else bad "$1"; fi; }
V2=$FIX/vjepa2_tiny/model.gguf HF=$FIX/hf_vjepa2/model.gguf X=$FIX/hf_vjepa2/input.npy W=$WORK

# --name=value: the same outputs as --name value; flags refuse =value; -k as before
expect 0 "embed --pool mean -t 2" jepa embed -m "$V2" -i "$D/e2e.png" --pool mean -t 2 -o "$W/a.npy"
expect 0 "embed --pool=mean --threads=2 --model=M --out=F" jepa embed --model="$V2" -i "$D/e2e.png" --pool=mean --threads=2 --out="$W/b.npy"
same "--pool=mean == --pool mean" "$W/a.npy" "$W/b.npy"
expect 0 "classify -k 2" jepa classify -m "$HF" --input-tensor "$X" -k 2
cp "$W/out.txt" "$W/k2.txt"
expect 0 "classify --input-tensor=X -k 2" jepa classify -m "$HF" --input-tensor="$X" -k 2
same "classify: the same top-k" "$W/k2.txt" "$W/out.txt"
expect 2 "-k=2 (short options are not split)" jepa classify -m "$HF" --input-tensor "$X" -k=2
grep -qF "unknown option '-k=2'" "$W/err.txt" || bad "-k=2: $(cat "$W/err.txt")"
expect 2 "--hier=1 (a flag)" jepa embed -m "$V2" --hier=1
grep -qF -- "--hier takes no value" "$W/err.txt" || bad "--hier=1: $(cat "$W/err.txt")"
expect 2 "info --kv=yes (a flag)" jepa info "$HF" --kv=yes
expect 2 "rollout --steps=0: split, then range-checked" jepa rollout -m "$HF" --steps=0
grep -qF -- "--steps takes an integer" "$W/err.txt" || bad "--steps=0: $(cat "$W/err.txt")"
expect 2 "plan --iters=x" jepa plan -m "$HF" --iters=x
grep -qF -- "--iters takes" "$W/err.txt" || bad "--iters=x: $(cat "$W/err.txt")"
if jepa --version | grep -qx "server: yes"; then
    expect 2 "serve --port=99999" jepa serve -m "$HF" --port=99999
else
    echo "this build has no server (jepa --version): serve --port=99999 not checked"
fi
expect 2 "embed --nosuch=1" jepa embed -m "$V2" --nosuch=1
grep -qF "unknown option '--nosuch=1'" "$W/err.txt" || bad "--nosuch=1: $(cat "$W/err.txt")"
expect 0 "embed --test-pattern=2x32x32 --pool=mean" jepa embed -m "$V2" --test-pattern=2x32x32 --pool=mean -o "$W/tp1.npy"
expect 0 "embed --test-pattern 2x32x32 --pool mean" jepa embed -m "$V2" --test-pattern 2x32x32 --pool mean -o "$W/tp2.npy"
same "--test-pattern=: same outputs" "$W/tp1.npy" "$W/tp2.npy"

# -o -: the .npy on stdout, byte-identical; messages on stderr
jepa embed -m "$V2" -i "$D/e2e.png" --pool mean -t 2 -o - >"$W/c.npy" 2>"$W/c.err"
[ $? -eq 0 ] && same "-o -: stdout == the file" "$W/a.npy" "$W/c.npy" || bad "-o - failed: $(cat "$W/c.err")"
grep -q 'float32 \[' "$W/c.err" && ok "-o -: the 'wrote' line on stderr" || bad "-o -: no message on stderr"
jepa embed -m "$V2" -i "$D/e2e.png" -o - >"$W/tok.npy" 2>/dev/null
jepa embed -m "$V2" -i "$D/e2e.png" -o "$W/tok_file.npy" 2>/dev/null
same "-o - (tokens)" "$W/tok_file.npy" "$W/tok.npy"
jepa classify -m "$HF" --input-tensor "$X" --logits-out - >"$W/l.npy" 2>"$W/l.err"
jepa classify -m "$HF" --input-tensor "$X" --logits-out "$W/l_file.npy" >"$W/l_file.txt" 2>/dev/null
same "classify --logits-out -: stdout holds the .npy alone" "$W/l_file.npy" "$W/l.npy"
grep -qF "$(head -1 "$W/l_file.txt")" "$W/l.err" && ok "classify --logits-out -: the top-k went to stderr" ||
    bad "classify --logits-out -: top-k not on stderr"
expect 2 "two outputs to stdout" jepa predict -m "$V2" --test-pattern 2x32x32 --ctx a.npy --tgt b.npy -o - --ctx-out -
expect 2 "-o - with --json" jepa embed -m "$V2" -i "$D/e2e.png" --json -o -
expect 2 "synth -o - (not a .npy)" jepa synth --arch vjepa2-tiny -o -
if [ -e /dev/ptmx ] && command -v script >/dev/null; then
    script -qec "${MESON_EXE_WRAPPER:-} $JEPA embed -m $V2 -i $D/e2e.png -o -" /dev/null >"$W/tty.txt" 2>&1
    grep -q "stdout is a terminal" "$W/tty.txt" && ok "-o - to a terminal refused" || bad "-o - to a terminal: $(cat "$W/tty.txt")"
fi

# '-' as an input: stdin into memory, its format from its bytes
jepa embed -m "$V2" -i - --pool mean -t 2 -o "$W/d.npy" <"$D/e2e.png" 2>/dev/null
same "-i - (a PNG on stdin) == -i FILE" "$W/a.npy" "$W/d.npy"
jepa embed -m "$V2" - --pool mean -t 2 -o "$W/e.npy" <"$D/e2e.png" 2>/dev/null
same "positional - (a PNG on stdin)" "$W/a.npy" "$W/e.npy"
jepa classify -m "$HF" --input-tensor - --logits-out "$W/f.npy" <"$X" >/dev/null 2>&1
same "--input-tensor - == the file" "$W/l_file.npy" "$W/f.npy"
jepa classify -m "$HF" - --logits-out "$W/g.npy" <"$X" >/dev/null 2>&1
same "positional - (a float32 .npy on stdin): an --input-tensor" "$W/l_file.npy" "$W/g.npy"
cat "$D/e2e.png" | jepa embed -m "$V2" -i - --pool mean -t 2 -o - 2>/dev/null >"$W/h.npy"
same "stdin in, stdout out, through pipes" "$W/a.npy" "$W/h.npy"
expect_in() { local want=$1 what=$2 in=$3; shift 3; "$@" <"$in" >"$W/out.txt" 2>"$W/err.txt"; local rc=$?
    [ "$rc" -eq "$want" ] && [ "$(wc -l <"$W/err.txt")" -eq 1 ] && ok "$what" || { bad "$what (exit $rc)"; cat "$W/err.txt"; }; }
expect_in 2 "-i - with a .npy on stdin" "$X" jepa embed -m "$V2" -i - -o "$W/x.npy"
expect_in 2 "--input-tensor - with a PNG on stdin" "$D/e2e.png" jepa embed -m "$V2" --input-tensor - -o "$W/x.npy"
expect_in 2 "empty stdin" /dev/null jepa embed -m "$V2" -i - -o "$W/x.npy"
expect_in 2 "stdin named twice" "$D/e2e.png" jepa embed -m "$V2" -i - -i - -o "$W/x.npy"

# --json
jepa info "$HF" --json --tensors >"$W/info.json" && jepa info "$HF" --tensors >"$W/info.txt" || bad "info --json failed"
python3 - "$W/info.json" "$W/info.txt" <<'PY' && ok "info --json: fields and tensors as the text says" || bad "info --json"
import json, sys
d = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
m = d["model"]
assert m["family"] == "vjepa2" and m["has_head"] == 1, m
assert len(d["labels"]) == m["n_classes"] > 0
for t in d["tensors"]:
    assert t["name"] in text, t["name"]
assert "tensors (%d;" % len(d["tensors"]) in text
assert ("%d tensors" % len(d["tensors"])) in text
PY
jepa classify -m "$HF" --input-tensor "$X" -k 3 >"$W/top.tsv" && jepa classify -m "$HF" --input-tensor "$X" -k 3 --json >"$W/top.json" || bad "classify --json failed"
python3 - "$W/top.tsv" "$W/top.json" <<'PY' && ok "classify --json == its TSV" || bad "classify --json"
import json, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
objs = [json.loads(l) for l in open(sys.argv[2])]
assert len(objs) == 1 and len(objs[0]["topk"]) == len(rows) == 3
for r, o in zip(rows, objs[0]["topk"]):
    assert int(r[0]) == o["class"] and abs(float(r[1]) - o["p"]) < 6e-5 and r[2] == o["label"], (r, o)
PY
jepa embed -m "$V2" -i "$D/e2e.png" -t 2 --json >"$W/emb.json" || bad "embed --json failed"
python3 - "$W/emb.json" "$W/a.npy" <<'PY' && ok "embed --json: pooled_mean == --pool mean's .npy, bit for bit" || bad "embed --json"
import json, struct, sys
o = json.loads(open(sys.argv[1]).readline())
b = open(sys.argv[2], "rb").read()
hl = struct.unpack("<H", b[8:10])[0]
v = struct.unpack("<%df" % ((len(b) - 10 - hl) // 4), b[10 + hl:])
assert len(v) == len(o["pooled_mean"]), (len(v), len(o["pooled_mean"]))
assert all(struct.pack("<f", x) == struct.pack("<f", y) for x, y in zip(v, o["pooled_mean"]))
PY

# --json of the run summaries: a many-input run's (the counts and --resume's reasons of its
# text line), rollout's and plan's (against their text line and their .npy)
mkdir -p "$W/many" && cp "$D/e2e.png" "$W/many/a.png" && cp "$D/e2e.png" "$W/many/b.png" && echo junk >"$W/many/c.png"
jepa embed -m "$V2" --pool mean -t 2 --out-dir "$W/mt" "$W/many" >/dev/null 2>"$W/mt1.err"
jepa embed -m "$V2" --pool mean -t 2 --out-dir "$W/mj" "$W/many" --json >"$W/mj1.json" 2>"$W/mj1.err"
jepa embed -m "$V2" --pool mean -t 2 --out-dir "$W/mt" "$W/many" --resume >/dev/null 2>"$W/mt2.err"
jepa embed -m "$V2" --pool mean -t 2 --out-dir "$W/mj" "$W/many" --resume --json >"$W/mj2.json" 2>"$W/mj2.err"
jepa embed -m "$V2" --pool mean -t 2 -o "$W/ms.npy" "$W/many" --json -q >"$W/ms.json" 2>"$W/ms.err"
python3 - "$W" <<'PY' && ok "many inputs --json: the text summary's counts and reasons" || bad "many inputs --json"
import json, re, sys
w = sys.argv[1]
last = lambda f: open(f"{w}/{f}").read().splitlines()[-1]
def text(line):
    m = re.search(r": (\d+) inputs: (\d+) written, (\d+) failed", line)
    d = dict(inputs=int(m[1]), written=int(m[2]), failed=int(m[3]))
    k = re.search(r", (\d+) kept by --resume \((\d+) to run again(?:: ([^)]*))?\)", line)
    if k:
        d["kept"] = int(k[1])
        d["again"] = {r.split(" ", 1)[1]: int(r.split(" ", 1)[0]) for r in (k[3] or "").split(", ") if r}
    return d
for t, j in (("mt1.err", "mj1.json"), ("mt2.err", "mj2.json")):
    a, b = text(last(t)), json.loads(open(f"{w}/{j}").read())
    assert [a[k] for k in ("inputs", "written", "failed")] == [b[k] for k in ("inputs", "written", "failed")], (a, b)
    assert "c.png" in open(f"{w}/{j.replace('.json', '.err')}").read()   # the input's line stays on stderr
    if "kept" in a:
        keys = {"failed before": "failed_before", "not done": "not_done"}
        assert a["kept"] == b["kept"] == 2 and sum(b["run_again"].values()) == 1, (a, b)
        assert all(b["run_again"][keys[r]] == n for r, n in a["again"].items()), (a, b)
    assert b["index"] == f"{w}/mj/index.jsonl" and b["stopped"] is None
s = json.loads(open(f"{w}/ms.json").read())
rows = sum(1 for l in open(f"{w}/ms.index.jsonl") if '"status": "ok"' in l)
assert s["written"] == 2 and s["failed"] == 1 and s["rows"] == rows == 2 and s["parts_kept"], s
PY
LW=$FIX/lewm_wm
jepa rollout -m "$LW/model_a.gguf" --emb "$LW/rollout_emb_a.npy" --actions "$LW/rollout_actions_a.npy" --steps 4 \
    -o "$W/r.npy" 2>"$W/r.err" && jepa rollout -m "$LW/model_a.gguf" --emb "$LW/rollout_emb_a.npy" \
    --actions "$LW/rollout_actions_a.npy" --steps 4 -o "$W/rj.npy" --json >"$W/r.json" 2>"$W/rj.err" || bad "rollout --json failed"
same "rollout --json: the same trajectory" "$W/r.npy" "$W/rj.npy"
python3 - "$W/r.err" "$W/r.json" "$W/r.npy" <<'PY' && ok "rollout --json == its text summary and the .npy's shape" || bad "rollout --json"
import ast, json, re, sys
m = re.search(r"rollout: (\d+) x (\d+) x (\d+) -> .* \((\w+)\)", open(sys.argv[1]).read())
j = json.load(open(sys.argv[2]))
b = open(sys.argv[3], "rb").read()
shape = list(ast.literal_eval(b[10:10 + b[8] + 256 * b[9]].decode())["shape"])
assert [int(m[1]), int(m[2]), int(m[3])] == shape == j["shape"] and j["steps"] == int(m[2]), (m.groups(), shape, j)
assert j["sequences"] == int(m[1]) and j["isa"] == m[4] and j["output"].endswith("rj.npy")
PY
P="--horizon 2 --samples 24 --iters 4 --elites 6 --seed 77"
jepa plan -m "$LW/model_a.gguf" --start-tokens "$LW/plan_hist_a.npy" --start-actions "$LW/plan_past_a.npy" \
    --goal-tokens "$LW/plan_goal_a.npy" $P -o "$W/pl.npy" 2>"$W/pl.err" &&
    jepa plan -m "$LW/model_a.gguf" --start-tokens "$LW/plan_hist_a.npy" --start-actions "$LW/plan_past_a.npy" \
    --goal-tokens "$LW/plan_goal_a.npy" $P -o "$W/plj.npy" --json >"$W/pl.json" 2>/dev/null || bad "plan --json failed"
python3 - "$W/pl.err" "$W/pl.json" "$W/plj.npy" <<'PY' && ok "plan --json == its text summary and its actions .npy" || bad "plan --json"
import json, re, struct, sys
m = re.search(r"plan: (\d+) actions -> .*; energy of the plan ([-\d.e]+) \((\d+) iterations of (\d+) candidates",
              open(sys.argv[1]).read())
j = json.load(open(sys.argv[2]))
b = open(sys.argv[3], "rb").read()
v = struct.unpack("<%df" % ((len(b) - 10 - b[8]) // 4), b[10 + b[8]:])
assert j["horizon"] == int(m[1]) == len(j["actions"]) and j["iterations"] == int(m[3]) == 4 and j["samples"] == int(m[4])
assert abs(j["energy"] - float(m[2])) <= 5e-7 * max(1, abs(j["energy"])), (j["energy"], m[2])
flat = [x for row in j["actions"] for x in row]
assert len(flat) == len(v) and all(struct.pack("<f", x) == struct.pack("<f", y) for x, y in zip(flat, v))
PY
expect 2 "rollout --json -o - (both stdout)" jepa rollout -m "$LW/model_a.gguf" --emb "$LW/rollout_emb_a.npy" \
    --actions "$LW/rollout_actions_a.npy" --steps 4 -o - --json

# '-' where a .npy is not what is written: a model, a stacked many-input run
expect 2 "quantize IN - (a model is not a .npy)" jepa quantize "$V2" - --type q8_0
grep -qF "name a file" "$W/err.txt" && [ ! -e ./- ] && ok "  says to name a file; no file named -" || bad "  quantize -: $(cat "$W/err.txt")"
expect 2 "many inputs stacked into -o -" jepa embed -m "$V2" -o - "$W/many"
expect 2 "many inputs stacked into --logits-out -" jepa classify -m "$HF" --logits-out - "$W/many"

# the bash completion: loads, completes a command, an option, an option's choices
if [ -f "$COMPL" ]; then
    out=$(bash --norc -c '
        source "$1" || exit 9
        c() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _jepa; echo "${COMPREPLY[*]}"; }
        echo "1:$(c jepa emb)"; echo "2:$(c jepa embed --po)"; echo "3:$(c jepa embed --pool "")"
        echo "4:$(c jepa help cla)"; echo "5:$(c jepa bench w)"; echo "6:$(c jepa plan --it)"
        complete -p jepa' _ "$COMPL" 2>&1)
    grep -qx "1:embed" <<<"$out" && grep -qx "2:--pool" <<<"$out" && grep -qx "3:mean cls lewm none" <<<"$out" &&
        grep -qx "4:classify" <<<"$out" && grep -qx "5:world" <<<"$out" && grep -qx "6:--iters" <<<"$out" &&
        grep -q "_jepa jepa" <<<"$out" && ok "bash completion" || { bad "bash completion"; echo "$out"; }
elif [ -n "${MESON_EXE_WRAPPER:-}" ]; then
    echo "no completion script at $COMPL (a cross build makes none): its check skipped"
else
    bad "no completion script at $COMPL (a native build makes one)"
fi
# the man page renders: every command's section, no roff warnings
if [ -f "$MAN" ]; then
    if command -v groff >/dev/null; then
        warn=$(groff -man -Tutf8 -ww -z "$MAN" 2>&1)
        [ -z "$warn" ] && ok "man page: groff without warnings" || bad "man page: $warn"
        txt=$(groff -man -Tutf8 "$MAN" 2>/dev/null | sed 's/.\x08//g')
    else
        echo "groff missing: the man page's structure checked, not its rendering"
        txt=$(cat "$MAN")
    fi
    for w in NAME SYNOPSIS COMMANDS "jepa embed" "jepa plan" "jepa bench" "--pool" "EXIT STATUS"; do
        grep -qF -- "$w" <<<"$txt" || bad "man page lacks '$w'"
    done
    grep -q '^\.TH JEPA 1' "$MAN" && ok "man page structure" || bad "man page: no .TH"
elif [ -n "${MESON_EXE_WRAPPER:-}" ]; then
    echo "no man page at $MAN (a cross build makes none): its check skipped"
else
    bad "no man page at $MAN (a native build makes one)"
fi

[ "$fails" -eq 0 ] && echo "all cli convention checks passed" || { echo "$fails failed"; exit 1; }
