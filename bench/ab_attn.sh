#!/usr/bin/env bash
# bench/ab_attn.sh — one build's attention kernel against another's, in one process
# (bench/ab_attn.c): both called alternately on the same data, so that the machine's
# drift between runs falls on both alike. docs/notes/performance-log.md has what it measured.
#
#   bash bench/ab_attn.sh BUILD_A BUILD_B [avx512|avx2] [CPU]
#
# BUILD_A and BUILD_B are meson build folders of two commits (x86-64). Their
# kernels/libjk_<isa>.a.p/x86_ops_<isa>.c.o are copied with every symbol they define
# renamed A_... / B_..., linked with BUILD_A's reference kernels, and run on the
# attention cases of the roofline models (LeWM, LeJEPA, the V-JEPA 2.1 ViT-B image, the
# ViT-L clip, the ViT-B clip, LeVJEPA's block-causal clip), pinned to CPU (default 0).
set -eu
cd "$(dirname "$0")/.."
a=$1 b=$2 isa=${3:-avx512} cpu=${4:-0}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for side in A B; do
    build=$a
    [ $side = B ] && build=$b
    obj=$build/kernels/libjk_$isa.a.p/x86_ops_$isa.c.o
    [ -f "$obj" ] || { echo "ab_attn: no $obj (a build with the $isa kernels?)" >&2; exit 1; }
    nm --defined-only -g "$obj" | awk -v p=$side '{print $3, p "_" $3}' > "$work/$side.map"
    objcopy --redefine-syms="$work/$side.map" "$obj" "$work/$side.o"
done
# bench/peak.c for bench_now (it needs no -m flags: its loops use target attributes)
cc -O2 -std=c11 -D_GNU_SOURCE -DAB_ISA=$isa -I. -Iinclude bench/ab_attn.c bench/peak.c "$work/A.o" "$work/B.o" \
    "$a/libjepa_kernels.a" "$a/libjepa_runtime.a" -fopenmp -lm -o "$work/ab_attn"
# N heads calls [frames [head_dim]]: LeWM, LeJEPA, ViT-B 384² image, ViT-L clip,
# ViT-B clip, LeVJEPA
for c in "257 3 3000" "197 6 3000" "577 12 200" "2048 16 16" "4608 12 6" "3137 16 6 16"; do
    taskset -c "$cpu" "$work/ab_attn" $c
done
