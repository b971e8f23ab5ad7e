/*
 * amx.h — the tile operations of kernels/x86/gemm_amx.c, as the AMX instructions (gcc's
 * intrinsics, -mamx-tile -mamx-bf16) or, with -DJK_TILE_MODEL, as the C model of them
 * (amx_model.h) on any CPU. Tile numbers must be integer constants (the intrinsics paste
 * them into the instruction).
 *
 * gcc 12's tile load / store intrinsics are asm statements without a memory operand or
 * clobber: the compiler may move or drop the stores that fill a buffer a tile load reads,
 * or read a buffer before the tile store that fills it. The native forms therefore put a
 * compiler barrier before each load and after each store (no instruction is emitted).
 */
#ifndef JEPA_KERNELS_X86_AMX_H
#define JEPA_KERNELS_X86_AMX_H

#include "kernels/x86/amx_cfg.h"

#ifdef JK_TILE_MODEL
#include "kernels/x86/amx_model.h"
#define tile_loadconfig(cfg) amx_model_loadconfig(cfg)
#define tile_release() amx_model_release()
#define tile_zero(t) amx_model_zero(t)
#define tile_load(t, base, stride) amx_model_loadd(t, base, stride)
#define tile_store(t, base, stride) amx_model_stored(t, base, stride)
#define tile_dpbf16ps(d, a, b) amx_model_dpbf16ps(d, a, b)
#else
#include <immintrin.h>
#define AMX_BARRIER() __asm__ volatile("" ::: "memory")
#define tile_loadconfig(cfg)   \
    do {                       \
        AMX_BARRIER();         \
        _tile_loadconfig(cfg); \
    } while (0)
#define tile_release() _tile_release()
#define tile_zero(t) _tile_zero(t)
#define tile_load(t, base, stride)            \
    do {                                      \
        AMX_BARRIER();                        \
        _tile_loadd(t, base, (long)(stride)); \
    } while (0)
#define tile_store(t, base, stride)            \
    do {                                       \
        _tile_stored(t, base, (long)(stride)); \
        AMX_BARRIER();                         \
    } while (0)
#define tile_dpbf16ps(d, a, b) _tile_dpbf16ps(d, a, b)
#endif

#endif
