/*
 * gemm_arm.h — the aarch64 matmul slots (kernels/arm/gemm_neon.c), installed by
 * kernels/arm/init_gemm_arm.c. Declarations only. Tested by tests/checkasm/test_gemm.c
 * (natively or under qemu-aarch64 through the cross file), timed by `jepa bench kernels`.
 */
#ifndef JEPA_KERNELS_ARM_GEMM_ARM_H
#define JEPA_KERNELS_ARM_GEMM_ARM_H

#include <stddef.h>

#include "kernels/kernels.h"

void gemm_f32_neon(const struct jk_gemm_args *a);
void gemm_f16_neon(const struct jk_gemm_args *a);
void gemm_bf16_neon(const struct jk_gemm_args *a);
void gemm_q8_0_neon(const struct jk_gemm_args *a);
size_t gemm_ws_neon(int nthreads, int K);

#endif
