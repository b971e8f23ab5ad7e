#!/bin/bash
# gen_man.sh JEPA OUT — write the man page jepa(1) to OUT from the built binary's help:
# `jepa --help` for the synopsis and the command list, `jepa help CMD` for each command
# (verbatim, in a no-fill block), the version from `jepa --version`. Run by meson at
# build time (tools/meson.build); `man -l OUT` shows it.
set -eu
JEPA=$1 OUT=$2
# roff-safe verbatim text: backslashes doubled, a leading . or ' kept from being a request
roff() { sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"; }
version=$("$JEPA" --version | awk 'NR == 1 {print $2}')
top=$("$JEPA" --help)
cmds=$(awk '/^commands:/ {on = 1; next} on && /^  [a-z]/ {print $1} on && /^$/ {exit}' <<<"$top")
[ -n "$cmds" ] || { echo "gen_man.sh: no commands in '$JEPA --help'" >&2; exit 1; }
{
    echo ".\\\" jepa(1), generated from the help of jepa $version by tools/gen_man.sh; do not edit."
    echo ".TH JEPA 1 \"\" \"jepa.c $version\" \"User Commands\""
    echo ".SH NAME"
    echo "jepa \\- inference for JEPA vision models (V-JEPA 2, I-JEPA, LeWM, ...) from GGUF files"
    echo ".SH SYNOPSIS"
    echo ".B jepa"
    echo ".I command"
    echo "[\\fIoptions\\fR]"
    echo ".br"
    echo ".B jepa help"
    echo ".I command"
    echo ".br"
    echo ".B jepa \\-V"
    echo ".SH DESCRIPTION"
    echo ".nf"
    roff <<<"$top"
    echo ".fi"
    echo ".SH COMMANDS"
    for c in $cmds; do
        echo ".SS jepa $c"
        echo ".nf"
        "$JEPA" help "$c" 2>&1 | roff
        echo ".fi"
    done
    echo ".SH EXIT STATUS"
    echo "0 on success, 1 on a runtime error (a bad file, a failed run), 2 on a usage error;"
    echo "every error is one line on standard error."
    echo ".SH SEE ALSO"
    echo "The documentation of jepa.c: README.md, docs/cli.md, docs/server.md."
} >"$OUT.tmp"
mv "$OUT.tmp" "$OUT"
