/*
 * ref.h — the plain C reference kernels (the files of kernels/ref/): one per slot of struct
 * jk_kernels, written for clarity and exactness (double accumulation where a sum is
 * long), never for speed. Every SIMD kernel is tested against these.
 */
#ifndef JEPA_KERNELS_REF_H
#define JEPA_KERNELS_REF_H

#include "kernels/kernels.h"

void jk_gemm_f32_ref(const struct jk_gemm_args *a);
void jk_gemm_f16_ref(const struct jk_gemm_args *a);
void jk_gemm_bf16_ref(const struct jk_gemm_args *a);
void jk_gemm_q8_0_ref(const struct jk_gemm_args *a);
size_t jk_gemm_ws_ref(int nthreads, int K);

void jk_attn_ref(const struct jk_attn_args *a);
size_t jk_attn_ws_ref(int nthreads, int head_dim, int nkv);

void jk_rope_ref(float *x, size_t ldx, int n, int n_head, int head_dim, const float *cos,
              const float *sin, int nthreads);
void jk_layernorm_ref(float *y, size_t ldy, const float *x, size_t ldx, const float *w,
                   const float *b, int n, int d, float eps, int nthreads);
void jk_gelu_ref(float *x, size_t n, int nthreads);
void jk_gelu_tanh_ref(float *x, size_t n, int nthreads);
void jk_silu_ref(float *x, size_t n, int nthreads);
void jk_softmax_ref(float *x, int n, int d, int nthreads);
void jk_add_ref(float *y, size_t ldy, const float *x, size_t ldx, const float *s, int n, int d,
             int nthreads);
void jk_patchify_ref(float *out, const float *in, int C, int T, int H, int W, int tubelet, int p,
                  int nthreads);
void jk_gather_ref(float *y, size_t ldy, const float *x, size_t ldx, const int32_t *idx, int n,
                int d, int nthreads);
void jk_mean_rows_ref(float *y, const float *x, size_t ldx, int n, int d, int nthreads);

/* Helpers shared by the references and the tests. */
void jk_ref_weight_row(float *dst, const void *w, size_t ldw, enum jk_dtype t, int n, int K);
double jk_ref_gelu_erf(double x);

#endif
