/*
 * gemm_x86.h — the x86-64 matmul slots (kernels/x86/gemm_avx2.c, gemm_avx512.c),
 * installed by kernels/x86/init_gemm_x86.c. Declarations only: nothing inline here,
 * so no AVX-512 copy of a helper can be linked into code that runs on an AVX2 machine.
 * Tested by tests/checkasm/test_gemm.c, timed by `jepa bench kernels` (bench/).
 */
#ifndef JEPA_KERNELS_X86_GEMM_X86_H
#define JEPA_KERNELS_X86_GEMM_X86_H

#include <stddef.h>

#include "kernels/kernels.h"

void gemm_f32_avx2(const struct jk_gemm_args *a);
void gemm_f16_avx2(const struct jk_gemm_args *a);
void gemm_bf16_avx2(const struct jk_gemm_args *a);
void gemm_q8_0_avx2(const struct jk_gemm_args *a);
size_t gemm_ws_avx2(int nthreads, int K);

void gemm_f32_avx512(const struct jk_gemm_args *a);
void gemm_f16_avx512(const struct jk_gemm_args *a);
void gemm_bf16_avx512(const struct jk_gemm_args *a);
void gemm_q8_0_avx512(const struct jk_gemm_args *a);
size_t gemm_ws_avx512(int nthreads, int K);

#endif
