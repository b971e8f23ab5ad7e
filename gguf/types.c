/*
 * types.c — the ggml tensor type table (block size and bytes per block of every type
 * this build knows) and the GGUF metadata value type names.
 *
 * The container's business only: a file may hold any of these (which of them a model
 * may use is the schema's rule, applied by models/loader.c). Block sizes
 * and block bytes are ggml's (ggml-common.h block_* structs): e.g. q4_K is one f16 d,
 * one f16 dmin, 12 bytes of 6-bit scales and 128 bytes of nibbles = 144 bytes per 256.
 *
 * Tested by tests/gguf/test_gguf_roundtrip.c (table entries and jg_row_bytes against
 * the block layouts written out by hand) and, through the reader, by every gguf test.
 */
#include "gguf/gguf.h"

static const struct jg_type_info type_table[GGUF_TYPE_COUNT] = {
    [GGUF_TYPE_F32]  = {"f32", 1, 4},
    [GGUF_TYPE_F16]  = {"f16", 1, 2},
    [GGUF_TYPE_Q4_0] = {"q4_0", 32, 2 + 16},                 /* d, 32 nibbles */
    [GGUF_TYPE_Q4_1] = {"q4_1", 32, 2 + 2 + 16},             /* d, m, 32 nibbles */
    [GGUF_TYPE_Q5_0] = {"q5_0", 32, 2 + 4 + 16},             /* d, qh, nibbles */
    [GGUF_TYPE_Q5_1] = {"q5_1", 32, 2 + 2 + 4 + 16},         /* d, m, qh, nibbles */
    [GGUF_TYPE_Q8_0] = {"q8_0", 32, 2 + 32},                 /* d, 32 x int8 */
    [GGUF_TYPE_Q8_1] = {"q8_1", 32, 2 + 2 + 32},            /* d, s, 32 x int8 */
    [GGUF_TYPE_Q2_K] = {"q2_K", 256, 16 + 64 + 2 + 2},      /* scales, qs, d, dmin */
    [GGUF_TYPE_Q3_K] = {"q3_K", 256, 32 + 64 + 12 + 2},     /* hmask, qs, scales, d */
    [GGUF_TYPE_Q4_K] = {"q4_K", 256, 2 + 2 + 12 + 128},      /* d, dmin, scales, qs */
    [GGUF_TYPE_Q5_K] = {"q5_K", 256, 2 + 2 + 12 + 32 + 128}, /* d, dmin, scales, qh, qs */
    [GGUF_TYPE_Q6_K] = {"q6_K", 256, 128 + 64 + 16 + 2},     /* ql, qh, scales, d */
    [GGUF_TYPE_Q8_K] = {"q8_K", 256, 4 + 256 + 32},         /* f32 d, qs, bsums */
    [GGUF_TYPE_BF16] = {"bf16", 1, 2},
};

const struct jg_type_info *jg_type_info(uint32_t t) {
    if (t >= GGUF_TYPE_COUNT || type_table[t].name == NULL) return NULL;
    return &type_table[t];
}

size_t jg_row_bytes(uint32_t t, int64_t n) {
    const struct jg_type_info *ti = jg_type_info(t);
    if (!ti || n < 0 || n % ti->block_size != 0) return 0;
    size_t bytes;
    if (__builtin_mul_overflow((uint64_t)(n / ti->block_size), (uint64_t)ti->type_size, &bytes))
        return 0;
    return bytes;
}

static const char *const vtype_names[GGUF_V_COUNT] = {
    [GGUF_V_U8] = "u8",     [GGUF_V_I8] = "i8",       [GGUF_V_U16] = "u16",
    [GGUF_V_I16] = "i16",   [GGUF_V_U32] = "u32",     [GGUF_V_I32] = "i32",
    [GGUF_V_F32] = "f32",   [GGUF_V_BOOL] = "bool",   [GGUF_V_STRING] = "string",
    [GGUF_V_ARRAY] = "array", [GGUF_V_U64] = "u64",   [GGUF_V_I64] = "i64",
    [GGUF_V_F64] = "f64",
};

const char *jg_vtype_name(uint32_t vt) {
    return vt < GGUF_V_COUNT ? vtype_names[vt] : "unknown";
}

size_t jg_vtype_size(uint32_t vt) {
    switch (vt) {
    case GGUF_V_U8: case GGUF_V_I8: case GGUF_V_BOOL: return 1;
    case GGUF_V_U16: case GGUF_V_I16: return 2;
    case GGUF_V_U32: case GGUF_V_I32: case GGUF_V_F32: return 4;
    case GGUF_V_U64: case GGUF_V_I64: case GGUF_V_F64: return 8;
    default: return 0;
    }
}
