#!/usr/bin/env bash
# tests/check_static.sh — the static `jepa` (meson setup -Dstatic=true) is what it claims:
# file(1) calls it statically linked, it runs with no dynamic loader or library path, and
# (given a reference binary of the same sources, e.g. the release build's dynamic one) it
# writes the same bytes on the same work: a tiny random model's pooled embedding of the
# test pattern, of a PNG and (where both builds decode JPEG) of a JPEG. Prints its size.
# Run by tests/run_all.sh for the x86-64 static build (against the release build) and for
# the aarch64 cross build (file(1) and a run under qemu-aarch64 without -L).
#
#   bash tests/check_static.sh STATIC_JEPA [REFERENCE_JEPA] [-- RUNNER...]
#
# RUNNER runs STATIC_JEPA (e.g. qemu-aarch64-static); it gets no -L: a static binary
# needs no sysroot.
set -u
bin=$1
shift
ref=""
if [ $# -gt 0 ] && [ "$1" != "--" ]; then ref=$1; shift; fi
[ "${1:-}" = "--" ] && shift
runner=("$@")
data="$(cd "$(dirname "$0")" && pwd)/input/data"

fail() { echo "check_static: $*" >&2; exit 1; }
[ -x "$bin" ] || fail "$bin: no such executable"
desc=$(file -b "$bin") || fail "file(1) failed on $bin"
case $desc in
    *"statically linked"*) ;;
    *) fail "$bin is not statically linked: $desc" ;;
esac
size=$(stat -c %s "$bin")
stripped=$(mktemp)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" "$stripped"' EXIT
strip_tool=strip
case $desc in *aarch64*) strip_tool=aarch64-linux-gnu-strip ;; esac
if command -v "$strip_tool" >/dev/null && "$strip_tool" -o "$stripped" "$bin" 2>/dev/null; then
    ssize=$(stat -c %s "$stripped")
else
    ssize="?"
fi
echo "  $bin: statically linked, $size bytes ($ssize stripped): ${desc%%,*}"

# Runs with no loader: the version line and the CPU report.
"${runner[@]}" "$bin" --version >"$tmp/version" 2>&1 || fail "$bin --version failed: $(cat "$tmp/version")"
"${runner[@]}" "$bin" cpu >"$tmp/cpu" 2>&1 || fail "$bin cpu failed: $(head -3 "$tmp/cpu")"
echo "  $(head -1 "$tmp/version"); $(head -1 "$tmp/cpu")"
[ -n "$ref" ] || exit 0

[ -x "$ref" ] || fail "$ref: no such executable"
"$ref" synth --arch vjepa2-tiny -o "$tmp/m.gguf" >"$tmp/synth.log" 2>&1 ||
    fail "reference synth failed: $(tail -1 "$tmp/synth.log")"
inputs=("--test-pattern 2x64x64" "$data/png/rgb8.png")
[ -f "$data/jpeg/q75_422.jpg" ] && inputs+=("$data/jpeg/q75_422.jpg")
n=0
for input in "${inputs[@]}"; do
    n=$((n + 1))
    # shellcheck disable=SC2086  # "--test-pattern 2x64x64" is two words on purpose
    if ! "$ref" embed -m "$tmp/m.gguf" $input --pool mean -q -o "$tmp/ref$n.npy" 2>"$tmp/ref.err"; then
        case $(cat "$tmp/ref.err") in
            *"no JPEG decoding"*) continue ;;   # a reference build without libjpeg
        esac
        fail "reference embed of $input failed: $(cat "$tmp/ref.err")"
    fi
    # shellcheck disable=SC2086
    "${runner[@]}" "$bin" embed -m "$tmp/m.gguf" $input --pool mean -q -o "$tmp/static$n.npy" 2>"$tmp/static.err" ||
        fail "static embed of $input failed: $(cat "$tmp/static.err")"
    cmp -s "$tmp/ref$n.npy" "$tmp/static$n.npy" || fail "static and reference embeddings of $input differ"
    echo "  $input: static output identical to $ref"
done
