/*
 * ops_arm.h — the aarch64 attention and element-wise slots (kernels/arm/attn_neon.c,
 * ops_neon.c), installed by kernels/arm/init_ops_arm.c. Declarations only. Tested by
 * tests/checkasm/test_ops.c.
 */
#ifndef JEPA_KERNELS_ARM_OPS_ARM_H
#define JEPA_KERNELS_ARM_OPS_ARM_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"

void attn_neon(const struct jk_attn_args *a);
size_t attn_ws_neon(int nthreads, int head_dim, int nkv);
void rope_neon(float *x, size_t ldx, int n, int n_head, int head_dim, const float *cos,
               const float *sin, int nthreads);
void layernorm_neon(float *y, size_t ldy, const float *x, size_t ldx, const float *w,
                    const float *b, int n, int d, float eps, int nthreads);
void gelu_neon(float *x, size_t n, int nthreads);
void gelu_tanh_neon(float *x, size_t n, int nthreads);
void silu_neon(float *x, size_t n, int nthreads);
void softmax_neon(float *x, int n, int d, int nthreads);
void add_neon(float *y, size_t ldy, const float *x, size_t ldx, const float *s, int n, int d,
              int nthreads);
void patchify_neon(float *out, const float *in, int C, int T, int H, int W, int tubelet, int p,
                   int nthreads);

#endif
