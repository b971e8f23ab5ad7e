#!/usr/bin/env bash
# tests/check_layers.sh — the front-ends (cli/, server/, bench/, python/) are clients of
# the library: they reach a model through include/jepa.h only, and they share helpers
# through common/, never through each other both ways.
#
#   bash tests/check_layers.sh [SRCDIR]           check; exit 1 naming each breach
#   bash tests/check_layers.sh --graph [SRCDIR]   print the directory-level include graph
#
# The graph has an edge A -> B when a file under A/ has a line `#include "B/..."` (B a
# top-level directory of the tree). Rules checked:
#   1. no file under cli/, server/, python/ includes a header of models/ (the library's
#      internals: what a front-end needs of a model is a call or struct of jepa.h);
#   2. no two front-end directories include each other (a two-way tie).
# Run by meson test (suite 'cli').
set -u
graph=0
if [ "${1:-}" = --graph ]; then graph=1; shift; fi
src=${1:-$(dirname "$0")/..}
cd "$src" || { echo "check_layers: $src: no such directory" >&2; exit 1; }
[ -f include/jepa.h ] || { echo "check_layers: $src is not the jepa.c tree (no include/jepa.h)" >&2; exit 1; }

# Every "FROMDIR TODIR FILE" edge, from the C / CUDA sources outside tests/ and third_party/.
edges=$(find . -path ./tests -prune -o -path ./third_party -prune -o -path './build*' -prune -o \
             -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) -print |
        sed 's|^\./||' | sort | while read -r f; do
            from=${f%%/*}
            [ "$from" = "$f" ] && continue
            sed -n 's|^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([a-z0-9_]*\)/.*".*|\1|p' "$f" |
            while read -r to; do
                [ "$to" != "$from" ] && [ -d "$to" ] && echo "$from $to $f"
            done
        done)

if [ $graph = 1 ]; then
    echo "include graph (A -> B: files of A include headers of B; count of such lines):"
    awk '{ n[$1 " -> " $2]++ } END { for (k in n) printf "  %-22s %d\n", k, n[k] }' <<<"$edges" | sort
    echo "two-way ties:"
    awk '{ e[$1 " " $2] = 1 } END { for (k in e) { split(k, p, " ");
         if (p[1] < p[2] && ((p[2] " " p[1]) in e)) printf "  %s <-> %s\n", p[1], p[2] } }' <<<"$edges" |
        sort | grep . || echo "  none"
    exit 0
fi

bad=0
while read -r from to f; do
    [ -n "$from" ] || continue
    case "$from" in cli|server|python) ;; *) continue ;; esac
    if [ "$to" = models ]; then
        echo "check_layers: $f includes a header of models/ (use include/jepa.h)"
        bad=$((bad + 1))
    fi
done <<<"$edges"
front='^(cli|server|bench|python)$'
ties=$(awk -v re="$front" '$1 ~ re && $2 ~ re { e[$1 " " $2] = 1 }
       END { for (k in e) { split(k, p, " "); if (p[1] < p[2] && ((p[2] " " p[1]) in e)) print p[1], p[2] } }' \
       <<<"$edges")
while read -r a b; do
    [ -n "$a" ] || continue
    echo "check_layers: $a/ and $b/ include each other:"
    grep -E "^($a $b|$b $a) " <<<"$edges" | awk '{ print "    " $3 " -> " $2 "/" }'
    bad=$((bad + 1))
done <<<"$ties"
if [ $bad -gt 0 ]; then
    echo "check_layers: $bad breach(es) of the front-end layering (see tests/check_layers.sh)"
    exit 1
fi
echo "check_layers: front-ends include no models/ header; no two-way ties between cli, server, bench, python"
