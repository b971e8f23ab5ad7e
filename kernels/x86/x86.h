/*
 * x86.h — every x86-64 kernel slot function (AVX2 in gemm_avx2.c and ops_avx2.c, AVX-512
 * in gemm_avx512.c and ops_avx512.c), declared once per ISA by one macro, and the rung
 * of the ladder that installs them (init.c). Declarations only: nothing inline here, so
 * no AVX-512 copy of a helper can be linked into code that runs on an AVX2 machine.
 * Tested by tests/checkasm (test_gemm.c, test_ops.c), timed by `jepa bench kernels`.
 */
#ifndef JEPA_KERNELS_X86_X86_H
#define JEPA_KERNELS_X86_X86_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"

#define JK_X86_DECLARE(isa)                                                                   \
    void jk_gemm_f32_##isa(const struct jk_gemm_args *a);                                     \
    void jk_gemm_f16_##isa(const struct jk_gemm_args *a);                                     \
    void jk_gemm_bf16_##isa(const struct jk_gemm_args *a);                                    \
    void jk_gemm_q8_0_##isa(const struct jk_gemm_args *a);                                    \
    size_t jk_gemm_ws_##isa(int nthreads, int K);                                             \
    void jk_attn_##isa(const struct jk_attn_args *a);                                         \
    size_t jk_attn_ws_##isa(int nthreads, int head_dim, int nkv);                             \
    void jk_rope_##isa(float *x, size_t ldx, int n, int n_head, int head_dim, const float *cos, \
                       const float *sin, int nthreads);                                       \
    void jk_layernorm_##isa(float *y, size_t ldy, const float *x, size_t ldx, const float *w, \
                            const float *b, int n, int d, float eps, int nthreads);           \
    void jk_gelu_##isa(float *x, size_t n, int nthreads);                                     \
    void jk_gelu_tanh_##isa(float *x, size_t n, int nthreads);                                \
    void jk_silu_##isa(float *x, size_t n, int nthreads);                                     \
    void jk_softmax_##isa(float *x, int n, int d, int nthreads);                              \
    void jk_add_##isa(float *y, size_t ldy, const float *x, size_t ldx, const float *s, int n, \
                      int d, int nthreads);                                                   \
    void jk_patchify_##isa(float *out, const float *in, int C, int T, int H, int W,           \
                           int tubelet, int p, int nthreads);

JK_X86_DECLARE(avx2)
JK_X86_DECLARE(avx512)

#endif
