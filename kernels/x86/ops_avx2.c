/*
 * ops_avx2.c — the attention and element-wise slots for AVX2 + FMA (+F16C): the
 * ISA-neutral templates kernels/simd/ops_tmpl.h (RoPE, LayerNorm, the activations,
 * residual add, patchify) and kernels/simd/attn_tmpl.h (fused flash attention) over the AVX2 vector layer (kernels/x86/vec_avx2.h). Compiled with -mavx2 -mfma -mf16c;
 * reached only through the table (kernels/x86/init.c). Tested against the reference by
 * tests/checkasm/test_ops.c, timed by its --bench mode.
 */
#include "kernels/x86/vec_avx2.h"
#include "kernels/x86/x86.h"

/* Attention tiles. 16 ymm registers: the S = Q K^T tile is ATTN_KG keys x ATTN_QV query
 * vectors (12 accumulators + 3 query vectors + 1 broadcast), the O += P V tile ATTN_KG
 * dims x ATTN_QV query vectors (the same shape). A query block is ATTN_BQ queries: larger
 * blocks sweep K and V less often but pad the last block of a short sequence more
 * (tuned: docs/notes/kernel-tuning.md#attn-avx2). */
#define ATTN_KG 4
#define ATTN_QV 3
#define ATTN_BQ 48
#define ATTN_KIND JK_AK_AVX2   /* its run-time blocking: kernels/tuning.h */

/* The last nq % 8 queries take the row path when there is one (attn_tmpl.h): one left
 * over gains, two or more lose (tuned: docs/notes/kernel-tuning.md#attn-avx2). */
#define ATTN_ROW_TAIL 1

#define JK_SFX(name) jk_##name##_avx2
#include "kernels/simd/ops_tmpl.h"
#include "kernels/simd/attn_tmpl.h"
