/*
 * test_amx_model.c — checks of the C model of the AMX tile instructions
 * (kernels/x86/amx_model.h), on which checkasm_gemm_amx_model runs the tile kernel: if
 * the model were wrong, that test would check the kernel against a wrong machine.
 *  - known answers: tiles of small integers (exact in bf16, every sum exact in f32)
 *    multiplied by TDPBF16PS at full (16 x 16 x 16 pairs) and ragged shapes (5 rows,
 *    3 columns, 7 pairs), against the scalar sums computed here from the same numbers in
 *    the layout the SDM gives: A row m holds pairs k = elements 2k, 2k + 1 of row m;
 *    B row k holds pairs n = elements 2n, 2n + 1; C[m][n] += sum_k of both products;
 *  - TILELOADD / TILESTORED with row strides wider than the rows: the bytes between the
 *    rows are left alone; a load zeroes the tile past its rows and columns;
 *  - DAZ (a denormal bf16 input counts as 0), FTZ (a denormal result becomes 0) and the
 *    pseudo-code's rounding of each of the pair's two additions (1 + 2^-24 + 2^-24 in
 *    that order is 1, not 1 + 2^-23).
 * Runs on any machine (the model is plain C).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/x86/amx_model.h"
#include "runtime/dtype.h"
#include "tests/checkasm/checkasm.h"

static void config(int rows_c, int cols, int pairs) {
    struct jk_tilecfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    cfg.rows[0] = (uint8_t)rows_c, cfg.colsb[0] = (uint16_t)(4 * cols);   /* C: rows x cols f32 */
    cfg.rows[1] = (uint8_t)rows_c, cfg.colsb[1] = (uint16_t)(4 * pairs);  /* A: rows x pairs */
    cfg.rows[2] = (uint8_t)pairs, cfg.colsb[2] = (uint16_t)(4 * cols);    /* B: pairs x cols pairs */
    amx_model_loadconfig(&cfg);
}

/* C (rows x cols, random integers) += A (rows x 2 pairs) . B (pairs x 2 cols): integers in
 * -8 .. 8, loaded with strides wider than the rows, against the scalar sums. */
static void known_answer(int rows, int cols, int pairs) {
    enum { PAD = 3 };   /* extra elements per row in the buffers */
    uint16_t a[16][2 * 16 + 2 * PAD], b[16][2 * 16 + 2 * PAD];
    float c[16][16 + PAD], want[16][16 + PAD];
    const float guard = -12345.0f;
    for (int m = 0; m < 16; m++)
        for (int j = 0; j < 16 + PAD; j++) c[m][j] = guard, want[m][j] = guard;
    for (int m = 0; m < rows; m++)
        for (int e = 0; e < 2 * 16 + 2 * PAD; e++) a[m][e] = f32_to_bf16((float)ca_int(-8, 8));
    for (int k = 0; k < pairs; k++)
        for (int e = 0; e < 2 * 16 + 2 * PAD; e++) b[k][e] = f32_to_bf16((float)ca_int(-8, 8));
    for (int m = 0; m < rows; m++)
        for (int n = 0; n < cols; n++) {
            c[m][n] = (float)ca_int(-100, 100);
            double s = c[m][n];
            for (int k = 0; k < pairs; k++)
                for (int h = 0; h < 2; h++)
                    s += (double)bf16_to_f32(a[m][2 * k + h]) * (double)bf16_to_f32(b[k][2 * n + h]);
            want[m][n] = (float)s;
        }
    config(rows, cols, pairs);
    amx_model_loadd(0, c, sizeof c[0]);
    amx_model_loadd(1, a, sizeof a[0]);
    amx_model_loadd(2, b, sizeof b[0]);
    amx_model_dpbf16ps(0, 1, 2);
    amx_model_stored(0, c, sizeof c[0]);
    int bad = 0;
    for (int m = 0; m < 16; m++)
        for (int j = 0; j < 16 + PAD; j++) bad += memcmp(&c[m][j], &want[m][j], 4) != 0;
    CHECK(!bad, "TDPBF16PS %d x %d x %d pairs: %d values differ from the scalar sums (or the guard)", rows,
          cols, pairs, bad);
    /* the loads zeroed the tile past its configured rows and columns */
    int dirty = 0;
    for (int r = 0; r < AMX_MAXROWS; r++)
        for (int x = 0; x < AMX_MAXCOLSB; x++)
            if (r >= rows || x >= 4 * pairs) dirty += amx_st.data[1][r][x] != 0;
    CHECK(!dirty, "TILELOADD %d x %d bytes left %d bytes outside the tile nonzero", rows, 4 * pairs, dirty);
    amx_model_release();
}

/* 1 x 1 tiles, one pair, the operands as bf16 bits: c0 + a0 b0 + a1 b1 through the model. */
static float one_pair_bits(float c0, uint16_t a0, uint16_t a1, uint16_t b0, uint16_t b1) {
    uint16_t a[2] = {a0, a1}, b[2] = {b0, b1};
    float c = c0;
    config(1, 1, 1);
    amx_model_loadd(0, &c, 4);
    amx_model_loadd(1, a, 4);
    amx_model_loadd(2, b, 4);
    amx_model_dpbf16ps(0, 1, 2);
    amx_model_stored(0, &c, 4);
    amx_model_release();
    return c;
}

static void special_values(void) {
    const uint16_t one = f32_to_bf16(1.0f), zero = 0;
    /* DAZ: 0x0040 is a bf16 denormal (2^-127); times 2^64 it would be a normal 2^-63 */
    float r = one_pair_bits(0.0f, 0x0040, zero, f32_to_bf16(0x1p64f), zero);
    CHECK(r == 0.0f, "DAZ: a denormal bf16 input gave %g, not 0", (double)r);
    /* FTZ: 2^-70 x 2^-70 = 2^-140, a denormal f32 */
    r = one_pair_bits(0.0f, f32_to_bf16(0x1p-70f), zero, f32_to_bf16(0x1p-70f), zero);
    CHECK(r == 0.0f && !signbit(r), "FTZ: a denormal result gave %g, not +0", (double)r);
    /* (the pair's second product, -0 x +0, keeps the sum -0: +0 would make it +0) */
    r = one_pair_bits(0.0f, f32_to_bf16(-0x1p-70f), 0x8000, f32_to_bf16(0x1p-70f), zero);
    CHECK(r == 0.0f && signbit(r), "FTZ: a negative denormal result gave %g, not -0", (double)r);
    /* one rounding per addition, nearest even: 1 + 2^-24 ties to 1, twice */
    r = one_pair_bits(1.0f, f32_to_bf16(0x1p-24f), f32_to_bf16(0x1p-24f), one, one);
    CHECK(r == 1.0f, "rounding: 1 + 2^-24 + 2^-24 gave %.9g, not 1 (each addition rounded)", (double)r);
    /* a normal product still counts: 3 x 5 + 7 x -2 */
    r = one_pair_bits(0.5f, f32_to_bf16(3.0f), f32_to_bf16(7.0f), f32_to_bf16(5.0f), f32_to_bf16(-2.0f));
    CHECK(r == 1.5f, "3 x 5 + 7 x -2 + 0.5 gave %g", (double)r);
}

int main(void) {
    ca_seed("checkasm_amx_model");
    known_answer(16, 16, 16);
    known_answer(5, 3, 7);
    known_answer(16, 1, 1);
    known_answer(1, 16, 16);
    special_values();
    return ca_finish("checkasm_amx_model");
}
