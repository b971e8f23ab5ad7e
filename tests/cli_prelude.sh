# cli_prelude.sh — the start every CLI test script shares, sourced (`. FILE`, sh or bash)
# once JEPA (the binary) and WORK (a folder of its own) are set: `jepa` runs the binary
# through MESON_EXE_WRAPPER (e.g. qemu-aarch64-static -L SYSROOT for a cross build); WORK
# is made empty; a binary this machine cannot execute skips the test (exit 77, one line);
# ok / bad print a check's result, bad counting it in `fails`.
jepa() { ${MESON_EXE_WRAPPER:-} "$JEPA" "$@"; }
rm -rf "$WORK" && mkdir -p "$WORK"
jepa --help >/dev/null 2>&1
[ $? -eq 126 ] && { echo "cannot execute $JEPA here (cross build without an exe wrapper): skipped"; exit 77; }
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
