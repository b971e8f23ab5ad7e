/*
 * arm.h — every aarch64 kernel slot function (gemm_neon.c, ops_neon.c, attn_neon_bf16.c) and
 * the rung of the ladder that installs them (init.c). Declarations only. Tested by tests/checkasm
 * (natively or under qemu-aarch64 through the cross file), timed by `jepa bench kernels`.
 */
#ifndef JEPA_KERNELS_ARM_ARM_H
#define JEPA_KERNELS_ARM_ARM_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"

/* The matmul slots of each build of gemm_neon.c: the exact tier's (neon), and the bf16
 * precision tier's (neon_bf16: -DJK_GEMM_BF16X -march=armv8.2-a+bf16, FEAT_BF16 only). */
JK_DECLARE_GEMM(neon)
JK_DECLARE_GEMM(neon_bf16)
/* The bf16 tier's attention (attn_neon_bf16.c, -march=armv8.2-a+bf16: BFDOT). */
JK_DECLARE_ATTN(neon_bf16)
jk_attn_fn jk_attn_neon;
jk_attn_ws_fn jk_attn_ws_neon;
jk_rope_fn jk_rope_neon;
jk_layernorm_fn jk_layernorm_neon;
jk_unary_fn jk_gelu_tanh_neon, jk_silu_neon;
jk_add_fn jk_add_neon;
jk_patchify_fn jk_patchify_neon;

#endif
