#!/bin/sh
# check_install.sh — the installed tree, as a user of the library sees it: `meson install`
# into BUILD/install-root, then tests/install/hello_jepa.c compiled against that tree
# through pkg-config, linked with the shared library (libjepa.so.MAJOR) and with the
# archive (pkg-config --static), and run on a fixture model. Both must print the version
# that `pkg-config --modversion jepa` and `jepa --version` print, and the embedding that
# `jepa embed --input-tensor` writes for the same clip (bit for bit, as %.9g text).
# usage: check_install.sh BUILD_DIR MODEL.gguf
set -eu
B=$1 MODEL=$2
root=$(cd "$B" && pwd)/install-root
rm -rf "$root"
meson install -C "$B" --destdir "$root" >"$B/install.log" 2>&1 || { tail -20 "$B/install.log"; exit 1; }
pc=$(find "$root" -name jepa.pc | head -1)
[ -n "$pc" ] || { echo "FAIL no jepa.pc installed"; exit 1; }
export PKG_CONFIG_PATH="$(dirname "$pc")" PKG_CONFIG_SYSROOT_DIR="$root"
libdir=$(dirname "$(dirname "$pc")")   # .../lib/<triplet>/pkgconfig/jepa.pc
bindir=$(dirname "$(find "$root" -name jepa -type f -perm -u+x | head -1)")
cc=${CC:-cc}
src=$(dirname "$0")/install/hello_jepa.c
work=$B/check_install
mkdir -p "$work"
# shared: the soname, and nothing but the API exported
$cc -O2 "$src" $(pkg-config --cflags jepa) $(pkg-config --libs jepa) -o "$work/hello_shared"
readelf -d "$work/hello_shared" | grep -q 'NEEDED.*libjepa\.so\.[0-9]' ||
    { echo "FAIL hello_shared does not need libjepa.so.MAJOR"; readelf -d "$work/hello_shared" | grep NEEDED; exit 1; }
mkdir -p "$work"
so=$(find "$libdir" -name 'libjepa.so.*.*' | head -1)
exported=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v '^$' | sort -u)
public=$(grep -o 'JEPA_API[^(]*\bjepa_[a-z0-9_]*(' "$(dirname "$0")/../include/jepa.h" | grep -o 'jepa_[a-z0-9_]*(' |
         tr -d '(' | sort -u)
if [ "$exported" != "$public" ]; then
    echo "$public" >"$work/public.txt"
    echo "$exported" >"$work/exported.txt"
    echo "FAIL $so exports other symbols than include/jepa.h's API (< API only, > exported only):"
    diff "$work/public.txt" "$work/exported.txt" | head -20
    exit 1
fi
# static: the archive, with the private libraries pkg-config names
$cc -O2 "$src" $(pkg-config --cflags jepa) -L"$libdir" -Wl,-Bstatic -ljepa -Wl,-Bdynamic \
    $(pkg-config --static --libs jepa | sed 's/\(^\| \)-ljepa\( \|$\)/ /') -o "$work/hello_static"
if readelf -d "$work/hello_static" | grep -q 'NEEDED.*libjepa'; then echo "FAIL hello_static needs libjepa.so"; exit 1; fi
LD_LIBRARY_PATH="$libdir" "$work/hello_shared" "$MODEL" >"$work/shared.txt"
"$work/hello_static" "$MODEL" >"$work/static.txt"
cmp -s "$work/shared.txt" "$work/static.txt" || { echo "FAIL the shared and static programs differ"; exit 1; }
v=$(head -1 "$work/shared.txt")
[ "$v" = "$(pkg-config --modversion jepa)" ] && [ "jepa.c $v" = "$(LD_LIBRARY_PATH="$libdir" "$bindir/jepa" --version | head -1)" ] ||
    { echo "FAIL version: jepa_version() '$v', jepa.pc '$(pkg-config --modversion jepa)'"; exit 1; }
# the same clip through the installed jepa binary
set -- $(sed -n 2p "$work/shared.txt")
python3 - "$work/zeros.npy" "$@" <<'PY'
import struct, sys
path, dims = sys.argv[1], [int(v) for v in sys.argv[2:]]
h = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % ", ".join(map(str, dims))
h += " " * (127 - len(h) - 10) + "\n"
n = 1
for d in dims:
    n *= d
open(path, "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + bytes(4 * n))
PY
LD_LIBRARY_PATH="$libdir" "$bindir/jepa" embed -q -m "$MODEL" --input-tensor "$work/zeros.npy" --pool mean -o "$work/ref.npy"
python3 - "$work/ref.npy" >"$work/ref.txt" <<'PY'
import array, struct, sys
raw = open(sys.argv[1], "rb").read()
hl = struct.unpack("<H", raw[8:10])[0]
a = array.array("f")
a.frombytes(raw[10 + hl:])
print("\n".join("%.9g" % v for v in a))
PY
tail -n +3 "$work/shared.txt" | cmp -s - "$work/ref.txt" ||
    { echo "FAIL the installed library's embedding differs from jepa embed's"; exit 1; }
echo "ok   installed tree: jepa.pc $v; a program linked shared (libjepa.so.${v%%.*}) and static prints jepa embed's embedding"
