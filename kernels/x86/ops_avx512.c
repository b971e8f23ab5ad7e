/*
 * ops_avx512.c — the attention and element-wise slots for AVX-512 (F/BW/VL/DQ): the
 * ISA-neutral templates kernels/simd/ops_tmpl.h and kernels/simd/attn_tmpl.h over the
 * AVX-512 vector layer (kernels/x86/vec_avx512.h). Compiled with the AVX-512 flags, or
 * against SIMDe for checkasm_ops_avx512emu (kernels/x86/simd.h); reached only through the
 * table (kernels/x86/init.c). Tested against the reference by tests/checkasm/test_ops.c.
 */
#include "kernels/x86/vec_avx512.h"
#include "kernels/x86/x86.h"

/* Attention tiles (not timed: no AVX-512 machine was at hand). 32 zmm registers: 8 keys
 * (or dims) x 3 query vectors = 24 accumulators + 3 query vectors + 1 broadcast; a query
 * block is one register tile of 48 queries. */
#define ATTN_KG 8
#define ATTN_QV 3
#define ATTN_BQ 48

#define JK_SFX(name) jk_##name##_avx512
#include "kernels/simd/ops_tmpl.h"
#include "kernels/simd/attn_tmpl.h"
