/*
 * ref.h — the plain C reference kernels (the files of kernels/ref/): one per slot of struct
 * jk_kernels, written for clarity and exactness (double accumulation where a sum is
 * long), never for speed. Every SIMD kernel is tested against these.
 */
#ifndef JEPA_KERNELS_REF_H
#define JEPA_KERNELS_REF_H

#include "kernels/kernels.h"

void gemm_f32_ref(const struct jk_gemm_args *a);
void gemm_f16_ref(const struct jk_gemm_args *a);
void gemm_bf16_ref(const struct jk_gemm_args *a);
void gemm_q8_0_ref(const struct jk_gemm_args *a);
size_t gemm_ws_ref(int nthreads, int K);

void attn_ref(const struct jk_attn_args *a);
size_t attn_ws_ref(int nthreads, int head_dim, int nkv);

void rope_ref(float *x, size_t ldx, int n, int n_head, int head_dim, const float *cos,
              const float *sin, int nthreads);
void layernorm_ref(float *y, size_t ldy, const float *x, size_t ldx, const float *w,
                   const float *b, int n, int d, float eps, int nthreads);
void gelu_ref(float *x, size_t n, int nthreads);
void gelu_tanh_ref(float *x, size_t n, int nthreads);
void silu_ref(float *x, size_t n, int nthreads);
void softmax_ref(float *x, int n, int d, int nthreads);
void add_ref(float *y, size_t ldy, const float *x, size_t ldx, const float *s, int n, int d,
             int nthreads);
void patchify_ref(float *out, const float *in, int C, int T, int H, int W, int tubelet, int p,
                  int nthreads);
void gather_ref(float *y, size_t ldy, const float *x, size_t ldx, const int32_t *idx, int n,
                int d, int nthreads);
void mean_rows_ref(float *y, const float *x, size_t ldx, int n, int d, int nthreads);

/* Helpers shared by the references and the tests. */
void ref_weight_row(float *dst, const void *w, size_t ldw, enum jk_dtype t, int n, int K);
double ref_gelu_erf(double x);

#endif
