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
 * + 3 query vectors + 1 broadcast; a query block is one register tile of 48 queries.
 * Timed on Zen 4 (`jepa bench kernels --op attn -t 1`, best of 6 interleaved runs, % of
 * the same run's FMA peak, 577 / 2048 / 4608 tokens at head_dim 64): this tile 73.8 /
 * 82.9 / 83.2 %; blocks of 96 queries 75.4 / 81.0 / 82.7; 96 queries with key tiles of
 * 128 75.2 / 79.8 / 82.2; 6 keys x 4 vectors and 12 keys x 2 vectors were slower at 2048
 * and 4608 tokens in both of two runs. (Single runs on that shared VM spread by +-7 %.) */
#define ATTN_KG 8
#define ATTN_QV 3
#define ATTN_BQ 48

/* The last nq % 16 queries of a sequence take the row path (attn_tmpl.h) when they are 5
 * or fewer, instead of a whole query vector of the block path. Zen 4, 6 heads of 64,
 * against the kernel without it in one process (bench/ab_attn.sh), time with / without:
 * 33 queries (1 left over) 0.74, 197 (5) 0.996, 198 (6) 1.012, 199 (7) 1.027, 200 (8)
 * 1.04; LeWM's 257 x 3 heads 0.95, the ViT-B image's 577 x 12 heads 0.977. */
#define ATTN_ROW_TAIL 5

/* S = Q K^T at head_dim 64 in a function of its own (attn_tmpl.h, at_s_tiles64). Inlined
 * into the unit with the softmax and O += P V, its loop needs 28 of the 32 zmm registers
 * while GCC 12 keeps the softmax's constants live across it: it spilled one of the three
 * Q vectors, storing it to the stack and reading it back as the operand of 8 of the 24
 * FMAs in every step. The O += P V loop, and head_dim 32 and the generic head dim, did
 * not spill. Outlined, the S loop's share of at_unit64's samples fell to that of the
 * O += P V loop (`perf annotate`). Its speed is within the noise of Zen 4: against the
 * build before it with the same `bench kernels --op attn -t 1` (one core, alternated, 10
 * rounds), head_dim 64 at 577 tokens 12.02 -> 11.62 ms on average while the unchanged
 * head_dim 32 moved 6.54 -> 6.40 ms; side by side (5 pairs) 4608 tokens 713 -> 685 ms,
 * 577 and 2048 tokens either way. */
#define ATTN_S_OUTLINE

#define JK_SFX(name) jk_##name##_avx512
#include "kernels/simd/ops_tmpl.h"
#include "kernels/simd/attn_tmpl.h"
