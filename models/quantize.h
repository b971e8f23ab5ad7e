/*
 * quantize.h — rewriting a loaded schema-v1 model's file with its matmul weights in
 * another type.
 *
 * Only the schema's quantization set changes type: the weights the loader recorded as
 * quantizable in the model's weight list (model.h, struct jm_weight; docs/gguf-schema.md,
 * "Quantization rules"). Everything else is copied byte for byte (norms, biases, tokens,
 * tables must stay F32; patch and action embeddings keep their type). Per tensor, the
 * schema's fallbacks: a K-quant target (q4_K, q5_K, q6_K) for rows that are not a
 * multiple of 256 becomes q4_0, q5_0 or q8_0; a 32-block target for rows that are not a
 * multiple of 32 becomes f16. Blocks are runtime/quant.c's (gguf-py's bytes for q8_0 ..
 * q5_1, ggml's reference quantizer for the K-quants).
 */
#ifndef JEPA_MODELS_QUANTIZE_H
#define JEPA_MODELS_QUANTIZE_H

#include <stdbool.h>

#include "gguf/gguf.h"
#include "models/model.h"

/* Copy every key and tensor of m's file into `w`, the quantizable weights converted to
 * `target` (GGUF_TYPE_F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K or
 * Q6_K). With store_as_f32, the converted values are
 * widened back and stored as F32 — the same numbers in an f32 file, which is how the
 * dtype parity tests separate weight rounding from activation precision. */
jepa_status jm_quantize(const struct jepa_model *m, struct gguf_writer *w, uint32_t target,
                        bool store_as_f32, struct jerr *err);

#endif
