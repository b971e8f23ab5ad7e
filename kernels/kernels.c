/*
 * kernels.c — filling the kernel table: the reference first, then each ISA family
 * upgrades the slots its level of the CPU allows (dav1d's ladder).
 */
#include "kernels/kernels.h"

#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "kernels/ref/ref.h"
#include "kernels/tuning.h"

/* Every column of the table, as one array of rows indexed by enum jk_dtype. */
static const struct {
    const char *name;
    uint32_t gguf;
    int block;
    unsigned bytes;
} dtypes[JK_NDTYPES] = {
#define JK_DTYPE_ROW(a, name, NAME, id, gguf, block, bytes, ...) \
    [JK_##NAME] = {#name, gguf, block, bytes},
    JR_WEIGHT_TYPES(JK_DTYPE_ROW, )
#undef JK_DTYPE_ROW
};
/* ids 0 .. JK_NDTYPES - 1, each once: the rows fill the array */
#define JK_DTYPE_ONE(...) +1
_Static_assert(0 JR_WEIGHT_TYPES(JK_DTYPE_ONE, ) == JK_NDTYPES, "weight type ids have gaps");
#undef JK_DTYPE_ONE

const char *jk_dtype_name(enum jk_dtype t) {
    return (unsigned)t < JK_NDTYPES ? dtypes[t].name : "?";
}

int jk_dtype_block(enum jk_dtype t) {
    return (unsigned)t < JK_NDTYPES ? dtypes[t].block : 1;
}

size_t jk_row_bytes(enum jk_dtype t, int K) {
    if (K <= 0 || (unsigned)t >= JK_NDTYPES || K % dtypes[t].block) return 0;
    return (size_t)(K / dtypes[t].block) * dtypes[t].bytes;
}

int jk_dtype_of_gguf(uint32_t gguf_type) {
    for (int t = 0; t < JK_NDTYPES; t++)
        if (dtypes[t].gguf == gguf_type) return t;
    return -1;
}

uint32_t jk_dtype_gguf(enum jk_dtype t) { return dtypes[t].gguf; }

int jk_dtype_by_name(const char *name) {
    for (int t = 0; t < JK_NDTYPES; t++) {
        const char *a = name, *b = dtypes[t].name;
        while (*a && tolower((unsigned char)*a) == tolower((unsigned char)*b)) a++, b++;
        if (!*a && !*b) return t;
    }
    return -1;
}

void jk_dtype_list(char *buf, size_t size, const char *last) {
    size_t len = 0;
    if (size) buf[0] = '\0';
    for (int t = 0; t < JK_NDTYPES && len < size; t++) {
        const char *sep = t == 0 ? "" : t == JK_NDTYPES - 1 ? last : ", ";
        const int n = snprintf(buf + len, size - len, "%s%s", sep, dtypes[t].name);
        if (n < 0) return;
        len += (size_t)n;
    }
}

#define JK_SLOT(field, name, dtype) {name, offsetof(struct jk_kernels, field), dtype}
const struct jk_slot jk_slots[] = {
#define JK_SLOT_GEMM(a, name, NAME, ...) JK_SLOT(gemm[JK_##NAME], "gemm_" #name, JK_##NAME),
    JR_WEIGHT_TYPES(JK_SLOT_GEMM, )
#undef JK_SLOT_GEMM
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
    k->attn_isa = NULL;
    k->gemm_prepack = NULL, k->gemm_prepack_floats = NULL;   /* the reference packs nothing */
    JK_GEMM_INSTALL(ref);
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
    jk_tune_init();   /* the blocking in force, decided once (kernels/tuning.h) */
    jk_init_ref(k);
#if defined(__x86_64__) || defined(_M_X64)
    jk_init_x86(k, cpu_flags);
#elif defined(__aarch64__)
    jk_init_arm(k, cpu_flags);
#else
    (void)cpu_flags;
#endif
    k->gemm_isa = k->isa;
    k->attn_isa = k->isa;
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
