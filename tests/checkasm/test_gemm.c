/*
 * test_gemm.c — checkasm for the matmul slots gemm[JK_F32 .. JK_Q6_K] (and gemm_ws): every
 * weight dtype at every ISA level this machine runs (avx2, avx512, neon; with
 * -DCHECKASM_AVX512_EMU the AVX-512 level through SIMDe, see tests/checkasm/meson.build)
 * against the reference slot of jk_init_ref() (kernels/ref/gemm_ref.c: exact weight
 * conversion, double accumulation, one rounding).
 *
 * What runs, per level and dtype:
 *  - ragged shapes: M in {1..5, 7, 17, 65, 577} x N in {1, 2, 3, 17, 65, 577} x
 *    K in {1, 7, 33, 100, 768} (32-weight blocks: {32, 64, 160, 768}; the K-quants:
 *    {256, 512, 768}), none a multiple of any tile,
 *    less the few with M N K > 3e7 (577 x 577 x >= 100: time only), each with a random
 *    epilogue (store / GELU / residual add), bias or NULL, and row
 *    strides larger than the rows (ldx > K, ldy > N, ldw > row bytes) or tight;
 *  - the ViT shapes (N, K) in {(2304,768), (3072,768), (768,3072), (3072,1024),
 *    (1024,4096)} at M = 37, and (2304,768), (768,3072) also at M = 67 (above every ISA's
 *    GT_SMALL_M: the packed path; 37 takes the weight-streaming path on AVX2 and NEON),
 *    every epilogue in turn;
 *  - M = 65 .. 80 at (N, K) = (33, 768): every row count of the last register tile;
 *  - the GELU epilogue alone (K = 1 with W = 1, an exact pre-activation), x over
 *    [-16, 16], against the double erf at 8e-7 relative (the formula's measured error
 *    is 4.4e-7, kernels/simd/math.h), and (f32) over a sweep of every binade of
 *    [-16, 16] as weights against X = 1 (17 million values);
 *  - every output is written exactly once: Y starts as NaN (ADD: random values), the
 *    padding between N and ldy and 16 floats either side of Y are NaN and must stay
 *    NaN; the padding of X and of the W rows holds NaN too, so reading past K shows;
 *  - the same call with 2 and 3 threads must give the same bits as with 1 (ws sized by
 *    the table's gemm_ws for 3 threads, deliberately misaligned);
 *  - where the table has gemm_prepack: W packed once, at 1, 2 and 3 threads, the same bits
 *    as W packed per call, on every shape above.
 *
 * Tolerance, from the arithmetic: both sides use the same f32 weights (conversion is
 * exact), the products are exact inside the FMA, so the kernel's result is some
 * summation order of the K + 2 terms x_k w_k, bias, y_old, each addition rounded once:
 *     |y - y_ref| <= gamma_(K+2) S + u |y_ref|,  S = sum_k |x_k w_k| + |b| + |y_old|,
 * with u = 2^-24 and gamma_n = n u / (1 - n u) (Higham, Accuracy and Stability, 3.1),
 * the last term being the reference's own rounding to f32. We check
 *     |y - y_ref| <= 1.01 (K + 4) u S + u |y_ref|                (c = 1.01: S itself is
 *                                                                 summed in float)
 * and for GELU outputs, with t the pre-activation and |gelu'| <= 1.13,
 *     |y - y_ref| <= 1.13 * 1.01 (K + 4) u S + 8e-7 |y_ref| + 1e-37.
 * A lost or doubled term costs about S / K, above the bound for every K < 4096 here
 * (tests/checkasm: dropping one k of one K block, or the bias of full tiles, fails).
 *
 * Benchmarked by `jepa bench kernels` (bench/bench_kernels.c), not here.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/ref/ref.h"
#include "runtime/dtype.h"
#include "tests/checkasm/checkasm.h"
#include "tests/checkasm/ops_check.h"   /* U, ops_act_sweep */


/* Uniform on [-sqrt 3, sqrt 3): unit variance, and much cheaper than ca_normal() under qemu. */
static float rnd(void) { return (float)((2.0 * ca_uniform() - 1.0) * 1.7320508075688772); }

static const char *epi_name(enum jk_epilogue e) {
    return e == JK_EPI_STORE ? "store" : e == JK_EPI_GELU ? "gelu" : "add";
}

/* N rows of K weights of type t, row stride ldw bytes; padding bytes are 0xff (a NaN in
 * every format: f32 0xffffffff, f16/bf16 0xffff, a q8_0 scale 0xffff). */
static uint8_t *make_weights(enum jk_dtype t, int N, int K, size_t ldw, float scale) {
    uint8_t *w = (uint8_t *)malloc((size_t)N * ldw);
    if (!w) { fprintf(stderr, "out of memory\n"); exit(1); }
    memset(w, 0xff, (size_t)N * ldw);
    for (int n = 0; n < N; n++) {
        uint8_t *row = w + (size_t)n * ldw;
        if (t > JK_Q8_0) {   /* the 4-6 bit formats: random codes, finite random scales */
            const int qk = jk_dtype_block(t);
            const size_t bb = jk_row_bytes(t, qk);
            for (int b = 0; b < K / qk; b++) {
                uint8_t *blk = row + (size_t)b * bb;
                for (size_t i = 0; i < bb; i++) blk[i] = (uint8_t)ca_int(0, 255);
                /* d (and m or dmin) at the block's start; q6_K's d at its end */
                const int d_at = t == JK_Q6_K ? 208 : 0;
                const int m_at = t == JK_Q4_1 || t == JK_Q5_1 || t == JK_Q4_K || t == JK_Q5_K ? 2 : -1;
                const float dscale = qk == 256 ? scale / 64.0f : scale / 8.0f;
                const uint16_t d = f32_to_f16(dscale * rnd()), mm = f32_to_f16(dscale * rnd());
                memcpy(blk + d_at, &d, 2);
                if (m_at >= 0) memcpy(blk + m_at, &mm, 2);
            }
            continue;
        }
        if (t == JK_Q8_0) {
            for (int b = 0; b < K / QK8_0; b++) {
                float v[QK8_0], amax = 0.0f;
                for (int j = 0; j < QK8_0; j++) {
                    v[j] = scale * rnd();
                    if (fabsf(v[j]) > amax) amax = fabsf(v[j]);
                }
                struct block_q8_0 blk;
                blk.d = f32_to_f16(amax / 127.0f);
                float d = f16_to_f32(blk.d);
                for (int j = 0; j < QK8_0; j++) {
                    float q = d > 0 ? nearbyintf(v[j] / d) : 0.0f;
                    blk.qs[j] = (int8_t)(q > 127 ? 127 : q < -127 ? -127 : q);
                }
                memcpy(row + (size_t)b * sizeof blk, &blk, sizeof blk);
            }
            continue;
        }
        for (int k = 0; k < K; k++) {
            float v = scale * rnd();
            if (t == JK_F32) memcpy(row + 4 * (size_t)k, &v, 4);
            else {
                uint16_t h = t == JK_F16 ? f32_to_f16(v) : f32_to_bf16(v);
                memcpy(row + 2 * (size_t)k, &h, 2);
            }
        }
    }
    return w;
}

/* sum_k |x_k w_k| to ~1e-6 relative: 8 float lanes (vectorised, cheap under qemu), summed
 * in double. The tolerance takes 1 % on top for this estimate. */
static double abs_dot(const float *x, const float *w, int K) {
    float acc[8] = {0};
    int k = 0;
    for (; k + 8 <= K; k += 8)
        for (int j = 0; j < 8; j++) acc[j] += fabsf(x[k + j] * w[k + j]);
    double s = 0.0;
    for (int j = 0; j < 8; j++) s += acc[j];
    for (; k < K; k++) s += fabs((double)x[k] * (double)w[k]);
    return s;
}

/* One shape, one epilogue, at one level: kernel vs reference, then 2 and 3 threads vs 1. */
struct gcase {
    enum jk_dtype t;
    int M, N, K;
    enum jk_epilogue epi;
    int bias, pad;
};

static int run_case(const struct jk_kernels *kt, const char *level, const struct jk_kernels *ref,
                    const struct gcase *c) {
    const int M = c->M, N = c->N, K = c->K;
    const size_t ldx = (size_t)K + (c->pad ? (size_t)ca_int(1, 9) : 0);
    const size_t ldy = (size_t)N + (c->pad ? (size_t)ca_int(1, 9) : 0);
    const size_t rb = jk_row_bytes(c->t, K);
    /* f32 rows stay 4-byte aligned, f16/bf16 2-byte; block rows may start anywhere */
    const size_t unit = c->t == JK_F32 ? 4 : jk_dtype_is_block(c->t) ? 1 : 2;
    const size_t ldw = rb + (c->pad ? unit * (size_t)ca_int(1, 9) : 0);
    int bad = 0;

    float *x = (float *)malloc((size_t)M * ldx * sizeof(float));
    float *bias = (float *)malloc((size_t)N * sizeof(float));
    float *y0 = ca_alloc_guarded((size_t)M * ldy), *y1 = ca_alloc_guarded((size_t)M * ldy);
    float *y2 = ca_alloc_guarded((size_t)M * ldy), *yr = ca_alloc_guarded((size_t)M * ldy);
    float *yold = (float *)malloc((size_t)M * ldy * sizeof(float));
    float *wf = (float *)malloc((size_t)N * (size_t)K * sizeof(float)); /* W as f32 [N, K] */
    if (!x || !bias || !yold || !wf) { fprintf(stderr, "out of memory\n"); exit(1); }
    for (size_t i = 0; i < (size_t)M * ldx; i++) x[i] = (i % ldx) < (size_t)K ? rnd() : NAN;
    for (int n = 0; n < N; n++) bias[n] = rnd();
    for (size_t i = 0; i < (size_t)M * ldy; i++)
        yold[i] = (c->epi == JK_EPI_ADD && (i % ldy) < (size_t)N) ? 3.0f * rnd() : NAN;
    uint8_t *w = make_weights(c->t, N, K, ldw, 1.0f / sqrtf((float)K));
    for (int n = 0; n < N; n++) jk_ref_weight_row(wf + (size_t)n * K, w, ldw, c->t, n, K);

    /* ws for up to 3 threads, misaligned by 4 bytes on purpose */
    size_t wsz = kt->gemm_ws(3, K), wsr = ref->gemm_ws(2, K);
    unsigned char *wsbuf = (unsigned char *)malloc(wsz + 4), *wsref = (unsigned char *)malloc(wsr);
    if (!wsbuf || !wsref) { fprintf(stderr, "out of memory\n"); exit(1); }

    struct jk_gemm_args a = {
        .ldy = ldy, .x = x, .ldx = ldx, .w = w, .ldw = ldw, .bias = c->bias ? bias : NULL,
        .M = M, .N = N, .K = K, .epi = c->epi, .nthreads = 2, .ws = wsref,
    };
    memcpy(yr, yold, (size_t)M * ldy * sizeof(float));
    a.y = yr;
    ref->gemm[c->t](&a);

    float *outs[3] = {y0, y1, y2};
    for (int th = 0; th < 3; th++) {
        memcpy(outs[th], yold, (size_t)M * ldy * sizeof(float));
        a.y = outs[th];
        a.nthreads = th + 1;
        a.ws = wsbuf + 4;
        kt->gemm[c->t](&a);
    }

    /* accuracy of the 1-thread result, element by element */
    double worst = -1.0;
    int wm = 0, wn = 0, nbad = 0;
    for (int m = 0; m < M; m++) {
        const float *xm = x + (size_t)m * ldx;
        for (int n = 0; n < N; n++) {
            double s = abs_dot(xm, wf + (size_t)n * K, K);
            if (c->bias) s += fabs((double)bias[n]);
            const size_t i = (size_t)m * ldy + (size_t)n;
            if (c->epi == JK_EPI_ADD) s += fabs((double)yold[i]);
            const double r = yr[i], g = y0[i];
            double tol = 1.01 * (K + 4) * U * s + U * fabs(r);
            if (c->epi == JK_EPI_GELU) tol = 1.13 * 1.01 * (K + 4) * U * s + 8e-7 * fabs(r) + 1e-37;
            const double d = fabs(g - r);
            const double q = d / tol;
            if (!(d <= tol)) nbad++;
            if (!(q <= worst)) { worst = q; wm = m; wn = n; }
        }
    }
    if (nbad) {
        check_failed++;
        bad = 1;
        const size_t i = (size_t)wm * ldy + (size_t)wn;
        printf("FAIL %s %s M=%d N=%d K=%d %s%s%s: %d outside tolerance; worst [%d,%d] got %.9g "
               "ref %.9g (err/tol %.3g)\n",
               level, jk_dtype_name(c->t), M, N, K, epi_name(c->epi), c->bias ? " bias" : "",
               c->pad ? " strided" : "", nbad, wm, wn, (double)y0[i], (double)yr[i], worst);
    }
    /* nothing written outside the M x N window */
    int outside = 0;
    for (int th = 0; th < 3; th++) {
        if (!ca_guard_ok(outs[th], (size_t)M * ldy)) outside++;
        for (int m = 0; m < M; m++)
            for (size_t n = (size_t)N; n < ldy; n++)
                if (!isnan(outs[th][(size_t)m * ldy + n])) outside++;
    }
    CHECK(!outside, "%s %s M=%d N=%d K=%d %s: wrote outside Y[M, N]", level,
             jk_dtype_name(c->t), M, N, K, epi_name(c->epi));
    /* same bits for 1, 2 and 3 threads */
    const int same = !memcmp(y0, y1, (size_t)M * ldy * sizeof(float)) &&
                     !memcmp(y0, y2, (size_t)M * ldy * sizeof(float));
    CHECK(same, "%s %s M=%d N=%d K=%d %s: results differ between 1, 2 and 3 threads", level,
             jk_dtype_name(c->t), M, N, K, epi_name(c->epi));
    bad |= outside || !same;

    /* W packed once (gemm_prepack): the same bits as packing per call, at 1, 2 and 3 threads
     * (with 2 and 3 the rows are split, not the columns, once M has 4 row tiles a thread) */
    if (kt->gemm_prepack) {
        const char *slot = ca_cur_slot;
        ca_at("gemm_prepack", level);
        const size_t np = kt->gemm_prepack_floats(N, K);
        float *wp = (float *)aligned_alloc(64, (np * sizeof(float) + 63) & ~(size_t)63);
        float *yp = ca_alloc_guarded((size_t)M * ldy);
        if (!wp || !yp) { fprintf(stderr, "out of memory\n"); exit(1); }
        kt->gemm_prepack(c->t, wp, w, ldw, N, K);
        ca_at(slot, level);
        int differ = 0;
        for (int th = 1; th <= 3; th++) {
            memcpy(yp, yold, (size_t)M * ldy * sizeof(float));
            a.y = yp, a.nthreads = th, a.ws = wsbuf + 4, a.w_packed = wp;
            kt->gemm[c->t](&a);
            a.w_packed = NULL;
            differ |= memcmp(y0, yp, (size_t)M * ldy * sizeof(float)) != 0 || !ca_guard_ok(yp, (size_t)M * ldy);
        }
        CHECK(!differ, "%s %s M=%d N=%d K=%d %s: pre-packed W gives other bits than W packed per call",
              level, jk_dtype_name(c->t), M, N, K, epi_name(c->epi));
        bad |= differ;
        free(wp);
        ca_free_guarded(yp);
    }

    free(x), free(bias), free(yold), free(wf), free(w), free(wsbuf), free(wsref);
    ca_free_guarded(y0), ca_free_guarded(y1), ca_free_guarded(y2), ca_free_guarded(yr);
    return bad;
}

/* Exact weight decoding through a slot: X = rows of the identity, so Y[m, n] = W[n, k_m]
 * is one exact product plus exact zeros, and must equal the reference decoder's weight
 * exactly (as a value: a -0 weight sums to +0). M = K rows (the packed path) and single rows e_k (the small-M path, M = 1
 * and 3), at ragged row strides; for the block formats, whose decoders differ per ISA. */
static void check_decode(const struct jk_kernels *kt, const char *level, enum jk_dtype t) {
    const int qk = jk_dtype_block(t), K = qk == 256 ? 512 : 96, N = 19;
    const size_t ldw = jk_row_bytes(t, K) + (size_t)ca_int(0, 5);
    uint8_t *w = make_weights(t, N, K, ldw, 1.0f);
    float *x = (float *)calloc((size_t)K * K, sizeof(float)), *y = (float *)malloc(sizeof(float) * (size_t)K * N);
    float *wf = (float *)malloc(sizeof(float) * (size_t)N * K);
    void *ws = malloc(kt->gemm_ws(2, K));
    if (!x || !y || !wf || !ws) { fprintf(stderr, "out of memory\n"); exit(1); }
    for (int n = 0; n < N; n++) jk_ref_weight_row(wf + (size_t)n * K, w, ldw, t, n, K);
    for (int k = 0; k < K; k++) x[(size_t)k * K + k] = 1.0f;
    struct jk_gemm_args a = {.y = y, .ldy = N, .x = x, .ldx = (size_t)K, .w = w, .ldw = ldw,
                             .M = K, .N = N, .K = K, .epi = JK_EPI_STORE, .nthreads = 2, .ws = ws};
    kt->gemm[t](&a);
    int bad = 0;
    for (int m = 0; m < K; m++)
        for (int n = 0; n < N; n++) bad += y[(size_t)m * N + n] != wf[(size_t)n * K + m];
    for (int k0 = 0; k0 < K; k0 += 1 + ca_int(0, 6)) {   /* small M: 1 or 3 rows from e_k0 */
        const int M = k0 + 3 <= K && (k0 & 1) ? 3 : 1;
        a.x = x + (size_t)k0 * K, a.M = M;
        kt->gemm[t](&a);
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) bad += y[(size_t)m * N + n] != wf[(size_t)n * K + k0 + m];
    }
    CHECK(!bad, "%s %s: %d weights decoded differently from the reference (identity X)", level, jk_dtype_name(t), bad);
    free(w), free(x), free(y), free(wf), free(ws);
}

/* GELU epilogue accuracy: Y = gelu(X . 1) with K = 1 (K = 32 with one nonzero weight
 * for q8_0), so the pre-activation is exact and only the activation is measured. */
static void check_gelu(const struct jk_kernels *kt, const char *level, const struct jk_kernels *ref,
                       enum jk_dtype t, int M) {
    const int N = 3, K = t == JK_Q8_0 ? QK8_0 : 1;
    const size_t ldw = jk_row_bytes(t, K);
    uint8_t *w = (uint8_t *)calloc((size_t)N, ldw);
    float *x = (float *)calloc((size_t)M * K, sizeof(float));
    float *y = ca_alloc_guarded((size_t)M * N), *yr = ca_alloc_guarded((size_t)M * N);
    size_t wsz = kt->gemm_ws(1, K) > ref->gemm_ws(1, K) ? kt->gemm_ws(1, K) : ref->gemm_ws(1, K);
    void *ws = malloc(wsz);
    if (!w || !x || !ws) { fprintf(stderr, "out of memory\n"); exit(1); }
    for (int n = 0; n < N; n++) {
        uint8_t *row = w + (size_t)n * ldw;
        if (t == JK_F32) { float one = 1.0f; memcpy(row, &one, 4); }
        else if (t == JK_F16) { uint16_t h = f32_to_f16(1.0f); memcpy(row, &h, 2); }
        else if (t == JK_BF16) { uint16_t h = f32_to_bf16(1.0f); memcpy(row, &h, 2); }
        else { struct block_q8_0 b = {f32_to_f16(1.0f), {1}}; memcpy(row, &b, sizeof b); }
    }
    for (int m = 0; m < M; m++) x[(size_t)m * K] = -16.0f + 32.0f * (float)m / (float)(M - 1);
    x[0] = -15.0f * ca_normal();                     /* and a random one */
    struct jk_gemm_args a = {.y = yr, .ldy = N, .x = x, .ldx = (size_t)K, .w = w, .ldw = ldw,
                             .M = M, .N = N, .K = K, .epi = JK_EPI_GELU, .nthreads = 1, .ws = ws};
    ref->gemm[t](&a);
    a.y = y;
    kt->gemm[t](&a);
    /* The reference evaluates 0.5 x (1 + erf(x / sqrt 2)) in double, which cancels for
     * x < -5.9 (1 + erf rounds to 0 or to a few ulps of 1): its absolute error there is
     * up to 2^-53 |x| / 2. So: against the reference with that term added, and against
     * the erfc form (no cancellation) at 8e-7 relative everywhere. */
    char what[128];
    int bad = 0;
    double worst = 0.0;
    int wi = 0;
    for (int i = 0; i < M * N; i++) {
        const double xv = x[(size_t)(i / N) * K];
        const double truth = xv < 0 ? 0.5 * xv * erfc(-xv * 0.70710678118654752440)
                                    : 0.5 * xv * (1.0 + erf(xv * 0.70710678118654752440));
        const double e_ref = fabs((double)y[i] - (double)yr[i]);
        const double e_true = fabs((double)y[i] - truth);
        if (!(e_ref <= 8e-7 * fabs((double)yr[i]) + 0x1p-54 * fabs(xv) + 1e-37)) bad++;
        const double q = e_true / (8e-7 * fabs(truth) + 1e-37);
        if (!(q <= 1.0)) bad++;
        if (!(q <= worst)) { worst = q; wi = i; }
    }
    snprintf(what, sizeof what, "%s %s gelu epilogue (M=%d, exact pre-activation)", level,
             jk_dtype_name(t), M);
    CHECK(!bad, "%s: %d outside tolerance; worst x=%.9g got %.9g ref %.9g", what, bad,
             (double)x[(size_t)(wi / N) * K], (double)y[wi], (double)yr[wi]);
    CHECK(ca_guard_ok(y, (size_t)M * N), "%s: wrote outside Y", what);
    free(w), free(x), free(ws);
    ca_free_guarded(y), ca_free_guarded(yr);
}
/* The GELU epilogue over every binade of [-16, 16]: every 127th float bit pattern from the
 * smallest subnormal up to 16, both signs (17 million values), as the f32 weights of one
 * row each against X = 1 (M = 1, K = 1), so every pre-activation is exact. Against
 * 0.5 x erfc(-x / sqrt 2) in double (no cancellation for either sign) at the formula's
 * bound, 8e-7 relative (kernels/simd/math.h: 4.4e-7 measured), or 1e-37 absolute where
 * the result is that small (the formula returns 0 past |x| = 13, where |gelu| < 1e-37).
 * The worst error seen is printed. */
static void check_gelu_sweep(const struct jk_kernels *kt, const char *level) {
    size_t m;
    float *w = ops_act_sweep(127, &m);
    const int n = (int)m;
    float *y = ca_alloc_guarded(m);
    void *ws = malloc(kt->gemm_ws(1, 1) + 1);
    if (!ws) { fprintf(stderr, "out of memory\n"); exit(1); }
    const float one = 1.0f;
    struct jk_gemm_args a = {.y = y, .ldy = (size_t)n, .x = &one, .ldx = 1, .w = w, .ldw = 4,
                             .M = 1, .N = n, .K = 1, .epi = JK_EPI_GELU, .nthreads = 2, .ws = ws};
    kt->gemm[JK_F32](&a);
    int bad = 0;
    double worst = 0.0, wx = 0.0;
    for (int i = 0; i < n; i++) {
        const double xv = w[i], truth = 0.5 * xv * erfc(-xv * 0.70710678118654752440);
        const double q = fabs((double)y[i] - truth) / (8e-7 * fabs(truth) + 1e-37);
        if (!(q <= 1.0)) bad++;
        if (!(q <= worst)) worst = q, wx = xv;
    }
    printf("  %s gelu epilogue: worst error %.3g of the bound (at x = %.9g) over %d floats in [-16, 16]\n",
           level, worst, wx, n);
    CHECK(!bad, "%s gelu epilogue vs 0.5 x erfc(-x / sqrt 2): %d of %d values beyond 8e-7 relative",
          level, bad, n);
    CHECK(ca_guard_ok(y, (size_t)n), "%s gelu epilogue sweep: wrote outside Y", level);
    free(w), free(ws);
    ca_free_guarded(y);
}

/* The slot name of gemm[t] ("gemm_f16"), as --function takes it. */
static const char *gemm_slot(enum jk_dtype t) {
    for (int s = 0; s < jk_nslots; s++)
        if (jk_slots[s].dtype == (int)t && !strncmp(jk_slots[s].name, "gemm_", 5))
            return jk_slots[s].name;
    return "gemm_?";
}

int main(int argc, char **argv) {
    const int rc = ca_options("checkasm_gemm", argc, argv, 1);
    if (rc >= 0) return rc;
    ca_seed("checkasm_gemm");
    struct ca_level lv[4];
    int nl;
#ifdef CHECKASM_AVX512_EMU
    /* The AVX-512 kernels compiled against SIMDe: test that level whatever the CPU has. */
    lv[0] = (struct ca_level){"avx512(simde)", JEPA_CPU_AVX2 | JEPA_CPU_AVX512};
    nl = 1;
    printf("  level %s forced (AVX-512 code paths emulated with SIMDe)\n", lv[0].name);
#else
    nl = ca_levels(lv);
#endif
    if (ca_isa_missing(lv, nl)) {
        printf("checkasm_gemm: level %s is not available on this machine (skipped)\n", ca_only_isa);
        return 77;
    }
    struct jk_kernels ref;
    jk_init_ref(&ref);

    static const int Ms[] = {1, 2, 3, 4, 5, 7, 17, 65, 577};
    static const int Ns[] = {1, 2, 3, 17, 65, 577};
    static const int Ks[] = {1, 7, 33, 100, 768};
    static const int Kq[] = {32, 64, 160, 768};
    static const int Kk[] = {256, 512, 768};   /* the K-quants' 256-weight blocks */
    static const int vit[][2] = {{2304, 768}, {3072, 768}, {768, 3072}, {3072, 1024}, {1024, 4096}};
    int tested = 0;
    /* JEPA_CHECKASM_REDUCED=1 (tests/checkasm/meson.build: under qemu and the sanitizers,
     * where the scalar double reference runs 10-40x slower): the block formats' grid stops
     * at M N K = 1.5e6, the other types' at 1e7 (every tile edge kept, not the largest
     * products), and each type runs one of the ViT shapes at 5 rows (5 x (3072, 768));
     * the decoding and GELU checks are unchanged. */
    const char *red = getenv("JEPA_CHECKASM_REDUCED");
    const bool reduced = red && !strcmp(red, "1");
    const double block_mnk = reduced ? 1.5e6 : 3e7;
    /* f32 / f16 / bf16 / q8_0 when reduced: up to 577 x 17 x 768 and 17 x 577 x 768 (every M
     * and N tile edge of 577 still), not 577 x 65 x 768 (the qemu run's longest cases) */
    const double dense_mnk = reduced ? 1e7 : 3e7;

    for (int l = 0; l < nl; l++) {
        struct jk_kernels kt;
        jk_init(&kt, lv[l].flags);
        ca_inject(&kt);
        for (int t = 0; t < JK_NDTYPES; t++) {
            const char *slot = gemm_slot((enum jk_dtype)t);
            if (!ca_wanted(slot, lv[l].name)) continue;
            if (kt.gemm[t] == ref.gemm[t]) {
                printf("  %s %s: the reference fills this slot, nothing to test\n", lv[l].name,
                       jk_dtype_name((enum jk_dtype)t));
                continue;
            }
            ca_run(slot, lv[l].name);
            tested++;
            int cases = 0, fails = 0;
            const int qk = jk_dtype_block((enum jk_dtype)t);
            const int *ks = qk == 256 ? Kk : qk == 32 ? Kq : Ks;
            const int nk = qk == 256 ? 3 : qk == 32 ? 4 : 5;
            for (size_t mi = 0; mi < sizeof Ms / sizeof *Ms; mi++)
                for (size_t ni = 0; ni < sizeof Ns / sizeof *Ns; ni++)
                    for (int ki = 0; ki < nk; ki++) {
                        /* the largest products (577 x 577 x >= 100) only cost time (the
                         * reference is scalar double; under qemu minutes): their tiles
                         * and edges are all in 577 x 65 x 768 and 65 x 577 x 768 */
                        if ((double)Ms[mi] * Ns[ni] * ks[ki] > (t > JK_Q8_0 ? block_mnk : dense_mnk)) continue;
                        struct gcase c = {(enum jk_dtype)t, Ms[mi], Ns[ni], ks[ki],
                                          (enum jk_epilogue)ca_int(0, 2), ca_int(0, 1), ca_int(0, 1)};
                        fails += run_case(&kt, lv[l].name, &ref, &c);
                        cases++;
                    }
            for (int v = 0; v < 7; v++) {
                /* all five at M = 37, then (2304, 768) and (768, 3072) at M = 67 (one of
                 * them, M = 5 x (3072, 768), when reduced) */
                const int vi = v < 5 ? v : (v - 5) * 2;
                if (reduced && v != 1) continue;
                struct gcase c = {(enum jk_dtype)t, reduced ? 5 : v < 5 ? 37 : 67, vit[vi][0], vit[vi][1],
                                  (enum jk_epilogue)(v % 3), v & 1, 1};
                fails += run_case(&kt, lv[l].name, &ref, &c);
                cases++;
            }
            /* every row count of the last register tile on the packed path: M = 65 .. 80
             * is above every GT_SMALL_M and leaves each remainder 0 .. 15 of M / MR for
             * MR <= 16 (AVX-512 runs a loop specialised per even row count) */
            for (int M = 65; M <= 80; M++) {
                struct gcase c = {(enum jk_dtype)t, M, 33, 768, (enum jk_epilogue)(M % 3), M & 1, 1};
                fails += run_case(&kt, lv[l].name, &ref, &c);
                cases++;
            }
            if (t == 0) {   /* gemm_ws(nt, K) must cover every K' <= K (kernels.h) */
                ca_at("gemm_ws", lv[l].name);
                size_t prev = 0;
                int bad_k = 0;
                for (int K = 1; K <= 4096 && !bad_k; K++) {
                    const size_t w = kt.gemm_ws(3, K);
                    if (w < prev) bad_k = K;
                    prev = w;
                }
                CHECK(!bad_k, "%s gemm_ws(3, K) shrinks at K = %d", lv[l].name, bad_k);
                ca_at(slot, lv[l].name);
            }
            if (jk_dtype_is_block((enum jk_dtype)t)) check_decode(&kt, lv[l].name, (enum jk_dtype)t);
            if (t <= JK_Q8_0) {   /* (the epilogue does not depend on the weight type: the
                                   * 4-6 bit slots share it, and run_case covers them) */
                check_gelu(&kt, lv[l].name, &ref, (enum jk_dtype)t, 577);
                check_gelu(&kt, lv[l].name, &ref, (enum jk_dtype)t, 3);
            }
            if (t == JK_F32) check_gelu_sweep(&kt, lv[l].name);
            printf("  %s %s: %d shapes, %d failed%s%s\n", lv[l].name, jk_dtype_name((enum jk_dtype)t), cases, fails,
                   jk_dtype_is_block((enum jk_dtype)t) ? "; decoding exact" : "", t <= JK_Q8_0 ? "; gelu epilogue checked" : "");
        }
    }
    if (!tested && !ca_only_fn && !ca_only_isa) {
        printf("checkasm_gemm: no matmul slot above the reference on this machine (skipped)\n");
        return 77;
    }
    return ca_finish("checkasm_gemm");
}
