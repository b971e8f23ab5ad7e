/*
 * test_cuda_ops.c — the row and element-wise slots of the CUDA table (kernels/cuda/ops.cu)
 * against the reference slots of jk_init_ref() (kernels/ref/): layernorm, gelu_tanh,
 * silu, add, madd (against its definition), rope, patchify, gather, mean_rows. Built
 * twice (tests/cuda/meson.build): against the SIMT emulator, which runs the kernels on
 * the CPU, and with nvcc for a GPU; exits 77 without a device.
 *
 * Shapes are ragged on purpose: one row, row lengths around the warp (31, 32, 33) and
 * around the kernels' switch from a warp per row to a block per row (1024, 1025) and
 * from registers to memory (8192, 8193), strides wider than the rows, NaN in the
 * padding and in guard bands around every output (which must stay NaN), LayerNorm
 * without affine, with w only, in place, on constant rows (exactly b) and on rows of
 * mean 1000; the add with ldx = 0 (one row broadcast); RoPE on the q and k slices of a
 * fused qkv buffer, odd head counts, odd head dims and pass-through dims; gather with
 * repeated ids; mean_rows over 1 to 3136 rows, offsets 0, 1 and 1e4. LayerNorm, the
 * activations and mean_rows launched twice on the same input must give the
 * same bits. The pipelined table's layernorm16 / patchify16 (f16 and bf16 copies, with and
 * without the f32 output, in place too) must give layernorm's / patchify's bits and
 * their rounding, and write nothing outside the copy's rows and columns.
 *
 * The cases (inputs, reference outputs, checks) and the tolerance models are shared
 * with tests/checkasm/test_ops.c in tests/checkasm/ops_check.h. The GPU evaluates in f32
 * where the reference uses double, so the tolerances' constants are derived beside each
 * check from the f32 algorithm (u = 2^-24).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/ref/ref.h"
#include "runtime/dtype.h"
#include "tests/checkasm/checkasm.h"
#include "tests/checkasm/ops_check.h"
#include "tests/cuda/cuda_test.h"

/* The summation depth of a row reduction of d elements in the CUDA kernels: a warp per
 * row up to 1024 (d/32 sequential adds per lane, 5 butterfly levels), else a block of
 * 256 (d/256 per thread, 5 levels, 8 warp partials added in turn). */
static double row_depth(int d) {
    return d <= 1024 ? (d + 31) / 32 + 5 : (d + 255) / 256 + 13;
}

/* Each case (inputs, reference, checks) is ops_check.h's; here the kernel runs on the
 * device, launched twice where the output allows it (the two launches must give the
 * same bits). Guarded outputs travel to the device with their NaN bands. */

/* ======================================================================================
 * LayerNorm
 * ====================================================================================== */

/* The kernel: m0 = x0 + sum(x - x0)/d, then c = x - m0, s1 = sum c, s2 = sum c^2,
 * mean = m0 + s1/d, var = s2/d - (s1/d)^2, y = (c - s1/d) rstd w + b. With D the
 * summation depth (row_depth), the mean is good to about (D + 3) u sigma + u |mean|, the
 * variance to (D + 4) u relative, and the output rounds five times:
 *   |y - y_ref| <= u (4 |y_ref| + |w| rstd ((D + 8) (|x - mean| + sigma) + 2 |mean|)),
 * ops_ln_finish with a = 4, b = D + 8, cm = 2.
 * Constant rows: every x - x0 and c is 0, so y = b exactly (0 without b). */
static void check_layernorm(const struct jk_kernels *k) {
    static const int ds[] = {1, 2, 7, 31, 32, 33, 64, 100, 577, 1000, 1024, 1025, 1280, 2050,
                             4096, 5000, 8192, 8193, 9000};
    int fails = 0, cases = 0;
    for (size_t di = 0; di < sizeof ds / sizeof *ds; di++)
        for (int kind = 0; kind < OPS_LN_KINDS; kind++)
            for (int aff = 0; aff < 3; aff++) {
                const int d = ds[di];
                struct ops_ln c;
                ops_ln_make(&c, kind == OPS_LN_CONSTANT ? 6 : d > 2000 ? 3 : di % 3 == 0 ? 1 : 17, d, kind, aff);
                const int n = c.n;
                float *dw = ct_upload_f(c.w, (size_t)d), *db = ct_upload_f(c.b, (size_t)d);
                float *y1 = ca_alloc_guarded((size_t)n * c.ldy), *y2 = ca_alloc_guarded((size_t)n * c.ldy);
                for (int run = 0; run < 2; run++) {
                    float *out = run ? y2 : y1;
                    float *dx = ct_upload_guarded(c.x, (size_t)n * c.ldx);
                    if (kind == OPS_LN_INPLACE) {   /* y = x */
                        k->layernorm(dx, c.ldx, dx, c.ldx, c.wa ? dw : NULL, c.ba ? db : NULL, n, d, c.eps, 1);
                        ct_download_guarded(out, dx, (size_t)n * c.ldx);
                    } else {
                        float *dy = ct_upload_guarded(out, (size_t)n * c.ldy);   /* all NaN */
                        k->layernorm(dy, c.ldy, dx, c.ldx, c.wa ? dw : NULL, c.ba ? db : NULL, n, d, c.eps, 1);
                        ct_download_guarded(out, dy, (size_t)n * c.ldy);
                        ct_free_guarded(dy);
                    }
                    ct_free_guarded(dx);
                }
                ct_free(dw), ct_free(db);
                fails += ops_ln_finish(&c, "cuda", y1, y2, "two launches", 4.0, row_depth(d) + 8, 2.0);
                cases++;
                ca_free_guarded(y1), ca_free_guarded(y2);
            }
    printf("  cuda layernorm: %d cases, %d failed\n", cases, fails);
}

/* ======================================================================================
 * element-wise activations
 * ====================================================================================== */

/* The kernels (ops.cu): gelu_tanh and silu, x / (1 + e^w) with e^w as e^hi (1 + lo):
 * expf 2 ulp and three roundings, 6 u. The rel of ops_unary_finish (which adds the
 * reference's own cancellation and a subnormal step). (The erf-GELU is the matmul's
 * epilogue: tests/cuda/test_cuda_gemm.c.) */
static const double act_rel[OPS_NACT] = {6.0, 6.0};   /* gelu_tanh, silu */

/* n elements in place, launched twice: y1 and y2 (guarded). */
static void run_unary(jk_unary_fn *fn, const float *x0, size_t n, float *y1, float *y2) {
    for (int run = 0; run < 2; run++) {
        float *out = run ? y2 : y1;
        memcpy(out, x0, n * sizeof(float));
        float *dx = ct_upload_guarded(out, n);
        fn(dx, n, 1);
        ct_download_guarded(out, dx, n);
        ct_free_guarded(dx);
    }
}

static void check_unary(const struct jk_kernels *k, const struct jk_kernels *rt) {
    static const size_t ns[] = {1, 7, 31, 32, 33, 255, 256, 257, 20001};
    for (int o = 0; o < OPS_NACT; o++) {
        int fails = 0, cases = 0;
        for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++) {
            struct ops_unary c;
            ops_unary_make(&c, rt, o, ns[ni]);
            float *x1 = ca_alloc_guarded(c.n), *x2 = ca_alloc_guarded(c.n);
            run_unary(ops_act_slot(k, o), c.x0, c.n, x1, x2);
            fails += ops_unary_finish(&c, "cuda", x1, x2, "two launches", act_rel[o]);
            cases++;
            ca_free_guarded(x1), ca_free_guarded(x2);
        }
        printf("  cuda %s: %d cases, %d failed\n", ops_act_name[o], cases, fails);
    }
}

/* The activations against their exact formulas (ops_act_exact) over every binade of
 * [-16, 16]: every 1021st float bit pattern, both signs (2.2 million values). Bound:
 * the rel u of check_unary (6 u); a subnormal result
 * carries that relative error of the f32 evaluation plus one step (2^-149) for its
 * rounding. The worst errors seen are printed. */
static void check_activation_accuracy(const struct jk_kernels *k) {
    size_t m;
    float *x = ops_act_sweep(1021, &m), *y = falloc(m);
    for (int o = 0; o < OPS_NACT; o++) {
        float *dx = ct_upload_f(x, m);
        ops_act_slot(k, o)(dx, m, 1);
        ct_download(y, dx, m * sizeof(float));
        ct_free(dx);
        ops_act_check("cuda", o, x, y, m, act_rel[o] * U, act_rel[o] * U);
    }
    free(x), free(y);
}

/* ======================================================================================
 * add (residual, layer-scale, broadcast row)
 * ====================================================================================== */

/* y + s x, fused or not: ops_add_finish's 2u (|y| + |s x|). */
static void check_add(const struct jk_kernels *k) {
    static const int ds[] = {1, 7, 31, 33, 64, 300, 577};
    int fails = 0, cases = 0;
    for (size_t di = 0; di < sizeof ds / sizeof *ds; di++)
        for (int scaled = 0; scaled < 2; scaled++)
            for (int bcast = 0; bcast < 2; bcast++) {
                struct ops_add c;
                ops_add_make(&c, di == 0 ? 1 : di == 1 ? 300 : 17, ds[di], scaled, bcast);
                const size_t ny = (size_t)c.n * c.ldy;
                float *y1 = ops_dup(c.y0, ny);
                float *dx = ct_upload_f(c.x, c.nx), *ds_ = ct_upload_f(c.s, (size_t)c.d);
                float *dy = ct_upload_guarded(y1, ny);
                k->add(dy, c.ldy, dx, c.ldx, c.sa ? ds_ : NULL, c.n, c.d, 1);
                ct_download_guarded(y1, dy, ny);
                ct_free_guarded(dy), ct_free(dx), ct_free(ds_);
                fails += ops_add_finish(&c, "cuda", y1, NULL, NULL);   /* y += ...: one launch */
                cases++;
                ca_free_guarded(y1);
            }
    printf("  cuda add: %d cases, %d failed\n", cases, fails);
}

/* ======================================================================================
 * RoPE
 * ====================================================================================== */

/* x c - x' s with one fma and one product: ops_rope_finish's 3u (|x c| + |x' s|), on the
 * q then the k slice of a fused [n, 3D + 3] buffer (v and the padding must not change);
 * one launch per slice (in place). */
static void check_rope(const struct jk_kernels *k) {
    int fails = 0, cases = 0;
    struct ops_rope c;
    for (size_t i = 0; ops_rope_make(&c, i, 300); i++) {
        const size_t nx = (size_t)c.n * c.ld, nt = (size_t)c.n * c.hd;
        float *x1 = ops_dup(c.x0, nx);
        float *dx = ct_upload_guarded(x1, nx), *dc = ct_upload_f(c.cs, nt), *ds_ = ct_upload_f(c.sn, nt);
        for (int part = 0; part < 2; part++)   /* q then k */
            k->rope(dx + part * c.D, c.ld, c.n, c.nh, c.hd, dc, ds_, 1);
        ct_download_guarded(x1, dx, nx);
        ct_free_guarded(dx), ct_free(dc), ct_free(ds_);
        fails += ops_rope_finish(&c, "cuda", x1, NULL, NULL);
        cases++;
        ca_free_guarded(x1);
    }
    printf("  cuda rope: %d cases, %d failed\n", cases, fails);
}

/* ======================================================================================
 * patchify and gather: permutations, so the bits must match
 * ====================================================================================== */

static void check_patchify(const struct jk_kernels *k) {
    int fails = 0, cases = 0;
    struct ops_patchify c;
    for (size_t si = 0; ops_patchify_make(&c, si); si++) {
        float *o1 = ca_alloc_guarded(c.nout);
        float *din = ct_upload_f(c.in, c.nin), *dout = ct_upload_guarded(o1, c.nout);
        k->patchify(dout, din, c.C, c.T, c.H, c.W, c.tub, c.p, 1);
        ct_download_guarded(o1, dout, c.nout);
        ct_free(din), ct_free_guarded(dout);
        fails += ops_patchify_finish(&c, "cuda", o1, NULL);
        cases++;
        ca_free_guarded(o1);
    }
    printf("  cuda patchify: %d cases, %d failed\n", cases, fails);
}

/* y[i, :] = x[idx[i], :]: the definition (ops_gather_finish), and the reference slot
 * when the table has one. */
/* The modulation multiply-add: ops_madd_finish's 3u; the gated residual in place. */
static void check_madd(const struct jk_kernels *k) {
    static const int ds[] = {1, 7, 31, 33, 192, 577};
    int fails = 0, cases = 0;
    for (size_t di = 0; di < sizeof ds / sizeof *ds; di++)
        for (int resid = 0; resid < 2; resid++) {
            struct ops_madd c;
            ops_madd_make(&c, di == 0 ? 1 : di == 1 ? 300 : 17, ds[di], resid);
            const size_t ny = (size_t)c.n * c.ldy, nmod = (size_t)c.n * c.ldm;
            float *y1 = ops_dup(c.y0, ny);
            float *dx = ct_upload_f(c.x, (size_t)c.n * c.ldx), *dm = ct_upload_f(c.mod, nmod);
            float *dy = ct_upload_guarded(y1, ny);
            k->madd(dy, c.ldy, dx, c.ldx, dm + c.d, c.ldm, resid ? dy : dm, resid ? c.ldy : c.ldm, c.c,
                    c.n, c.d, 1);
            ct_download_guarded(y1, dy, ny);
            ct_free_guarded(dy), ct_free(dx), ct_free(dm);
            fails += ops_madd_finish(&c, "cuda", y1, NULL, NULL);
            cases++;
            ca_free_guarded(y1);
        }
    printf("  cuda madd: %d cases, %d failed\n", cases, fails);
}

static void check_gather(const struct jk_kernels *k, const struct jk_kernels *rt) {
    int fails = 0, cases = 0;
    struct ops_gather c;
    for (size_t si = 0; ops_gather_make(&c, si); si++) {
        const size_t ny = (size_t)c.n * c.ldy;
        float *y1 = ca_alloc_guarded(ny);
        float *dx = ct_upload_f(c.x, (size_t)c.nx * c.ldx);
        int32_t *di = (int32_t *)ct_upload(c.idx, (size_t)c.n * sizeof(int32_t));
        float *dy = ct_upload_guarded(y1, ny);
        k->gather(dy, c.ldy, dx, c.ldx, di, c.n, c.d, 1);
        ct_download_guarded(y1, dy, ny);
        ct_free(dx), ct_free(di), ct_free_guarded(dy);
        if (rt->gather) {
            float *yr = ca_alloc_guarded(ny);
            rt->gather(yr, c.ldy, c.x, c.ldx, c.idx, c.n, c.d, 1);
            int ok = 1;
            for (int i = 0; i < c.n; i++) ok &= same_bits(y1 + (size_t)i * c.ldy, yr + (size_t)i * c.ldy, (size_t)c.d);
            CHECK(ok, "cuda gather n %d of %d rows d %d: differs from the reference slot", c.n, c.nx, c.d);
            fails += !ok;
            ca_free_guarded(yr);
        }
        fails += ops_gather_finish(&c, "cuda", y1, NULL, NULL);
        cases++;
        ca_free_guarded(y1);
    }
    printf("  cuda gather: %d cases, %d failed%s\n", cases, fails,
           rt->gather ? "" : " (no reference slot: against x[idx] only)");
}

/* ======================================================================================
 * the x16 table's layernorm16 and patchify16: the f32 kernels' bits, and the copy their
 * result rounded (runtime/dtype.h's conversions, round to nearest even)
 * ====================================================================================== */

#define X16_SENTINEL 0x7e5au   /* a NaN pattern neither conversion produces from these inputs */

static uint16_t round_host(float v, enum jk_dtype t) {
    return t == JK_BF16 ? f32_to_bf16(v) : f32_to_f16(v);
}

/* A device array of n 16-bit values, every one X16_SENTINEL. */
static uint16_t *x16_alloc(size_t n) {
    uint16_t *h = malloc(n * sizeof *h);
    for (size_t i = 0; i < n; i++) h[i] = X16_SENTINEL;
    uint16_t *d = ct_upload(h, n * sizeof *h);
    free(h);
    return d;
}

/* Whether v is a NaN of type t (CUDA's conversions give the NaN 0x7fff whatever the
 * payload; runtime/dtype.h's keep the quiet bit: any NaN is the right copy of a NaN). */
static bool nan16(uint16_t v, enum jk_dtype t) {
    return t == JK_BF16 ? (v & 0x7f80) == 0x7f80 && (v & 0x7f) : (v & 0x7c00) == 0x7c00 && (v & 0x3ff);
}

/* y16 [rows, ld16] (downloaded) against the rounding of y [rows, ldy] over `cols` columns
 * (a NaN: any NaN), the sentinel everywhere else (padding, the guard rows before and
 * after). */
static int x16_check(const char *what, const uint16_t *y16, size_t ld16, const float *y, size_t ldy,
                     int rows, int cols, enum jk_dtype t) {
    int bad = 0;
    for (int i = 0; i < rows + 2 && !bad; i++)
        for (size_t j = 0; j < ld16 && !bad; j++) {
            const int r = i - 1;   /* guard row -1 and rows */
            const uint16_t got = y16[(size_t)i * ld16 + j];
            const uint16_t want = r >= 0 && r < rows && j < (size_t)cols
                                      ? round_host(y[(size_t)r * ldy + j], t) : X16_SENTINEL;
            if (got != want && !(nan16(want, t) && nan16(got, t) && got != X16_SENTINEL)) {
                printf("FAIL: %s: row %d column %zu: 0x%04x, want 0x%04x\n", what, r, j, got, want);
                bad = 1;
            }
        }
    return bad;
}

/* y, y16 and y16 without y from one layernorm16 launch each, against k's layernorm. */
static void check_layernorm16(const struct jk_kernels *k, const struct jk_kernels *kp) {
    static const int ds[] = {1, 7, 31, 33, 100, 1024, 1025, 8193};
    static const enum jk_dtype ts[] = {JK_F16, JK_BF16};
    int fails = 0, cases = 0;
    for (size_t di = 0; di < sizeof ds / sizeof *ds; di++)
        for (int kind = 0; kind < OPS_LN_KINDS; kind++)
            for (int ti = 0; ti < 2; ti++) {
                const int d = ds[di], aff = (int)(di + kind) % 3;
                const enum jk_dtype t = ts[ti];
                struct ops_ln c;
                const int rows = kind == OPS_LN_CONSTANT ? 6 : d > 2000 ? 2 : 5 + (int)di;
                ops_ln_make(&c, rows, d, kind, aff);
                const int n = c.n;
                const size_t ny = (size_t)n * c.ldy, ld16 = (size_t)d + 3, n16 = (n + 2) * ld16;
                float *dw = ct_upload_f(c.w, (size_t)d), *db = ct_upload_f(c.b, (size_t)d);
                const float *w = c.wa ? dw : NULL, *b = c.ba ? db : NULL;
                float *y1 = ca_alloc_guarded(ny), *y2 = ca_alloc_guarded(ny);
                uint16_t *h16 = malloc(n16 * sizeof *h16), *h16b = malloc(n16 * sizeof *h16b);
                uint16_t *d16 = x16_alloc(n16), *d16b = x16_alloc(n16);
                for (int run = 0; run < 2; run++) {   /* layernorm, then layernorm16 */
                    float *out = run ? y2 : y1;
                    float *dx = ct_upload_guarded(c.x, (size_t)n * c.ldx);
                    float *dy = kind == OPS_LN_INPLACE ? dx : ct_upload_guarded(out, ny);
                    if (run) {
                        kp->layernorm16(dy, c.ldy, d16 + ld16, ld16, t, dx, c.ldx, w, b, n, d,
                                        c.eps, 1);
                    } else {
                        k->layernorm(dy, c.ldy, dx, c.ldx, w, b, n, d, c.eps, 1);
                    }
                    ct_download_guarded(out, dy, ny);
                    if (dy != dx) ct_free_guarded(dy);
                    ct_free_guarded(dx);
                }
                /* the copy alone, from a fresh input */
                float *dx = ct_upload_guarded(c.x, (size_t)n * c.ldx);
                kp->layernorm16(NULL, 0, d16b + ld16, ld16, t, dx, c.ldx, w, b, n, d, c.eps, 1);
                ct_free_guarded(dx);
                ct_download(h16, d16, n16 * sizeof *h16);
                ct_download(h16b, d16b, n16 * sizeof *h16b);
                char what[160];
                snprintf(what, sizeof what, "cuda layernorm16 %s n %d d %d %s %s", jk_dtype_name(t),
                         n, d, ops_ln_kind[kind], ops_ln_affine[aff]);
                int bad = 0;
                if (memcmp(y1 - CA_GUARD, y2 - CA_GUARD, (ny + 2 * CA_GUARD) * sizeof(float))) {
                    printf("FAIL: %s: y differs from layernorm's bits\n", what);
                    bad = 1;
                }
                bad |= x16_check(what, h16, ld16, y1, c.ldy, n, d, t);
                if (!bad && memcmp(h16, h16b, n16 * sizeof *h16)) {
                    printf("FAIL: %s: the copy without y differs from the copy with it\n", what);
                    bad = 1;
                }
                fails += bad;
                cases++;
                ct_free(dw), ct_free(db), ct_free(d16), ct_free(d16b);
                free(h16), free(h16b), free(c.w), free(c.b);
                ca_free_guarded(y1), ca_free_guarded(y2);
                ca_free_guarded(c.x), ca_free_guarded(c.yr);
            }
    CHECK(fails == 0, "cuda layernorm16: %d of %d cases failed", fails, cases);
    printf("  cuda layernorm16: %d cases, %d failed\n", cases, fails);
}

static void check_patchify16(const struct jk_kernels *k, const struct jk_kernels *kp) {
    static const enum jk_dtype ts[] = {JK_F16, JK_BF16};
    int fails = 0, cases = 0;
    struct ops_patchify c;
    for (size_t si = 0; ops_patchify_make(&c, si); si++) {
        const int F = c.C * c.tub * c.p * c.p, ntok = (int)(c.nout / (size_t)F);
        const size_t n16 = (size_t)(ntok + 2) * F;
        float *o1 = ca_alloc_guarded(c.nout), *o2 = ca_alloc_guarded(c.nout);
        uint16_t *h16 = malloc(n16 * sizeof *h16), *h16b = malloc(n16 * sizeof *h16b);
        float *din = ct_upload_f(c.in, c.nin);
        for (int ti = 0; ti < 2; ti++) {
            const enum jk_dtype t = ts[ti];
            float *d1 = ct_upload_guarded(o1, c.nout), *d2 = ct_upload_guarded(o2, c.nout);
            uint16_t *d16 = x16_alloc(n16), *d16b = x16_alloc(n16);
            k->patchify(d1, din, c.C, c.T, c.H, c.W, c.tub, c.p, 1);
            kp->patchify16(d2, d16 + F, t, din, c.C, c.T, c.H, c.W, c.tub, c.p, 1);
            kp->patchify16(NULL, d16b + F, t, din, c.C, c.T, c.H, c.W, c.tub, c.p, 1);
            ct_download_guarded(o1, d1, c.nout);
            ct_download_guarded(o2, d2, c.nout);
            ct_download(h16, d16, n16 * sizeof *h16);
            ct_download(h16b, d16b, n16 * sizeof *h16b);
            ct_free_guarded(d1), ct_free_guarded(d2), ct_free(d16), ct_free(d16b);
            char what[160];
            snprintf(what, sizeof what, "cuda patchify16 %s C %d T %d %dx%d tubelet %d p %d",
                     jk_dtype_name(t), c.C, c.T, c.H, c.W, c.tub, c.p);
            int bad = 0;
            if (memcmp(o1 - CA_GUARD, o2 - CA_GUARD, (c.nout + 2 * CA_GUARD) * sizeof(float))) {
                printf("FAIL: %s: out differs from patchify's bits\n", what);
                bad = 1;
            }
            bad |= x16_check(what, h16, (size_t)F, o1, (size_t)F, ntok, F, t);
            if (!bad && memcmp(h16, h16b, n16 * sizeof *h16)) {
                printf("FAIL: %s: the copy without out differs from the copy with it\n", what);
                bad = 1;
            }
            fails += bad;
            cases++;
        }
        ct_free(din);
        free(h16), free(h16b), free(c.in);
        ca_free_guarded(o1), ca_free_guarded(o2), ca_free_guarded(c.orf);
    }
    CHECK(fails == 0, "cuda patchify16: %d of %d cases failed", fails, cases);
    printf("  cuda patchify16: %d cases, %d failed\n", cases, fails);
}

/* Rows of d at stride ld (the padding between rows 0.25): scaled normals, and in every row
 * the values the rounding must get right: NaN, +-Inf, an f32 subnormal, f16 subnormals,
 * 65504 / 65519 (f16's largest, still rounding down) and 65520 / 1e6 (f16 overflow to inf),
 * f16 and bf16 ties (1 + 2^-11, 1 + 3 2^-11, 1 + 2^-8, 1 + 3 2^-8: to even, down and up),
 * -0, 1e30 and -88 (the activations' far ends). */
static float *x16_inputs(int n, int d, size_t ld) {
    static const float special[] = {NAN, INFINITY, -INFINITY, 1e-40f, 3e-8f, -1e-6f,
                                    65504.0f, 65519.0f, 65520.0f, 1e6f, -1e6f,
                                    1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 1.0f + 0x1p-8f,
                                    1.0f + 3 * 0x1p-8f, -0.0f, 1e30f, -88.0f};
    const int ns = (int)(sizeof special / sizeof *special);
    float *x = ca_alloc_guarded((size_t)n * ld);
    for (int i = 0; i < n; i++)
        for (size_t j = 0; j < ld; j++)
            x[(size_t)i * ld + j] = j >= (size_t)d ? 0.25f
                                    : (int)j < ns && d > 2 * ns ? special[(j + (size_t)i) % ns]
                                                                : ca_normal() * (1 + i % 4) * 3;
    return x;
}

/* gelu_tanh16 / silu16: in place on ragged rows at a stride, against the plain slot run
 * row by row on the same input (the same f32 bits, padding and guards untouched), the copy
 * its result rounded; round16: the copy of the input itself, the input untouched. */
static void check_unary16(const struct jk_kernels *k, const struct jk_kernels *kp) {
    static const int shapes[][2] = {{1, 1}, {3, 7}, {5, 40}, {2, 255}, {9, 257}, {4, 1031}};
    static const enum jk_dtype ts[] = {JK_F16, JK_BF16};
    static const char *const names[] = {"gelu_tanh16", "silu16", "round16"};
    int fails = 0, cases = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++)
        for (int op = 0; op < 3; op++)
            for (int ti = 0; ti < 2; ti++) {
                const int n = shapes[si][0], d = shapes[si][1];
                const enum jk_dtype t = ts[ti];
                const size_t ld = (size_t)d + 5, nx = (size_t)n * ld;
                const size_t ld16 = (size_t)d + 3, n16 = (size_t)(n + 2) * ld16;
                float *x = x16_inputs(n, d, ld), *y1 = ca_alloc_guarded(nx);
                float *y2 = ca_alloc_guarded(nx);
                uint16_t *h16 = malloc(n16 * sizeof *h16), *d16 = x16_alloc(n16);
                float *dx1 = ct_upload_guarded(x, nx), *dx2 = ct_upload_guarded(x, nx);
                jk_unary_fn *plain = op == 0 ? k->gelu_tanh : k->silu;
                if (op < 2) {
                    for (int i = 0; i < n; i++) plain(dx1 + (size_t)i * ld, (size_t)d, 1);
                    (op == 0 ? kp->gelu_tanh16 : kp->silu16)(dx2, ld, d16 + ld16, ld16, t, n, d, 1);
                } else {
                    kp->round16(d16 + ld16, ld16, t, dx2, ld, n, d, 1);
                }
                ct_download_guarded(y1, dx1, nx);
                ct_download_guarded(y2, dx2, nx);
                ct_download(h16, d16, n16 * sizeof *h16);
                char what[160];
                snprintf(what, sizeof what, "cuda %s %s n %d d %d", names[op], jk_dtype_name(t), n,
                         d);
                int bad = 0;
                if (memcmp(y1 - CA_GUARD, y2 - CA_GUARD, (nx + 2 * CA_GUARD) * sizeof(float))) {
                    printf("FAIL: %s: the f32 result differs from %s\n", what,
                           op < 2 ? "the plain slot's bits" : "the untouched input");
                    bad = 1;
                }
                bad |= x16_check(what, h16, ld16, y1, ld, n, d, t);
                fails += bad;
                cases++;
                ct_free_guarded(dx1), ct_free_guarded(dx2), ct_free(d16);
                free(h16);
                ca_free_guarded(x), ca_free_guarded(y1), ca_free_guarded(y2);
            }
    CHECK(fails == 0, "cuda gelu_tanh16 / silu16 / round16: %d of %d cases failed", fails, cases);
    printf("  cuda gelu_tanh16 / silu16 / round16: %d cases, %d failed\n", cases, fails);
}

/* The switch: the default table has no x16 and no 16-bit variants; the pipelined one
 * (JEPA_CUDA_KERNELS=pipe) has both, and everything else of the default table. */
static void check_x16_table(const struct jk_kernels *k, const struct jk_kernels *kp) {
    CHECK(!k->x16 && !k->layernorm16 && !k->patchify16 && !k->gelu_tanh16 && !k->silu16 &&
              !k->round16,
          "the default CUDA table sets x16 or the 16-bit variants");
    CHECK(kp->x16 && kp->layernorm16 && kp->patchify16 && kp->gelu_tanh16 && kp->silu16 &&
              kp->round16,
          "the pipelined CUDA table lacks x16 or the 16-bit variants");
    CHECK(kp->gelu_tanh == k->gelu_tanh && kp->silu == k->silu,
          "the pipelined CUDA table's gelu_tanh / silu are not the default's");
    CHECK(kp->layernorm == k->layernorm && kp->patchify == k->patchify,
          "the pipelined CUDA table's layernorm / patchify are not the default's");
}

/* ======================================================================================
 * mean_rows
 * ====================================================================================== */

/* Column sums with Kahan compensation per thread, then the 16 partials added with
 * compensation: error ~2u sum_i |x_ij| plus the division, so
 *   |y_j - mean_j| <= u (6 sum_i |x_ij| / n + 2 |mean_j|)
 * against the exact mean (ops_mr_make), whatever n (a plain f32 sum would need n u), and
 * against the reference slot's output. The worst relative error is printed for the rows
 * of mean 1. */
static void check_mean_rows(const struct jk_kernels *k, const struct jk_kernels *rt) {
    int fails = 0, cases = 0;
    double worst = 0.0;
    struct ops_mr c;
    for (size_t ci = 0; ops_mr_make(&c, ci); ci++) {
        const int n = c.n, d = c.d;
        for (int j = 0; j < d; j++) c.tol[j] = U * (6 * c.mag[j] + 2 * fabs(c.mean[j]));
        float *y1 = ca_alloc_guarded((size_t)d), *y2 = ca_alloc_guarded((size_t)d);
        float *dx = ct_upload_f(c.x, (size_t)n * c.ldx);
        for (int run = 0; run < 2; run++) {
            float *out = run ? y2 : y1;
            float *dy = ct_upload_guarded(out, (size_t)d);
            k->mean_rows(dy, dx, c.ldx, n, d, 1);
            ct_download_guarded(out, dy, (size_t)d);
            ct_free_guarded(dy);
        }
        ct_free(dx);
        if (c.kind == 1)
            for (int j = 0; j < d; j++) worst = dmax(worst, fabs((double)y1[j] - c.mean[j]) / fabs(c.mean[j]));
        if (rt->mean_rows) {
            float *yr = falloc((size_t)d);
            rt->mean_rows(yr, c.x, c.ldx, n, d, 1);
            char what[120];
            snprintf(what, sizeof what, "cuda mean_rows n %d d %d %s (vs the reference slot)", n, d,
                     ops_mr_kind[c.kind]);
            fails += check_tol(what, y1, yr, c.tol, (size_t)d) != 0;
            free(yr);
        }
        fails += ops_mr_finish(&c, "cuda", y1, y2, "two launches");
        cases++;
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
    jkc_kernels_force_pipe(0);   /* the default table, whatever JEPA_CUDA_KERNELS says */
    dev->init_kernels(dev, &k, 0);
    CHECK(!strcmp(k.isa, "cuda"), "the device's table is \"%s\", not \"cuda\"", k.isa);

    check_layernorm(&k);
    check_unary(&k, &ref);
    check_activation_accuracy(&k);
    check_add(&k);
    check_madd(&k);
    check_rope(&k);
    check_patchify(&k);
    check_gather(&k, &ref);
    check_mean_rows(&k, &ref);

    struct jk_kernels kp;   /* the pipelined table (JEPA_CUDA_KERNELS=pipe) */
    jkc_kernels_force_pipe(1);
    dev->init_kernels(dev, &kp, 0);
    jkc_kernels_force_pipe(-1);
    check_x16_table(&k, &kp);
    if (kp.layernorm16 && kp.patchify16) {
        check_layernorm16(&k, &kp);
        check_patchify16(&k, &kp);
    }
    if (kp.gelu_tanh16 && kp.silu16 && kp.round16) check_unary16(&k, &kp);

    CHECK(!dev->sync(dev), "device error after the tests: %s", dev->error(dev));
    ct_close();
    return ca_finish("test_cuda_ops");
}
