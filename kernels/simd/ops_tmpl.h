/*
 * ops_tmpl.h — the element-wise and row slots of struct jk_kernels (RoPE, LayerNorm,
 * tanh-GELU, SiLU, residual add / layer-scale, patchify), written once
 * over the vector layer (kernels/simd/vector.h) and #included by kernels/x86/ops_avx2.c,
 * kernels/x86/ops_avx512.c and kernels/arm/ops_neon.c after their layer header
 * (vec_<isa>.h) and a definition of JK_SFX(name) (jk_##name##_<isa>). Each defines the
 * slot functions jk_<op>_<isa> declared in kernels/x86/x86.h / kernels/arm/arm.h.
 *
 * Every output element is computed by one thread with a fixed order of operations, so
 * the bits do not depend on the thread count. Tails are handled with partial vectors
 * (vf_load_n / vf_store_n): nothing outside the rows is read or written.
 *
 * Tested against kernels/ref/ops_ref.c by tests/checkasm/test_ops.c (ragged sizes,
 * strides, in-place, adversarial rows, NaN guard bands, 1 vs 2 threads); timed by its
 * --bench mode.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/kernels.h"

#define OT_NT(n) ((n) > 0 ? (n) : 1)
/* element-wise slots: threads over fixed chunks of the array (bits independent of the
 * thread count), and one thread below 2 chunks */
#define OT_CHUNK 8192

/* ---- RoPE: x = x cos + rot90(x) sin, rot90(x)[2p] = -x[2p+1], rot90(x)[2p+1] = x[2p] ---- */
static OPS_ALWAYS void rope_head(float *v, const float *c, const float *s, int hd, vf sgn) {
    int p = 0;
    for (; p + VW <= hd; p += VW) {
        vf x = vf_load(v + p);
        vf r = vf_xor(vf_swap_pairs(x), sgn);                       /* rot90(x) */
        vf_store(v + p, vf_fma(r, vf_load(s + p), vf_mul(x, vf_load(c + p))));
    }
    if (p < hd) {   /* an odd last dim meets a zero partner: x * cos */
        int n = hd - p;
        vf x = vf_load_n(v + p, n, 0.0f);
        vf r = vf_xor(vf_swap_pairs(x), sgn);
        vf y = vf_fma(r, vf_load_n(s + p, n, 0.0f), vf_mul(x, vf_load_n(c + p, n, 0.0f)));
        vf_store_n(v + p, y, n);
    }
}

void JK_SFX(rope)(float *x, size_t ldx, int n, int n_head, int head_dim, const float *cos,
                  const float *sin, int nthreads) {
    float sg[VW];
    for (int i = 0; i < VW; i++) sg[i] = (i & 1) ? 0.0f : -0.0f;     /* negate the even lanes */
    const vf sgn = vf_load(sg);
    int nt = OT_NT(nthreads);
    (void)nt;
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int i = 0; i < n; i++) {
        const float *c = cos + (size_t)i * head_dim, *s = sin + (size_t)i * head_dim;
        for (int h = 0; h < n_head; h++)
            rope_head(x + (size_t)i * ldx + (size_t)h * head_dim, c, s, head_dim, sgn);
    }
}

/* ---- LayerNorm over rows of d ----
 *   mean0 = sum(x) / d                                    (pass 1, f32, 4 partial sums)
 *   c = sum(x - mean0), q = sum((x - mean0)^2)            (pass 2, centred)
 *   mean = mean0 + c / d,  var = (q - c^2 / d) / d        (the corrected two-pass form:
 *                                                          c removes the rounding of mean0)
 *   y = (x - mean) / sqrt(var + eps) * w + b              (pass 3)
 * A constant row gives c = d (x - mean0) exactly, mean = x, var = 0 and y = b exactly. */
static OPS_ALWAYS void ln_row(float *y, const float *x, const float *w, const float *b, int d,
                              float eps) {
    vf a0 = vf_zero(), a1 = vf_zero(), a2 = vf_zero(), a3 = vf_zero();
    int j = 0;
    for (; j + 4 * VW <= d; j += 4 * VW) {
        a0 = vf_add(a0, vf_load(x + j));
        a1 = vf_add(a1, vf_load(x + j + VW));
        a2 = vf_add(a2, vf_load(x + j + 2 * VW));
        a3 = vf_add(a3, vf_load(x + j + 3 * VW));
    }
    for (; j + VW <= d; j += VW) a0 = vf_add(a0, vf_load(x + j));
    if (j < d) a1 = vf_add(a1, vf_load_n(x + j, d - j, 0.0f));
    const float mean0 = vf_hsum(vf_add(vf_add(a0, a1), vf_add(a2, a3))) / (float)d;

    const vf m0 = vf_set1(mean0);
    vf c0 = vf_zero(), c1 = vf_zero(), q0 = vf_zero(), q1 = vf_zero();
    for (j = 0; j + 2 * VW <= d; j += 2 * VW) {
        vf u = vf_sub(vf_load(x + j), m0), v = vf_sub(vf_load(x + j + VW), m0);
        c0 = vf_add(c0, u), q0 = vf_fma(u, u, q0);
        c1 = vf_add(c1, v), q1 = vf_fma(v, v, q1);
    }
    for (; j < d; j += VW) {   /* padded lanes hold mean0: they add 0 */
        vf u = vf_sub(vf_load_n(x + j, d - j, mean0), m0);
        c0 = vf_add(c0, u), q0 = vf_fma(u, u, q0);
    }
    const float c = vf_hsum(vf_add(c0, c1)), q = vf_hsum(vf_add(q0, q1));
    const float mean = mean0 + c / (float)d;
    float var = (q - c * (c / (float)d)) / (float)d;
    if (!(var > 0.0f)) var = 0.0f;
    const float rstd = 1.0f / sqrtf(var + eps);

    const vf mv = vf_set1(mean), rv = vf_set1(rstd);
    for (j = 0; j < d; j += VW) {
        const int n = d - j < VW ? d - j : VW;
        vf v = vf_mul(vf_sub(n == VW ? vf_load(x + j) : vf_load_n(x + j, n, 0.0f), mv), rv);
        if (w && b) v = vf_fma(v, n == VW ? vf_load(w + j) : vf_load_n(w + j, n, 0.0f),
                               n == VW ? vf_load(b + j) : vf_load_n(b + j, n, 0.0f));
        else if (w) v = vf_mul(v, n == VW ? vf_load(w + j) : vf_load_n(w + j, n, 0.0f));
        else if (b) v = vf_add(v, n == VW ? vf_load(b + j) : vf_load_n(b + j, n, 0.0f));
        if (n == VW) vf_store(y + j, v);
        else vf_store_n(y + j, v, n);
    }
}

void JK_SFX(layernorm)(float *y, size_t ldy, const float *x, size_t ldx, const float *w,
                       const float *b, int n, int d, float eps, int nthreads) {
    int nt = OT_NT(nthreads);
    (void)nt;
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int i = 0; i < n; i++) ln_row(y + (size_t)i * ldy, x + (size_t)i * ldx, w, b, d, eps);
}

/* ---- element-wise activations (formulas and accuracy: kernels/simd/math.h) ---- */
#define OT_UNARY(name, vfn)                                                             \
    void JK_SFX(name)(float *x, size_t n, int nthreads) {                               \
        const size_t nchunk = (n + OT_CHUNK - 1) / OT_CHUNK;                            \
        int nt = OT_NT(nthreads);                                                       \
        (void)nt;                                                                       \
        _Pragma("omp parallel for num_threads(nt) schedule(static) if (nchunk > 1)")    \
        for (size_t ch = 0; ch < nchunk; ch++) {                                        \
            float *p = x + ch * OT_CHUNK;                                               \
            const size_t m = n - ch * OT_CHUNK < OT_CHUNK ? n - ch * OT_CHUNK : OT_CHUNK; \
            size_t j = 0;                                                               \
            for (; j + VW <= m; j += VW) vf_store(p + j, vfn(vf_load(p + j)));          \
            if (j < m) vf_store_n(p + j, vfn(vf_load_n(p + j, (int)(m - j), 0.0f)), (int)(m - j)); \
        }                                                                               \
    }
OT_UNARY(gelu_tanh, vf_gelu_tanh)
OT_UNARY(silu, vf_silu)

/* ---- y += s * x (layer-scale) or y += x (residual) ----
 * A product and a sum, each rounded (no FMA), as the reference computes it. */
void JK_SFX(add)(float *y, size_t ldy, const float *x, size_t ldx, const float *s, int n, int d,
                 int nthreads) {
    int nt = OT_NT(nthreads);
    (void)nt;
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int i = 0; i < n; i++) {
        float *yi = y + (size_t)i * ldy;
        const float *xi = x + (size_t)i * ldx;
        int j = 0;
        if (s) {
            for (; j + VW <= d; j += VW)
                vf_store(yi + j, vf_add(vf_load(yi + j), vf_mul(vf_load(s + j), vf_load(xi + j))));
            if (j < d)
                vf_store_n(yi + j, vf_add(vf_load_n(yi + j, d - j, 0.0f),
                                          vf_mul(vf_load_n(s + j, d - j, 0.0f), vf_load_n(xi + j, d - j, 0.0f))),
                           d - j);
        } else {
            for (; j + VW <= d; j += VW) vf_store(yi + j, vf_add(vf_load(yi + j), vf_load(xi + j)));
            if (j < d)
                vf_store_n(yi + j, vf_add(vf_load_n(yi + j, d - j, 0.0f), vf_load_n(xi + j, d - j, 0.0f)),
                           d - j);
        }
    }
}

/* ---- patchify: the im2col of the Conv3d patch embedding (stride = kernel) ----
 * out[t*gh*gw + h*gw + w, ((c*tubelet + dt)*p + dy)*p + dx] = in[c, t*tubelet+dt, h*p+dy, w*p+dx]
 * One token per iteration: C * tubelet * p copies of p contiguous floats. */
void JK_SFX(patchify)(float *out, const float *in, int C, int T, int H, int W, int tubelet, int p,
                      int nthreads) {
    const int gt = T / tubelet, gh = H / p, gw = W / p;
    const size_t F = (size_t)C * tubelet * p * p;
    int nt = OT_NT(nthreads);
    (void)nt;
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int tok = 0; tok < gt * gh * gw; tok++) {
        const int t = tok / (gh * gw), h = (tok / gw) % gh, w = tok % gw;
        float *o = out + (size_t)tok * F;
        for (int c = 0; c < C; c++)
            for (int dt = 0; dt < tubelet; dt++)
                for (int dy = 0; dy < p; dy++, o += p) {
                    const float *src = in + (((size_t)c * T + (size_t)(t * tubelet + dt)) * H +
                                             (size_t)(h * p + dy)) * W + (size_t)w * p;
                    int dx = 0;
                    for (; dx + VW <= p; dx += VW) vf_store(o + dx, vf_load(src + dx));
                    if (dx < p) vf_store_n(o + dx, vf_load_n(src + dx, p - dx, 0.0f), p - dx);
                }
    }
}
