#!/bin/sh
# test_cli_tune.sh — `jepa tune` and the tuning file end to end: a run with a 2-second
# budget on a tiny model writes the file under $XDG_CACHE_HOME/jepa/, `jepa cpu` then
# reports it in force for the tuned kernels, JEPA_TUNE=off ignores it, JEPA_TUNE_FILE points
# elsewhere, and a corrupted, foreign or FIFO file is ignored with one warning line (no
# hang). Usage errors exit 2.
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
jepa tune --help | grep -q "JEPA_TUNE=off" && ok "--help" || bad "--help"

if ! timeout 60 ${MESON_EXE_WRAPPER:-} "$jepa_bin" tune -m "$model" -t 2 --budget 2 >"$tmp/out" 2>"$tmp/err"; then
    if grep -q "no tunable matmul kernels" "$tmp/err"; then
        echo "test_cli_tune: no tunable matmul kernels on this CPU (skipped)"; exit 77
    fi
    cat "$tmp/out" "$tmp/err"; bad "jepa tune --budget 2"; exit 1
fi
kind=$(sed -n 's/^kept: gemm \([a-z0-9_]*\) .*/\1/p' "$tmp/out")
file=$(ls "$tmp"/cache/jepa/tune-*.txt 2>/dev/null | head -1)
[ -n "$kind" ] && [ -f "$file" ] && ok "jepa tune wrote $file ($kind)" || { cat "$tmp/out"; bad "no file written"; exit 1; }
grep -q "failed the check" "$tmp/out" && bad "a candidate failed the check against the reference"
head -c 10 "$file" | grep -q "^# jepa" && ok "the file is text" || bad "file format"

jepa cpu >"$tmp/cpu" 2>"$tmp/cpuerr"
grep -q "gemm $kind .*($file)" "$tmp/cpu" && ok "jepa cpu: the file is in force for $kind" || { cat "$tmp/cpu"; bad "jepa cpu does not show the file"; }
[ ! -s "$tmp/cpuerr" ] && ok "no warning for a good file" || { cat "$tmp/cpuerr"; bad "warning for a good file"; }
env JEPA_TUNE=off ${MESON_EXE_WRAPPER:-} "$jepa_bin" cpu >"$tmp/cpu" 2>&1
grep -q "$file" "$tmp/cpu" && bad "JEPA_TUNE=off still reads the file" || ok "JEPA_TUNE=off ignores it"

cp "$file" "$tmp/other.txt"
env JEPA_TUNE_FILE="$tmp/other.txt" ${MESON_EXE_WRAPPER:-} "$jepa_bin" cpu >"$tmp/cpu" 2>&1
grep -q "gemm $kind .*($tmp/other.txt)" "$tmp/cpu" && ok "JEPA_TUNE_FILE points elsewhere" || bad "JEPA_TUNE_FILE"

# hostile files: one warning line each, built-in values in force, exit 0
sed 's/kc=/kc=1/' "$file" >"$tmp/corrupt.txt"
sed 's/^cpu [A-Za-z]*/cpu SomeOtherVendor/' "$file" >"$tmp/foreign.txt"
head -c 40 "$file" >"$tmp/trunc.txt"
mkfifo "$tmp/fifo"
for f in corrupt.txt foreign.txt trunc.txt fifo; do
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
