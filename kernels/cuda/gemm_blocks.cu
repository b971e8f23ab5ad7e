/*
 * gemm_blocks.cu — the GPU matmul (kernels in gemm.cuh) for ggml's block formats: q8_0,
 * q4_0, q4_1, q5_0, q5_1, q4_K, q5_K, q6_K, each decoded to f32 as the tiles load
 * (dequant.cuh). A file of its own so that nvcc builds it beside gemm.cu.
 */
#include "kernels/cuda/gemm.cuh"

extern "C" {

void jkc_gemm_q8_0(const struct jk_gemm_args *a) { gemm<JK_Q8_0>(a, "gemm q8_0"); }
void jkc_gemm_q4_0(const struct jk_gemm_args *a) { gemm<JK_Q4_0>(a, "gemm q4_0"); }
void jkc_gemm_q4_1(const struct jk_gemm_args *a) { gemm<JK_Q4_1>(a, "gemm q4_1"); }
void jkc_gemm_q5_0(const struct jk_gemm_args *a) { gemm<JK_Q5_0>(a, "gemm q5_0"); }
void jkc_gemm_q5_1(const struct jk_gemm_args *a) { gemm<JK_Q5_1>(a, "gemm q5_1"); }
void jkc_gemm_q4_k(const struct jk_gemm_args *a) { gemm<JK_Q4_K>(a, "gemm q4_K"); }
void jkc_gemm_q5_k(const struct jk_gemm_args *a) { gemm<JK_Q5_K>(a, "gemm q5_K"); }
void jkc_gemm_q6_k(const struct jk_gemm_args *a) { gemm<JK_Q6_K>(a, "gemm q6_K"); }

}
