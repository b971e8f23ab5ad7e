/*
 * quantize.h — rewriting a loaded schema-v1 model's file with its matmul weights in
 * another type.
 *
 * Only the schema's quantization set changes type: the weights the loader recorded as
 * quantizable in the model's weight list (model.h, struct jm_weight; docs/gguf-schema.md,
 * "Quantization rules"). Everything else is copied byte for byte (norms, biases, tokens,
 * tables must stay F32; patch and action embeddings keep their type). A q8_0 target
 * falls back to f16 for a tensor whose rows are not a multiple of 32.
 */
#ifndef JEPA_MODELS_QUANTIZE_H
#define JEPA_MODELS_QUANTIZE_H

#include <stdbool.h>

#include "gguf/gguf.h"
#include "models/model.h"

/* Copy every key and tensor of m's file into `w`, the quantizable weights converted to
 * `target` (GGUF_TYPE_F32/F16/BF16/Q8_0). With store_as_f32, the converted values are
 * widened back and stored as F32 — the same numbers in an f32 file, which is how the
 * dtype parity tests separate weight rounding from activation precision. */
jepa_status jm_quantize(const struct jepa_model *m, struct gguf_writer *w, uint32_t target,
                        bool store_as_f32, struct jerr *err);

#endif
