/*
 * test_gemm_tier.c — checkasm for the matmul of the precision tiers (kernels/kernels.h,
 * jk_init_precision): the bf16 tier's gemm slots, every weight type, against
 * jk_gemm_bf16x_ref (kernels/ref/gemm_ref.c: X and the exactly decoded weights rounded to
 * bf16, double accumulation, one rounding). One rung of the tier per executable:
 *  - checkasm_gemm_tier: the AVX512-BF16 kernels (gemm_avx512.c, -DJK_GEMM_BF16X), native
 *    where the CPU has AVX512-BF16 (otherwise: skipped, 77), and through SIMDe
 *    (-DCHECKASM_AVX512_EMU, tests/checkasm/meson.build) on any x86-64 machine;
 *  - checkasm_gemm_amx (-DCHECKASM_GEMM_AMX): the AMX tile kernels (gemm_amx.c), native
 *    where the CPU has AMX and the OS grants its tiles (otherwise: skipped, 77), and
 *    checkasm_gemm_amx_model (-DCHECKASM_TILE_MODEL too): the same kernel source built on
 *    the C model of the tile instructions (kernels/x86/amx_model.h) and SIMDe, on any
 *    x86-64 machine.
 *  - on aarch64, checkasm_gemm_tier runs the FEAT_BF16 kernels (gemm_neon.c,
 *    -DJK_GEMM_BF16X: BFDOT), natively or under qemu-aarch64 (whose CPU "max" has it).
 *
 * What runs, per weight type:
 *  - ragged shapes: M in {1, 2, 5, 14, 15, 17, 29, 65, 200} x N in {1, 3, 17, 33, 65, 100} x
 *    K in {1, 7, 33, 100, 344, 768, 1030} (32-blocks {32, 64, 160, 768}; K-quants {256, 512,
 *    768}), less those with M N K > 4e6, each with a random epilogue, bias or NULL, and
 *    strides wider than the rows; Y's padding and 16 floats either side must stay NaN;
 *  - the same call at 2 and 3 threads gives the bits of 1 thread, and W packed once
 *    (gemm_prepack) the bits of W packed per call;
 *  - that the tier really rounds: on K = 2 with x = 1 + 2^-9 (not a bf16 value) the
 *    bf16 kernels must give 1 (the exact tier would give 1 + 2^-9), and the high tier's
 *    1 + 2^-9 (its lo term carries the 2^-9).
 *
 * Tolerance: the products of two bf16 values are exact in f32, so the kernel's result is
 * a summation, in some order, of the K + 2 terms x~_k w~_k, bias, y_old (x~, w~: the bf16
 * operands, which the reference uses too), each addition rounded once (VDPBF16PS rounds
 * after each product, or after the pair: either way at most one rounding per term), with a
 * relative error of at most e: u = 2^-24 where the dot product rounds to nearest even
 * (VDPBF16PS), 2u where it rounds to odd (BFDOT with FPCR.EBF = 0, the Arm ARM's BFDotAdd):
 *     |y - y_ref| <= 1.01 (K + 4) e S + u |y_ref| + 1e-37,  S = sum |x~ w~| + |b| + |y_old|
 * and for GELU outputs 1.13 times that + 8e-7 |y_ref| (kernels/simd/math.h's erf-GELU).
 * (Both flush subnormal operands and sums to zero: 1e-37 covers the outputs, and no
 * operand here is subnormal.)
 * A lost pair costs about S / K, above the bound; so does an operand not rounded (2^-9
 * relative per term, for K below ~2^14).
 *
 * The high tier (AMX only) is checked against the exact reference (jk_gemm_<t>_ref: exact
 * operands). Its operands are v = hi + lo + e with |e| <= 2^-16 |v| (e = 0 for f16 and bf16
 * weights, lo = 0 for bf16 ones), and it sums hi hi + hi lo + lo hi, leaving out lo lo
 * (<= 1.0079 2^-16 |x w|): per term at most c 2^-16 |x w| off, c = 1.01 (bf16 weights:
 * e_x), 2.03 (f16: e_x + lo lo), 3.1 (the others), over 3K roundings in f32:
 *     |y - y_ref| <= 1.01 (3K + 4) u S + c 2^-16 S_xw + u |y_ref| + 1e-37
 * (S, S_xw with the exact operands; GELU as above). An operand split with its lo term lost
 * costs 2^-9 per term, 128 times that.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/ref/ref.h"
#include "runtime/cpu.h"
#include "runtime/dtype.h"
#include "runtime/quant.h"
#include "tests/checkasm/checkasm.h"
#include "tests/checkasm/tier_flags.h"

static float rnd(void) { return (float)((2.0 * ca_uniform() - 1.0) * 1.7320508075688772); }

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

/* N rows of K random weights of type t (block formats: random floats quantized by
 * runtime/quant.c), ldw bytes apart, the padding 0xff (NaN in every format). */
static uint8_t *make_weights(enum jk_dtype t, int N, int K, size_t ldw) {
    uint8_t *w = xmalloc((size_t)N * ldw);
    float *v = xmalloc((size_t)K * sizeof(float));
    memset(w, 0xff, (size_t)N * ldw);
    for (int n = 0; n < N; n++) {
        uint8_t *row = w + (size_t)n * ldw;
        for (int k = 0; k < K; k++) v[k] = 0.3f * rnd();
        if (t == JK_F32) {
            memcpy(row, v, (size_t)K * 4);
        } else if (t == JK_F16 || t == JK_BF16) {
            for (int k = 0; k < K; k++) {
                const uint16_t h = t == JK_F16 ? f32_to_f16(v[k]) : f32_to_bf16(v[k]);
                memcpy(row + 2 * (size_t)k, &h, 2);
            }
        } else if (jr_quantize_row((int)t, v, row, K) != 0) {
            fprintf(stderr, "cannot quantize to %s\n", jk_dtype_name(t));
            exit(1);
        }
    }
    free(v);
    return w;
}

static double bf16r(float x) { return (double)bf16_to_f32(f32_to_bf16(x)); }

struct shape {
    int M, N, K;
    size_t ldx, ldy, ldw;
    enum jk_epilogue epi;
    int bias;
};

/* e of the bound above, per addition: u, or 2u for the aarch64 kernels, whose BFDOT rounds
 * its additions to odd (Arm ARM, BFDotAdd with FPCR.EBF = 0); set per rung in main. */
static double add_error = 0x1p-24;

/* The split error factor c of the high tier's bound (above) for weights of type t. */
static double high_c(enum jk_dtype t) { return t == JK_BF16 ? 1.01 : t == JK_F16 ? 2.03 : 3.1; }

/* y (the kernel's, NaN-padded rows of ldy) against ref with the bound above for tier p;
 * wf: the weights the bound is over (bf16-rounded for the bf16 tier, exact for high). */
static int check_y(const char *what, enum jk_precision p, enum jk_dtype t, const struct shape *s,
                   const float *x, const float *wf, const float *bias, const float *y0, const float *y,
                   const float *ref) {
    const double u = 0x1p-24, e = add_error, c = p == JK_PREC_HIGH ? high_c(t) * 0x1p-16 : 0.0;
    const int sums = p == JK_PREC_HIGH ? 3 * s->K : s->K;
    int bad = 0;
    double worst = 0.0;
    int wi = 0, wj = 0;
    for (int i = 0; i < s->M; i++) {
        for (int j = 0; j < s->N; j++) {
            double S = 0.0;
            for (int k = 0; k < s->K; k++) {
                const float xv = x[(size_t)i * s->ldx + k];
                S += fabs((p == JK_PREC_HIGH ? (double)xv : bf16r(xv)) * (double)wf[(size_t)j * s->K + k]);
            }
            const double split = c * S;
            if (bias) S += fabs(bias[j]);
            if (s->epi == JK_EPI_ADD) S += fabs(y0[(size_t)i * s->ldy + j]);
            const double r = ref[(size_t)i * s->ldy + j], g = y[(size_t)i * s->ldy + j];
            double lim = 1.01 * (sums + 4) * e * S + split + u * fabs(r) + 1e-37;
            if (s->epi == JK_EPI_GELU) lim = 1.13 * lim + 8e-7 * fabs(r);
            const double d = fabs(g - r);
            if (!(d <= lim)) bad++;
            if (!(d / lim <= worst)) worst = d / lim, wi = i, wj = j;
        }
        for (size_t j = (size_t)s->N; j < s->ldy; j++)
            if (!isnan(y[(size_t)i * s->ldy + j])) bad++;
    }
    if (bad) {
        check_failed++;
        printf("FAIL %s: %d outputs out of bound (worst [%d,%d]: got %.9g ref %.9g, %.2f x the bound)\n",
               what, bad, wi, wj, (double)y[(size_t)wi * s->ldy + wj], (double)ref[(size_t)wi * s->ldy + wj],
               worst);
    }
    return bad;
}

/* One shape: the slot of tier p against the reference, then the thread counts and packing. */
static void run_case(const struct jk_kernels *k, enum jk_precision p, enum jk_dtype t, const struct shape *s,
                     int deep) {
    char what[160];
    snprintf(what, sizeof what, "%s gemm_%s M=%d N=%d K=%d %s%s", k->gemm_isa, jk_dtype_name(t), s->M,
             s->N, s->K, s->epi == JK_EPI_STORE ? "store" : s->epi == JK_EPI_GELU ? "gelu" : "add",
             s->bias ? " +bias" : "");
    const size_t ny = (size_t)s->M * s->ldy;
    float *x = xmalloc((size_t)s->M * s->ldx * sizeof(float));
    for (size_t i = 0; i < (size_t)s->M * s->ldx; i++) x[i] = NAN;
    for (int i = 0; i < s->M; i++)
        for (int kk = 0; kk < s->K; kk++) x[(size_t)i * s->ldx + kk] = rnd();
    uint8_t *w = make_weights(t, s->N, s->K, s->ldw);
    float *wf = xmalloc((size_t)s->N * s->K * sizeof(float));
    for (int j = 0; j < s->N; j++) {
        jk_ref_weight_row(wf + (size_t)j * s->K, w, s->ldw, t, j, s->K);
        if (p != JK_PREC_HIGH)
            for (int kk = 0; kk < s->K; kk++) wf[(size_t)j * s->K + kk] = (float)bf16r(wf[(size_t)j * s->K + kk]);
    }
    float *bias = NULL;
    if (s->bias) {
        bias = xmalloc((size_t)s->N * sizeof(float));
        for (int j = 0; j < s->N; j++) bias[j] = rnd();
    }
    float *y0 = xmalloc(ny * sizeof(float));
    for (size_t i = 0; i < ny; i++) y0[i] = (i % s->ldy) < (size_t)s->N ? (s->epi == JK_EPI_ADD ? rnd() : NAN) : NAN;
    float *y = ca_alloc_guarded(ny), *ref = ca_alloc_guarded(ny), *y2 = ca_alloc_guarded(ny);
    const size_t wsz = k->gemm_ws(3, s->K) + 64;
    uint8_t *ws = xmalloc(wsz + 64);
    float *wsr = xmalloc((size_t)3 * (size_t)s->K * sizeof(float) + 64);

    struct jk_gemm_args a = {.y = ref, .ldy = s->ldy, .x = x, .ldx = s->ldx, .w = w, .ldw = s->ldw,
                             .bias = bias, .M = s->M, .N = s->N, .K = s->K, .epi = s->epi,
                             .nthreads = 1, .ws = wsr};
    memcpy(ref, y0, ny * sizeof(float));
    if (p == JK_PREC_HIGH) {
        struct jk_kernels ref_k;
        jk_init_ref(&ref_k);
        ref_k.gemm[t](&a);
    } else {
        jk_gemm_bf16x_ref(&a, t);
    }
    memcpy(y, y0, ny * sizeof(float));
    a.y = y, a.ws = ws + 3;   /* deliberately misaligned */
    k->gemm[t](&a);
    check_y(what, p, t, s, x, wf, bias, y0, y, ref);
    if (!ca_guard_ok(y, ny)) {
        check_failed++;
        printf("FAIL %s: wrote outside Y\n", what);
    }
    if (deep) {
        for (int nt = 2; nt <= 3; nt++) {
            memcpy(y2, y0, ny * sizeof(float));
            a.y = y2, a.nthreads = nt;
            k->gemm[t](&a);
            if (memcmp(y, y2, ny * sizeof(float))) {
                check_failed++;
                printf("FAIL %s: %d threads give other bits than 1\n", what, nt);
            }
        }
        a.nthreads = 1;
        if (k->gemm_prepack && k->gemm_prepack_floats) {
            float *pk = NULL;
            const size_t nf = k->gemm_prepack_floats(s->N, s->K);
            if (posix_memalign((void **)&pk, 64, nf * sizeof(float) + 64)) exit(1);
            k->gemm_prepack(t, pk, w, s->ldw, s->N, s->K);
            memcpy(y2, y0, ny * sizeof(float));
            a.y = y2, a.w_packed = pk;
            k->gemm[t](&a);
            if (memcmp(y, y2, ny * sizeof(float))) {
                check_failed++;
                printf("FAIL %s: prepacked W gives other bits\n", what);
            }
            a.w_packed = NULL;
            free(pk);
        }
    }
    free(x), free(w), free(wf), free(bias), free(y0), free(ws), free(wsr);
    ca_free_guarded(y), ca_free_guarded(ref), ca_free_guarded(y2);
}

/* x = 1 + 2^-9 and w = 1 (K = 2, the second pair member 0): the bf16 tier rounds x to 1,
 * the high tier keeps 1 + 2^-9 (hi 1, lo 2^-9). */
static void check_rounds(const struct jk_kernels *k, enum jk_precision p) {
    float x[2] = {1.0f + 0x1p-9f, 0.0f}, w[2] = {1.0f, 1.0f}, y = NAN;
    void *wsp = malloc(k->gemm_ws(1, 2) + 64);
    struct jk_gemm_args a = {.y = &y, .ldy = 1, .x = x, .ldx = 2, .w = w, .ldw = 8, .M = 1, .N = 1,
                             .K = 2, .epi = JK_EPI_STORE, .nthreads = 1, .ws = wsp};
    k->gemm[JK_F32](&a);
    free(wsp);
    const float want = p == JK_PREC_HIGH ? 1.0f + 0x1p-9f : 1.0f;
    CHECK(y == want, "%s: x = 1 + 2^-9 gives %.9g, not %.9g", k->gemm_isa, (double)y, (double)want);
    if (p != JK_PREC_HIGH) return;
    /* a finite x whose bf16 rounding overflows (3.4e38 > 3.3961e38): its hi is truncated,
     * not inf, so x . w stays finite and f32-grade as the exact tier's (no inf - inf) */
    float xb[2] = {3.4e38f, 0.0f}, wb[2] = {1e-3f, 1.0f};
    wsp = malloc(k->gemm_ws(1, 2) + 64);
    a.x = xb, a.w = wb, a.ws = wsp, y = NAN;
    k->gemm[JK_F32](&a);
    free(wsp);
    const double r = 3.4e38 * (double)1e-3f;
    CHECK(fabs((double)y - r) <= 1e-4 * r, "%s: x = 3.4e38 gives %.9g, not %.9g", k->gemm_isa, (double)y, r);
}

/* The rungs this executable tests (see the top), one per tier, and the CPU flags it is
 * tested at: the emulated and modelled builds claim their features whatever the CPU says. */
struct rung {
    enum jk_precision p;
    const char *isa;
};
#ifdef CHECKASM_GEMM_AMX
static const struct rung rungs[] = {{JK_PREC_BF16, "amx_bf16"}, {JK_PREC_HIGH, "amx_high"}};
#define TEST_NAME "checkasm_gemm_amx"
#elif defined(__aarch64__)
static const struct rung rungs[] = {{JK_PREC_BF16, "neon_bf16"}};
#define TEST_NAME "checkasm_gemm_tier"
#else
static const struct rung rungs[] = {{JK_PREC_BF16, "avx512_bf16"}};
#define TEST_NAME "checkasm_gemm_tier"
#endif
static unsigned test_flags(void) {
#ifdef CHECKASM_GEMM_AMX
    return ca_tier_flags(1);
#else
    return ca_tier_flags(0);
#endif
}

/* Every weight type over the ragged grid (see the top) on the kernels k of tier p. */
static int run_grid(const struct jk_kernels *k, enum jk_precision p) {
    static const int Ms[] = {1, 2, 5, 14, 15, 17, 29, 65, 200};
    static const int Ns[] = {1, 3, 17, 33, 65, 100};
    static const int Kf[] = {1, 7, 33, 100, 344, 768, 1030}, K32[] = {32, 64, 160, 768}, K256[] = {256, 512, 768};
    int cases = 0;
    for (int t = 0; t < JK_NDTYPES; t++) {
        const int blk = jk_dtype_block((enum jk_dtype)t);
        const int *Ks = blk == 1 ? Kf : blk == 32 ? K32 : K256;
        const int nk = blk == 1 ? 7 : blk == 32 ? 4 : 3;
        for (size_t mi = 0; mi < sizeof Ms / sizeof *Ms; mi++)
            for (size_t ni = 0; ni < sizeof Ns / sizeof *Ns; ni++)
                for (int ki = 0; ki < nk; ki++) {
                    const int M = Ms[mi], N = Ns[ni], K = Ks[ki];
                    if ((double)M * N * K > 4e6) continue;
                    struct shape s = {.M = M, .N = N, .K = K, .epi = (enum jk_epilogue)ca_int(0, 2),
                                      .bias = ca_int(0, 1)};
                    s.ldx = (size_t)K + (size_t)ca_int(0, 3);
                    s.ldy = (size_t)N + (size_t)ca_int(0, 3);
                    s.ldw = jk_row_bytes((enum jk_dtype)t, K) + (size_t)ca_int(0, 1) * 64;
                    run_case(k, p, (enum jk_dtype)t, &s, (mi + ni + (size_t)ki) % 4 == 0);
                    cases++;
                }
    }
    return cases;
}

int main(void) {
    ca_seed(TEST_NAME);
    const unsigned flags = test_flags();
    struct jk_kernels ke;
    jk_init(&ke, flags);
    for (size_t r = 0; r < sizeof rungs / sizeof *rungs; r++) {
        struct jk_kernels k;
        jk_init_precision(&k, flags, rungs[r].p);
        if (!k.gemm_isa || strcmp(k.gemm_isa, rungs[r].isa) != 0) {
            printf("%s: no %s kernels on this CPU (the %s tier runs '%s'): skipped\n", TEST_NAME, rungs[r].isa,
                   jk_precision_name(rungs[r].p), k.gemm_isa ? k.gemm_isa : "?");
            return 77;
        }
        add_error = strcmp(k.gemm_isa, "neon_bf16") ? 0x1p-24 : 0x1p-23;
        check_rounds(&k, rungs[r].p);
        const int cases = run_grid(&k, rungs[r].p);
        printf("%s: %d cases on %s\n", TEST_NAME, cases, k.gemm_isa);
    }
    /* without tiles, the high tier keeps the exact table */
    if (!(flags & JEPA_CPU_AMX_BF16)) {
        struct jk_kernels kh;
        jk_init_precision(&kh, flags, JK_PREC_HIGH);
        CHECK(kh.gemm[JK_F16] == ke.gemm[JK_F16] && !strcmp(kh.gemm_isa, ke.isa),
              "the high tier without matrix units is not the exact table");
    }
    return ca_finish(TEST_NAME);
}
