/*
 * test_cuda_ops.c — the row and element-wise slots of the CUDA table (kernels/cuda/ops.cu)
 * against the reference slots of jk_init_ref() (kernels/ref/): layernorm, gelu, gelu_tanh,
 * silu, softmax, add, rope, patchify, gather, mean_rows. Built twice (tests/cuda/
 * meson.build): against the SIMT emulator, which runs the kernels on the CPU, and with
 * nvcc for a GPU; exits 77 without a device.
 *
 * Shapes are ragged on purpose: one row, row lengths around the warp (31, 32, 33) and
 * around the kernels' switch from a warp per row to a block per row (1024, 1025) and
 * from registers to memory (8192, 8193), strides wider than the rows, NaN in the
 * padding and in guard bands around every output (which must stay NaN), LayerNorm
 * without affine, with w only, in place, on constant rows (exactly b) and on rows of
 * mean 1000; the add with ldx = 0 (one row broadcast); RoPE on the q and k slices of a
 * fused qkv buffer, odd head counts, odd head dims and pass-through dims; gather with
 * repeated ids; mean_rows over 1 to 2100 rows. Every kernel launched twice on the same
 * input must give the same bits.
 *
 * The GPU evaluates in f32 where the reference uses double, so the tolerances are
 * derived beside each check from the f32 algorithm (u = 2^-24).
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/ref/ref.h"
#include "tests/checkasm/checkasm.h"
#include "tests/cuda/cuda_test.h"

#define U (1.0 / 16777216.0) /* 2^-24 */

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) { fprintf(stderr, "out of memory\n"); exit(1); }
    return p;
}
static float *falloc(size_t n) { return (float *)xmalloc(n * sizeof(float)); }
static double *dalloc(size_t n) { return (double *)xmalloc(n * sizeof(double)); }

/* |got - ref| <= tol elementwise (NaN never passes); prints the worst under `what`. */
static int check_tol(const char *what, const float *got, const float *ref, const double *tol,
                     size_t n) {
    size_t bad = 0, worst = 0;
    double wr = -1.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)ref[i]);
        double r = d / (tol[i] > 0 ? tol[i] : 1e-300);
        if (!(d <= tol[i])) bad++;
        if (!(r <= wr)) wr = r, worst = i;
    }
    if (bad) {
        ca_failures++;
        printf("FAIL %s: %zu of %zu outside tolerance; worst [%zu] got %.9g ref %.9g tol %.3g\n",
               what, bad, n, worst, (double)got[worst], (double)ref[worst], tol[worst]);
    }
    return (int)bad;
}

/* Every element of p[0 .. rows*ld) outside columns [0, cols) of each row is NaN, and the
 * guard bands around it too. */
static int gaps_ok(const float *p, int rows, size_t ld, size_t cols) {
    if (!ca_guard_ok(p, (size_t)rows * ld)) return 0;
    for (int r = 0; r < rows; r++)
        for (size_t c = cols; c < ld; c++)
            if (!isnan(p[(size_t)r * ld + c])) return 0;
    return 1;
}

static int same_bits(const float *a, const float *b, size_t n) {
    return !memcmp(a, b, n * sizeof(float));
}

/* The summation depth of a row reduction of d elements in the CUDA kernels: a warp per
 * row up to 1024 (d/32 sequential adds per lane, 5 butterfly levels), else a block of
 * 256 (d/256 per thread, 5 levels, 8 warp partials added in turn). */
static double row_depth(int d) {
    return d <= 1024 ? (d + 31) / 32 + 5 : (d + 255) / 256 + 13;
}

/* ======================================================================================
 * LayerNorm
 * ====================================================================================== */

/* The kernel: m0 = x0 + sum(x - x0)/d, then c = x - m0, s1 = sum c, s2 = sum c^2,
 * mean = m0 + s1/d, var = s2/d - (s1/d)^2, y = (c - s1/d) rstd w + b. With D the
 * summation depth (row_depth), the mean is good to about (D + 3) u sigma + u |mean|, the
 * variance to (D + 4) u relative, and the output rounds five times:
 *   |y - y_ref| <= u (4 |y_ref| + |w| rstd ((D + 8) (|x - mean| + sigma) + 2 |mean|)).
 * Constant rows: every x - x0 and c is 0, so y = b exactly (0 without b). */
static void check_layernorm(const struct jk_kernels *k) {
    static const int ds[] = {1, 2, 7, 31, 32, 33, 64, 100, 577, 1000, 1024, 1025, 1280, 2050,
                             4096, 5000, 8192, 8193, 9000};
    int fails = 0, cases = 0;
    for (size_t di = 0; di < sizeof ds / sizeof *ds; di++)
        for (int kind = 0; kind < 4; kind++)         /* normal, large mean, constant, in place */
            for (int aff = 0; aff < 3; aff++) {      /* w and b, w only, none */
                const int d = ds[di];
                const int n = kind == 2 ? 6 : d > 2000 ? 3 : (int)(di % 3 == 0 ? 1 : 17);
                const size_t ldx = (size_t)d + 3, ldy = kind == 3 ? ldx : (size_t)d + 5;
                const float eps = kind == 1 ? 1e-5f : 1e-6f;
                float *x = ca_alloc_guarded((size_t)n * ldx), *w = falloc((size_t)d), *b = falloc((size_t)d);
                ca_fill(w, (size_t)d, 1.0f), ca_fill(b, (size_t)d, 1.0f);
                static const float consts[] = {0.0f, 1.0f, 0.1f, -3.3f, 1000.1f, 1e-20f};
                for (int i = 0; i < n; i++)
                    for (size_t j = 0; j < ldx; j++) {
                        float v = j < (size_t)d ? ca_normal() : NAN;
                        if (kind == 1 && j < (size_t)d) v = 1000.0f + v;
                        if (kind == 2 && j < (size_t)d) v = consts[i];
                        x[(size_t)i * ldx + j] = v;
                    }
                const float *wa = aff < 2 ? w : NULL, *ba = aff == 0 ? b : NULL;
                float *yr = ca_alloc_guarded((size_t)n * ldy);
                layernorm_ref(yr, ldy, x, ldx, wa, ba, n, d, eps, 1);

                float *dw = ct_upload_f(w, (size_t)d), *db = ct_upload_f(b, (size_t)d);
                float *y1 = ca_alloc_guarded((size_t)n * ldy), *y2 = ca_alloc_guarded((size_t)n * ldy);
                for (int run = 0; run < 2; run++) {
                    float *out = run ? y2 : y1;
                    float *dx = ct_upload_guarded(x, (size_t)n * ldx);
                    if (kind == 3) {   /* in place: y = x */
                        k->layernorm(dx, ldx, dx, ldx, aff < 2 ? dw : NULL, aff == 0 ? db : NULL, n, d, eps, 1);
                        ct_download_guarded(out, dx, (size_t)n * ldx);
                    } else {
                        float *dy = ct_upload_guarded(out, (size_t)n * ldy);   /* all NaN */
                        k->layernorm(dy, ldy, dx, ldx, aff < 2 ? dw : NULL, aff == 0 ? db : NULL, n, d, eps, 1);
                        ct_download_guarded(out, dy, (size_t)n * ldy);
                        ct_free_guarded(dy);
                    }
                    ct_free_guarded(dx);
                }
                ct_free(dw), ct_free(db);

                const double D = row_depth(d);
                double *tol = dalloc((size_t)n * d);
                float *g = falloc((size_t)n * d), *r = falloc((size_t)n * d);
                for (int i = 0; i < n; i++) {
                    const float *xi = x + (size_t)i * ldx;
                    double mean = 0.0, var = 0.0;
                    for (int j = 0; j < d; j++) mean += xi[j];
                    mean /= d;
                    for (int j = 0; j < d; j++) var += (xi[j] - mean) * (xi[j] - mean);
                    var /= d;
                    double rstd = 1.0 / sqrt(var + eps), sd = sqrt(var);
                    for (int j = 0; j < d; j++) {
                        size_t kk = (size_t)i * d + j;
                        g[kk] = y1[(size_t)i * ldy + j], r[kk] = yr[(size_t)i * ldy + j];
                        double wj = wa ? fabs(wa[j]) : 1.0;
                        tol[kk] = kind == 2 ? 0.0
                                            : U * (4 * fabs(r[kk]) + wj * rstd * ((D + 8) * (fabs(xi[j] - mean) + sd) + 2 * fabs(mean)));
                    }
                }
                char what[160];
                snprintf(what, sizeof what, "cuda layernorm n %d d %d %s %s", n, d,
                         (const char *[]){"normal", "mean 1000", "constant rows", "in place"}[kind],
                         (const char *[]){"w+b", "w", "no affine"}[aff]);
                fails += check_tol(what, g, r, tol, (size_t)n * d) != 0;
                CA_CHECK(same_bits(y1, y2, (size_t)n * ldy), "%s: two launches differ", what);
                CA_CHECK(gaps_ok(y1, n, ldy, (size_t)d), "%s: wrote outside y", what);
                cases++;
                free(tol), free(g), free(r), free(w), free(b);
                ca_free_guarded(x), ca_free_guarded(yr), ca_free_guarded(y1), ca_free_guarded(y2);
            }
    printf("  cuda layernorm: %d cases, %d failed\n", cases, fails);
}

/* ======================================================================================
 * element-wise activations
 * ====================================================================================== */

/* Inputs: normals of several scales, then the adversarial ones. */
static void unary_inputs(float *x, size_t n) {
    static const float special[] = {0.0f, -0.0f, 1e-40f, -1e-40f, 1.4e-45f, -1.4e-45f, 1e-20f, -1e-20f,
                                    FLT_MIN, -FLT_MIN, 5.0f, -5.0f, 9.0f, -9.0f, 13.5f, -13.5f,
                                    14.9f, -14.9f, 15.1f, -15.1f, 20.0f, -20.0f, 50.0f, -50.0f,
                                    80.5f, -80.5f, 88.0f, -88.0f, 95.0f, -95.0f, 100.0f, -100.0f,
                                    105.0f, -105.0f, 1e4f, -1e4f, 1e30f, -1e30f, FLT_MAX, -FLT_MAX};
    const size_t ns = sizeof special / sizeof *special;
    for (size_t i = 0; i < n; i++) {
        if (i % 3 == 2 && i / 3 < ns) x[i] = special[i / 3];
        else x[i] = ca_normal() * (float)(i % 4 == 0 ? 8.0 : i % 4 == 1 ? 0.5 : 3.0);
    }
}

/* The reference evaluates in double and rounds once, but cancels in 1 + erf(x/sqrt2) and
 * 1 + tanh(u) for x < 0 (~|x| 2^-53 absolute; the kernels do not cancel). The kernels
 * (ops.cu): gelu x >= 0, x (0.5 + 0.5 erf) with erff (2 ulp on the GPU): 5 u; x < 0,
 * 0.5 x q(t) / (1 + 2z) (1 - l/2) e^(-h/2): the fit 1.5 u, z and t 1.5 u, six roundings,
 * expf 2 ulp, so 11 u (two more past x = -12.6, where e^(-h/4) is squared); gelu_tanh
 * and silu, x / (1 + e^w) with e^w as e^hi (1 + lo): expf 2 ulp and three roundings,
 * 6 u. Subnormal results: one subnormal step, 2^-149. */
static void check_unary(const struct jk_kernels *k, const struct jk_kernels *rt) {
    static const size_t ns[] = {1, 7, 31, 32, 33, 255, 256, 257, 20001};
    const struct { const char *name; jk_unary_fn fn, rf; double rel, cancel; } ops[] = {
        {"gelu", k->gelu, rt->gelu, 13.0, 4.0}, {"gelu_tanh", k->gelu_tanh, rt->gelu_tanh, 6.0, 4.0},
        {"silu", k->silu, rt->silu, 6.0, 0.0}};
    for (int o = 0; o < 3; o++) {
        int fails = 0, cases = 0;
        for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++) {
            const size_t n = ns[ni];
            float *x0 = falloc(n), *xr = falloc(n), *x1 = ca_alloc_guarded(n), *x2 = ca_alloc_guarded(n);
            unary_inputs(x0, n);
            memcpy(xr, x0, n * sizeof(float));
            ops[o].rf(xr, n, 1);
            for (int run = 0; run < 2; run++) {
                float *out = run ? x2 : x1;
                memcpy(out, x0, n * sizeof(float));
                float *dx = ct_upload_guarded(out, n);
                ops[o].fn(dx, n, 1);
                ct_download_guarded(out, dx, n);
                ct_free_guarded(dx);
            }
            double *tol = dalloc(n);
            for (size_t i = 0; i < n; i++)
                tol[i] = ops[o].rel * U * fabs(xr[i]) + ops[o].cancel * 0x1p-53 * fabs(x0[i]) + 0x1p-149;
            char what[120];
            snprintf(what, sizeof what, "cuda %s n %zu", ops[o].name, n);
            fails += check_tol(what, x1, xr, tol, n) != 0;
            CA_CHECK(same_bits(x1, x2, n), "%s: two launches differ", what);
            CA_CHECK(ca_guard_ok(x1, n), "%s: wrote outside x", what);
            cases++;
            free(tol), free(x0), free(xr);
            ca_free_guarded(x1), ca_free_guarded(x2);
        }
        printf("  cuda %s: %d cases, %d failed\n", ops[o].name, cases, fails);
    }
}

/* GELU against the exact 0.5 x erfc(-x / sqrt 2) in double (no cancellation for either
 * sign) over every binade of [-16, 16]: every 1021st float bit pattern from the smallest
 * subnormal up to 16, both signs (2.2 million values). Bound: the 13 u of
 * check_unary, 7.8e-7 relative; a subnormal result may add one step (2^-149) for its
 * rounding. SiLU and the tanh GELU against their formulas (written without
 * cancellation) the same way, 6 u. The worst errors seen are printed. */
static void check_activation_accuracy(const struct jk_kernels *k) {
    const uint32_t top = 0x41800000u;    /* 16.0f */
    const uint32_t step = 1021;
    const size_t n = 2 * (size_t)(top / step + 1);
    float *x = falloc(n);
    size_t m = 0;
    for (uint32_t b = 0; b <= top && m + 1 < n; b += step) {
        float f;
        memcpy(&f, &b, 4);
        x[m++] = f, x[m++] = -f;
    }
    const struct { const char *name; jk_unary_fn fn; double bound; } ops[] = {
        {"gelu", k->gelu, 13 * U}, {"gelu_tanh", k->gelu_tanh, 6 * U}, {"silu", k->silu, 6 * U}};
    float *y = falloc(m);
    for (int o = 0; o < 3; o++) {
        float *dx = ct_upload_f(x, m);
        ops[o].fn(dx, m, 1);
        ct_download(y, dx, m * sizeof(float));
        ct_free(dx);
        double worst = 0.0, wx = 0.0, sworst = 0.0, swx = 0.0;
        size_t bad = 0;
        for (size_t i = 0; i < m; i++) {
            /* double is plenty: each formula is within ~1e-15 relative, none cancels */
            const double xd = x[i];
            double ed;
            if (o == 0) {
                ed = 0.5 * xd * erfc(-xd * 0.70710678118654752440);
            } else if (o == 1) {   /* 0.5 x (1 + tanh u) = x / (1 + e^(-2u)) */
                const double u = 0.79788456080286535588 * (xd + 0.044715 * xd * xd * xd);
                ed = xd / (1.0 + exp(-2.0 * u));
            } else {
                ed = xd / (1.0 + exp(-xd));
            }
            const double d = fabs((double)y[i] - ed);
            if (fabs(ed) >= FLT_MIN) {
                const double r = d / fabs(ed);
                if (r > worst) worst = r, wx = x[i];
                if (!(r <= ops[o].bound)) bad++;
            } else {
                /* the f32 evaluation's relative error, then one rounding to a step */
                if (d > sworst) sworst = d, swx = x[i];
                if (!(d <= ops[o].bound * fabs(ed) + 0x1p-149)) bad++;
            }
        }
        printf("  cuda %s: worst relative error %.3g (%.2f u, at x = %.9g) over %zu floats in [-16, 16]; "
               "subnormal results within %.2f steps (worst at x = %.9g)\n",
               ops[o].name, worst, worst / U, wx, m, sworst / 0x1p-149, swx);
        CA_CHECK(!bad, "cuda %s vs its exact formula: %zu values beyond %.3g relative (or 2^-149)",
                 ops[o].name, bad, ops[o].bound);
    }
    free(x), free(y);
}

/* ======================================================================================
 * softmax
 * ====================================================================================== */

/* e^(x - m) with the argument rounded (|x - m| u) and expf (2 ulp), the sum of d
 * positive terms (depth D, D u relative) and the division (u):
 *   |y - y_ref| <= u |y_ref| (|x_j - m| + D + 8) + 2^-140  (subnormal results). */
static void check_softmax(const struct jk_kernels *k) {
    static const int ds[] = {1, 2, 7, 31, 32, 33, 100, 577, 1000, 1024, 1025, 3000, 5000, 8193};
    int fails = 0, cases = 0;
    for (size_t di = 0; di < sizeof ds / sizeof *ds; di++)
        for (int kind = 0; kind < 3; kind++) {     /* normal, +-80, one dominant */
            const int d = ds[di], n = di % 2 ? 5 : 1;
            float *x0 = falloc((size_t)n * d), *xr = falloc((size_t)n * d);
            float *x1 = ca_alloc_guarded((size_t)n * d), *x2 = ca_alloc_guarded((size_t)n * d);
            for (int i = 0; i < n * d; i++) {
                x0[i] = kind == 1 ? (float)(160.0 * ca_uniform() - 80.0) : 2.0f * ca_normal();
                if (kind == 2 && i % d == 0) x0[i] = 60.0f;
            }
            memcpy(xr, x0, (size_t)n * d * sizeof(float));
            softmax_ref(xr, n, d, 1);
            for (int run = 0; run < 2; run++) {
                float *out = run ? x2 : x1;
                memcpy(out, x0, (size_t)n * d * sizeof(float));
                float *dx = ct_upload_guarded(out, (size_t)n * d);
                k->softmax(dx, n, d, 1);
                ct_download_guarded(out, dx, (size_t)n * d);
                ct_free_guarded(dx);
            }
            double *tol = dalloc((size_t)n * d);
            const double D = row_depth(d);
            for (int i = 0; i < n; i++) {
                float mx = -INFINITY;
                for (int j = 0; j < d; j++) mx = x0[(size_t)i * d + j] > mx ? x0[(size_t)i * d + j] : mx;
                for (int j = 0; j < d; j++) {
                    size_t kk = (size_t)i * d + j;
                    tol[kk] = U * fabs(xr[kk]) * (fabs((double)x0[kk] - mx) + D + 8) + 0x1p-140;
                }
            }
            char what[120];
            snprintf(what, sizeof what, "cuda softmax n %d d %d %s", n, d,
                     (const char *[]){"normal", "+-80", "one dominant"}[kind]);
            fails += check_tol(what, x1, xr, tol, (size_t)n * d) != 0;
            CA_CHECK(same_bits(x1, x2, (size_t)n * d), "%s: two launches differ", what);
            CA_CHECK(ca_guard_ok(x1, (size_t)n * d), "%s: wrote outside x", what);
            cases++;
            free(tol), free(x0), free(xr);
            ca_free_guarded(x1), ca_free_guarded(x2);
        }
    printf("  cuda softmax: %d cases, %d failed\n", cases, fails);
}

/* ======================================================================================
 * add (residual, layer-scale, broadcast row)
 * ====================================================================================== */

/* y + s x, fused or not: within 2u (|y| + |s x|). */
static void check_add(const struct jk_kernels *k) {
    static const int ds[] = {1, 7, 31, 33, 64, 300, 577};
    int fails = 0, cases = 0;
    for (size_t di = 0; di < sizeof ds / sizeof *ds; di++)
        for (int scaled = 0; scaled < 2; scaled++)
            for (int bcast = 0; bcast < 2; bcast++) {
                const int d = ds[di], n = di == 0 ? 1 : di == 1 ? 300 : 17;
                const size_t ldy = (size_t)d + 3, ldx = bcast ? 0 : 3 * (size_t)d + 1;
                const size_t nx = bcast ? (size_t)d : (size_t)n * ldx;
                float *x = falloc(nx), *s = falloc((size_t)d);
                ca_fill(x, nx, 1.0f), ca_fill(s, (size_t)d, 0.1f);
                float *y0 = ca_alloc_guarded((size_t)n * ldy), *yr = ca_alloc_guarded((size_t)n * ldy);
                float *y1 = ca_alloc_guarded((size_t)n * ldy);
                for (int i = 0; i < n; i++)
                    for (size_t j = 0; j < ldy; j++) y0[(size_t)i * ldy + j] = j < (size_t)d ? ca_normal() : NAN;
                memcpy(yr, y0, (size_t)n * ldy * sizeof(float));
                memcpy(y1, y0, (size_t)n * ldy * sizeof(float));
                const float *sa = scaled ? s : NULL;
                add_ref(yr, ldy, x, ldx, sa, n, d, 1);
                float *dx = ct_upload_f(x, nx), *ds_ = ct_upload_f(s, (size_t)d);
                float *dy = ct_upload_guarded(y1, (size_t)n * ldy);
                k->add(dy, ldy, dx, ldx, scaled ? ds_ : NULL, n, d, 1);
                ct_download_guarded(y1, dy, (size_t)n * ldy);
                ct_free_guarded(dy), ct_free(dx), ct_free(ds_);
                float *g = falloc((size_t)n * d), *r = falloc((size_t)n * d);
                double *t = dalloc((size_t)n * d);
                for (int i = 0; i < n; i++)
                    for (int j = 0; j < d; j++) {
                        const size_t kk = (size_t)i * d + j, yk = (size_t)i * ldy + j;
                        g[kk] = y1[yk], r[kk] = yr[yk];
                        t[kk] = 2 * U * (fabs(y0[yk]) + fabs((sa ? s[j] : 1.0f) * x[(size_t)i * ldx + j]));
                    }
                char what[120];
                snprintf(what, sizeof what, "cuda add n %d d %d %s%s", n, d, scaled ? "layer-scale" : "residual",
                         bcast ? " broadcast (ldx 0)" : "");
                fails += check_tol(what, g, r, t, (size_t)n * d) != 0;
                CA_CHECK(gaps_ok(y1, n, ldy, (size_t)d), "%s: wrote outside y", what);
                cases++;
                free(x), free(s), free(g), free(r), free(t);
                ca_free_guarded(y0), ca_free_guarded(yr), ca_free_guarded(y1);
            }
    printf("  cuda add: %d cases, %d failed\n", cases, fails);
}

/* ======================================================================================
 * RoPE
 * ====================================================================================== */

/* x c - x' s with one fma and one product: within 3u (|x c| + |x' s|) of the reference,
 * which rounds once. Applied to the q then the k slice of a fused [n, 3D + 3] buffer: v
 * and the padding must not change. Rows i % 5 == 0 are identity (CLS), and the last
 * `pass` dims of every row are pass-through (cos 1, sin 0). */
static void check_rope(const struct jk_kernels *k) {
    static const int ns[] = {1, 2, 17, 300};
    static const int hds[][3] = {   /* head_dim, heads, pass-through dims */
        {64, 16, 4}, {32, 12, 0}, {80, 3, 2}, {6, 2, 0}, {7, 3, 1}, {5, 5, 0}, {66, 1, 6}, {1, 3, 0}};
    int fails = 0, cases = 0;
    for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++)
        for (size_t hi = 0; hi < sizeof hds / sizeof *hds; hi++) {
            const int n = ns[ni], hd = hds[hi][0], nh = hds[hi][1], pass = hds[hi][2], D = hd * nh;
            const size_t ld = 3 * (size_t)D + 3;
            float *x0 = falloc((size_t)n * ld), *cs = falloc((size_t)n * hd), *sn = falloc((size_t)n * hd);
            ca_fill(x0, (size_t)n * ld, 1.0f);
            for (int i = 0; i < n; i++)
                for (int j = 0; j < hd; j++) {
                    double ang = 6.283185307179586 * ca_uniform();
                    int ident = i % 5 == 0 || j >= hd - pass;
                    cs[(size_t)i * hd + j] = ident ? 1.0f : (float)cos(ang);
                    sn[(size_t)i * hd + j] = ident ? 0.0f : (float)sin(ang);
                }
            float *xr = ca_alloc_guarded((size_t)n * ld), *x1 = ca_alloc_guarded((size_t)n * ld);
            memcpy(xr, x0, (size_t)n * ld * sizeof(float));
            memcpy(x1, x0, (size_t)n * ld * sizeof(float));
            float *dx = ct_upload_guarded(x1, (size_t)n * ld);
            float *dc = ct_upload_f(cs, (size_t)n * hd), *ds_ = ct_upload_f(sn, (size_t)n * hd);
            for (int part = 0; part < 2; part++) {   /* q then k */
                rope_ref(xr + part * D, ld, n, nh, hd, cs, sn, 1);
                k->rope(dx + part * D, ld, n, nh, hd, dc, ds_, 1);
            }
            ct_download_guarded(x1, dx, (size_t)n * ld);
            ct_free_guarded(dx), ct_free(dc), ct_free(ds_);
            double *tol = dalloc((size_t)n * ld);
            for (int i = 0; i < n; i++)
                for (size_t e = 0; e < ld; e++) {
                    size_t x = (size_t)i * ld + e;
                    tol[x] = 0.0;                      /* v and the padding: untouched */
                    if (e < 2 * (size_t)D) {
                        int j = (int)(e % hd), pj = j ^ 1;
                        double xp = pj < hd ? fabs(x0[x - j + pj]) : 0.0;
                        tol[x] = 3 * U * (fabs(x0[x] * cs[(size_t)i * hd + j]) + xp * fabs(sn[(size_t)i * hd + j]));
                    }
                }
            char what[160];
            snprintf(what, sizeof what, "cuda rope n %d heads %d hd %d pass-through %d", n, nh, hd, pass);
            fails += check_tol(what, x1, xr, tol, (size_t)n * ld) != 0;
            CA_CHECK(ca_guard_ok(x1, (size_t)n * ld), "%s: wrote outside x", what);
            cases++;
            free(tol), free(x0), free(cs), free(sn);
            ca_free_guarded(xr), ca_free_guarded(x1);
        }
    printf("  cuda rope: %d cases, %d failed\n", cases, fails);
}

/* ======================================================================================
 * patchify and gather: permutations, so the bits must match
 * ====================================================================================== */

static void check_patchify(const struct jk_kernels *k) {
    static const int shapes[][6] = {   /* C, T, tubelet, p, gh, gw */
        {3, 2, 2, 16, 2, 3}, {3, 1, 1, 16, 3, 2}, {3, 4, 2, 14, 2, 2}, {1, 3, 1, 3, 5, 4},
        {3, 2, 1, 2, 7, 1}, {2, 2, 2, 9, 1, 1}, {3, 4, 2, 16, 4, 4}, {1, 1, 1, 1, 3, 5}};
    int fails = 0, cases = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
        const int C = shapes[si][0], T = shapes[si][1], tub = shapes[si][2], p = shapes[si][3];
        const int H = p * shapes[si][4], W = p * shapes[si][5];
        const size_t nin = (size_t)C * T * H * W;
        const size_t nout = (size_t)(T / tub) * (H / p) * (W / p) * C * tub * p * p;
        float *in = falloc(nin);
        ca_fill(in, nin, 1.0f);
        float *orf = ca_alloc_guarded(nout), *o1 = ca_alloc_guarded(nout);
        patchify_ref(orf, in, C, T, H, W, tub, p, 1);
        float *din = ct_upload_f(in, nin), *dout = ct_upload_guarded(o1, nout);
        k->patchify(dout, din, C, T, H, W, tub, p, 1);
        ct_download_guarded(o1, dout, nout);
        ct_free(din), ct_free_guarded(dout);
        int ok = same_bits(o1, orf, nout);
        CA_CHECK(ok, "cuda patchify C %d T %d tubelet %d p %d H %d W %d: differs from the reference",
                 C, T, tub, p, H, W);
        CA_CHECK(ca_guard_ok(o1, nout), "cuda patchify: wrote outside out");
        fails += !ok;
        cases++;
        free(in);
        ca_free_guarded(orf), ca_free_guarded(o1);
    }
    printf("  cuda patchify: %d cases, %d failed\n", cases, fails);
}

/* y[i, :] = x[idx[i], :]: the reference slot when the table has one, and the definition
 * written out here in any case. */
static void check_gather(const struct jk_kernels *k, const struct jk_kernels *rt) {
    static const int shapes[][3] = {   /* n (rows out), rows in, d */
        {1, 1, 1}, {1, 7, 33}, {5, 3, 31}, {300, 577, 64}, {40, 10, 1024}, {3, 2, 1025}};
    int fails = 0, cases = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
        const int n = shapes[si][0], nx = shapes[si][1], d = shapes[si][2];
        const size_t ldx = (size_t)d + 2, ldy = (size_t)d + 7;
        float *x = falloc((size_t)nx * ldx);
        ca_fill(x, (size_t)nx * ldx, 1.0f);
        int32_t *idx = (int32_t *)xmalloc((size_t)n * sizeof(int32_t));
        for (int i = 0; i < n; i++) idx[i] = i % 4 == 3 ? idx[i - 1] : ca_int(0, nx - 1);   /* repeats */
        float *ye = ca_alloc_guarded((size_t)n * ldy), *y1 = ca_alloc_guarded((size_t)n * ldy);
        for (int i = 0; i < n; i++)
            memcpy(ye + (size_t)i * ldy, x + (size_t)idx[i] * ldx, (size_t)d * sizeof(float));
        float *dx = ct_upload_f(x, (size_t)nx * ldx);
        int32_t *di = (int32_t *)ct_upload(idx, (size_t)n * sizeof(int32_t));
        float *dy = ct_upload_guarded(y1, (size_t)n * ldy);
        k->gather(dy, ldy, dx, ldx, di, n, d, 1);
        ct_download_guarded(y1, dy, (size_t)n * ldy);
        ct_free(dx), ct_free(di), ct_free_guarded(dy);
        int ok = 1;
        for (int i = 0; i < n; i++) ok &= same_bits(y1 + (size_t)i * ldy, ye + (size_t)i * ldy, (size_t)d);
        if (rt->gather) {
            float *yr = ca_alloc_guarded((size_t)n * ldy);
            rt->gather(yr, ldy, x, ldx, idx, n, d, 1);
            for (int i = 0; i < n; i++) ok &= same_bits(y1 + (size_t)i * ldy, yr + (size_t)i * ldy, (size_t)d);
            ca_free_guarded(yr);
        }
        CA_CHECK(ok, "cuda gather n %d of %d rows d %d: differs from x[idx]", n, nx, d);
        CA_CHECK(gaps_ok(y1, n, ldy, (size_t)d), "cuda gather n %d d %d: wrote outside y", n, d);
        fails += !ok;
        cases++;
        free(x), free(idx);
        ca_free_guarded(ye), ca_free_guarded(y1);
    }
    printf("  cuda gather: %d cases, %d failed%s\n", cases, fails,
           rt->gather ? "" : " (no reference slot: against x[idx] only)");
}

/* ======================================================================================
 * mean_rows
 * ====================================================================================== */

/* Column sums with Kahan compensation per thread, then the 16 partials added with
 * compensation: error ~2u sum_i |x_ij| plus the division, so
 *   |y_j - mean_j| <= u (6 sum_i |x_ij| / n + 2 |mean_j|)
 * against the mean in double, whatever n (a plain f32 sum would need n u). The worst
 * relative error is printed for the rows of mean 1. */
static void check_mean_rows(const struct jk_kernels *k, const struct jk_kernels *rt) {
    static const int shapes[][2] = {   /* n, d */
        {1, 1}, {1, 33}, {2, 7}, {31, 64}, {33, 31}, {100, 100}, {577, 1024}, {2048, 65},
        {2100, 40}, {2099, 1}};
    int fails = 0, cases = 0;
    double worst = 0.0;
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++)
        for (int kind = 0; kind < 2; kind++) {   /* mean 1 (+- 0.1), mean 0 */
            const int n = shapes[si][0], d = shapes[si][1];
            const size_t ldx = (size_t)d + 5;
            float *x = falloc((size_t)n * ldx);
            for (size_t i = 0; i < (size_t)n * ldx; i++)
                x[i] = (i % ldx) >= (size_t)d ? NAN : kind == 0 ? 1.0f + 0.1f * ca_normal() : ca_normal();
            float *y1 = ca_alloc_guarded((size_t)d), *y2 = ca_alloc_guarded((size_t)d);
            float *dx = ct_upload_f(x, (size_t)n * ldx);
            for (int run = 0; run < 2; run++) {
                float *out = run ? y2 : y1;
                float *dy = ct_upload_guarded(out, (size_t)d);
                k->mean_rows(dy, dx, ldx, n, d, 1);
                ct_download_guarded(out, dy, (size_t)d);
                ct_free_guarded(dy);
            }
            ct_free(dx);
            float *r = falloc((size_t)d);
            double *tol = dalloc((size_t)d);
            for (int j = 0; j < d; j++) {
                double s = 0.0, a = 0.0;
                for (int i = 0; i < n; i++) s += x[(size_t)i * ldx + j], a += fabs(x[(size_t)i * ldx + j]);
                r[j] = (float)(s / n);
                tol[j] = U * (6 * a / n + 2 * fabs(s / n));
                if (kind == 0) {
                    const double rel = fabs((double)y1[j] - s / n) / fabs(s / n);
                    worst = rel > worst ? rel : worst;
                }
            }
            char what[120];
            snprintf(what, sizeof what, "cuda mean_rows n %d d %d mean %d", n, d, kind == 0);
            fails += check_tol(what, y1, r, tol, (size_t)d) != 0;
            if (rt->mean_rows) {
                float *yr = falloc((size_t)d);
                rt->mean_rows(yr, x, ldx, n, d, 1);
                char w2[200];
                snprintf(w2, sizeof w2, "%s (vs the reference slot)", what);
                fails += check_tol(w2, y1, yr, tol, (size_t)d) != 0;
                free(yr);
            }
            CA_CHECK(same_bits(y1, y2, (size_t)d), "%s: two launches differ", what);
            CA_CHECK(ca_guard_ok(y1, (size_t)d), "%s: wrote outside y", what);
            cases++;
            free(x), free(r), free(tol);
            ca_free_guarded(y1), ca_free_guarded(y2);
        }
    printf("  cuda mean_rows: %d cases, %d failed; worst relative error %.3g on rows of mean 1\n",
           cases, fails, worst);
}

int main(void) {
    ca_seed("test_cuda_ops");
    struct jk_device *dev = ct_open("test_cuda_ops");
    struct jk_kernels ref, k;
    memset(&ref, 0, sizeof ref);
    jk_init_ref(&ref);
    dev->init_kernels(dev, &k, 0);
    CA_CHECK(!strcmp(k.isa, "cuda"), "the device's table is \"%s\", not \"cuda\"", k.isa);

    check_layernorm(&k);
    check_unary(&k, &ref);
    check_activation_accuracy(&k);
    check_softmax(&k);
    check_add(&k);
    check_rope(&k);
    check_patchify(&k);
    check_gather(&k, &ref);
    check_mean_rows(&k, &ref);

    CA_CHECK(!dev->sync(dev), "device error after the tests: %s", dev->error(dev));
    ct_close();
    return ca_finish("test_cuda_ops");
}
