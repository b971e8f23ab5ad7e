/*
 * kernels.c — filling the kernel table: the reference first, then each ISA family
 * upgrades the slots its level of the CPU allows (dav1d's ladder).
 */
#include "kernels/kernels.h"

#include <stddef.h>
#include <string.h>

#include "kernels/ref/ref.h"
#include "runtime/dtype.h"

const char *jk_dtype_name(enum jk_dtype t) {
    switch (t) {
    case JK_F32: return "f32";
    case JK_F16: return "f16";
    case JK_BF16: return "bf16";
    case JK_Q8_0: return "q8_0";
    case JK_Q4_0: return "q4_0";
    case JK_Q4_1: return "q4_1";
    case JK_Q5_0: return "q5_0";
    case JK_Q5_1: return "q5_1";
    case JK_Q4_K: return "q4_K";
    case JK_Q5_K: return "q5_K";
    case JK_Q6_K: return "q6_K";
    default: return "?";
    }
}

int jk_dtype_block(enum jk_dtype t) {
    switch (t) {
    case JK_Q8_0: case JK_Q4_0: case JK_Q4_1: case JK_Q5_0: case JK_Q5_1: return 32;
    case JK_Q4_K: case JK_Q5_K: case JK_Q6_K: return QK_K;
    default: return 1;
    }
}

size_t jk_row_bytes(enum jk_dtype t, int K) {
    if (K <= 0) return 0;
    switch (t) {
    case JK_F32: return (size_t)K * 4;
    case JK_F16:
    case JK_BF16: return (size_t)K * 2;
    default: {
        const size_t blk = jr_block_bytes((int)t);
        const int qk = jk_dtype_block(t);
        return blk && K % qk == 0 ? (size_t)(K / qk) * blk : 0;
    }
    }
}

#define JK_SLOT(field, name, dtype) {name, offsetof(struct jk_kernels, field), dtype}
const struct jk_slot jk_slots[] = {
    JK_SLOT(gemm[JK_F32], "gemm_f32", JK_F32),
    JK_SLOT(gemm[JK_F16], "gemm_f16", JK_F16),
    JK_SLOT(gemm[JK_BF16], "gemm_bf16", JK_BF16),
    JK_SLOT(gemm[JK_Q8_0], "gemm_q8_0", JK_Q8_0),
    JK_SLOT(gemm[JK_Q4_0], "gemm_q4_0", JK_Q4_0),
    JK_SLOT(gemm[JK_Q4_1], "gemm_q4_1", JK_Q4_1),
    JK_SLOT(gemm[JK_Q5_0], "gemm_q5_0", JK_Q5_0),
    JK_SLOT(gemm[JK_Q5_1], "gemm_q5_1", JK_Q5_1),
    JK_SLOT(gemm[JK_Q4_K], "gemm_q4_K", JK_Q4_K),
    JK_SLOT(gemm[JK_Q5_K], "gemm_q5_K", JK_Q5_K),
    JK_SLOT(gemm[JK_Q6_K], "gemm_q6_K", JK_Q6_K),
    JK_SLOT(gemm_ws, "gemm_ws", -1),
    JK_SLOT(attn, "attn", -1),
    JK_SLOT(attn_ws, "attn_ws", -1),
    JK_SLOT(rope, "rope", -1),
    JK_SLOT(layernorm, "layernorm", -1),
    JK_SLOT(gelu_tanh, "gelu_tanh", -1),
    JK_SLOT(silu, "silu", -1),
    JK_SLOT(add, "add", -1),
    JK_SLOT(madd, "madd", -1),
    JK_SLOT(patchify, "patchify", -1),
    JK_SLOT(gather, "gather", -1),
    JK_SLOT(mean_rows, "mean_rows", -1),
};
#undef JK_SLOT
/* every field from `gemm` on is a slot, and each has its row */
_Static_assert(sizeof jk_slots / sizeof *jk_slots ==
                   (sizeof(struct jk_kernels) - offsetof(struct jk_kernels, gemm)) / sizeof(jk_gemm_fn *),
               "struct jk_kernels and jk_slots[] list different slots");
const int jk_nslots = (int)(sizeof jk_slots / sizeof *jk_slots);

const void *jk_slot_fn(const struct jk_kernels *k, const struct jk_slot *s) {
    void (*fn)(void);
    memcpy(&fn, (const char *)k + s->offset, sizeof fn);   /* every slot is a function pointer */
    const void *p;
    memcpy(&p, &fn, sizeof p);
    return p;
}

void jk_init_ref(struct jk_kernels *k) {
    k->isa = "scalar";
    k->gemm_isa = NULL;
    k->gemm_prepack = NULL, k->gemm_prepack_floats = NULL;   /* the reference packs nothing */
    k->gemm[JK_F32] = jk_gemm_f32_ref;
    k->gemm[JK_F16] = jk_gemm_f16_ref;
    k->gemm[JK_BF16] = jk_gemm_bf16_ref;
    k->gemm[JK_Q8_0] = jk_gemm_q8_0_ref;
    k->gemm[JK_Q4_0] = jk_gemm_q4_0_ref;
    k->gemm[JK_Q4_1] = jk_gemm_q4_1_ref;
    k->gemm[JK_Q5_0] = jk_gemm_q5_0_ref;
    k->gemm[JK_Q5_1] = jk_gemm_q5_1_ref;
    k->gemm[JK_Q4_K] = jk_gemm_q4_K_ref;
    k->gemm[JK_Q5_K] = jk_gemm_q5_K_ref;
    k->gemm[JK_Q6_K] = jk_gemm_q6_K_ref;
    k->attn = jk_attn_ref;
    k->rope = jk_rope_ref;
    k->layernorm = jk_layernorm_ref;
    k->gelu_tanh = jk_gelu_tanh_ref;
    k->silu = jk_silu_ref;
    k->add = jk_add_ref;
    k->madd = jk_madd_ref;
    k->patchify = jk_patchify_ref;
    k->gather = jk_gather_ref;
    k->mean_rows = jk_mean_rows_ref;
    k->gemm_ws = jk_gemm_ws_ref;
    k->attn_ws = jk_attn_ws_ref;
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
    k->gemm_isa = k->isa;
}

const char *jk_precision_name(enum jk_precision p) {
    switch (p) {
    case JK_PREC_EXACT: return "exact";
    case JK_PREC_HIGH: return "high";
    case JK_PREC_BF16: return "bf16";
    default: return "?";
    }
}

int jk_precision_parse(const char *s) {
    if (!s || !*s) return JK_PREC_EXACT;
    for (int p = 0; p < JK_NPREC; p++)
        if (!strcmp(s, jk_precision_name((enum jk_precision)p))) return p;
    return -1;
}

void jk_init_precision(struct jk_kernels *k, unsigned cpu_flags, enum jk_precision p) {
    jk_init(k, cpu_flags);
    if (p == JK_PREC_EXACT) return;
#if defined(__x86_64__) || defined(_M_X64)
    jk_init_x86_precision(k, cpu_flags, p);
#elif defined(__aarch64__)
    jk_init_arm_precision(k, cpu_flags, p);
#endif
}
