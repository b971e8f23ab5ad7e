#!/bin/sh
# test_harness.sh — tests of the checkasm harness itself (tests/checkasm/checkasm.h), run
# by meson (suite checkasm):
#   sh test_harness.sh CHECKASM_GEMM CHECKASM_OPS SCRATCH_DIR
# - bad options exit 2 with the usage, --help exits 0;
# - a crash inside a slot (--crash SLOT puts a null-pointer write there) kills the run, and
#   stderr names the signal, the slot and the ISA level;
# - --function / --isa run only what they name: a crash put in another slot stays
#   silent, and the list of slot@level pairs that ran is exactly the one asked for.
set -u
GEMM=$1
OPS=$2
TMP=$3/test_harness.tmp
export JEPA_CHECKASM_REDUCED=1   # the checks that do run: their short form (test_gemm.c)
mkdir -p "$TMP" || exit 1
n_ok=0 n_bad=0
ok() { n_ok=$((n_ok + 1)); }
bad() { echo "FAIL: $*"; n_bad=$((n_bad + 1)); }

# run NAME EXPECTED_EXIT PROGRAM ARGS...: stdout in $TMP/out, stderr in $TMP/err (under
# qemu in a cross build); EXPECTED_EXIT "crash" accepts any exit but 0, 1, 2 and 77 (a
# signal: 128 + its number; under a sanitizer, whose handler runs after checkasm's, its
# own code)
run() {
    name=$1 want=$2
    shift 2
    ${MESON_EXE_WRAPPER:-} "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    case $want:$rc in
        crash:0 | crash:1 | crash:2 | crash:77) bad "$name: exit $rc, expected a crash" ;;
        crash:* | "$rc:$rc") ok ;;
        *) bad "$name: exit $rc, expected $want"; sed 's/^/  | /' "$TMP/out" "$TMP/err" | tail -20 ;;
    esac
}
has() {  # has NAME FILE STRING...
    name=$1; f=$2; shift 2
    for s in "$@"; do
        if grep -qF -- "$s" "$f"; then ok; else bad "$name: output lacks '$s'"; sed 's/^/  | /' "$f" | tail -5; fi
    done
}
lacks() {  # lacks NAME FILE STRING
    if grep -qF -- "$3" "$2"; then bad "$1: output has '$3'"; else ok; fi
}
# ran NAME PROG EXPECTED: the "PROG: ran ..." line of $TMP/out is exactly EXPECTED
ran() {
    got=$(grep "^$2: ran" "$TMP/out")
    if [ "$got" = "$2: ran $3" ]; then ok; else bad "$1: '$got', expected '$2: ran $3'"; fi
}

# ---- options ----
run "bad option" 2 "$OPS" --bogus
has "bad option" "$TMP/err" "unknown option --bogus" "usage: checkasm_ops"
run "unknown slot" 2 "$GEMM" --function gemm_f64
has "unknown slot" "$TMP/err" "unknown slot 'gemm_f64'" "usage: checkasm_gemm"
run "unknown level" 2 "$OPS" --isa=sse9
has "unknown level" "$TMP/err" "unknown ISA level 'sse9'"
run "missing value" 2 "$GEMM" --isa
has "missing value" "$TMP/err" "missing value for --isa"
run "help" 0 "$GEMM" --help
has "help" "$TMP/out" "usage: checkasm_gemm" "gemm_q4_K" "mean_rows"

# ---- the reference level alone ----
run "ref filter" 0 "$OPS" --isa ref --function madd
ran "ref filter" checkasm_ops "madd@ref"
lacks "ref filter" "$TMP/out" "jk_attn_ref"
run "other program's slot" 77 "$GEMM" --function rope
has "other program's slot" "$TMP/out" "checkasm_gemm: ran nothing (skipped)"

# the levels of this machine, as the programs print them
levels=$(sed -n 's/^  level \([a-z0-9]*\) available$/\1/p' "$TMP/out" | tr '\n' ' ')
first=${levels%% *}
last=$(echo $levels | awk '{print $NF}')
absent=neon
case " $levels " in *" neon "*) absent=avx2 ;; esac
run "absent level" 77 "$OPS" --isa $absent
has "absent level" "$TMP/out" "level $absent is not available on this machine"

if [ -z "$first" ]; then
    echo "test_harness: no ISA level above the reference here; crash and filter tests skipped"
    echo "test_harness: $n_ok passed, $n_bad failed"
    [ "$n_bad" -eq 0 ] && exit 77
    exit 1
fi
echo "test_harness: levels $levels"

# ---- the crash report ----
run "crash ops" crash "$OPS" --crash attn
has "crash ops" "$TMP/err" "checkasm: SIGSEGV in slot attn at level $first (JEPA_SEED="
has "crash ops" "$TMP/out" "checkasm_ops: seed"   # what came before the crash is in the log
run "crash gemm" crash "$GEMM" --crash gemm_f32 --isa $last
has "crash gemm" "$TMP/err" "checkasm: SIGSEGV in slot gemm_f32 at level $last"
run "crash gemm, one slot" crash "$GEMM" --crash gemm_bf16 --function gemm_bf16
has "crash gemm, one slot" "$TMP/err" "checkasm: SIGSEGV in slot gemm_bf16 at level $first"

# ---- the filter runs only what it names: the crash put elsewhere never fires ----
run "filter ops" 0 "$OPS" --crash attn --function rope --isa $last
ran "filter ops" checkasm_ops "rope@$last"
lacks "filter ops" "$TMP/err" "SIGSEGV"
run "filter ops, every level" 0 "$OPS" --crash silu --function=gelu_tanh
ran "filter ops, every level" checkasm_ops "$(for l in $levels; do printf '%s ' "gelu_tanh@$l"; done | sed 's/ $//')"
run "filter gemm" 0 "$GEMM" --crash gemm_f32 --function gemm_q8_0 --isa $first
ran "filter gemm" checkasm_gemm "gemm_q8_0@$first"
has "filter gemm" "$TMP/out" "$first q8_0:"
lacks "filter gemm" "$TMP/out" " f32:"

echo "test_harness: $n_ok passed, $n_bad failed"
[ "$n_bad" -eq 0 ]
