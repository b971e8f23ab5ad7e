/*
 * weight_types.h — the one table of the weight types jepa.c stores and computes with. The
 * kernels' enum jk_dtype, the printed names, block sizes and bytes, the GGUF mapping, the
 * type a tensor falls back to, general.file_type, the slot list (kernels/kernels.c) and
 * every install list of the ISA ladder (kernels/ref, x86, arm, cuda) are generated from
 * it. Adding a type is one row here, its reference decoder (kernels/ref/dequant_ref.c),
 * its encoder if jepa quantize writes it (runtime/quant.c), its decoding in each ISA's
 * kernels and its tests.
 *
 * JR_WEIGHT_TYPES(X, a) calls X(a, name, NAME, id, gguf, block, bytes, ftype, fallback)
 * once per type, in enum order; a is passed through (an ISA suffix, or nothing):
 *   name      the printed name ("q6_K"), and the <name> of the generated symbols
 *   NAME      the suffix of JK_<NAME> and GGUF_TYPE_<NAME>
 *   id        the value of JK_<NAME> (fixed: the numbers are compared and stored)
 *   gguf      ggml's type id (enum ggml_type; gguf/gguf.h names it GGUF_TYPE_<NAME>)
 *   block     weights per block: 1 for the float types, 32, or 256 (QK_K) for the K-quants
 *   bytes     bytes per block (layout in the comment beside the row; every field
 *             little-endian; decoded by kernels/ref/dequant_ref.c)
 *   ftype     general.file_type of a file whose quantizable weights are this type (ggml's
 *             llama_ftype; for the K-quants the uniform "_S" kinds: jepa quantize gives
 *             every quantizable tensor the same type)
 *   fallback  the type jepa quantize writes for rows whose length is not a multiple of
 *             block (followed again until one fits: q6_K -> q8_0 -> f16)
 *
 * The slot functions generated per ISA (kernels/kernels.h JK_GEMM_DECLARE, JK_GEMM_INSTALL;
 * isa is ref, avx2, avx512, neon or cuda), so that a grep for one finds this table:
 *   jk_gemm_f32_ref  jk_gemm_f32_avx2  jk_gemm_f32_avx512  jk_gemm_f32_neon  jk_gemm_f32_cuda
 *   jk_gemm_f16_ref  jk_gemm_f16_avx2  jk_gemm_f16_avx512  jk_gemm_f16_neon  jk_gemm_f16_cuda
 *   jk_gemm_bf16_ref jk_gemm_bf16_avx2 jk_gemm_bf16_avx512 jk_gemm_bf16_neon jk_gemm_bf16_cuda
 *   jk_gemm_q8_0_ref jk_gemm_q8_0_avx2 jk_gemm_q8_0_avx512 jk_gemm_q8_0_neon jk_gemm_q8_0_cuda
 *   jk_gemm_q4_0_ref jk_gemm_q4_0_avx2 jk_gemm_q4_0_avx512 jk_gemm_q4_0_neon jk_gemm_q4_0_cuda
 *   jk_gemm_q4_1_ref jk_gemm_q4_1_avx2 jk_gemm_q4_1_avx512 jk_gemm_q4_1_neon jk_gemm_q4_1_cuda
 *   jk_gemm_q5_0_ref jk_gemm_q5_0_avx2 jk_gemm_q5_0_avx512 jk_gemm_q5_0_neon jk_gemm_q5_0_cuda
 *   jk_gemm_q5_1_ref jk_gemm_q5_1_avx2 jk_gemm_q5_1_avx512 jk_gemm_q5_1_neon jk_gemm_q5_1_cuda
 *   jk_gemm_q4_K_ref jk_gemm_q4_K_avx2 jk_gemm_q4_K_avx512 jk_gemm_q4_K_neon jk_gemm_q4_K_cuda
 *   jk_gemm_q5_K_ref jk_gemm_q5_K_avx2 jk_gemm_q5_K_avx512 jk_gemm_q5_K_neon jk_gemm_q5_K_cuda
 *   jk_gemm_q6_K_ref jk_gemm_q6_K_avx2 jk_gemm_q6_K_avx512 jk_gemm_q6_K_neon jk_gemm_q6_K_cuda
 * and, inside the SIMD gemm files, the static pack_b_<name> and small_<name> of each.
 * tests/models/test_weight_types.c checks this list against the table.
 *
 * Plain macros and one enum: included by C, C++ (CUDA) and every layer from runtime/ up.
 */
#ifndef JEPA_RUNTIME_WEIGHT_TYPES_H
#define JEPA_RUNTIME_WEIGHT_TYPES_H

/* X(a, name, NAME, id, gguf, block, bytes, ftype, fallback) */
#define JR_WEIGHT_TYPES(X, a)                                                                   \
    X(a, f32,  F32,   0,  0,   1,   4,  0, F32)                                                  \
    X(a, f16,  F16,   1,  1,   1,   2,  1, F16)                                                  \
    X(a, bf16, BF16,  2, 30,   1,   2, 32, BF16)                                                 \
    X(a, q8_0, Q8_0,  3,  8,  32,  34,  7, F16)   /* d[2] qs[32] (int8); w = d q */             \
    X(a, q4_0, Q4_0,  4,  2,  32,  18,  2, F16)   /* d[2] qs[16]: weight j < 16 the low nibble  \
                                                     of qs[j], j + 16 the high; w = d (q - 8) */ \
    X(a, q4_1, Q4_1,  5,  3,  32,  20,  3, F16)   /* d[2] m[2] qs[16]; w = d q + m */           \
    X(a, q5_0, Q5_0,  6,  6,  32,  22,  8, F16)   /* d[2] qh[4] qs[16]: bit j of the u32 qh is  \
                                                     weight j's fifth bit; w = d (q - 16) */     \
    X(a, q5_1, Q5_1,  7,  7,  32,  24,  9, F16)   /* d[2] m[2] qh[4] qs[16]; w = d q + m */     \
    X(a, q4_K, Q4_K,  8, 12, 256, 144, 14, Q4_0)  /* d[2] dmin[2] scales[12] qs[128] */         \
    X(a, q5_K, Q5_K,  9, 13, 256, 176, 16, Q5_0)  /* d[2] dmin[2] scales[12] qh[32] qs[128] */  \
    X(a, q6_K, Q6_K, 10, 14, 256, 210, 18, Q8_0)  /* ql[128] qh[64] scales[16] (int8) d[2] */

/* Weight data types the matmul slots take (kernels/kernels.h). */
enum jk_dtype {
#define JR_WT_ENUM(a, name, NAME, id, ...) JK_##NAME = id,
    JR_WEIGHT_TYPES(JR_WT_ENUM, )
#undef JR_WT_ENUM
    JK_NDTYPES
};

/* <NAME>_BYTES: bytes of one block (Q6_K_BYTES = 210), for the decoders' pointer steps. */
enum {
#define JR_WT_BYTES(a, name, NAME, id, gguf, block, bytes, ...) NAME##_BYTES = bytes,
    JR_WEIGHT_TYPES(JR_WT_BYTES, )
#undef JR_WT_BYTES
};

#endif
