/* quant.c — see quant.h. Checked by tests/models/test_dtypes.c (round trips through the
 * gemm reference) and by gguf-py reading files we write. */
#include "runtime/quant.h"

#include <math.h>

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
