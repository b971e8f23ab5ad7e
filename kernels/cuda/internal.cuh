/*
 * internal.cuh — what the files of kernels/cuda/ share: the stream of the device bound
 * to the calling thread, launch-error bookkeeping, and the entry point of every slot.
 *
 *   device.cu   struct jk_device for CUDA (memory, one stream, sticky errors), the
 *               thread's bound device (jkc_stream), jk_init_cuda (the table)
 *   gemm.cu     tensor-core matmul (mma.sync m16n8k16), f16 / bf16 / f32 weights
 *   attn.cu     fused flash attention (mma.sync), f32 fallback for other head sizes
 *   ops.cu      LayerNorm, GELU, SiLU, softmax, add, RoPE, patchify, gather, mean
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

extern "C" {
/* gemm.cu */
void jkc_gemm_f32(const struct jk_gemm_args *a);
void jkc_gemm_f16(const struct jk_gemm_args *a);
void jkc_gemm_bf16(const struct jk_gemm_args *a);
/* attn.cu */
void jkc_attn(const struct jk_attn_args *a);
/* ops.cu */
void jkc_rope(float *x, size_t ldx, int n, int n_head, int head_dim, const float *cos,
              const float *sin, int nthreads);
void jkc_layernorm(float *y, size_t ldy, const float *x, size_t ldx, const float *w,
                   const float *b, int n, int d, float eps, int nthreads);
void jkc_gelu(float *x, size_t n, int nthreads);
void jkc_gelu_tanh(float *x, size_t n, int nthreads);
void jkc_silu(float *x, size_t n, int nthreads);
void jkc_softmax(float *x, int n, int d, int nthreads);
void jkc_add(float *y, size_t ldy, const float *x, size_t ldx, const float *s, int n, int d,
             int nthreads);
void jkc_patchify(float *out, const float *in, int C, int T, int H, int W, int tubelet, int p,
                  int nthreads);
void jkc_gather(float *y, size_t ldy, const float *x, size_t ldx, const int32_t *idx, int n,
                int d, int nthreads);
void jkc_mean_rows(float *y, const float *x, size_t ldx, int n, int d, int nthreads);
}

#endif
