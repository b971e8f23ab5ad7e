/*
 * ops_x86.h — the x86-64 attention and element-wise slots (kernels/x86/attn_avx2.c,
 * attn_avx512.c, ops_avx2.c, ops_avx512.c), installed by kernels/x86/init_ops_x86.c.
 * Declarations only: nothing inline here (see kernels/x86/x86.h). Tested by
 * tests/checkasm/test_ops.c.
 */
#ifndef JEPA_KERNELS_X86_OPS_X86_H
#define JEPA_KERNELS_X86_OPS_X86_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"

#define OPS_X86_DECLARE(isa)                                                                  \
    void attn_##isa(const struct jk_attn_args *a);                                            \
    size_t attn_ws_##isa(int nthreads, int head_dim, int nkv);                                \
    void rope_##isa(float *x, size_t ldx, int n, int n_head, int head_dim, const float *cos,  \
                    const float *sin, int nthreads);                                          \
    void layernorm_##isa(float *y, size_t ldy, const float *x, size_t ldx, const float *w,    \
                         const float *b, int n, int d, float eps, int nthreads);              \
    void gelu_##isa(float *x, size_t n, int nthreads);                                        \
    void gelu_tanh_##isa(float *x, size_t n, int nthreads);                                   \
    void silu_##isa(float *x, size_t n, int nthreads);                                        \
    void softmax_##isa(float *x, int n, int d, int nthreads);                                 \
    void add_##isa(float *y, size_t ldy, const float *x, size_t ldx, const float *s, int n,   \
                   int d, int nthreads);                                                      \
    void patchify_##isa(float *out, const float *in, int C, int T, int H, int W, int tubelet, \
                        int p, int nthreads);

OPS_X86_DECLARE(avx2)
OPS_X86_DECLARE(avx512)

#endif
