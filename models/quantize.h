/*
 * quantize.h — rewriting a schema-v1 file with its matmul weights in another type.
 *
 * Only the schema's quantizable set changes type: the 2-D weights of attn_qkv / attn_q /
 * attn_k / attn_v / attn_out, ffn_up / ffn_down, pred.proj* (incl. proj_context),
 * pred.embed*, enc.proj.*, head.blk.*, head.xattn.{q,k,v}, head.cls. Everything else is
 * copied byte for byte (norms, biases, tokens, tables must stay F32). A q8_0 target falls
 * back to f16 for a tensor whose rows are not a multiple of 32.
 */
#ifndef JEPA_MODELS_QUANTIZE_H
#define JEPA_MODELS_QUANTIZE_H

#include <stdbool.h>

#include "gguf/gguf.h"

/* Is this tensor in the quantizable set? */
bool jm_quantizable(const struct gguf_tensor *t);

/* Copy every key and tensor of `in` into `w`, the quantizable weights converted to
 * `target` (GGUF_TYPE_F32/F16/BF16/Q8_0). With store_as_f32, the converted values are
 * widened back and stored as F32 — the same numbers in an f32 file, which is how the
 * dtype parity tests separate weight rounding from activation precision. */
jepa_status jm_quantize(const struct gguf_file *in, struct gguf_writer *w, uint32_t target,
                        bool store_as_f32, struct jerr *err);

#endif
