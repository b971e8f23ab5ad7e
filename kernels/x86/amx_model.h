/*
 * amx_model.h — a C model of the Intel AMX tile instructions that kernels/x86/gemm_amx.c
 * uses, so that its code runs and is checked on CPUs without AMX (gemm_amx.c built with
 * -DJK_TILE_MODEL: kernels/x86/amx.h maps its tile calls here; tests/checkasm runs it
 * against the scalar reference, and test_amx_model.c checks the model itself).
 *
 * What is modelled (Intel SDM vol. 2, "LDTILECFG", "TILELOADD", "TILESTORED",
 * "TILEZERO", "TILERELEASE", "TDPBF16PS"; the ISA extensions reference's pseudo-code):
 *  - 8 tiles tmm0..7 of at most 16 rows x 64 bytes, per thread (thread-local, as the tile
 *    state is per thread on the hardware: XSAVE'd with the thread's context);
 *  - LDTILECFG of the 64-byte palette-1 configuration (struct jk_tilecfg): palette 0
 *    releases; palette 1 sets rows / colsb of each tile and zeroes every tile; anything
 *    else (another palette, rows > 16, colsb > 64, a colsb not a multiple of 4, nonzero
 *    reserved bytes or start_row) is the hardware's #GP: here a message and abort();
 *  - TILELOADD / TILESTORED: rows x colsb bytes, row r at base + r * stride; a load zeroes
 *    the bytes of the tile past colsb and past rows (write_row_and_zero, zero_upper_rows);
 *  - TILEZERO; TILERELEASE (back to the init state: unconfigured, zero);
 *  - TDPBF16PS d, a, b: for each row m of d, each pair k (0 .. a.colsb / 4 - 1) and
 *    each column n (0 .. d.colsb / 4 - 1), in that order:
 *        d[m][n] += a[m].bf16[2k]     * b[k].bf16[2n]
 *        d[m][n] += a[m].bf16[2k + 1] * b[k].bf16[2n + 1]
 *    each += a fused multiply-add rounded once to f32, round to nearest even (the SDM:
 *    "Round to nearest even is used when doing each accumulation of the FMA"; MXCSR is
 *    neither read nor written); bf16 inputs that are denormal are read as zero of their
 *    sign (DAZ) and each f32 result that is denormal after rounding is flushed to zero of
 *    its sign (FTZ). The shape checks of the instruction (a.rows == d.rows,
 *    a.colsb / 4 == b.rows, b.colsb == d.colsb, every tile configured) abort like #UD.
 *    Product of two bf16 values is exact in f32, so fmaf gives the pseudo-code's value.
 * Not modelled: the hardware's internal order of the pair's two additions (the SDM's
 * pseudo-code fixes one; a kernel's test bound must allow any order, as test_gemm_tier.c's
 * does), exceptions, start_row restarts, timing. Unverified against silicon here: the
 * development machine (AMD Zen 4) has no AMX.
 *
 * Header-only, static: each file that includes it gets its own model (its own tiles).
 */
#ifndef JEPA_KERNELS_X86_AMX_MODEL_H
#define JEPA_KERNELS_X86_AMX_MODEL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/x86/amx_cfg.h"

#define AMX_NTILES 8
#define AMX_MAXROWS 16
#define AMX_MAXCOLSB 64

struct amx_model_state {
    int configured;
    uint8_t rows[AMX_NTILES];
    uint16_t colsb[AMX_NTILES];
    _Alignas(64) uint8_t data[AMX_NTILES][AMX_MAXROWS][AMX_MAXCOLSB];
};
static _Thread_local struct amx_model_state amx_st;

static void amx_model_fault(const char *what) {
    fprintf(stderr, "amx model: %s (a fault on the hardware)\n", what);
    abort();
}

static inline void amx_model_release(void) { memset(&amx_st, 0, sizeof amx_st); }

static void amx_model_loadconfig(const struct jk_tilecfg *c) {
    if (c->palette == 0) {
        amx_model_release();
        return;
    }
    if (c->palette != 1 || c->start_row != 0) amx_model_fault("LDTILECFG: not palette 1 from row 0");
    for (size_t i = 0; i < sizeof c->reserved; i++)
        if (c->reserved[i]) amx_model_fault("LDTILECFG: reserved bytes set");
    for (int t = 0; t < 16; t++) {
        const int used = t < AMX_NTILES;
        if (!used && (c->rows[t] || c->colsb[t])) amx_model_fault("LDTILECFG: tile >= 8 configured");
        if (used && (c->rows[t] > AMX_MAXROWS || c->colsb[t] > AMX_MAXCOLSB || c->colsb[t] % 4))
            amx_model_fault("LDTILECFG: rows > 16, colsb > 64 or not a multiple of 4");
    }
    amx_model_release();
    amx_st.configured = 1;
    for (int t = 0; t < AMX_NTILES; t++) amx_st.rows[t] = c->rows[t], amx_st.colsb[t] = c->colsb[t];
}

/* Tile t, which the configuration must give some rows. */
static inline void amx_model_need(int t) {
    if (t < 0 || t >= AMX_NTILES || !amx_st.configured || !amx_st.rows[t] || !amx_st.colsb[t])
        amx_model_fault("tile used but not configured");
}

static inline void amx_model_zero(int t) {
    amx_model_need(t);
    memset(amx_st.data[t], 0, sizeof amx_st.data[t]);
}

static void amx_model_loadd(int t, const void *base, size_t stride) {
    amx_model_need(t);
    memset(amx_st.data[t], 0, sizeof amx_st.data[t]);
    for (int r = 0; r < amx_st.rows[t]; r++)
        memcpy(amx_st.data[t][r], (const uint8_t *)base + (size_t)r * stride, amx_st.colsb[t]);
}

static void amx_model_stored(int t, void *base, size_t stride) {
    amx_model_need(t);
    for (int r = 0; r < amx_st.rows[t]; r++)
        memcpy((uint8_t *)base + (size_t)r * stride, amx_st.data[t][r], amx_st.colsb[t]);
}

/* bf16 element e of row r of tile t as f32, a denormal read as zero of its sign (DAZ). */
static inline float amx_model_bf16(int t, int r, int e) {
    uint16_t h;
    memcpy(&h, amx_st.data[t][r] + 2 * e, 2);
    if ((h & 0x7f80) == 0) h &= 0x8000;
    const uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* acc + x y rounded once (round to nearest even), a denormal result flushed (FTZ). */
static inline float amx_model_fma(float x, float y, float acc) {
    const float r = fmaf(x, y, acc);
    return fpclassify(r) == FP_SUBNORMAL ? copysignf(0.0f, r) : r;
}

static void amx_model_dpbf16ps(int d, int a, int b) {
    amx_model_need(d), amx_model_need(a), amx_model_need(b);
    const int M = amx_st.rows[d], N = amx_st.colsb[d] / 4, K = amx_st.colsb[a] / 4;
    if (amx_st.rows[a] != M || amx_st.rows[b] != K || amx_st.colsb[b] != amx_st.colsb[d])
        amx_model_fault("TDPBF16PS: tile shapes do not match");
    if (d == a || d == b || a == b) amx_model_fault("TDPBF16PS: tiles not distinct");
    for (int m = 0; m < M; m++) {
        float acc[AMX_MAXCOLSB / 4];
        memcpy(acc, amx_st.data[d][m], sizeof acc);
        for (int k = 0; k < K; k++)
            for (int n = 0; n < N; n++) {
                acc[n] = amx_model_fma(amx_model_bf16(a, m, 2 * k), amx_model_bf16(b, k, 2 * n), acc[n]);
                acc[n] = amx_model_fma(amx_model_bf16(a, m, 2 * k + 1), amx_model_bf16(b, k, 2 * n + 1), acc[n]);
            }
        /* the columns past N (colsb) are zeroed, as write_row_and_zero does */
        memset(amx_st.data[d][m], 0, AMX_MAXCOLSB);
        memcpy(amx_st.data[d][m], acc, (size_t)N * 4);
    }
}

#endif
