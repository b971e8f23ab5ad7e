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

/* trunc(v) clipped to [0, top], v >= 0 up to rounding (numpy: trunc, astype(uint8), clip) */
static int code(float v, int top) {
    const float t = truncf(v);
    const int q = t < 0.0f ? 0 : t > (float)top ? top : (int)t;
    return q;
}

/* One block of 32 of q4_0 / q4_1 / q5_0 / q5_1 into b. */
static void quantize_block32(int t, const float *x, uint8_t *b) {
    const int bits5 = t == 6 || t == 7, affine = t == 5 || t == 7, top = bits5 ? 31 : 15;
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

int jr_quantize_row(int t, const float *x, void *y, int64_t n) {
    if (t == 3) {
        jr_quantize_row_q8_0(x, y, n);
        return 0;
    }
    if (t < 4 || t > 7) return -1;
    const size_t bb = jr_block_bytes(t);
    for (int64_t b = 0; b < n / 32; b++) quantize_block32(t, x + 32 * b, (uint8_t *)y + (size_t)b * bb);
    return 0;
}
