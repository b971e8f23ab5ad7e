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

#define JK_X86_DECLARE(isa)                                                                \
    JK_DECLARE_GEMM(isa)                                                                   \
    jk_attn_fn jk_attn_##isa;                                                              \
    jk_attn_ws_fn jk_attn_ws_##isa;                                                        \
    jk_rope_fn jk_rope_##isa;                                                              \
    jk_layernorm_fn jk_layernorm_##isa;                                                    \
    jk_unary_fn jk_gelu_tanh_##isa, jk_silu_##isa;                                         \
    jk_add_fn jk_add_##isa;                                                                \
    jk_patchify_fn jk_patchify_##isa;

JK_X86_DECLARE(avx2)
JK_X86_DECLARE(avx512)

/* The matmul builds of the precision tiers (kernels.h, JK_DECLARE_GEMM): the bf16 tier's
 * (gemm_avx512.c built once more with -DJK_GEMM_BF16X -mavx512bf16, and the tile kernel
 * gemm_amx.c), and the high tier's (gemm_amx.c with -DJK_GEMM_HIGH). */
JK_DECLARE_GEMM(avx512_bf16)
JK_DECLARE_GEMM(amx_bf16)
JK_DECLARE_GEMM(amx_high)
/* The bf16 tier's attention (attn_bf16.c, kernels.h JK_DECLARE_ATTN): VDPBF16PS, and the
 * same file on AMX tiles (-DJK_ATTN_AMX). */
JK_DECLARE_ATTN(avx512_bf16)
JK_DECLARE_ATTN(amx_bf16)

#endif
