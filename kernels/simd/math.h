/*
 * math.h — vector math written once over the vector layer (kernels/simd/vector.h) and
 * shared by every ISA: partial loads, exp2 in float (attention), the element-wise
 * activations of the tanh-GELU and SiLU slots evaluated in double, and the erf-GELU of
 * the matmul's fused epilogue (vf_gelu) in float. #included at the end of each vector layer
 * (kernels/x86/vec_avx2.h, vec_avx512.h, kernels/arm/vec_neon.h); all static inline, so
 * each ISA file gets its own copy under its own flags.
 * Tested through the slots by tests/checkasm/test_ops.c (against the reference kernels,
 * and the GELU against erfc in double over a dense sweep of every float range) and
 * tests/checkasm/test_gemm.c (the epilogue).
 *
 * Polynomial coefficients: Chebyshev interpolants computed with mpmath (40 digits,
 * mpmath.chebyfit) of the functions named beside them; the fit error is stated there.
 */
#ifndef JEPA_KERNELS_SIMD_MATH_H
#define JEPA_KERNELS_SIMD_MATH_H

/* ---- partial vectors (tails): n < VW valid lanes, the rest `fill` / not written ---- */
static OPS_ALWAYS vf vf_load_n(const float *p, int n, float fill) {
    float b[VW];
    for (int i = 0; i < VW; i++) b[i] = i < n ? p[i] : fill;
    return vf_load(b);
}
static OPS_ALWAYS void vf_store_n(float *p, vf v, int n) {
    float b[VW];
    vf_store(b, v);
    for (int i = 0; i < n; i++) p[i] = b[i];
}

/* ---- 2^x in float, for the attention (scores are kept in log2 units) ----
 * n = rint(x), f = x - n in [-1/2, 1/2] (exact), 2^f = 1 + f h(f) with h of degree 5
 * (fit of (2^f - 1)/f, relative error of 2^f 5.1e-9), times 2^n. The callers' x is never
 * above 0 (a score less the running maximum); the masked scores are -inf and must come
 * out exactly 0.
 * Where vf_ldexp takes any n (VF_LDEXP_ANY: AVX-512's vscalefps), x is clamped at -160
 * and 2^f 2^n is one scaling: 2^x below 2^-126 comes out subnormal, and 0 from
 * 2^-150 down (x = -160 gives f = 0, 1 * 2^-160 rounds to 0). 10 operations.
 * Elsewhere x is clamped to [-127, 127] and n = rint(x) by adding 1.5 * 2^23; 2^n is
 * built in the exponent (vf_pow2i), which makes 2^x = 0 below 2^-126.5 (n = -127).
 * 14 operations. The two agree bit for bit wherever 2^x >= 2^-126. A NaN x gives NaN on
 * every ISA (x is the clamps' second operand, the one x86's max / min return when either
 * is NaN), so a NaN score reaches the attention's sums instead of becoming 0 or 2^127. */
static OPS_ALWAYS vf vf_exp2_poly(vf f) {
    vf h = vf_fma(vf_set1(1.5453162945e-4f), f, vf_set1(1.3390863365e-3f));
    h = vf_fma(h, f, vf_set1(9.6180825573e-3f));
    h = vf_fma(h, f, vf_set1(5.5503571142e-2f));
    h = vf_fma(h, f, vf_set1(2.4022650761e-1f));
    h = vf_fma(h, f, vf_set1(6.9314718803e-1f));
    return vf_fma(f, h, vf_set1(1.0f));
}
#ifdef VF_LDEXP_ANY
static OPS_ALWAYS vf vf_exp2(vf x) {
    x = vf_max(vf_set1(-160.0f), x);   /* x second: a NaN x stays NaN on x86 too */
    const vf n = vf_rint(x);
    return vf_ldexp(vf_exp2_poly(vf_sub(x, n)), n);
}
#else
static OPS_ALWAYS vf vf_exp2(vf x) {
    const vf magic = vf_set1(0x1.8p23f);
    x = vf_max(vf_set1(-127.0f), vf_min(vf_set1(127.0f), x));   /* a NaN x stays NaN */
    vf t = vf_add(x, magic);
    return vf_mul(vf_exp2_poly(vf_sub(x, vf_sub(t, magic))), vf_pow2i(t));
}
#endif

/* ---- e^x in double, x in [-1000, 0] ----
 * Same scheme: n = rint(x log2 e), r = x - n ln2 (ln2_hi has 32 significant bits, so
 * n ln2_hi is exact), e^r = 1 + r + r^2 g(r), g of degree 6 (relative error 4.3e-12).
 * Callers keep x >= -708, where 2^n is a normal double. */
static OPS_ALWAYS vd vd_exp(vd x) {
    const vd magic = vd_set1(0x1.8p52);
    vd t = vd_fma(x, vd_set1(1.4426950408889634074), magic);
    vd n = vd_sub(t, magic);
    vd r = vd_fma(n, vd_set1(-6.93147180369123816490e-01), x);
    r = vd_fma(n, vd_set1(-1.90821492927058770002e-10), r);
    vd g = vd_fma(vd_set1(2.4859578222625294832e-5), r, vd_set1(1.9899273958649360158e-4));
    g = vd_fma(g, r, vd_set1(1.3888854049614818824e-3));
    g = vd_fma(g, r, vd_set1(8.3332984837548860262e-3));
    g = vd_fma(g, r, vd_set1(4.1666666718980846436e-2));
    g = vd_fma(g, r, vd_set1(1.6666666718997508523e-1));
    g = vd_fma(g, r, vd_set1(0.5));
    vd p = vd_add(vd_fma(vd_mul(r, r), g, r), vd_set1(1.0));
    return vd_mul(p, vd_pow2i(t));
}

/* ---- tanh-GELU: 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3) ----
 * = x sigma(2u) = x / (1 + e) for x >= 0, x e / (1 + e) for x < 0, e = e^(-2|u|):
 * never a cancellation, so the double result is good to ~1e-15 before the one
 * rounding to float. 2|u| is capped at 700 (e^-700 is already 0 for a float). */
static OPS_ALWAYS vd vd_gelu_tanh(vd x) {
    const vd one = vd_set1(1.0);
    vd u = vd_mul(vd_mul(x, vd_set1(0.79788456080286535588)),
                  vd_fma(vd_mul(x, x), vd_set1(0.044715), one));
    vd e = vd_exp(vd_mul(vd_set1(-1.0), vd_min(vd_abs(vd_add(u, u)), vd_set1(700.0))));
    return vd_div(vd_neg_sel(x, vd_mul(x, e), x), vd_add(one, e));
}

/* ---- SiLU: x sigma(x) = x / (1 + e) for x >= 0, x e / (1 + e) for x < 0, e = e^-|x| ---- */
static OPS_ALWAYS vd vd_silu(vd x) {
    const vd one = vd_set1(1.0);
    vd e = vd_exp(vd_mul(vd_set1(-1.0), vd_min(vd_abs(x), vd_set1(700.0))));
    return vd_div(vd_neg_sel(x, vd_mul(x, e), x), vd_add(one, e));
}

static OPS_ALWAYS vf vf_gelu_tanh(vf x) {
    return vd_join_ps(vd_gelu_tanh(vf_lo_pd(x)), vd_gelu_tanh(vf_hi_pd(x)));
}
static OPS_ALWAYS vf vf_silu(vf x) { return vd_join_ps(vd_silu(vf_lo_pd(x)), vd_silu(vf_hi_pd(x))); }

/* ---- erf-GELU, the matmul's JK_EPI_GELU epilogue: 0.5 x (1 + erf(x / sqrt 2)), float ----
 * One branch-free formula on |x| <= 13 (z = |x|/sqrt 2 <= 9.2):
 *   erfc(z) = t exp(-z^2 + g(t)),  t = 1 / (1 + z/2)
 *   h       = 0.5 x erfc(|z|)                          (|x| clamped to 13 inside erfc)
 *   gelu(x) = x < 0 ? h : x - h                         (no cancellation on either side:
 *                                                        x - h >= x/2 for x >= 0)
 * and h = 0 for |x| > 13, where |gelu(x) - max(x, 0)| < 1e-37 (the select that makes it 0
 * also drops whatever x times the clamped erfc gave there, inf x included, so x itself is
 * not clamped: over all 2^32 floats, AVX-512, the same bits as with x clamped to [-13, 13]
 * too, two operations fewer: 9.4-9.6 -> 9.2-9.3 ns per vector, 3 runs alternated).
 * g is a degree-10 polynomial in u = t - GT_ERFC_C, fitted here as a Chebyshev
 * interpolant (mpmath.chebyfit, 40 digits) of g(t) = log(erfc(z)/t) + z^2 on
 * t in [1/(1 + 13/sqrt 8), 1]; fit error 7.3e-9 in g (an absolute error in g is a
 * relative error of erfc). -z^2 is carried as two floats (ahi = |x| (-|x|/2) rounded and
 * its FMA residue, both exact parts of -x^2/2) so that exp() sees the argument without the
 * ~|z^2| u rounding a plain float would cost; exp(a) = 2^n p(r), n = rint(a / ln 2),
 * r = a - n ln2_hi - n ln2_lo (Cody-Waite: n ln2_hi is exact), p a degree-6 fit of
 * exp on |r| <= ln2/2 (fit error 2e-9).
 * The code computes t/2 (0.5 / (1 + |x| sqrt(1/8))) instead of t: h is then (x t/2) 2^n p,
 * with x t/2 off the dependency chain, and g runs on u/2 = t/2 - C/2 with the coefficients
 * times 2^i, which gives g's bits exactly (every scaling is a power of two). Those are 26
 * multiply / FMA operations per vector (the FMA pipes' work), against 29 for t itself,
 * x^2 then -x2/2, and 0.5 x erfc (docs/notes/kernel-tuning.md#gelu-erf).
 * Accuracy, over every 7th float bit pattern in [-13, 13] (normal results) against double
 * erf / erfc: max relative error 4.0e-7 on x < 0 (the erfc tail, down to 1e-37), 3.6e-7
 * on [0, 1], 1.0e-7 on x >= 1.
 * tests/checkasm/test_gemm.c checks every ISA at 8e-7 relative with K = 1 (an exact
 * pre-activation) and over every 127th float in [-16, 16].
 */
#define GT_GELU_XMAX 13.0f
#define GT_SQRT1_2 0.70710678118654752f
#define GT_SQRT1_8 0.35355339059327376f             /* sqrt(1/2) / 2 */
#define GT_LOG2E 1.4426950408889634f
#define GT_LN2_HI 0.693145751953125f           /* 16 significant bits: n * LN2_HI is exact */
#define GT_LN2_LO 1.428606820309417232e-06f
#define GT_ERFC_C 0.5893464088439941f          /* centre of t in [0.1787, 1] */
#define GT_ERFC_G10 (-1.598638453e-01f)         /* g(t) = sum G_i u^i, Horner from G10 */
#define GT_ERFC_G9 1.375556924e-01f
#define GT_ERFC_G8 1.566534812e-01f
#define GT_ERFC_G7 (-2.384719082e-01f)
#define GT_ERFC_G6 (-6.377130521e-02f)
#define GT_ERFC_G5 2.931794505e-01f
#define GT_ERFC_G4 (-2.579354712e-02f)
#define GT_ERFC_G3 (-4.081280506e-01f)
#define GT_ERFC_G2 8.333458619e-02f
#define GT_ERFC_G1 1.369783524e+00f
#define GT_ERFC_G0 (-5.503618407e-01f)
#define GT_EXP_P6 1.394111641e-03f               /* exp(r) = sum P_i r^i, |r| <= ln2/2 */
#define GT_EXP_P5 8.375132781e-03f
#define GT_EXP_P4 4.166635280e-02f
#define GT_EXP_P3 1.666641544e-01f
#define GT_EXP_P2 5.000000047e-01f
#define GT_EXP_P1 1.000000038e+00f
#define GT_EXP_P0 1.0f

/* vf_gelu on n vectors at once (n <= VF_GELU_MAX, a constant at every call): each step
 * is done for all n before the next, so the n dependency chains (~40 operations, a few
 * hundred cycles of latency each) are interleaved in the instruction stream instead of
 * waiting on the out-of-order window to find them; a tile's epilogue runs at the FMA
 * ports' rate rather than the chains' latency. Each lane's operations are the same as
 * vf_gelu's, so the bits are too. */
#define VF_GELU_MAX 4
static OPS_ALWAYS void vf_gelu_n(vf *x, const int n) {
    const vf xmax = vf_set1(GT_GELU_XMAX), zero = vf_zero();
    vf ax0[VF_GELU_MAX], xt[VF_GELU_MAX], th[VF_GELU_MAX], u[VF_GELU_MAX], g[VF_GELU_MAX];
    vf ahi[VF_GELU_MAX], alo[VF_GELU_MAX], n2[VF_GELU_MAX], r[VF_GELU_MAX], p[VF_GELU_MAX];
    for (int j = 0; j < n; j++) {
        ax0[j] = vf_abs(x[j]);
        const vf ax = vf_min(ax0[j], xmax);                  /* NaN -> 13 on x86, kept finite */
        th[j] = vf_div(vf_set1(0.5f), vf_fma(ax, vf_set1(GT_SQRT1_8), vf_set1(1.0f)));   /* t / 2 */
        xt[j] = vf_mul(x[j], th[j]);
        /* -x^2/2 = ahi + alo: hx = -x/2 exactly, ahi = x hx rounded, alo its FMA residue */
        const vf hx = vf_mul(ax, vf_set1(-0.5f));
        ahi[j] = vf_mul(ax, hx);
        alo[j] = vf_fma(ax, hx, vf_xor(ahi[j], vf_set1(-0.0f)));
    }
    for (int j = 0; j < n; j++) u[j] = vf_sub(th[j], vf_set1(GT_ERFC_C * 0.5f)), g[j] = vf_set1(GT_ERFC_G10 * 1024.0f);
#define VF_GELU_G(c, s) for (int j = 0; j < n; j++) g[j] = vf_fma(g[j], u[j], vf_set1((c) * (s)))
    VF_GELU_G(GT_ERFC_G9, 512.0f); VF_GELU_G(GT_ERFC_G8, 256.0f); VF_GELU_G(GT_ERFC_G7, 128.0f);
    VF_GELU_G(GT_ERFC_G6, 64.0f); VF_GELU_G(GT_ERFC_G5, 32.0f); VF_GELU_G(GT_ERFC_G4, 16.0f);
    VF_GELU_G(GT_ERFC_G3, 8.0f); VF_GELU_G(GT_ERFC_G2, 4.0f); VF_GELU_G(GT_ERFC_G1, 2.0f);
    VF_GELU_G(GT_ERFC_G0, 1.0f);
#undef VF_GELU_G
    for (int j = 0; j < n; j++) {
        alo[j] = vf_add(alo[j], g[j]);
        n2[j] = vf_rint(vf_mul(vf_add(ahi[j], alo[j]), vf_set1(GT_LOG2E)));
        r[j] = vf_fma(n2[j], vf_set1(-GT_LN2_HI), ahi[j]);
        r[j] = vf_fma(n2[j], vf_set1(-GT_LN2_LO), r[j]);
        r[j] = vf_add(r[j], alo[j]);
        p[j] = vf_set1(GT_EXP_P6);
    }
#define VF_GELU_P(c) for (int j = 0; j < n; j++) p[j] = vf_fma(p[j], r[j], vf_set1(c))
    VF_GELU_P(GT_EXP_P5); VF_GELU_P(GT_EXP_P4); VF_GELU_P(GT_EXP_P3); VF_GELU_P(GT_EXP_P2);
    VF_GELU_P(GT_EXP_P1); VF_GELU_P(GT_EXP_P0);
#undef VF_GELU_P
    for (int j = 0; j < n; j++) {
        const vf h = vf_lt_sel(xmax, ax0[j], zero, vf_mul(xt[j], vf_ldexp(p[j], n2[j]))); /* 0 past 13 */
        x[j] = vf_lt_sel(x[j], zero, h, vf_sub(x[j], h));
    }
}

static OPS_ALWAYS vf vf_gelu(vf x) {
    vf_gelu_n(&x, 1);
    return x;
}

#endif
