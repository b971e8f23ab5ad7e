/*
 * quant.h — converting f32 weights to the stored weight types (f16, bf16 and ggml's
 * block formats). Used by `jepa quantize`, `jepa synth` and the dtype parity tests; the
 * decoding side is kernels/ref/dequant_ref.c.
 */
#ifndef JEPA_RUNTIME_QUANT_H
#define JEPA_RUNTIME_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/dtype.h"

/* q8_0, as ggml defines it: per block of 32, d = max|x| / 127, q = round(x / d). n % 32 == 0. */
void jr_quantize_row_q8_0(const float *x, struct block_q8_0 *y, int64_t n);
void jr_dequantize_row_q8_0(const struct block_q8_0 *x, float *y, int64_t n);

/* n weights to blocks of type t (a block format of enum jk_dtype, runtime/weight_types.h;
 * n a multiple of the block).
 * q8_0 .. q5_1 are bit-identical to gguf-py's gguf.quants.quantize (and ggml's
 * quantize_row_*_ref): per block
 *   q4_0 / q5_0: m = the weight of largest magnitude (the first such), d = m / -8 (-16),
 *                q = min(15 (31), trunc(x / d + 8.5 (16.5)))   [x / d as x * (1 / d)]
 *   q4_1 / q5_1: d = (max - min) / 15 (31), q = min(15 (31), trunc((x - min) / d + 0.5)),
 *                min stored as f16
 * with d stored as f16 (the f32 d divides). The K-quants are ggml's reference quantizer
 * (quantize_row_q4_K_ref etc., no importance matrix: the scale searches of
 * make_qkx2_quants / make_qx_quants, docs/quantization.md), every operation rounded on
 * its own. Returns 0, or -1 for a type that is not a block format. */
int jr_quantize_row(int t, const float *x, void *y, int64_t n);

#endif
