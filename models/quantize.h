/*
 * quantize.h — rewriting a loaded schema-v1 model's file with its matmul weights in
 * another type.
 *
 * Only the schema's quantization set changes type: the weights the loader recorded as
 * quantizable in the model's weight list (model.h, struct jm_weight; docs/gguf-schema.md,
 * "Quantization rules"). Everything else is copied byte for byte (norms, biases, tokens,
 * tables must stay F32; patch and action embeddings keep their type). Per tensor, the
 * schema's fallbacks (the fallback column of runtime/weight_types.h): a K-quant target
 * for rows that are not a multiple of 256 becomes its 32-block sibling or q8_0; a
 * 32-block target for rows that are not a multiple of 32 becomes f16. Blocks are runtime/quant.c's (gguf-py's bytes for q8_0 ..
 * q5_1, ggml's reference quantizer for the K-quants).
 */
#ifndef JEPA_MODELS_QUANTIZE_H
#define JEPA_MODELS_QUANTIZE_H

#include <stdbool.h>

#include "gguf/gguf.h"
#include "models/model.h"

/* Copy every key and tensor of m's file into `w`, the quantizable weights converted to
 * `target` (the GGUF id of a type of runtime/weight_types.h: jk_dtype_gguf). With
 * store_as_f32, the converted values are widened back and stored as F32 — the same numbers in an f32 file, which is how the
 * dtype parity tests separate weight rounding from activation precision. */
jepa_status jm_quantize(const struct jepa_model *m, struct gguf_writer *w, uint32_t target,
                        bool store_as_f32, struct jerr *err);

#endif
