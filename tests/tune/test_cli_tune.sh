#!/bin/sh
# test_cli_tune.sh — `jepa tune` and the tuning file end to end: a run with a 2-second
# budget on a tiny model writes the file under $XDG_CACHE_HOME/jepa/ with a record per
# kernel build it tuned (the exact tier's matmul, the precision tiers' where `jepa cpu`
# lists kernels for them, attention), `jepa cpu` then reports each in force from the file,
# a later run of one tier keeps the other records, JEPA_TUNE=off ignores the file,
# JEPA_TUNE_FILE points elsewhere, and a corrupted, foreign, version-1 or FIFO file is
# ignored with one warning line (no hang). Usage errors exit 2.
#   sh test_cli_tune.sh JEPA_BINARY FIXTURES_DIR
set -u
jepa_bin=$1 fixtures=$2
# through MESON_EXE_WRAPPER (qemu) in a cross build
jepa() { ${MESON_EXE_WRAPPER:-} "$jepa_bin" "$@"; }
model=$fixtures/vjepa2_tiny/model.gguf
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
export XDG_CACHE_HOME="$tmp/cache" OMP_WAIT_POLICY=passive
unset JEPA_TUNE JEPA_TUNE_FILE JEPA_CPU

jepa tune --budget 0 >/dev/null 2>&1; [ $? = 2 ] && ok "--budget 0 is a usage error" || bad "--budget 0"
jepa tune --frob 1 >/dev/null 2>&1; [ $? = 2 ] && ok "an unknown option is a usage error" || bad "unknown option"
jepa tune --dtype q4_0 >/dev/null 2>&1; [ $? = 2 ] && ok "--dtype q4_0 is a usage error" || bad "--dtype"
jepa tune --precision fp8 >/dev/null 2>&1; [ $? = 2 ] && ok "--precision fp8 is a usage error" || bad "--precision"
jepa tune --help | grep -q "JEPA_TUNE=off" && ok "--help" || bad "--help"
jepa tune --help | grep -q -- "--precision" && ok "--help names --precision" || bad "--help: --precision"

if ! timeout 60 ${MESON_EXE_WRAPPER:-} "$jepa_bin" tune -m "$model" -t 2 --budget 2 >"$tmp/out" 2>"$tmp/err"; then
    if grep -q "no tunable matmul kernels" "$tmp/err"; then
        echo "test_cli_tune: no tunable matmul kernels on this CPU (skipped)"; exit 77
    fi
    cat "$tmp/out" "$tmp/err"; bad "jepa tune --budget 2"; exit 1
fi
kind=$(sed -n 's/^kept: gemm \([a-z0-9_]*\) .*/\1/p' "$tmp/out" | head -1)
records=$(sed -n 's/^kept: \(gemm\|attn\) \([a-z0-9_]*\) .*/\1 \2/p' "$tmp/out")
file=$(ls "$tmp"/cache/jepa/tune-*.txt 2>/dev/null | head -1)
[ -n "$kind" ] && [ -f "$file" ] && ok "jepa tune wrote $file ($(echo $records | tr '\n' ' '))" || { cat "$tmp/out"; bad "no file written"; exit 1; }
grep -q "failed the check" "$tmp/out" && bad "a candidate failed the check against the reference"
head -c 10 "$file" | grep -q "^# jepa" && ok "the file is text" || bad "file format"
grep -q "^jepa-tune 2$" "$file" && ok "the file is version 2" || bad "file version"

jepa cpu >"$tmp/cpu" 2>"$tmp/cpuerr"
echo "$records" | { n=0; while read -r what k; do
    grep -q "$what $k .*($file)" "$tmp/cpu" && grep -q "^$what $k " "$file" || { cat "$tmp/cpu"; echo "FAIL jepa cpu / the file: $what $k"; exit 1; }
    n=$((n + 1)); done; [ $n -ge 2 ]; } && ok "jepa cpu: the file is in force for each build tuned" || bad "jepa cpu does not show every record"
grep -q "^attn " "$file" && ok "attention has its record" || bad "no attention record"
# the bf16 tier's matmul has its own record where this CPU has kernels for the tier
tier=$(sed -n 's/^  bf16  *\([a-z0-9_]*\)$/\1/p' "$tmp/cpu")
if [ -n "$tier" ]; then
    grep -q "^gemm $tier " "$file" && ok "the bf16 tier's $tier has its record" || bad "no record for the bf16 tier's $tier"
else
    echo "ok   (no kernels of the bf16 tier on this CPU: no tier record expected)"
fi
[ ! -s "$tmp/cpuerr" ] && ok "no warning for a good file" || { cat "$tmp/cpuerr"; bad "warning for a good file"; }
# one tier again: the records of the builds it does not tune stay
if timeout 60 ${MESON_EXE_WRAPPER:-} "$jepa_bin" tune -m "$model" -t 1 --budget 1 --precision exact >"$tmp/out2" 2>&1; then
    [ "$(grep -c '^kept: gemm' "$tmp/out2")" = 1 ] && ok "--precision exact tunes one matmul build" ||
        { cat "$tmp/out2"; bad "--precision exact tuned other builds"; }
    echo "$records" | while read -r what k; do grep -q "^$what $k " "$file" || exit 1; done &&
        ok "--precision exact kept the other builds' records" || { cat "$file"; bad "--precision exact dropped records"; }
else
    cat "$tmp/out2"; bad "jepa tune --precision exact"
fi
env JEPA_TUNE=off ${MESON_EXE_WRAPPER:-} "$jepa_bin" cpu >"$tmp/cpu" 2>&1
grep -q "$file" "$tmp/cpu" && bad "JEPA_TUNE=off still reads the file" || ok "JEPA_TUNE=off ignores it"

cp "$file" "$tmp/other.txt"
env JEPA_TUNE_FILE="$tmp/other.txt" ${MESON_EXE_WRAPPER:-} "$jepa_bin" cpu >"$tmp/cpu" 2>&1
grep -q "gemm $kind .*($tmp/other.txt)" "$tmp/cpu" && ok "JEPA_TUNE_FILE points elsewhere" || bad "JEPA_TUNE_FILE"

# hostile files: one warning line each, built-in values in force, exit 0
sed 's/kc=/kc=1/' "$file" >"$tmp/corrupt.txt"
sed 's/^cpu [A-Za-z]*/cpu SomeOtherVendor/' "$file" >"$tmp/foreign.txt"
head -c 40 "$file" >"$tmp/trunc.txt"
sed 's/^jepa-tune 2$/jepa-tune 1/' "$file" >"$tmp/v1.txt"
mkfifo "$tmp/fifo"
for f in corrupt.txt foreign.txt trunc.txt v1.txt fifo; do
    timeout 20 env JEPA_TUNE_FILE="$tmp/$f" ${MESON_EXE_WRAPPER:-} "$jepa_bin" cpu >"$tmp/cpu" 2>"$tmp/cpuerr"; rc=$?
    n=$(grep -c "tuning file .* ignored" "$tmp/cpuerr")
    if [ $rc = 0 ] && [ "$n" = 1 ] && [ "$(wc -l <"$tmp/cpuerr")" = 1 ] && ! grep -q "($tmp/$f)" "$tmp/cpu"; then
        ok "$f: ignored with one line: $(cat "$tmp/cpuerr")"
    else
        cat "$tmp/cpuerr"; bad "$f (rc $rc)"
    fi
done
# a model runs with the tuned blocking in force
if timeout 120 ${MESON_EXE_WRAPPER:-} "$jepa_bin" embed -m "$model" --input-tensor "$fixtures/vjepa2_tiny/input.npy" -o "$tmp/t.npy" -t 2 >/dev/null 2>"$tmp/err"; then
    ok "jepa embed runs with the tuned blocking"
else
    cat "$tmp/err"; bad "jepa embed with the tuned blocking"
fi
echo "test_cli_tune: $fails failed"
[ $fails = 0 ]
