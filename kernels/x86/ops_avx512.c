/*
 * ops_avx512.c — the attention and element-wise slots for AVX-512 (F/BW/VL/DQ): the
 * ISA-neutral templates kernels/simd/ops_tmpl.h and kernels/simd/attn_tmpl.h over the
 * AVX-512 vector layer (kernels/x86/vec_avx512.h). Compiled with the AVX-512 flags, or
 * against SIMDe for checkasm_ops_avx512emu (kernels/x86/simd.h); reached only through the
 * table (kernels/x86/init.c). Tested against the reference by tests/checkasm/test_ops.c.
 */
#include "kernels/x86/vec_avx512.h"
#include "kernels/x86/x86.h"

/* Attention tiles. 32 zmm registers: 8 keys (or dims) x 3 query vectors = 24 accumulators
 * + 3 query vectors + 1 broadcast; a query block is one register tile of 48 queries
 * (tuned against blocks of 96 and other tile shapes: docs/notes/kernel-tuning.md#attn-avx512). */
#define ATTN_KG 8
#define ATTN_QV 3
#define ATTN_BQ 48
#define ATTN_KIND JK_AK_AVX512   /* its run-time blocking: kernels/tuning.h */

/* The last nq % 16 queries of a sequence take the row path (attn_tmpl.h) when they are 5
 * or fewer, instead of a whole query vector of the block path; from 6 on the vector is
 * cheaper (tuned: docs/notes/kernel-tuning.md#attn-avx512). */
#define ATTN_ROW_TAIL 5

/* S = Q K^T at head_dim 64 in a function of its own (attn_tmpl.h, at_s_tiles64). Inlined
 * into the unit with the softmax and O += P V, its loop needs 28 of the 32 zmm registers
 * while GCC 12 keeps the softmax's constants live across it: it spilled one of the three
 * Q vectors, storing it to the stack and reading it back as the operand of 8 of the 24
 * FMAs in every step. The O += P V loop, and head_dim 32 and the generic head dim, did
 * not spill. Outlined, it does not spill (timings: docs/notes/kernel-tuning.md#attn-avx512). */
#define ATTN_S_OUTLINE

#define JK_SFX(name) jk_##name##_avx512
#include "kernels/simd/ops_tmpl.h"
#include "kernels/simd/attn_tmpl.h"
