/*
 * dequant_ref.c — the weight decoding of every matmul weight type, the definition the
 * SIMD kernels and the CUDA upload are tested against.
 *
 * The block formats are ggml's (their byte layouts are in runtime/dtype.h, their meaning
 * in docs/quantization.md). Values are what gguf-py's gguf.quants.dequantize gives, bit
 * for bit (tests/models/test_quant.c checks that on random and adversarial blocks):
 *
 *   q8_0  d q                       q4_0  d (q - 8)        q5_0  d (q - 16)
 *   q4_1  d q + m                   q5_1  d q + m
 *   q4_K  (d sc_s) q - (dmin m_s)   q5_K  the same, 5-bit q      (s: the 32-weight sub-block)
 *   q6_K  (d sc_s) (q - 32)                                      (s: the 16-weight sub-block)
 *
 * with d, dmin, m f16 and each product and sum rounded to f32. Every product here is
 * exact in f32 (an f16 scale has 11 significant bits, a sub-block scale at most 7, a
 * code at most 6: 24 bits at most), so only the final add or subtract rounds, and a
 * fused multiply-add gives the same bits: the SIMD decoders may use either.
 */
#include <string.h>

#include "kernels/ref/ref.h"
#include "runtime/dtype.h"

static inline float h16(const uint8_t *p) { return f16_to_f32((uint16_t)(p[0] | p[1] << 8)); }

/* x * y + z and x * y - z, as gguf-py writes them (the products are exact, above) */
static inline float mul_add(float x, float y, float z) { return x * y + z; }
static inline float mul_sub(float x, float y, float z) { return x * y - z; }

/* Weight j (0 .. 31) of a 32-weight block. */
static float block32(enum jk_dtype t, const uint8_t *b, int j) {
    const int lo = j < 16, i = j % 16;
    switch (t) {
    case JK_Q8_0: return h16(b) * (float)(int8_t)b[2 + j];
    case JK_Q4_0: {
        const int q = lo ? b[2 + i] & 15 : b[2 + i] >> 4;
        return h16(b) * (float)(q - 8);
    }
    case JK_Q4_1: {
        const int q = lo ? b[4 + i] & 15 : b[4 + i] >> 4;
        return mul_add(h16(b), (float)q, h16(b + 2));
    }
    case JK_Q5_0: {
        const uint32_t qh = (uint32_t)b[2] | (uint32_t)b[3] << 8 | (uint32_t)b[4] << 16 | (uint32_t)b[5] << 24;
        const int q = (lo ? b[6 + i] & 15 : b[6 + i] >> 4) | (int)((qh >> j) & 1) << 4;
        return h16(b) * (float)(q - 16);
    }
    case JK_Q5_1: {
        const uint32_t qh = (uint32_t)b[4] | (uint32_t)b[5] << 8 | (uint32_t)b[6] << 16 | (uint32_t)b[7] << 24;
        const int q = (lo ? b[8 + i] & 15 : b[8 + i] >> 4) | (int)((qh >> j) & 1) << 4;
        return mul_add(h16(b), (float)q, h16(b + 2));
    }
    default: return 0.0f;
    }
}

/* Weights j0 .. j0 + n of a 256-weight super-block into dst. */
static void block256(enum jk_dtype t, const uint8_t *b, int j0, int n, float *dst) {
    if (t == JK_Q6_K) {
        const uint8_t *ql = b, *qh = b + 128;
        const int8_t *sc = (const int8_t *)(const void *)(b + 192);
        const float d = h16(b + 208);
        for (int e = j0; e < j0 + n; e++) {
            /* half h of 128; in it, group g of 32 takes the low (g < 2) or high nibble of
             * ql[64 h + 32 (g & 1) + l] and bits 2g, 2g + 1 of qh[32 h + l] */
            const int h = e / 128, g = (e % 128) / 32, l = e % 32;
            const int lq = ql[64 * h + 32 * (g & 1) + l], nib = g < 2 ? lq & 15 : lq >> 4;
            const int q = (nib | ((qh[32 * h + l] >> (2 * g)) & 3) << 4) - 32;
            const float ds = d * (float)sc[e / 16];
            *dst++ = ds * (float)q;
        }
        return;
    }
    /* q4_K / q5_K: sub-block s of 32 is the low (s even) or high nibble of qs[32 (s / 2) + l] */
    const float d = h16(b), dmin = h16(b + 2);
    const uint8_t *scales = b + 4, *qh = t == JK_Q5_K ? b + 16 : NULL, *qs = b + (t == JK_Q5_K ? 48 : 16);
    for (int e = j0; e < j0 + n;) {
        const int s = e / 32;
        int sc, mn;
        jr_scale_min_k4(scales, s, &sc, &mn);
        const float d1 = d * (float)sc, m1 = dmin * (float)mn;
        for (; e < j0 + n && e / 32 == s; e++) {
            const int l = e % 32, byte = qs[32 * (s / 2) + l];
            int q = s % 2 ? byte >> 4 : byte & 15;
            if (qh) q |= ((qh[l] >> s) & 1) << 4;
            *dst++ = mul_sub(d1, (float)q, m1);
        }
    }
}

void jk_dequant_ref(enum jk_dtype t, const uint8_t *row, int k0, int n, float *dst) {
    switch (t) {
    case JK_F32: memcpy(dst, row + 4 * (size_t)k0, sizeof(float) * (size_t)n); return;
    case JK_F16:
        for (int k = 0; k < n; k++) dst[k] = h16(row + 2 * (size_t)(k0 + k));
        return;
    case JK_BF16:
        for (int k = 0; k < n; k++) dst[k] = bf16_to_f32((uint16_t)(row[2 * (size_t)(k0 + k)] | row[2 * (size_t)(k0 + k) + 1] << 8));
        return;
    default: break;
    }
    const int qk = jk_dtype_block(t);
    const size_t bb = jr_block_bytes((int)t);
    for (int k = k0; k < k0 + n;) {
        const uint8_t *b = row + (size_t)(k / qk) * bb;
        const int j = k % qk, m = qk - j < k0 + n - k ? qk - j : k0 + n - k;   /* weights from this block */
        if (qk == QK_K) {
            block256(t, b, j, m, dst);
        } else {
            for (int i = 0; i < m; i++) dst[i] = block32(t, b, j + i);
        }
        dst += m, k += m;
    }
}
