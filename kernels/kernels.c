/*
 * kernels.c — filling the kernel table: the reference first, then each ISA family
 * upgrades the slots its level of the CPU allows (dav1d's ladder).
 */
#include "kernels/kernels.h"

#include "kernels/ref/ref.h"
#include "runtime/dtype.h"

const char *jk_dtype_name(enum jk_dtype t) {
    switch (t) {
    case JK_F32: return "f32";
    case JK_F16: return "f16";
    case JK_BF16: return "bf16";
    case JK_Q8_0: return "q8_0";
    default: return "?";
    }
}

size_t jk_row_bytes(enum jk_dtype t, int K) {
    if (K <= 0) return 0;
    switch (t) {
    case JK_F32: return (size_t)K * 4;
    case JK_F16:
    case JK_BF16: return (size_t)K * 2;
    case JK_Q8_0: return K % QK8_0 ? 0 : (size_t)(K / QK8_0) * sizeof(struct block_q8_0);
    default: return 0;
    }
}

void jk_init_ref(struct jk_kernels *k) {
    k->isa = "scalar";
    k->gemm[JK_F32] = gemm_f32_ref;
    k->gemm[JK_F16] = gemm_f16_ref;
    k->gemm[JK_BF16] = gemm_bf16_ref;
    k->gemm[JK_Q8_0] = gemm_q8_0_ref;
    k->attn = attn_ref;
    k->rope = rope_ref;
    k->layernorm = layernorm_ref;
    k->gelu = gelu_ref;
    k->gelu_tanh = gelu_tanh_ref;
    k->silu = silu_ref;
    k->softmax = softmax_ref;
    k->add = add_ref;
    k->patchify = patchify_ref;
    k->gather = gather_ref;
    k->mean_rows = mean_rows_ref;
    k->gemm_ws = gemm_ws_ref;
    k->attn_ws = attn_ws_ref;
}

void jk_init(struct jk_kernels *k, unsigned cpu_flags) {
    jk_init_ref(k);
#if defined(__x86_64__) || defined(_M_X64)
    jk_init_x86(k, cpu_flags);
#elif defined(__aarch64__)
    jk_init_arm(k, cpu_flags);
#else
    (void)cpu_flags;
#endif
}
