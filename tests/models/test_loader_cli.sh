#!/bin/sh
# test_loader_cli.sh — tests of `jepa info` (cli/cmd_info.c), run by meson (suite models):
#   sh test_loader_cli.sh JEPA_BINARY DATA_DIR SCRATCH_DIR
# The fixtures' facts (family, dims, hier layers, labels) come from their meta.json; the
# error conventions from cli/cli.h: exit 1 and exactly one line "jepa: <file>: ..." on
# stderr for a bad file, exit 2 for a usage error, 0 for --help.
set -u
JEPA=$1
DATA=$2
TMP=$3/test_loader_cli.tmp
mkdir -p "$TMP" || exit 1
fails=0
passes=0

ok() { passes=$((passes + 1)); }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

# run NAME EXPECTED_EXIT ARGS...: stdout in $TMP/out, stderr in $TMP/err
run() {
    name=$1; want=$2; shift 2
    ${MESON_EXE_WRAPPER:-} "$JEPA" "$@" >"$TMP/out" 2>"$TMP/err"   # qemu in a cross build
    rc=$?
    if [ "$rc" -eq "$want" ]; then ok; else bad "$name: exit $rc, expected $want"; sed 's/^/  | /' "$TMP/err"; fi
}
has() {  # has NAME FILE STRING...
    name=$1; f=$2; shift 2
    for s in "$@"; do
        if grep -qF -- "$s" "$f"; then ok; else bad "$name: output lacks '$s'"; fi
    done
}
one_error_line() {  # one_error_line NAME: stderr is exactly one line starting "jepa: "
    n=$(wc -l <"$TMP/err")
    if [ "$n" -eq 1 ] && head -n 1 "$TMP/err" | grep -q '^jepa: '; then ok
    else bad "$1: stderr is not one 'jepa: ' line:"; sed 's/^/  | /' "$TMP/err"; fi
}
quiet_stderr() {
    if [ -s "$TMP/err" ]; then bad "$1: unexpected stderr"; sed 's/^/  | /' "$TMP/err"; else ok; fi
}

V2=$DATA/vjepa2_tiny/model.gguf
V21=$DATA/vjepa2_1_tiny/model.gguf

# V-JEPA 2 tiny (meta.json A-D): 128-d, 2 layers, 2 heads x 64, ffn 512, patch 16,
# tubelet 2, 64 px, 4 frames; predictor 64-d, 10 mask tokens, out 128; head 7 classes.
run "info vjepa2" 0 info "$V2"
quiet_stderr "info vjepa2"
has "info vjepa2" "$TMP/out" "vjepa2" "RANDOM WEIGHTS" "128-d, 2 layers, 2 heads x 64, ffn 512" \
    "patch 16, tubelet 2, 64x64 px, 4 frames" "tiled layout" "no interpolation" \
    "10 mask tokens" "out dim 128" "attentive_pool, 7 classes" "3 pool layers" '"c0", "c1"' \
    "112 f32" "shortest_edge to 73, centre crop 64" "licence" "source"

# V-JEPA 2.1 tiny (meta.json E-H): 64-d, 12 layers, 1 head x 64, hier [2,5,8,11],
# interleaved, interpolated to 16; predictor 4 layers, 8 mask tokens, out 96.
run "info vjepa2_1" 0 info "$V21"
quiet_stderr "info vjepa2_1"
has "info vjepa2_1" "$TMP/out" "vjepa2_1" "image+video" "64-d, 12 layers, 1 head x 64, ffn 256" \
    "[2, 5, 8, 11]" "interleaved layout" "interpolated to a 16x16 reference grid" \
    "8 mask tokens" "out dim 96" "context projection" "head        none" "219 f32"

run "info --kv" 0 info --kv "$V2"
has "info --kv" "$TMP/out" "general.architecture" "jepa.enc.embed_dim" "jepa.head.labels" "jepa.pre.rescale"
n=$(grep -c '^  jepa\.\|^  general\.' "$TMP/out")
if [ "$n" -eq 54 ]; then ok; else bad "info --kv: $n key lines, expected 54 (meta.json n_kv)"; fi

run "info --tensors" 0 info --tensors "$V21"
has "info --tensors" "$TMP/out" "enc.blk.11.attn_qkv.weight" "[192, 64]" "[64, 1536]" "enc.hier_norm.3.bias"
n=$(grep -c '^  [a-z]*\.[a-z_0-9.]* *f32 ' "$TMP/out")
if [ "$n" -eq 219 ]; then ok; else bad "info --tensors: $n tensor lines, expected 219 (meta.json n_tensors)"; fi

run "info --help" 0 info --help
has "info --help" "$TMP/out" "usage: jepa info"

run "missing file" 1 info "$TMP/no-such-file.gguf"
one_error_line "missing file"
has "missing file" "$TMP/err" "no-such-file.gguf"

head -c 100000 "$V2" >"$TMP/truncated.gguf"
run "truncated file" 1 info "$TMP/truncated.gguf"
one_error_line "truncated file"
has "truncated file" "$TMP/err" "truncated.gguf"

printf 'not a gguf file at all\n' >"$TMP/text.gguf"
run "not a gguf" 1 info "$TMP/text.gguf"
one_error_line "not a gguf"

# text from the file reaches the terminal escaped: a general.name and a jepa.family with a
# newline and an escape sequence in them (the string value rewritten in place, same length)
set_str() {  # set_str IN OUT KEY VALUE: the string value of KEY replaced by VALUE (same length)
    python3 - "$@" <<'PY'
import struct, sys
src, dst, key, val = sys.argv[1], sys.argv[2], sys.argv[3].encode(), sys.argv[4].encode().decode("unicode_escape").encode("latin-1")
b = bytearray(open(src, "rb").read())
k = struct.pack("<Q", len(key)) + key
i = b.index(k) + len(k)
assert struct.unpack_from("<I", b, i)[0] == 8, "not a string key"
n = struct.unpack_from("<Q", b, i + 4)[0]
assert n == len(val), "value length %d, replacement %d" % (n, len(val))
b[i + 12:i + 12 + n] = val
open(dst, "wb").write(bytes(b))
PY
}
if command -v python3 >/dev/null && set_str "$V2" "$TMP/name.gguf" general.name 'vjepa2\n\x1b[2Jtiny-random-fix' 2>/dev/null &&
   set_str "$V2" "$TMP/family.gguf" jepa.family 'vj\x1b[2J'; then
    run "control characters in general.name" 0 info "$TMP/name.gguf"
    if LC_ALL=C grep -q "$(printf '\033')" "$TMP/out"; then bad "an escape byte reached stdout"; else ok; fi
    has "control characters in general.name" "$TMP/out" 'vjepa2\x0a\x1b[2Jtiny-random-fix'
    run "control characters in jepa.family" 1 info "$TMP/family.gguf"
    one_error_line "control characters in jepa.family"
    has "control characters in jepa.family" "$TMP/err" 'unknown family "vj\x1b[2J"'
else
    echo "skip the control-character checks: no python3 to rewrite the fixture"
fi

run "unknown option" 2 info --frobnicate "$V2"
run "no model" 2 info
run "two models" 2 info "$V2" "$V21"

rm -rf "$TMP"
echo "$passes checks passed, $fails failed"
[ "$fails" -eq 0 ]
