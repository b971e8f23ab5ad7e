#!/usr/bin/env bash
# tests/check_symbols.sh — every global symbol that a static library defines carries one
# of the project's prefixes, so that libjepa.a links next to any other library (ggml's
# gguf_* and quantize_row_* names among them). Run by tests/run_all.sh on the installed
# libjepa.a of the release (CUDA) build.
#
#   bash tests/check_symbols.sh LIB.a
#
# Allowed: jepa_ (public API), jk_ (kernels), jkc_ (CUDA kernels), jm_ (models), jg_
# (GGUF), jr_ (runtime), ji_ (input); C++ names (the CUDA objects) whose demangled name
# has such a prefix or lies in an anonymous namespace (unique to its file by
# construction, nvcc's kernel stubs included); and the compiler's weak
# DW.ref.__gxx_personality_v0. jepa_ is the public API's alone: every jepa_ symbol must be
# declared JEPA_API in include/jepa.h (so internal code cannot hide behind it).
set -u
lib=$1
header="$(dirname "$0")/../include/jepa.h"
[ -f "$lib" ] || { echo "check_symbols: $lib: no such file" >&2; exit 1; }
[ -f "$header" ] || { echo "check_symbols: $header: no such file" >&2; exit 1; }
public=$(grep -o 'JEPA_API[^(]*\bjepa_[a-z0-9_]*(' "$header" | grep -o 'jepa_[a-z0-9_]*(' | tr -d '(' | sort -u)
[ -n "$public" ] || { echo "check_symbols: no JEPA_API declarations read from $header" >&2; exit 1; }
prefixes='^(jepa_|jk_|jkc_|jm_|jg_|jr_|ji_)'
bad=0 n=0
while read -r sym; do
    n=$((n + 1))
    if [[ $sym == jepa_* ]]; then
        grep -qx "$sym" <<<"$public" && continue
        echo "check_symbols: $lib: '$sym' has the public prefix jepa_ but is not declared in include/jepa.h"
        bad=$((bad + 1))
        continue
    fi
    [[ $sym =~ $prefixes ]] && continue
    [ "$sym" = DW.ref.__gxx_personality_v0 ] && continue
    if [[ $sym == _Z* ]]; then
        dm=$(echo "$sym" | c++filt)
        [[ $dm =~ $prefixes ]] && continue
        [[ $dm == *"(anonymous namespace)"* || $sym == *_GLOBAL__N_* ]] && continue
        echo "check_symbols: $lib: global '$dm' ($sym) has no project prefix"
    else
        echo "check_symbols: $lib: global '$sym' has no project prefix"
    fi
    bad=$((bad + 1))
done < <(nm -g --defined-only "$lib" 2>/dev/null | awk 'NF == 3 {print $3}' | sort -u)
if [ "$n" -eq 0 ]; then echo "check_symbols: $lib: no symbols read (nm failed?)"; exit 1; fi
echo "check_symbols: $lib: $n global symbols, $bad without a project prefix"
[ "$bad" -eq 0 ]
