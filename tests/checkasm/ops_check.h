/*
 * ops_check.h — what the two tests of the non-matmul kernel slots share:
 * tests/checkasm/test_ops.c (every CPU ISA level) and tests/cuda/test_cuda_ops.c (the
 * CUDA table, on a GPU or through the SIMT emulator), both against the reference slots
 * of jk_init_ref(). Here, once: the allocation and comparison helpers, the inputs
 * (adversarial values, strided rows with NaN padding), the exact formulas and reference
 * statistics the kernels are measured against, and the tolerance models.
 *
 * A tolerance model takes its constants from the caller: the CPU kernels evaluate the
 * activations in double and sum rows in vectors of 8 or 16, the CUDA kernels work in f32
 * with warp and block reductions, so the same error analysis ends in different factors.
 * Each test states beside the call why its constants are what they are. u = 2^-24 (one
 * float rounding, relative) throughout.
 *
 * Include after tests/checkasm/checkasm.h (ca_* helpers, CA_CHECK, check_failed).
 */
#ifndef JEPA_TESTS_OPS_CHECK_H
#define JEPA_TESTS_OPS_CHECK_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/ref/ref.h"
#include "tests/checkasm/checkasm.h"

#define U (1.0 / 16777216.0) /* 2^-24 */

/* ---- memory and comparisons ---- */

static inline void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) { fprintf(stderr, "out of memory\n"); exit(1); }
    return p;
}
static inline float *falloc(size_t n) { return (float *)xmalloc(n * sizeof(float)); }
static inline double *dalloc(size_t n) { return (double *)xmalloc(n * sizeof(double)); }
/* max of two doubles (not fmax: gcc 12 for aarch64 crashes vectorising fmax reductions) */
static inline double dmax(double a, double b) { return b > a ? b : a; }

/* |got - ref| <= tol elementwise (NaN never passes); prints the worst (largest error in
 * units of its tolerance) under `what`. Returns the number of violations. */
static inline int check_tol(const char *what, const float *got, const float *ref,
                            const double *tol, size_t n) {
    size_t bad = 0, worst = 0;
    double wr = -1.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)ref[i]);
        double r = d / (tol[i] > 0 ? tol[i] : 1e-300);
        if (!(d <= tol[i])) bad++;
        if (!(r <= wr)) wr = r, worst = i;
    }
    if (bad) {
        check_failed++;
        printf("FAIL %s: %zu of %zu outside tolerance; worst [%zu] got %.9g ref %.9g tol %.3g\n",
               what, bad, n, worst, (double)got[worst], (double)ref[worst], tol[worst]);
    }
    return (int)bad;
}

/* Every element of p[0 .. rows*ld) outside columns [0, cols) of each row is NaN, and the
 * guard bands around it too: a kernel wrote nothing but its rows. */
static inline int gaps_ok(const float *p, int rows, size_t ld, size_t cols) {
    if (!ca_guard_ok(p, (size_t)rows * ld)) return 0;
    for (int r = 0; r < rows; r++)
        for (size_t c = cols; c < ld; c++)
            if (!isnan(p[(size_t)r * ld + c])) return 0;
    return 1;
}

/* The same bits (NaN included): two runs (threads, launches) must not differ at all. */
static inline int same_bits(const float *a, const float *b, size_t n) {
    return !memcmp(a, b, n * sizeof(float));
}

/* The checks a row op ends with, on n rows of d at stride ld: y1 against the reference yr
 * within tol (packed [n, d]: the padding, NaN on both sides, is skipped); y2, the same
 * op run again (`again`: "1 and 2 threads", "two launches"; y2 NULL: not run twice),
 * the same bits as y1, padding included; and nothing written outside the rows (the
 * padding and the guard bands of y1 still NaN). Returns 1 when any check failed. */
static inline int ops_check_rows(const char *what, const char *again, const float *y1,
                                 const float *y2, const float *yr, size_t ld, int n, int d,
                                 const double *tol) {
    float *g = falloc((size_t)n * d), *r = falloc((size_t)n * d);
    for (int i = 0; i < n; i++) {
        memcpy(g + (size_t)i * d, y1 + (size_t)i * ld, (size_t)d * sizeof(float));
        memcpy(r + (size_t)i * d, yr + (size_t)i * ld, (size_t)d * sizeof(float));
    }
    const int before = check_failed;
    check_tol(what, g, r, tol, (size_t)n * d);
    CHECK(!y2 || same_bits(y1, y2, (size_t)n * ld), "%s: %s differ", what, again);
    CHECK(gaps_ok(y1, n, ld, (size_t)d), "%s: wrote outside its rows", what);
    free(g), free(r);
    return check_failed != before;
}

/* n rows of d elements offset + scale N(0, 1) at stride ld, the padding NaN (a kernel that
 * reads it poisons its result). */
static inline void ops_fill_rows(float *x, int n, int d, size_t ld, float offset, float scale) {
    for (int i = 0; i < n; i++)
        for (size_t j = 0; j < ld; j++)
            x[(size_t)i * ld + j] = j < (size_t)d ? offset + scale * ca_normal() : NAN;
}

/* A guarded (ca_alloc_guarded) copy of src[0 .. n). A loop, not memcpy: gcc -O1/-O2 sees
 * a path where n + the guard bands wraps and warns about the memcpy (-Wstringop-overflow). */
static inline float *ops_dup(const float *src, size_t n) {
    float *p = ca_alloc_guarded(n);
    for (size_t i = 0; i < n; i++) p[i] = src[i];
    return p;
}

/* Each op below has a case: ops_<op>_make draws the inputs and computes the reference
 * output with the kernels/ref slot, the test runs its kernel on them (y1, and y2 a second
 * time: other thread count or launch, or NULL), and ops_<op>_finish checks y1 and y2
 * against the reference and the tolerance model (ops_check_rows), frees the case and
 * returns 1 when a check failed. `label` opens the name of every check: the level, or
 * "cuda". */

/* ---- LayerNorm ---- */

enum { OPS_LN_NORMAL, OPS_LN_MEAN1000, OPS_LN_CONSTANT, OPS_LN_INPLACE, OPS_LN_KINDS };
static const char *const ops_ln_kind[] = {"normal", "mean 1000", "constant rows", "in place"};
static const char *const ops_ln_affine[] = {"w+b", "w", "no affine"};   /* aff 0, 1, 2 */

struct ops_ln {
    int n, d, kind, aff;
    size_t ldx, ldy;            /* ldy = ldx in place (y = x) */
    float eps;
    float *x, *w, *b, *yr;      /* x and yr guarded, padding NaN */
    const float *wa, *ba;       /* w and b, or NULL as aff says */
};

/* n rows of d (kind OPS_LN_CONSTANT: n <= 6) at stride d + 3, y at d + 5 (x's in place):
 * N(0, 1); 1000 + N(0, 1) (the mean dwarfs the spread: a one-pass variance loses it); or
 * constant rows (variance exactly 0, so y must be exactly b) of six values up to 1000.1
 * and down to 1e-20. Affine w and b (aff 0), w only (1), none (2). */
static inline void ops_ln_make(struct ops_ln *c, int n, int d, int kind, int aff) {
    static const float consts[] = {0.0f, 1.0f, 0.1f, -3.3f, 1000.1f, 1e-20f};
    memset(c, 0, sizeof *c);
    c->n = n, c->d = d, c->kind = kind, c->aff = aff;
    c->ldx = (size_t)d + 3, c->ldy = kind == OPS_LN_INPLACE ? c->ldx : (size_t)d + 5;
    c->eps = kind == OPS_LN_MEAN1000 ? 1e-5f : 1e-6f;
    c->x = ca_alloc_guarded((size_t)n * c->ldx), c->w = falloc((size_t)d), c->b = falloc((size_t)d);
    ca_fill(c->w, (size_t)d, 1.0f), ca_fill(c->b, (size_t)d, 1.0f);
    ops_fill_rows(c->x, n, d, c->ldx, kind == OPS_LN_MEAN1000 ? 1000.0f : 0.0f, 1.0f);
    if (kind == OPS_LN_CONSTANT)
        for (int i = 0; i < n; i++)
            for (int j = 0; j < d; j++) c->x[(size_t)i * c->ldx + j] = consts[i];
    c->wa = aff < 2 ? c->w : NULL, c->ba = aff == 0 ? c->b : NULL;
    c->yr = ca_alloc_guarded((size_t)n * c->ldy);
    jk_layernorm_ref(c->yr, c->ldy, c->x, c->ldx, c->wa, c->ba, n, d, c->eps, 1);
}

/* y (stride ldy) against the reference, with mean, sigma and rstd = 1 / sqrt(var + eps)
 * of each row in double:
 *   |y - y_ref| <= u (a |y_ref| + |w_j| rstd (b (|x_j - mean| + sigma) + cm |mean|))
 * where a counts the roundings of the output, b those of the centred value and of the
 * statistics (it grows with the summation depth of the kernel's row reduction), cm the
 * error of the mean relative to |mean|. Constant rows: exactly (b, or 0). */
static inline int ops_ln_finish(struct ops_ln *c, const char *label, const float *y1,
                                const float *y2, const char *again, double a, double b, double cm) {
    const int n = c->n, d = c->d;
    double *tol = dalloc((size_t)n * d);
    for (int i = 0; i < n; i++) {
        const float *xi = c->x + (size_t)i * c->ldx, *ri = c->yr + (size_t)i * c->ldy;
        double mean = 0.0, var = 0.0;
        for (int j = 0; j < d; j++) mean += xi[j];
        mean /= d;
        for (int j = 0; j < d; j++) var += (xi[j] - mean) * (xi[j] - mean);
        var /= d;
        const double rstd = 1.0 / sqrt(var + c->eps), sd = sqrt(var);
        for (int j = 0; j < d; j++) {
            const double wj = c->wa ? fabs(c->wa[j]) : 1.0;
            const double spread = b * (fabs(xi[j] - mean) + sd) + cm * fabs(mean);
            const double e = U * (a * fabs(ri[j]) + wj * rstd * spread);
            tol[(size_t)i * d + j] = c->kind == OPS_LN_CONSTANT ? 0.0 : e;
        }
    }
    char what[160];
    snprintf(what, sizeof what, "%s layernorm n %d d %d %s %s", label, n, d, ops_ln_kind[c->kind],
             ops_ln_affine[c->aff]);
    const int bad = ops_check_rows(what, again, y1, y2, c->yr, c->ldy, n, d, tol);
    free(tol), free(c->w), free(c->b);
    ca_free_guarded(c->x), ca_free_guarded(c->yr);
    return bad;
}

/* ---- element-wise activations ---- */

enum { OPS_GELU_TANH, OPS_SILU, OPS_NACT };
static const char *const ops_act_name[] = {"gelu_tanh", "silu"};
static inline jk_unary_fn *ops_act_slot(const struct jk_kernels *k, int op) {
    return op == OPS_GELU_TANH ? k->gelu_tanh : k->silu;
}

struct ops_unary {
    int op;
    size_t n;
    float *x0, *xr;    /* the input, the reference's output */
};

/* n inputs: normals of several scales, every third element (while they last) an
 * adversarial one: signed zeros, subnormals, FLT_MIN, the edges of polynomial and clamp
 * ranges (5, 9, 13.5, 15, 80.5, 88: expf overflows past 88.7, 95, 105), huge values up
 * to FLT_MAX (x^2 and x^3 overflow in f32). The reference slot of rt gives xr. */
static inline void ops_unary_make(struct ops_unary *c, const struct jk_kernels *rt, int op,
                                  size_t n) {
    static const float special[] = {
        0.0f, -0.0f, 1e-40f, -1e-40f, 1.4e-45f, -1.4e-45f, 1e-20f, -1e-20f, FLT_MIN, -FLT_MIN,
        5.0f, -5.0f, 9.0f, -9.0f, 13.5f, -13.5f, 14.9f, -14.9f, 15.1f, -15.1f, 20.0f, -20.0f,
        50.0f, -50.0f, 80.5f, -80.5f, 88.0f, -88.0f, 95.0f, -95.0f, 100.0f, -100.0f,
        105.0f, -105.0f, 1e4f, -1e4f, 1e30f, -1e30f, FLT_MAX, -FLT_MAX};
    const size_t ns = sizeof special / sizeof *special;
    c->op = op, c->n = n, c->x0 = falloc(n), c->xr = falloc(n);
    for (size_t i = 0; i < n; i++) {
        if (i % 3 == 2 && i / 3 < ns) c->x0[i] = special[i / 3];
        else c->x0[i] = ca_normal() * (float)(i % 4 == 0 ? 8.0 : i % 4 == 1 ? 0.5 : 3.0);
    }
    memcpy(c->xr, c->x0, n * sizeof(float));
    ops_act_slot(rt, op)(c->xr, n, 1);
}

/* Against the reference slot, which evaluates in double and rounds once, but cancels in
 * 1 + tanh(u) for x < 0 (~|x| 2^-53 absolute, counted 4 |x| 2^-53 for the GELU): rel u |ref| (rel: the kernel's own error, plus one rounding) + that
 * cancellation + one subnormal step (2^-149) for subnormal results. */
static inline int ops_unary_finish(struct ops_unary *c, const char *label, const float *y1,
                                   const float *y2, const char *again, double rel) {
    const double cancel = c->op == OPS_SILU ? 0.0 : 4.0;
    double *tol = dalloc(c->n);
    for (size_t i = 0; i < c->n; i++)
        tol[i] = rel * U * fabs(c->xr[i]) + cancel * 0x1p-53 * fabs(c->x0[i]) + 0x1p-149;
    char what[120];
    snprintf(what, sizeof what, "%s %s n %zu", label, ops_act_name[c->op], c->n);
    const int bad = ops_check_rows(what, again, y1, y2, c->xr, c->n, 1, (int)c->n, tol);
    free(tol), free(c->x0), free(c->xr);
    return bad;
}

/* Every `step`th float bit pattern from the smallest subnormal up to 16, both signs: every
 * binade of [-16, 16]. Returns the values; *m their number. */
static inline float *ops_act_sweep(uint32_t step, size_t *m) {
    const uint32_t top = 0x41800000u;    /* 16.0f */
    const size_t n = 2 * (size_t)(top / step + 1);
    float *x = falloc(n);
    size_t k = 0;
    for (uint32_t b = 0; b <= top && k + 1 < n; b += step) {
        float f;
        memcpy(&f, &b, 4);
        x[k++] = f, x[k++] = -f;
    }
    *m = k;
    return x;
}

/* The activations written without cancellation for either sign, in double (each within
 * ~1e-15 relative): gelu_tanh = 0.5 x (1 + tanh u) =
 * x / (1 + e^(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3); silu = x / (1 + e^-x). */
static inline double ops_act_exact(int op, double x) {
    if (op == OPS_GELU_TANH) {
        const double u = 0.79788456080286535588 * (x + 0.044715 * x * x * x);
        return x / (1.0 + exp(-2.0 * u));
    }
    return x / (1.0 + exp(-x));
}

/* y = op(x) over m sweep values against ops_act_exact: relative error <= bound for a
 * normal result; a subnormal one within sub_rel |exact| (the evaluation's own relative
 * error, 0 for a kernel that evaluates in double) plus one subnormal step (2^-149, its
 * rounding). Prints the worst errors under `label`; returns the number of violations. */
static inline size_t ops_act_check(const char *label, int op, const float *x, const float *y,
                                   size_t m, double bound, double sub_rel) {
    double worst = 0.0, wx = 0.0, sworst = 0.0, swx = 0.0;
    size_t bad = 0;
    for (size_t i = 0; i < m; i++) {
        const double e = ops_act_exact(op, x[i]), d = fabs((double)y[i] - e);
        if (fabs(e) >= FLT_MIN) {
            const double r = d / fabs(e);
            if (r > worst) worst = r, wx = x[i];
            if (!(r <= bound)) bad++;
        } else {
            if (d > sworst) sworst = d, swx = x[i];
            if (!(d <= sub_rel * fabs(e) + 0x1p-149)) bad++;
        }
    }
    printf("  %s %s: worst relative error %.3g (%.2f u, at x = %.9g) over %zu floats in [-16, 16]; "
           "subnormal results within %.2f steps (worst at x = %.9g)\n",
           label, ops_act_name[op], worst, worst / U, wx, m, sworst / 0x1p-149, swx);
    CHECK(!bad, "%s %s vs its exact formula: %zu values beyond %.3g relative (or 2^-149)",
             label, ops_act_name[op], bad, bound);
    return bad;
}

/* ---- add ---- */

struct ops_add {
    int n, d, scaled, bcast;
    size_t ldx, ldy, nx;        /* nx: the floats of x */
    float *x, *s, *y0, *yr;     /* y0 (y before the add) and yr guarded, padding NaN */
    const float *sa;            /* s, or NULL (the plain residual) */
};

/* y [n, d] at stride d + 3 += s x, x at stride 3d + 1 or one row for all (bcast: ldx 0),
 * s (0.1 N(0, 1): layer-scale) or none. */
static inline void ops_add_make(struct ops_add *c, int n, int d, int scaled, int bcast) {
    c->n = n, c->d = d, c->scaled = scaled, c->bcast = bcast;
    c->ldy = (size_t)d + 3, c->ldx = bcast ? 0 : 3 * (size_t)d + 1;
    c->nx = bcast ? (size_t)d : (size_t)n * c->ldx;
    c->x = falloc(c->nx), c->s = falloc((size_t)d), c->y0 = ca_alloc_guarded((size_t)n * c->ldy);
    ca_fill(c->x, c->nx, 1.0f), ca_fill(c->s, (size_t)d, 0.1f);
    ops_fill_rows(c->y0, n, d, c->ldy, 0.0f, 1.0f);
    c->sa = scaled ? c->s : NULL;
    c->yr = ops_dup(c->y0, (size_t)n * c->ldy);
    jk_add_ref(c->yr, c->ldy, c->x, c->ldx, c->sa, n, d, 1);
}

/* y + s x with the product and the sum rounded (or fused: the reference may contract):
 * within 2u (|y| + |s x|). */
static inline int ops_add_finish(struct ops_add *c, const char *label, const float *y1,
                                 const float *y2, const char *again) {
    const int n = c->n, d = c->d;
    double *tol = dalloc((size_t)n * d);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < d; j++) {
            const double sx = (c->sa ? c->sa[j] : 1.0f) * c->x[(size_t)i * c->ldx + j];
            tol[(size_t)i * d + j] = 2 * U * (fabs(c->y0[(size_t)i * c->ldy + j]) + fabs(sx));
        }
    char what[120];
    snprintf(what, sizeof what, "%s add n %d d %d %s%s", label, n, d,
             c->scaled ? "layer-scale" : "residual", c->bcast ? " broadcast (ldx 0)" : "");
    const int bad = ops_check_rows(what, again, y1, y2, c->yr, c->ldy, n, d, tol);
    free(tol), free(c->x), free(c->s);
    ca_free_guarded(c->y0), ca_free_guarded(c->yr);
    return bad;
}

/* ---- madd (adaLN modulation, gated residual) ---- */

struct ops_madd {
    int n, d, resid;
    float c;
    size_t ldx, ldm, ldy;
    float *x, *mod, *y0, *yr;   /* y0 (y before) and yr guarded, padding NaN */
    const float *m, *a;         /* m: the mod buffer's second slice; a: its first (resid: y) */
};

/* y = x (c + m) + a over [n, d]: x at stride d + 1, m and a two slices of one [n, 3d + 2]
 * buffer (the adaLN modulation rows), y at stride d + 3. resid: the gated residual, c = 0
 * and a = y (y += m x, in place); else the modulation, c = 1 and y separate. yr: the
 * definition in double, rounded once. */
static inline void ops_madd_make(struct ops_madd *c, int n, int d, int resid) {
    c->n = n, c->d = d, c->resid = resid, c->c = resid ? 0.0f : 1.0f;
    c->ldx = (size_t)d + 1, c->ldm = 3 * (size_t)d + 2, c->ldy = (size_t)d + 3;
    c->x = falloc((size_t)n * c->ldx), c->mod = falloc((size_t)n * c->ldm);
    ca_fill(c->x, (size_t)n * c->ldx, 1.0f), ca_fill(c->mod, (size_t)n * c->ldm, 0.5f);
    c->m = c->mod + d, c->a = c->mod;
    c->y0 = ca_alloc_guarded((size_t)n * c->ldy);
    ops_fill_rows(c->y0, n, d, c->ldy, 0.0f, 1.0f);
    c->yr = ops_dup(c->y0, (size_t)n * c->ldy);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < d; j++) {
            const double a = resid ? c->y0[(size_t)i * c->ldy + j] : c->a[(size_t)i * c->ldm + j];
            c->yr[(size_t)i * c->ldy + j] =
                (float)((double)c->x[(size_t)i * c->ldx + j] * ((double)c->c + c->m[(size_t)i * c->ldm + j]) + a);
        }
}

/* c + m rounded, the product and the sum rounded (or fused): within 3u (|x| (|c| + |m|) + |a|). */
static inline int ops_madd_finish(struct ops_madd *c, const char *label, const float *y1,
                                  const float *y2, const char *again) {
    const int n = c->n, d = c->d;
    double *tol = dalloc((size_t)n * d);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < d; j++) {
            const double a = c->resid ? c->y0[(size_t)i * c->ldy + j] : c->a[(size_t)i * c->ldm + j];
            tol[(size_t)i * d + j] = 3 * U * (fabs(c->x[(size_t)i * c->ldx + j]) *
                                                  (fabs(c->c) + fabs(c->m[(size_t)i * c->ldm + j])) + fabs(a));
        }
    char what[120];
    snprintf(what, sizeof what, "%s madd n %d d %d %s", label, n, d,
             c->resid ? "gated residual (in place)" : "modulation");
    const int bad = ops_check_rows(what, again, y1, y2, c->yr, c->ldy, n, d, tol);
    free(tol), free(c->x), free(c->mod);
    ca_free_guarded(c->y0), ca_free_guarded(c->yr);
    return bad;
}

/* ---- RoPE ---- */

struct ops_rope {
    int n, hd, nh, pass, D;    /* D = hd nh, the width of q (and of k, v) */
    size_t ld;                 /* 3D + 3: a fused qkv buffer with padding */
    float *x0, *cs, *sn, *xr;  /* xr guarded */
};

/* Case i (0 past the last): n = 1, 2, 17 or nlong rows (the test's long sequence) times
 * the head shapes (head_dim, heads, pass-through dims): odd head dims (the last dim has
 * no pair partner), one head, head_dim 1. x0 [n, ld] N(0, 1) (v and the padding
 * included), random angle tables [n, hd] with rows i % 5 == 0 identity (CLS: cos 1,
 * sin 0) and the last `pass` dims of every row pass-through (the same); xr: the
 * reference applied to the q then the k slice. */
static inline int ops_rope_make(struct ops_rope *c, size_t ci, int nlong) {
    static const int hds[][3] = {
        {64, 16, 4}, {32, 12, 0}, {80, 3, 2}, {6, 2, 0},
        {7, 3, 1},   {5, 5, 0},   {66, 1, 6}, {1, 3, 0}};
    const size_t nshape = sizeof hds / sizeof *hds;
    if (ci >= 4 * nshape) return 0;
    const int ns[] = {1, 2, 17, nlong}, *h = hds[ci % nshape];
    const int n = ns[ci / nshape], hd = h[0], nh = h[1], pass = h[2];
    c->n = n, c->hd = hd, c->nh = nh, c->pass = pass, c->D = hd * nh;
    c->ld = 3 * (size_t)c->D + 3;
    c->x0 = falloc((size_t)n * c->ld);
    c->cs = falloc((size_t)n * hd), c->sn = falloc((size_t)n * hd);
    ca_fill(c->x0, (size_t)n * c->ld, 1.0f);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < hd; j++) {
            const double ang = 6.283185307179586 * ca_uniform();
            const int ident = i % 5 == 0 || j >= hd - pass;
            c->cs[(size_t)i * hd + j] = ident ? 1.0f : (float)cos(ang);
            c->sn[(size_t)i * hd + j] = ident ? 0.0f : (float)sin(ang);
        }
    c->xr = ops_dup(c->x0, (size_t)n * c->ld);
    for (int part = 0; part < 2; part++)   /* q then k */
        jk_rope_ref(c->xr + part * c->D, c->ld, n, nh, hd, c->cs, c->sn, 1);
    return 1;
}

/* x c - x' s (x' the pair partner j ^ 1) with at most one product rounded before an FMA
 * and the FMA itself: within 2u (|x c| + |x' s|) <= 3u (...) of the reference, which
 * rounds once. v and the padding must not change (0). */
static inline int ops_rope_finish(struct ops_rope *c, const char *label, const float *x1,
                                  const float *x2, const char *again) {
    const int n = c->n, hd = c->hd;
    double *tol = dalloc((size_t)n * c->ld);
    for (int i = 0; i < n; i++)
        for (size_t e = 0; e < c->ld; e++) {
            const size_t x = (size_t)i * c->ld + e;
            tol[x] = 0.0;
            if (e < 2 * (size_t)c->D) {
                const int j = (int)(e % hd), pj = j ^ 1;
                const double xp = pj < hd ? fabs(c->x0[x - j + pj]) : 0.0;
                const size_t t = (size_t)i * hd + j;
                tol[x] = 3 * U * (fabs(c->x0[x] * c->cs[t]) + xp * fabs(c->sn[t]));
            }
        }
    char what[160];
    snprintf(what, sizeof what, "%s rope n %d heads %d hd %d pass-through %d", label, n, c->nh, hd,
             c->pass);
    const int bad = ops_check_rows(what, again, x1, x2, c->xr, c->ld, n, (int)c->ld, tol);
    free(tol), free(c->x0), free(c->cs), free(c->sn);
    ca_free_guarded(c->xr);
    return bad;
}

/* ---- patchify: a permutation, so the bits must match ---- */

struct ops_patchify {
    int C, T, tub, p, H, W;
    size_t nin, nout;
    float *in, *orf;    /* orf guarded */
};

/* Case i (0 past the last): 1 to 3 channels, tubelet 1 and 2, patches of 1 to 16, grids
 * of one patch, odd sides, a 16-frame clip, and ragged inputs whose last frames, rows or
 * columns do not fill a tubelet or a patch (the kernels drop them, as the Conv3d does);
 * in N(0, 1). orf is the reference's output on the input cropped to whole tubelets and
 * patches by hand, so the dropping is checked against the definition, the reference
 * kernel on the uncropped input included. */
static inline int ops_patchify_make(struct ops_patchify *c, size_t i) {
    static const int shapes[][9] = {   /* C, T, tubelet, p, gh, gw, + frames, rows, columns */
        {3, 2, 2, 16, 2, 3, 0, 0, 0}, {3, 1, 1, 16, 3, 2, 0, 0, 0}, {3, 4, 2, 14, 2, 2, 0, 0, 0},
        {1, 3, 1, 3, 5, 4, 0, 0, 0},  {3, 2, 1, 2, 7, 1, 0, 0, 0},  {2, 2, 2, 9, 1, 1, 0, 0, 0},
        {3, 4, 2, 16, 4, 4, 0, 0, 0}, {1, 1, 1, 1, 3, 5, 0, 0, 0},  {3, 16, 2, 16, 4, 4, 0, 0, 0},
        {3, 2, 2, 16, 2, 3, 1, 0, 0}, {3, 1, 1, 16, 3, 2, 0, 15, 1}, {3, 4, 2, 14, 2, 2, 1, 13, 7},
        {1, 3, 1, 3, 5, 4, 0, 2, 0},  {2, 2, 2, 9, 1, 1, 1, 8, 8},  {3, 16, 2, 16, 4, 4, 1, 5, 11}};
    if (i >= sizeof shapes / sizeof *shapes) return 0;
    const int *s = shapes[i];
    const int gt = s[1] / s[2];
    c->C = s[0], c->T = s[1] + s[6], c->tub = s[2], c->p = s[3];
    c->H = s[3] * s[4] + s[7], c->W = s[3] * s[5] + s[8];
    c->nin = (size_t)c->C * c->T * c->H * c->W;
    c->nout = (size_t)gt * s[4] * s[5] * c->C * c->tub * c->p * c->p;
    c->in = falloc(c->nin), c->orf = ca_alloc_guarded(c->nout);
    ca_fill(c->in, c->nin, 1.0f);
    /* the input cropped to gt * tubelet frames of (gh * p) x (gw * p) */
    const int Tc = gt * c->tub, Hc = s[3] * s[4], Wc = s[3] * s[5];
    float *crop = falloc((size_t)c->C * Tc * Hc * Wc);
    for (int ch = 0; ch < c->C; ch++)
        for (int t = 0; t < Tc; t++)
            for (int y = 0; y < Hc; y++)
                memcpy(crop + (((size_t)ch * Tc + t) * Hc + y) * Wc,
                       c->in + (((size_t)ch * c->T + t) * c->H + y) * c->W, sizeof(float) * (size_t)Wc);
    jk_patchify_ref(c->orf, crop, c->C, Tc, Hc, Wc, c->tub, c->p, 1);
    free(crop);
    if (c->T != Tc || c->H != Hc || c->W != Wc) {   /* the reference drops what the crop did */
        float *r = ca_alloc_guarded(c->nout);
        jk_patchify_ref(r, c->in, c->C, c->T, c->H, c->W, c->tub, c->p, 2);
        CHECK(same_bits(r, c->orf, c->nout) && ca_guard_ok(r, c->nout),
              "reference patchify C %d T %d tubelet %d p %d H %d W %d: differs from patchify of the "
              "cropped input", c->C, c->T, c->tub, c->p, c->H, c->W);
        ca_free_guarded(r);
    }
    return 1;
}

/* o1 (and o2 when not NULL) the bits of the reference, nothing written around them. */
static inline int ops_patchify_finish(struct ops_patchify *c, const char *label, const float *o1,
                                      const float *o2) {
    const int ok = same_bits(o1, c->orf, c->nout) && (!o2 || same_bits(o2, c->orf, c->nout));
    CHECK(ok, "%s patchify C %d T %d tubelet %d p %d H %d W %d: differs from the reference",
             label, c->C, c->T, c->tub, c->p, c->H, c->W);
    CHECK(ca_guard_ok(o1, c->nout) && (!o2 || ca_guard_ok(o2, c->nout)),
             "%s patchify C %d T %d: wrote outside out", label, c->C, c->T);
    free(c->in);
    ca_free_guarded(c->orf);
    return !ok;
}

/* ---- gather ---- */

struct ops_gather {
    int n, nx, d;
    size_t ldx, ldy;
    float *x;
    int32_t *idx;
};

/* Case i (0 past the last): n rows out of nx rows of d (strides d + 3 and d + 7): fewer
 * rows than the source, more (repeats forced), one row, rows around the warp and the
 * 1024 edge. idx: the last row first, then row 0, then random rows with every fourth a
 * repeat of the one before. */
static inline int ops_gather_make(struct ops_gather *c, size_t i) {
    static const int shapes[][3] = {   /* n, nx, d */
        {1, 1, 1}, {1, 6, 64}, {1, 7, 33}, {7, 12, 9}, {5, 3, 31}, {17, 22, 577}, {100, 105, 8},
        {300, 305, 3}, {300, 577, 64}, {40, 10, 1024}, {3, 2, 1025}};
    if (i >= sizeof shapes / sizeof *shapes) return 0;
    const int n = shapes[i][0], nx = shapes[i][1], d = shapes[i][2];
    c->n = n, c->nx = nx, c->d = d, c->ldx = (size_t)d + 3, c->ldy = (size_t)d + 7;
    c->x = falloc((size_t)nx * c->ldx);
    ca_fill(c->x, (size_t)nx * c->ldx, 1.0f);
    c->idx = (int32_t *)xmalloc((size_t)n * sizeof(int32_t));
    for (int r = 0; r < n; r++)
        c->idx[r] = r == 0 ? nx - 1 : r == 1 ? 0 : r % 4 == 3 ? c->idx[r - 1] : ca_int(0, nx - 1);
    return 1;
}

/* y1 [n, ldy] holds the bits of x[idx[i], :] in every row (the definition), y2 the same
 * bits as y1 (NULL: not run twice), nothing written outside the rows. */
static inline int ops_gather_finish(struct ops_gather *c, const char *label, const float *y1,
                                    const float *y2, const char *again) {
    int ok = 1;
    for (int i = 0; i < c->n; i++)
        ok &= same_bits(y1 + (size_t)i * c->ldy, c->x + (size_t)c->idx[i] * c->ldx, (size_t)c->d);
    char what[96];
    snprintf(what, sizeof what, "%s gather n %d of %d rows, d %d", label, c->n, c->nx, c->d);
    CHECK(ok, "%s: rows differ from x[idx]", what);
    CHECK(!y2 || same_bits(y1, y2, (size_t)c->n * c->ldy), "%s: %s differ", what, again);
    CHECK(gaps_ok(y1, c->n, c->ldy, (size_t)c->d), "%s: wrote outside its rows", what);
    free(c->x), free(c->idx);
    return !ok;
}

/* ---- mean_rows ---- */

enum { OPS_MR_KINDS = 3 };
static const char *const ops_mr_kind[] = {"mean 0", "mean 1", "mean 1e4"};

struct ops_mr {
    int n, d, kind;
    size_t ldx;
    float *x, *want;            /* want: the exact column means, rounded to float */
    double *mean, *mag, *tol;   /* per column: the exact mean, the mean |x|; tol for the test */
};

/* Case ci (0 past the last): n rows of d (one row, one column, rows around the warp,
 * many rows: a long sum, where f32 accumulation would drift; 1024 wide) at stride d + 5
 * (padding NaN), each shape with the kinds 0..2: N(0, 1) (mean ~0: the absolute error
 * counts); 1 + 0.1 N(0, 1) (the relative error shows); 1e4 + N(0, 1) (a large common
 * offset, where an f32 sum loses the digits of the spread). The means in long double
 * (exact to well below a float ulp for any n here); c->tol is left to the test. */
static inline int ops_mr_make(struct ops_mr *c, size_t ci) {
    static const int shapes[][2] = {   /* n, d */
        {1, 1}, {1, 33}, {1, 64}, {2, 7}, {16, 9}, {31, 64}, {33, 31}, {100, 100}, {255, 80},
        {577, 3}, {577, 1024}, {2048, 65}, {2099, 1}, {2100, 40}, {3136, 128}};
    if (ci >= OPS_MR_KINDS * (sizeof shapes / sizeof *shapes)) return 0;
    const int *sh = shapes[ci / OPS_MR_KINDS], n = sh[0], d = sh[1];
    const int kind = (int)(ci % OPS_MR_KINDS);
    c->n = n, c->d = d, c->kind = kind, c->ldx = (size_t)d + 5;
    c->x = falloc((size_t)n * c->ldx), c->want = falloc((size_t)d);
    c->mean = dalloc((size_t)d), c->mag = dalloc((size_t)d), c->tol = dalloc((size_t)d);
    ops_fill_rows(c->x, n, d, c->ldx, kind == 0 ? 0.0f : kind == 1 ? 1.0f : 1e4f,
                  kind == 1 ? 0.1f : 1.0f);
    for (int j = 0; j < d; j++) {
        long double acc = 0, a = 0;
        for (int i = 0; i < n; i++) {
            acc += c->x[(size_t)i * c->ldx + j];
            a += fabsl((long double)c->x[(size_t)i * c->ldx + j]);
        }
        c->mean[j] = (double)(acc / n), c->mag[j] = (double)(a / n);
        c->want[j] = (float)c->mean[j];
    }
    return 1;
}

/* y1 against the exact means within c->tol, y2 the same bits (NULL: not run twice). */
static inline int ops_mr_finish(struct ops_mr *c, const char *label, const float *y1,
                                const float *y2, const char *again) {
    char what[120];
    snprintf(what, sizeof what, "%s mean_rows n %d d %d %s", label, c->n, c->d,
             ops_mr_kind[c->kind]);
    const int bad = ops_check_rows(what, again, y1, y2, c->want, (size_t)c->d, 1, c->d, c->tol);
    free(c->x), free(c->want), free(c->mean), free(c->mag), free(c->tol);
    return bad;
}

#endif
