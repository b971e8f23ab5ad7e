/*
 * gemm_amx.c — the bf16 precision tier's matmul slots (kernels.h, JK_PREC_BF16) on Intel
 * AMX tiles (AMX-TILE + AMX-BF16, with AVX-512 F/BW/VL/DQ for packing and epilogues),
 * every weight type: Y = epi(bf16(X) . bf16(W)^T + b), products of bf16 pairs accumulated
 * in f32 by TDPBF16PS, the bias, GELU and residual add in f32.
 *
 * The blocking, threads, K blocks and packing are those of the AVX512-BF16 rung
 * (gemm_tmpl.h with gemm_pairs.h: X and W rounded to bf16 pairs as they are packed; every
 * weight type decoded to f32 first, gemm_x86.h), so both rungs of the tier see the same
 * operands; only the microkernel differs. Its tile is 32 x 32 of Y in four 16 x 16 f32
 * accumulator tiles, fed per step of 16 pairs (32 values of k) by two A tiles (rows
 * 0..15 and 16..31 of a packed X panel, row i's pairs np apart: the pair panel itself)
 * and two B tiles (16 pairs x 16 columns of the [p][GT_NR] W panel: the VNNI layout that
 * TDPBF16PS reads, a row of B being one pair of 16 columns):
 *     tmm0 += tmm4 . tmm6   tmm1 += tmm4 . tmm7     (rows 0..15,  columns 0..15 / 16..31)
 *     tmm2 += tmm5 . tmm6   tmm3 += tmm5 . tmm7     (rows 16..31)
 * Ragged edges: rows past M repeat the last row in the X panel and columns past N the
 * last column in the W panel (their results are not stored); a K block whose pair count
 * is not a multiple of 16 ends with its last pairs copied into zero-filled 16-pair
 * buffers (a zero pair adds +0 to every sum: no change), since a tile's shape cannot
 * change without a configuration load, which zeroes the accumulators. Tiles of at most 16
 * rows skip the second A tile. The accumulators are stored to a 32 x 32 f32 buffer and
 * go through the AVX-512 rung's epilogue (gemm_store512.h). Every output's sum runs over
 * its K block in pair order, then block after block through Y (gemm_tmpl.h), whatever
 * the thread count: the same bits for any nthreads.
 *
 * Built a second time with -DJK_GEMM_HIGH as the high tier's slots (kernels.h,
 * JK_PREC_HIGH): X and W each packed as two bf16 terms, hi + lo (gemm_pairs.h), and three
 * tile products per step, hi hi + hi lo + lo hi: every product of the split operands but
 * lo lo, so a term x w is carried to within about 3 x 2^-16 of itself (exact weights:
 * f16 and bf16 need no third term), and the sums are f32 as in the bf16 tier.
 *
 * The OS side (runtime/cpu.c): JEPA_CPU_AMX_BF16 is set only after the CPUID bits, the
 * XCR0 tile-state bits and the kernel's permission (arch_prctl ARCH_REQ_XCOMP_PERM) all
 * agree, and init.c installs these slots only then. Each thread loads the tile
 * configuration before its first tile and releases the tiles after its last, in every
 * call (GT_THREAD_START / GT_THREAD_END of gemm_tmpl.h).
 *
 * Built natively (-mamx-tile -mamx-bf16, kernels/meson.build) and, with -DJK_TILE_MODEL
 * (and SIMDe for the AVX-512 parts), against the C model of the tile instructions
 * (amx_model.h), which tests/checkasm runs on any x86-64 (checkasm_gemm_amx_model); the
 * native build is tested by checkasm_gemm_amx where the CPU has AMX. The blocking below
 * has not been timed: no AMX machine was at hand when it was written.
 */
#define JK_GEMM_BF16X   /* gemm_x86.h / gemm_pairs.h: X and W packed as bf16 pairs */

#include <string.h>

#include "kernels/x86/vec_avx512.h"
#include "kernels/x86/x86.h"
#include "kernels/x86/amx.h"

/* Blocking (untimed; sized for Sapphire Rapids' 48 KiB L1d and 2 MiB L2 per core):
 *  - 32 x 32 tile: 4 accumulator tiles + 2 A + 2 B, the 8 tiles of palette 1;
 *  - KC 512 (256 pairs): the 32-row A panel is 32 KiB, a 32-column B panel 32 KiB;
 *  - MC 256: the A block is 256 KiB of L2; NC 1024: the B panel 512 KiB. */
#define GT_MR 32
#define GT_NR 32
#define GT_KC 512
#define GT_MC 256
#define GT_NC 1024
#define GT_SMALL_M 0            /* every M is packed (rounded), as in the AVX512-BF16 rung */
#define GT_UKERNEL_X 0
#ifdef JK_GEMM_HIGH             /* hi and lo panels (gemm_pairs.h): twice the pairs */
#define GT_PACKED_K(kc) (2 * (((kc) + 1) / 2))
#define GEMM_ISA amx_high
#define GT_KIND JK_GK_AMX_HIGH
#else
#define GT_PACKED_K(kc) (((kc) + 1) / 2)
#define GEMM_ISA amx_bf16
#define GT_KIND JK_GK_AMX_BF16
#endif

/* Tiles: accumulators of rows 0..15 / 16..31 x columns 0..15 / 16..31, A rows, B columns. */
#define TC00 0
#define TC01 1
#define TC10 2
#define TC11 3
#define TA0 4
#define TA1 5
#define TB0 6
#define TB1 7
enum { TILE_PAIRS = 16 };   /* pairs per A row / B rows of a tile: 64 bytes */

/* Palette 1, all 8 tiles 16 rows x 64 bytes (16 f32, or 16 pairs of bf16). */
static void amx_thread_start(void) {
    struct jk_tilecfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) cfg.rows[t] = 16, cfg.colsb[t] = 64;
    tile_loadconfig(&cfg);
}
#define GT_THREAD_START() amx_thread_start()
#define GT_THREAD_END() tile_release()

#include "kernels/simd/gemm_tmpl.h"
#include "kernels/x86/gemm_x86.h"
#include "kernels/x86/gemm_pairs.h"
#include "kernels/x86/gemm_store512.h"

#ifndef JK_GEMM_HIGH
/* One step of 16 pairs: A rows 0..15 at a0 (and 16..31 at a1 when two), sa bytes apart;
 * B's 16 pairs at b, sb bytes apart, columns 0..15 then 16..31 (16 pairs further on). */
static ALWAYS_INLINE void tile_step(const uint32_t *a0, const uint32_t *a1, size_t sa, const uint32_t *b,
                                    size_t sb, int two) {
    tile_load(TB0, b, sb);
    tile_load(TB1, b + 16, sb);
    tile_load(TA0, a0, sa);
    tile_dpbf16ps(TC00, TA0, TB0);
    tile_dpbf16ps(TC01, TA0, TB1);
    if (two) {
        tile_load(TA1, a1, sa);
        tile_dpbf16ps(TC10, TA1, TB0);
        tile_dpbf16ps(TC11, TA1, TB1);
    }
}

/* The last np - p0 (< 16) pairs of the panels, zero-padded to a full step. */
static void tile_tail(const uint32_t *a, const uint32_t *b, int np, int p0, int two) {
    _Alignas(64) uint32_t at[GT_MR][TILE_PAIRS], bt[TILE_PAIRS][GT_NR];
    const int rest = np - p0, rows = two ? GT_MR : 16;
    memset(at, 0, sizeof at);
    memset(bt, 0, sizeof bt);
    for (int i = 0; i < rows; i++) memcpy(at[i], a + (size_t)i * np + p0, (size_t)rest * 4);
    memcpy(bt, b + (size_t)p0 * GT_NR, (size_t)rest * GT_NR * 4);
    tile_step(at[0], at[16], sizeof at[0], bt[0], sizeof bt[0], two);
}

/* The 16-pair steps of a K block: np pairs of the A panel at a (GT_MR rows np pairs
 * apart) and of the B panel at b ([np][GT_NR]). */
static void tile_block(const uint32_t *a, const uint32_t *b, int np, int two) {
    const size_t sa = (size_t)np * 4, sb = GT_NR * 4;
    int p = 0;
    for (; p + TILE_PAIRS <= np; p += TILE_PAIRS)
        tile_step(a + p, a + (size_t)16 * np + p, sa, b + (size_t)p * GT_NR, sb, two);
    if (p < np) tile_tail(a, b, np, p, two);
}
#else
/* The high tier: C += Ahi Bhi + Ahi Blo + Alo Bhi for each 16 x 16 accumulator, in that
 * order (Alo Blo, below 2^-16 of the product, is left out: gemm_pairs.h). tmm6 / tmm7 hold
 * the hi / lo B tile of one column half, tmm4 / tmm5 the hi / lo A tile of one row half. */
#define HIGH_ROWS(name, C)                                                                    \
    static ALWAYS_INLINE void name(const uint32_t *ah, const uint32_t *al, size_t sa) {       \
        tile_load(TA0, ah, sa);                                                               \
        tile_load(TA1, al, sa);                                                               \
        tile_dpbf16ps(C, TA0, TB0);                                                           \
        tile_dpbf16ps(C, TA0, TB1);                                                           \
        tile_dpbf16ps(C, TA1, TB0);                                                           \
    }
HIGH_ROWS(high_c00, TC00)
HIGH_ROWS(high_c01, TC01)
HIGH_ROWS(high_c10, TC10)
HIGH_ROWS(high_c11, TC11)

/* One step of 16 pairs: a[part][half] the hi / lo A rows 0..15 / 16..31 (sa bytes apart),
 * b[part] the hi / lo B pairs of columns 0..15 (16..31 16 pairs further on, sb apart). */
static ALWAYS_INLINE void tile_step(const uint32_t *const a[2][2], size_t sa, const uint32_t *const b[2],
                                    size_t sb, int two) {
    tile_load(TB0, b[0], sb);
    tile_load(TB1, b[1], sb);
    high_c00(a[0][0], a[1][0], sa);
    if (two) high_c10(a[0][1], a[1][1], sa);
    tile_load(TB0, b[0] + 16, sb);
    tile_load(TB1, b[1] + 16, sb);
    high_c01(a[0][0], a[1][0], sa);
    if (two) high_c11(a[0][1], a[1][1], sa);
}

/* The K block: the hi then lo A panels at a (GT_MR rows of np pairs each), the hi then
 * lo B panels at b ([np][GT_NR] each); the last np % 16 pairs zero-padded. */
static void tile_block(const uint32_t *a, const uint32_t *b, int np, int two) {
    const size_t sa = (size_t)np * 4, sb = GT_NR * 4, alo = (size_t)GT_MR * np, blo = (size_t)GT_NR * np;
    int p = 0;
    for (; p + TILE_PAIRS <= np; p += TILE_PAIRS) {
        const uint32_t *const ap[2][2] = {{a + p, a + (size_t)16 * np + p}, {a + alo + p, a + alo + (size_t)16 * np + p}};
        const uint32_t *const bp[2] = {b + (size_t)p * GT_NR, b + blo + (size_t)p * GT_NR};
        tile_step(ap, sa, bp, sb, two);
    }
    if (p == np) return;
    _Alignas(64) uint32_t at[2][GT_MR][TILE_PAIRS], bt[2][TILE_PAIRS][GT_NR];
    const int rest = np - p, rows = two ? GT_MR : 16;
    memset(at, 0, sizeof at);
    memset(bt, 0, sizeof bt);
    for (int h = 0; h < 2; h++) {
        for (int i = 0; i < rows; i++) memcpy(at[h][i], a + h * alo + (size_t)i * np + p, (size_t)rest * 4);
        memcpy(bt[h], b + h * blo + (size_t)p * GT_NR, (size_t)rest * GT_NR * 4);
    }
    const uint32_t *const ap[2][2] = {{at[0][0], at[0][16]}, {at[1][0], at[1][16]}};
    const uint32_t *const bp[2] = {bt[0][0], bt[1][0]};
    tile_step(ap, sizeof at[0][0], bp, sizeof bt[0][0], two);
}
#endif

/* Y[0..mr, 0..nr] (+)= A . B over a K block of kc values (np = (kc + 1) / 2 pairs), then the
 * epilogue of `mode`. a: the X panel, GT_MR rows of np pairs; b: the W panel, [np][GT_NR]
 * pairs (gemm_pairs.h); the high tier: each a hi panel then a lo panel. */
static void gt_ukernel(int kc, const float *a, const float *b, float *y, size_t ldy, int mr, int nr,
                       const float *bias, int mode) {
    _Alignas(64) float c[GT_MR][GT_NR];
    const int two = mr > 16;
    tile_zero(TC00);
    tile_zero(TC01);
    if (two) {
        tile_zero(TC10);
        tile_zero(TC11);
    }
    tile_block((const uint32_t *)(const void *)a, (const uint32_t *)(const void *)b, (kc + 1) / 2, two);
    tile_store(TC00, c[0], sizeof c[0]);
    tile_store(TC01, c[0] + 16, sizeof c[0]);
    if (two) {
        tile_store(TC10, c[16], sizeof c[0]);
        tile_store(TC11, c[16] + 16, sizeof c[0]);
    }
    tile_out(c, y, ldy, mr, nr, bias, mode);
}

GEMM_X86_SLOTS_OF(GEMM_ISA)
