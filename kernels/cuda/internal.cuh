/*
 * internal.cuh — what the files of kernels/cuda/ share: the stream of the device bound
 * to the calling thread, launch-error bookkeeping, and the entry point of every slot.
 *
 *   device.cu   struct jk_device for CUDA (memory, one stream, sticky errors), the
 *               thread's bound device (jkc_stream), jk_init_cuda (the table)
 *   gemm.cu     tensor-core matmul (mma.sync m16n8k16), f16 / bf16 / f32 weights and
 *               the block formats (decoded by dequant.cuh)
 *   attn.cu     fused flash attention (mma.sync), its pipelined variant (cp.async,
 *               ldmatrix; JEPA_CUDA_KERNELS=pipe), f32 fallback for other head sizes
 *   ops.cu      LayerNorm, tanh-GELU, SiLU, add, madd, RoPE, patchify, gather, mean
 *
 * Every entry point has the signature of its kernels.h slot, takes device pointers,
 * enqueues its kernels on jkc_stream() and returns without waiting. After each launch
 * it calls jkc_check_launch("name") so a bad launch configuration surfaces as the
 * device's sticky error (and in the next sync) instead of being lost.
 */
#ifndef JEPA_KERNELS_CUDA_INTERNAL_CUH
#define JEPA_KERNELS_CUDA_INTERNAL_CUH

#include "kernels/cuda/compat.cuh"

extern "C" {
#include "kernels/device.h"
#include "kernels/kernels.h"
}

/* The stream of the device bound to the calling thread (jk_device.bind); the legacy
 * default stream when none is bound (tests that drive a table directly bind first). */
cudaStream_t jkc_stream(void);

/* Record cudaGetLastError() after a launch as the bound device's sticky error. */
void jkc_check_launch(const char *what);

/* Streaming multiprocessors of the current device (gemm.cu; cached per ordinal): the
 * kernels that size their blocks by how well the grid fills the GPU ask it. */
int jkc_sm_count(void);

extern "C" {
/* device.cu: 1 where the pipelined kernels (cp.async, ldmatrix) are selected, by
 * JEPA_CUDA_KERNELS=pipe or jkc_kernels_force_pipe (kernels.h); 0 for the default ones.
 * The pipelined kernels have never run on a GPU: selectable, not the default. */
int jkc_kernels_pipe(void);
/* device.cu: 1 where the wgmma matmul is selected too (JEPA_CUDA_KERNELS=wgmma or
 * jkc_kernels_force_wgmma; it implies jkc_kernels_pipe). Never run on a GPU either. */
int jkc_kernels_wgmma(void);
/* gemm.cu */
JK_GEMM_DECLARE(cuda)
/* attn.cu */
jk_attn_fn jkc_attn;
jk_attn_ws_fn jkc_attn_ws;
/* ops.cu */
jk_rope_fn jkc_rope;
jk_layernorm_fn jkc_layernorm;
jk_unary_fn jkc_gelu_tanh, jkc_silu;
jk_add_fn jkc_add;
jk_madd_fn jkc_madd;
jk_patchify_fn jkc_patchify;
/* ops.cu: the x16 table's (JEPA_CUDA_KERNELS=pipe) */
jk_layernorm16_fn jkc_layernorm16;
jk_patchify16_fn jkc_patchify16;
jk_unary16_fn jkc_gelu_tanh16, jkc_silu16;
jk_round16_fn jkc_round16;
jk_gather_fn jkc_gather;
jk_mean_rows_fn jkc_mean_rows;
}

/* gemm_pipe.cu: the pipelined matmul of f16 / bf16 weights (dt JK_F16 or JK_BF16), X read
 * from a->x16, y16 written when set; tile 0 (by the shape), 64 or 128 (gemm.cu's test
 * hook). And y16 = y rounded to y16_type, after a call another kernel served. */
void jkc_gemm_pipe(const struct jk_gemm_args *a, int dt, int tile, const char *what);
void jkc_gemm_y16(const struct jk_gemm_args *a, const char *what);
/* gemm_pipe.cu: the workspace its split-K may use for rows of up to K weights, with the
 * switch on (0 with it off, or where K is too short to split): gemm_ws of the CUDA table. */
size_t jkc_gemm_splitk_ws(int K);

/* gemm_wgmma.cu (sm_90a): whether the call's operands suit the wgmma matmul (x16 and w
 * 16-byte aligned, ldx16 a multiple of 8, ldw of 16) on a device of compute capability 9.0,
 * the only one its image runs on; and the matmul itself (dt JK_F16 or JK_BF16). */
bool jkc_gemm_wgmma_ready(const struct jk_gemm_args *a);
void jkc_gemm_wgmma(const struct jk_gemm_args *a, int dt, const char *what);
/* gemm_pipe.cu: f32 weights from their bf16 hi / lo copy a->wsplit (bf16x3, gemm.cu's bits),
 * X f32 split in the kernel, y16 written when set. */
void jkc_gemm_pipe_f32(const struct jk_gemm_args *a, int tile, const char *what);
/* gemm_pipe.cu: the same for the block formats (dt JK_Q8_0 .. JK_Q6_K), x16 in f16: the
 * integer codes on f16 tensor cores, each block's scale applied to its partial sum. */
void jkc_gemm_pipe_blk(const struct jk_gemm_args *a, int dt, const char *what);

#endif
