/* quant.c — see quant.h. Checked by tests/models/test_dtypes.c (round trips through the
 * gemm reference), tests/models/test_quant.c (blocks bit for bit against gguf-py) and by
 * gguf-py reading files we write. Built with -ffp-contract=off (meson.build): each
 * product and sum is rounded on its own, as numpy rounds them. */
#include "runtime/quant.h"

#include <math.h>
#include <string.h>

void jr_quantize_row_q8_0(const float *x, struct block_q8_0 *y, int64_t n) {
    for (int64_t b = 0; b < n / QK8_0; b++) {
        const float *xb = x + b * QK8_0;
        float amax = 0.0f;
        for (int j = 0; j < QK8_0; j++) amax = fmaxf(amax, fabsf(xb[j]));
        const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = f32_to_f16(d);
        for (int j = 0; j < QK8_0; j++) y[b].qs[j] = (int8_t)roundf(xb[j] * id);
    }
}

void jr_dequantize_row_q8_0(const struct block_q8_0 *x, float *y, int64_t n) {
    for (int64_t b = 0; b < n / QK8_0; b++) {
        const float d = f16_to_f32(x[b].d);
        for (int j = 0; j < QK8_0; j++) y[b * QK8_0 + j] = d * (float)x[b].qs[j];
    }
}

static void put16(uint8_t *p, float f) {
    const uint16_t h = f32_to_f16(f);
    p[0] = (uint8_t)h, p[1] = (uint8_t)(h >> 8);
}

static float h16_at(const uint8_t *p) { return f16_to_f32((uint16_t)(p[0] | p[1] << 8)); }

/* trunc(v) clipped to [0, top], v >= 0 up to rounding (numpy: trunc, astype(uint8), clip) */
static int code(float v, int top) {
    const float t = truncf(v);
    const int q = t < 0.0f ? 0 : t > (float)top ? top : (int)t;
    return q;
}

/* One block of 32 of q4_0 / q4_1 / q5_0 / q5_1 into b. */
static void quantize_block32(int t, const float *x, uint8_t *b) {
    const int bits5 = t == JK_Q5_0 || t == JK_Q5_1, affine = t == JK_Q4_1 || t == JK_Q5_1;
    const int top = bits5 ? 31 : 15;
    int q[32];
    if (affine) {
        float mx = x[0], mn = x[0];
        for (int j = 1; j < 32; j++) mx = x[j] > mx ? x[j] : mx, mn = x[j] < mn ? x[j] : mn;
        const float d = (mx - mn) / (float)top, id = d != 0.0f ? 1.0f / d : 0.0f;
        for (int j = 0; j < 32; j++) {
            const float s = (x[j] - mn) * id;
            q[j] = code(s + 0.5f, top);
        }
        put16(b, d);
        put16(b + 2, mn);
    } else {
        float m = x[0];
        for (int j = 1; j < 32; j++) m = fabsf(x[j]) > fabsf(m) ? x[j] : m;
        const float d = m / (bits5 ? -16.0f : -8.0f), id = d != 0.0f ? 1.0f / d : 0.0f;
        const float off = bits5 ? 16.5f : 8.5f;
        for (int j = 0; j < 32; j++) {
            const float s = x[j] * id;
            q[j] = code(s + off, top);
        }
        put16(b, d);
    }
    uint8_t *qs = b + (affine ? 4 : 2) + (bits5 ? 4 : 0);
    for (int j = 0; j < 16; j++) qs[j] = (uint8_t)((q[j] & 15) | (q[j + 16] & 15) << 4);
    if (bits5) {
        uint32_t qh = 0;
        for (int j = 0; j < 32; j++) qh |= (uint32_t)(q[j] >> 4) << j;
        uint8_t *h = b + (affine ? 4 : 2);
        for (int i = 0; i < 4; i++) h[i] = (uint8_t)(qh >> (8 * i));
    }
}

/* ---- the K-quants: ggml's reference quantizers (quantize_row_q{4,5,6}_K_ref), which
 * are what ggml's quantizer (and so jepa.cpp's) uses when it has no importance matrix.
 * Every float operation below is the reference's, in its order, each rounded to f32
 * (this file is built with -ffp-contract=off); tests/gen/kquant_ref.py implements the
 * same steps in numpy float32 scalars and test_quant.c compares the bytes. ---- */

/* Round to nearest, ties to even, the way ggml's nearest_int does it: add 1.5 * 2^23 and
 * read the low mantissa bits (exact for |v| < 2^22; for other inputs some integer in
 * [-2^22, 2^22), which the callers clamp: never undefined). */
static int nearest(float v) {
    const float s = v + 12582912.0f;
    uint32_t u;
    memcpy(&u, &s, 4);
    return (int)(u & 0x7fffffu) - 0x400000;
}

/* Codes L[i] in [0, top] and a scale for x[i] ~ scale L[i] - offset over n weights with
 * error weights w (ggml's make_qkx2_quants, squared error): the codes of the plain
 * min-max fit, then nstep + 1 trial inverse scales (top + rmin + rdelta s) / (max - min),
 * each followed by the weighted least-squares scale and offset of its codes, keeping the
 * trial of least weighted squared error. The offset is never negative (min <= 0).
 * Returns the scale; *offset = -min. */
static float fit_affine(int n, int top, const float *x, const float *w, uint8_t *L, float *offset,
                        float rmin, float rdelta, int nstep) {
    float mn = x[0], mx = x[0], sum_w = w[0], sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < mn) mn = x[i];
        if (x[i] > mx) mx = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (mn > 0.0f) mn = 0.0f;
    if (mx == mn) {
        memset(L, 0, (size_t)n);
        *offset = -mn;
        return 0.0f;
    }
    float iscale = (float)top / (mx - mn), scale = 1.0f / iscale, best = 0.0f;
    for (int i = 0; i < n; i++) {
        const int l = nearest(iscale * (x[i] - mn));
        L[i] = (uint8_t)(l < 0 ? 0 : l > top ? top : l);
        const float diff = scale * (float)L[i] + mn - x[i];
        best += w[i] * (diff * diff);
    }
    uint8_t trial[32];
    for (int s = 0; s <= nstep; s++) {
        iscale = (rmin + rdelta * (float)s + (float)top) / (mx - mn);
        float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
        for (int i = 0; i < n; i++) {
            int l = nearest(iscale * (x[i] - mn));
            l = l < 0 ? 0 : l > top ? top : l;
            trial[i] = (uint8_t)l;
            const float wl = w[i] * (float)l;
            sum_l += wl;
            sum_l2 += wl * (float)l;
            sum_xl += wl * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (!(D > 0.0f)) continue;
        float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
        float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
        if (this_min > 0.0f) {
            this_min = 0.0f;
            this_scale = sum_xl / sum_l2;
        }
        float err = 0.0f;
        for (int i = 0; i < n; i++) {
            const float diff = this_scale * (float)trial[i] + this_min - x[i];
            err += w[i] * (diff * diff);
        }
        if (err < best) {
            memcpy(L, trial, (size_t)n);
            best = err;
            scale = this_scale;
            mn = this_min;
        }
    }
    *offset = -mn;
    return scale;
}

/* Codes L[i] = l + nmax, l in [-nmax, nmax), and a scale for x[i] ~ scale l over n weights
 * (ggml's make_qx_quants with error weights x^2): the scale that maps the weight of
 * largest magnitude to -nmax, then 18 trial scales around it, keeping the codes that
 * maximise (sum w x l)^2 / sum w l^2; the scale is that least-squares fit's. */
static float fit_symmetric(int n, int nmax, const float *x, uint8_t *L) {
    float mx = 0.0f, amax = 0.0f;
    for (int i = 0; i < n; i++) {
        const float ax = fabsf(x[i]);
        if (ax > amax) amax = ax, mx = x[i];
    }
    if (amax < 1e-15f) {   /* ggml's GROUP_MAX_EPS: an all-zero group */
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float iscale = (float)-nmax / mx, sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; i++) {
        int l = nearest(iscale * x[i]);
        l = l < -nmax ? -nmax : l > nmax - 1 ? nmax - 1 : l;
        L[i] = (uint8_t)(l + nmax);
        const float w = x[i] * x[i];
        sumlx += w * x[i] * (float)l;
        suml2 += w * (float)l * (float)l;
    }
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f, best = scale * sumlx;
    for (int s = -9; s <= 9; s++) {
        if (s == 0) continue;
        iscale = -((float)nmax + 0.1f * (float)s) / mx;
        sumlx = suml2 = 0.0f;
        for (int i = 0; i < n; i++) {
            int l = nearest(iscale * x[i]);
            l = l < -nmax ? -nmax : l > nmax - 1 ? nmax - 1 : l;
            const float w = x[i] * x[i];
            sumlx += w * x[i] * (float)l;
            suml2 += w * (float)l * (float)l;
        }
        if (suml2 > 0.0f && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; i++) {
                const int l = nearest(iscale * x[i]);
                L[i] = (uint8_t)(nmax + (l < -nmax ? -nmax : l > nmax - 1 ? nmax - 1 : l));
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/* One q4_K (bits5 = 0) or q5_K (bits5 = 1) super-block of 256 weights into b. */
static void quantize_block_q45k(int bits5, const float *x, uint8_t *b) {
    const int top = bits5 ? 31 : 15;
    uint8_t L[QK_K];
    float scales[8], mins[8], w[32], max_scale = 0.0f, max_min = 0.0f;
    for (int j = 0; j < 8; j++) {
        const float *xs = x + 32 * j;
        float sum_x2 = 0.0f;
        for (int l = 0; l < 32; l++) sum_x2 += xs[l] * xs[l];
        const float av_x = sqrtf(sum_x2 / 32.0f);
        for (int l = 0; l < 32; l++) w[l] = av_x + fabsf(xs[l]);
        scales[j] = bits5 ? fit_affine(32, top, xs, w, L + 32 * j, &mins[j], -0.5f, 0.1f, 15)
                          : fit_affine(32, top, xs, w, L + 32 * j, &mins[j], -1.0f, 0.1f, 20);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    /* the 8 scales and mins as 6-bit multiples of d = max_scale / 63, dmin = max_min / 63
     * (layout: runtime/dtype.h, jr_scale_min_k4) */
    uint8_t *sc = b + 4;
    const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
    const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
    for (int j = 0; j < 8; j++) {
        uint8_t ls = (uint8_t)nearest(inv_scale * scales[j]), lm = (uint8_t)nearest(inv_min * mins[j]);
        ls = ls < 63 ? ls : 63;
        lm = lm < 63 ? lm : 63;
        if (j < 4) {
            sc[j] = ls;
            sc[j + 4] = lm;
        } else {
            sc[j + 4] = (uint8_t)((ls & 15) | (lm & 15) << 4);
            sc[j - 4] |= (uint8_t)((ls >> 4) << 6);
            sc[j] |= (uint8_t)((lm >> 4) << 6);
        }
    }
    put16(b, max_scale / 63.0f);
    put16(b + 2, max_min / 63.0f);
    /* the codes again against the stored (rounded) scales; a sub-block whose scale stored
     * as 0 keeps the fit's codes, as in ggml */
    const float d = h16_at(b), dmin = h16_at(b + 2);
    for (int j = 0; j < 8; j++) {
        int s6, m6;
        jr_scale_min_k4(sc, j, &s6, &m6);
        const float ds = d * (float)s6;
        if (ds == 0.0f) continue;
        const float dm = dmin * (float)m6;
        for (int i = 0; i < 32; i++) {
            const int l = nearest((x[32 * j + i] + dm) / ds);
            L[32 * j + i] = (uint8_t)(l < 0 ? 0 : l > top ? top : l);
        }
    }
    /* sub-blocks 2p and 2p + 1 share 32 bytes: low and high nibbles; q5_K's fifth bits go
     * to bit s of qh[l] for weight l of sub-block s */
    uint8_t *qh = bits5 ? b + 16 : NULL, *qs = b + (bits5 ? 48 : 16);
    if (qh) memset(qh, 0, 32);
    for (int p = 0; p < 4; p++)
        for (int l = 0; l < 32; l++) {
            const int lo = L[64 * p + l], hi = L[64 * p + 32 + l];
            qs[32 * p + l] = (uint8_t)((lo & 15) | (hi & 15) << 4);
            if (qh) qh[l] |= (uint8_t)((lo >> 4) << (2 * p) | (hi >> 4) << (2 * p + 1));
        }
}

/* One q6_K super-block of 256 weights into b: 16 sub-blocks of 16, int8 scales of d. */
static void quantize_block_q6k(const float *x, uint8_t *b) {
    uint8_t L[QK_K];
    float scales[16], max_scale = 0.0f, max_abs = 0.0f;
    for (int s = 0; s < 16; s++) {
        scales[s] = fit_symmetric(16, 32, x + 16 * s, L + 16 * s);
        if (fabsf(scales[s]) > max_abs) max_abs = fabsf(scales[s]), max_scale = scales[s];
    }
    memset(b, 0, Q6_K_BYTES);
    if (max_abs < 1e-15f) return;   /* all zero: d = 0 and every code 0 */
    int8_t *sc = (int8_t *)(void *)(b + 192);
    const float iscale = -128.0f / max_scale;
    put16(b + 208, 1.0f / iscale);
    for (int s = 0; s < 16; s++) {
        const int v = nearest(iscale * scales[s]);
        sc[s] = (int8_t)(v < 127 ? v : 127);
    }
    const float d = h16_at(b + 208);
    for (int s = 0; s < 16; s++) {
        const float ds = d * (float)sc[s];
        if (ds == 0.0f) continue;
        for (int i = 0; i < 16; i++) {
            int l = nearest(x[16 * s + i] / ds);
            l = l < -32 ? -32 : l > 31 ? 31 : l;
            L[16 * s + i] = (uint8_t)(l + 32);
        }
    }
    /* weight e = 128 h + 32 g + l: low nibble in ql[64 h + 32 (g & 1) + l] (g < 2) or its
     * high nibble (g >= 2), the two high bits at bits 2g, 2g + 1 of qh[32 h + l] */
    uint8_t *ql = b, *qh = b + 128;
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 32; l++) {
            const uint8_t *q = L + 128 * h + l;
            ql[64 * h + l] = (uint8_t)((q[0] & 15) | (q[64] & 15) << 4);
            ql[64 * h + 32 + l] = (uint8_t)((q[32] & 15) | (q[96] & 15) << 4);
            qh[32 * h + l] = (uint8_t)(q[0] >> 4 | (q[32] >> 4) << 2 | (q[64] >> 4) << 4 | (q[96] >> 4) << 6);
        }
}

int jr_quantize_row(int t, const float *x, void *y, int64_t n) {
    const size_t bb = jr_block_bytes(t);
    uint8_t *out = (uint8_t *)y;
    switch (t) {
    case JK_Q8_0:
        jr_quantize_row_q8_0(x, y, n);
        return 0;
    case JK_Q4_0: case JK_Q4_1: case JK_Q5_0: case JK_Q5_1:
        for (int64_t b = 0; b < n / 32; b++) quantize_block32(t, x + 32 * b, out + (size_t)b * bb);
        return 0;
    case JK_Q4_K: case JK_Q5_K:
        for (int64_t b = 0; b < n / QK_K; b++)
            quantize_block_q45k(t == JK_Q5_K, x + QK_K * b, out + (size_t)b * bb);
        return 0;
    case JK_Q6_K:
        for (int64_t b = 0; b < n / QK_K; b++) quantize_block_q6k(x + QK_K * b, out + (size_t)b * bb);
        return 0;
    default:
        return -1;
    }
}
