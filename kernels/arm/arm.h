/*
 * arm.h — every aarch64 kernel slot function (gemm_neon.c, ops_neon.c) and the rung of
 * the ladder that installs them (init.c). Declarations only. Tested by tests/checkasm
 * (natively or under qemu-aarch64 through the cross file), timed by `jepa bench kernels`.
 */
#ifndef JEPA_KERNELS_ARM_ARM_H
#define JEPA_KERNELS_ARM_ARM_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"

void jk_gemm_f32_neon(const struct jk_gemm_args *a);
void jk_gemm_f16_neon(const struct jk_gemm_args *a);
void jk_gemm_bf16_neon(const struct jk_gemm_args *a);
void jk_gemm_q8_0_neon(const struct jk_gemm_args *a);
size_t jk_gemm_ws_neon(int nthreads, int K);
void jk_attn_neon(const struct jk_attn_args *a);
size_t jk_attn_ws_neon(int nthreads, int head_dim, int nkv);
void jk_rope_neon(float *x, size_t ldx, int n, int n_head, int head_dim, const float *cos,
                  const float *sin, int nthreads);
void jk_layernorm_neon(float *y, size_t ldy, const float *x, size_t ldx, const float *w,
                       const float *b, int n, int d, float eps, int nthreads);
void jk_gelu_neon(float *x, size_t n, int nthreads);
void jk_gelu_tanh_neon(float *x, size_t n, int nthreads);
void jk_silu_neon(float *x, size_t n, int nthreads);
void jk_softmax_neon(float *x, int n, int d, int nthreads);
void jk_add_neon(float *y, size_t ldy, const float *x, size_t ldx, const float *s, int n, int d,
                 int nthreads);
void jk_patchify_neon(float *out, const float *in, int C, int T, int H, int W, int tubelet, int p,
                      int nthreads);

#endif
