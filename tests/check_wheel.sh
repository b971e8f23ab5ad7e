#!/usr/bin/env bash
# tests/check_wheel.sh — `pip install` of this repository gives the jepa-c distribution: the
# Python package and a working `jepa` command, the same build of the engine:
#   - pip knows the distribution as jepa-c;
#   - the `jepa` beside the interpreter is the compiled binary (an ELF file, not a Python
#     entry point), and `jepa --version` prints the package's version, commit and features,
#     each equal to what the package's build_info() returns;
#   - the command and the package embed the same PNG with the same random-weight model
#     (written by `jepa synth`) to the same floats.
# The import name is read from the installed distribution's files, not assumed.
#
#   bash tests/check_wheel.sh SRC WORK     pip install SRC into the venv WORK/venv (made when
#                                          absent), building in WORK/build (both kept, so a
#                                          second run is incremental), then check it
#   bash tests/check_wheel.sh --venv VENV  check what is installed in VENV
#
# Building needs PyPI (meson-python, meson, ninja and numpy): when pip cannot reach it
# (probed as tests/run_all.sh does), the check is skipped with one line (exit 77).
set -u
fail() { echo "check_wheel: FAIL $*" >&2; exit 1; }

if [ "${1:-}" = "--venv" ]; then
    venv=${2:?--venv takes a folder}
else
    src=${1:?usage: check_wheel.sh SRC WORK | --venv VENV} work=${2:?usage: check_wheel.sh SRC WORK}
    mkdir -p "$work"
    venv=$work/venv
    if [ ! -x "$venv/bin/python" ]; then
        python3 -m venv "$venv" >"$work/venv.log" 2>&1 ||
            { echo "check_wheel: skipped: python3 -m venv failed: $(tail -1 "$work/venv.log")"; exit 77; }
    fi
    probe=$(mktemp -d)
    if ! timeout 30 "$venv/bin/pip" download -q --no-deps --no-cache-dir --timeout 5 --retries 0 \
            -d "$probe" pip >/dev/null 2>&1; then
        rm -rf "$probe"
        echo "check_wheel: skipped: PyPI is unreachable (pip download pip failed), the wheel needs meson-python"
        exit 77
    fi
    rm -rf "$probe"
    echo "check_wheel: pip install $src (build folder $work/build)"
    "$venv/bin/pip" install -q numpy >"$work/pip.log" 2>&1 &&
        "$venv/bin/pip" install -q --force-reinstall --no-deps "$src" -Cbuild-dir="$work/build" \
            -Csetup-args=-Dcuda=disabled -Ccompile-args=-j2 >>"$work/pip.log" 2>&1 ||
        { tail -30 "$work/pip.log"; fail "pip install $src failed"; }
fi
py=$venv/bin/python
jepa=$venv/bin/jepa
[ -x "$py" ] || fail "$py: no interpreter"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

name=$("$venv/bin/pip" show jepa-c 2>/dev/null | sed -n 's/^Name: //p')
[ "$name" = jepa-c ] || fail "pip show jepa-c: no such distribution installed in $venv"
# the import name: the folder of the distribution's __init__.py
pkg=$("$py" -c 'import importlib.metadata as m
print(*sorted({str(f.parent) for f in m.files("jepa-c") if f.name == "__init__.py" and len(f.parts) == 2}))')
[ -n "$pkg" ] && [ "$pkg" = "${pkg%% *}" ] || fail "jepa-c installs no single package (found '$pkg')"
echo "check_wheel: jepa-c installs the package '$pkg' and $jepa"
"$py" - "$pkg" "$(dirname "$0")/../LICENSE" <<'EOF' || fail "the package carries no copy of LICENSE"
import importlib.metadata as m, sys
f = [f for f in m.files("jepa-c") if str(f) == sys.argv[1] + "/LICENSE"]
sys.exit(not f or f[0].read_text() != open(sys.argv[2]).read())
EOF

[ -x "$jepa" ] || fail "$jepa: the wheel installed no jepa command"
[ "$(head -c 4 "$jepa" | od -An -c | tr -d ' ')" = '177ELF' ] || fail "$jepa is not the compiled binary (no ELF header)"
"$jepa" --version >"$tmp/version" 2>&1 || fail "$jepa --version failed: $(cat "$tmp/version")"
# the package's build_info() as `jepa --version` would print it
"$py" - "$pkg" >"$tmp/module" 2>&1 <<'EOF' || fail "$pkg.build_info() failed: $(cat "$tmp/module")"
import importlib, sys
info = importlib.import_module(sys.argv[1]).build_info()
print("jepa.c", info.pop("version"))
print("commit:", info.pop("commit"))
for k, v in info.items():
    print(k + ":", " ".join(v) if isinstance(v, list) else ("yes" if v else "no") if isinstance(v, bool) else v)
EOF
diff "$tmp/module" "$tmp/version" >"$tmp/diff" ||
    fail "$jepa --version and $pkg.build_info() differ:"$'\n'"$(cat "$tmp/diff")"
for key in commit kernels cuda openmp openblas images video server pull static; do
    grep -q "^$key: " "$tmp/version" || fail "$jepa --version has no '$key:' line"
done
echo "check_wheel: $(head -1 "$tmp/version"), $(grep -c ': ' "$tmp/version") facts, the same as $pkg.build_info()"

# the command and the package compute the same embedding
data="$(cd "$(dirname "$0")" && pwd)/input/data/png/rgb8.png"
"$jepa" synth --arch vjepa2-tiny -o "$tmp/m.gguf" >"$tmp/synth.log" 2>&1 ||
    fail "jepa synth failed: $(tail -1 "$tmp/synth.log")"
"$jepa" embed -m "$tmp/m.gguf" "$data" --pool mean -q -o "$tmp/cli.npy" 2>"$tmp/embed.err" ||
    fail "jepa embed failed: $(cat "$tmp/embed.err")"
"$py" - "$pkg" "$tmp/m.gguf" "$data" "$tmp/cli.npy" 2>&1 <<'EOF' || fail "the command and the package differ"
import importlib, sys
import numpy as np
pkg, model, image, cli = sys.argv[1:]
y = np.asarray(importlib.import_module(pkg).Model(model).embed(image, pool="mean"))
ref = np.load(cli)
if y.size != ref.size or not np.array_equal(y.ravel(), ref.ravel()):
    sys.exit("package %s %s, command %s %s" % (y.shape, y.ravel()[:3], ref.shape, ref.ravel()[:3]))
EOF
echo "check_wheel: jepa embed and $pkg.Model.embed agree bit for bit on $data"
