/*
 * ref.h — the plain C reference kernels (the files of kernels/ref/): one per slot of struct
 * jk_kernels, written for clarity and exactness (double accumulation where a sum is
 * long), never for speed. Every SIMD kernel is tested against these.
 */
#ifndef JEPA_KERNELS_REF_H
#define JEPA_KERNELS_REF_H

#include "kernels/kernels.h"

JK_GEMM_DECLARE(ref)
jk_gemm_ws_fn jk_gemm_ws_ref;
jk_attn_fn jk_attn_ref;
jk_attn_ws_fn jk_attn_ws_ref;
jk_rope_fn jk_rope_ref;
jk_layernorm_fn jk_layernorm_ref;
jk_unary_fn jk_gelu_tanh_ref, jk_silu_ref;
jk_add_fn jk_add_ref;
jk_madd_fn jk_madd_ref;
jk_patchify_fn jk_patchify_ref;
jk_gather_fn jk_gather_ref;
jk_mean_rows_fn jk_mean_rows_ref;

/* Weights k0 .. k0 + n of one row of type t (the row's bytes at row) as f32, exactly as
 * gguf-py's gguf.quants.dequantize and ggml's dequantize_row_* compute them
 * (kernels/ref/dequant_ref.c). Any range of a row; the SIMD kernels call it for the
 * block formats they do not decode themselves. */
void jk_dequant_ref(enum jk_dtype t, const uint8_t *row, int k0, int n, float *dst);

/* What every CPU attention kernel does before its own path: a head_dim outside [1, hd_max]
 * goes to the reference `ref` (the kernel's own: jk_attn_ref or jk_attn_bf16x_ref);
 * no query or head does nothing; no key gives every query a zero row. Returns 1 when
 * the call is done. */
static inline int jk_attn_edges(const struct jk_attn_args *a, int hd_max, jk_attn_fn *ref) {
    const int hd = a->head_dim;
    if (hd < 1 || hd > hd_max) {
        ref(a);
        return 1;
    }
    if (a->nq <= 0 || a->n_head <= 0) return 1;
    if (a->nkv > 0) return 0;
    for (int i = 0; i < a->nq; i++)
        for (int e = 0; e < a->n_head * hd; e++) a->o[(size_t)i * a->ldo + e] = 0.0f;
    return 1;
}

/* Helpers shared by the references and the tests. */
void jk_ref_weight_row(float *dst, const void *w, size_t ldw, enum jk_dtype t, int n, int K);
double jk_ref_gelu_erf(double x);

#endif
