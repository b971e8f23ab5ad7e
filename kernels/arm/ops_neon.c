/*
 * ops_neon.c — the attention and element-wise slots for NEON (AArch64 Advanced SIMD): the
 * ISA-neutral templates kernels/simd/ops_tmpl.h and kernels/simd/attn_tmpl.h over the NEON
 * vector layer (kernels/arm/vec_neon.h). Reached through the table (kernels/arm/init.c).
 * Tested against the reference by tests/checkasm/test_ops.c (cross build under qemu).
 */
#include "kernels/arm/arm.h"
#include "kernels/arm/vec_neon.h"

/* Attention tiles (untimed on Arm: docs/notes/kernel-tuning.md#gemm-neon). 32 q
 * registers: 8 keys (or dims) x 3 query vectors = 24 accumulators + 3 query vectors + 1
 * broadcast; a query block is 4 register tiles of 12 queries. */
#define ATTN_KG 8
#define ATTN_QV 3
#define ATTN_BQ 48
#define ATTN_KIND JK_AK_NEON   /* its run-time blocking: kernels/tuning.h */
#define ATTN_ROW_TAIL 0   /* no tail on the row path until it is timed on an Arm core */

#define JK_SFX(name) jk_##name##_neon
#include "kernels/simd/ops_tmpl.h"
#include "kernels/simd/attn_tmpl.h"
