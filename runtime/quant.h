/*
 * quant.h — converting f32 weights to the stored weight types (f16, bf16, q8_0) and
 * back. Used by `jepa quantize`, `jepa synth` and the dtype parity tests.
 */
#ifndef JEPA_RUNTIME_QUANT_H
#define JEPA_RUNTIME_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/dtype.h"

/* q8_0, as ggml defines it: per block of 32, d = max|x| / 127, q = round(x / d). n % 32 == 0. */
void jr_quantize_row_q8_0(const float *x, struct block_q8_0 *y, int64_t n);
void jr_dequantize_row_q8_0(const struct block_q8_0 *x, float *y, int64_t n);

#endif
