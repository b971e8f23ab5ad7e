/*
 * test_gguf_roundtrip.c — the writer and the reader against known answers and each other.
 *
 *  - the type table and jg_row_bytes against ggml's block layouts written out by hand;
 *  - a tiny file from the writer equals bytes assembled by hand (tbuild.h), and the
 *    reader reads those hand-made bytes;
 *  - every value type (extremes included), numeric and string arrays (empty ones too)
 *    and one tensor of every schema-v1 type, 1-D to 4-D, written to memory and to a file
 *    and read back from both: values, order, shapes, bytes, aligned data pointers;
 *  - replacing a key keeps its place; general.alignment 64; version 2 is read;
 *  - jg_writer_write leaves no temporary, is not redirected by a symlink planted at
 *    PATH.tmp, fails cleanly on an unwritable path and when the write is cut short (the
 *    temporary is removed), and refuses bad tensors / alignment;
 *  - jg_writer_copy_kv reproduces the metadata byte for byte;
 *  - jg_kv_format and jg_arr_* on known values.
 * Run: meson test -C build --suite gguf (also under -Db_sanitize=address,undefined).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "tbuild.h"
#include "tcheck.h"

static void test_types(void) {
    static const struct { uint32_t t; int64_t bs; size_t ts; const char *name; } want[] = {
        {GGUF_TYPE_F32, 1, 4, "f32"},      {GGUF_TYPE_F16, 1, 2, "f16"},
        {GGUF_TYPE_BF16, 1, 2, "bf16"},    {GGUF_TYPE_Q4_0, 32, 18, "q4_0"},
        {GGUF_TYPE_Q4_1, 32, 20, "q4_1"},  {GGUF_TYPE_Q5_0, 32, 22, "q5_0"},
        {GGUF_TYPE_Q5_1, 32, 24, "q5_1"},  {GGUF_TYPE_Q8_0, 32, 34, "q8_0"},
        {GGUF_TYPE_Q4_K, 256, 144, "q4_K"}, {GGUF_TYPE_Q5_K, 256, 176, "q5_K"},
        {GGUF_TYPE_Q6_K, 256, 210, "q6_K"}, {GGUF_TYPE_Q8_1, 32, 36, "q8_1"},
        {GGUF_TYPE_Q2_K, 256, 84, "q2_K"}, {GGUF_TYPE_Q3_K, 256, 110, "q3_K"},
        {GGUF_TYPE_Q8_K, 256, 292, "q8_K"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const struct jg_type_info *ti = jg_type_info(want[i].t);
        CHECK(ti != NULL, "type %u missing", want[i].t);
        if (!ti) continue;
        CHECK(ti->block_size == want[i].bs && ti->type_size == want[i].ts &&
              strcmp(ti->name, want[i].name) == 0,
              "type %u: %s %lld/%zu", want[i].t, ti->name, (long long)ti->block_size, ti->type_size);
    }
    int known = 0;
    for (uint32_t t = 0; t < 100; t++)
        if (jg_type_info(t)) known++;
    CHECK(known == (int)(sizeof want / sizeof want[0]), "%d known types, expected %d", known,
          (int)(sizeof want / sizeof want[0]));
    CHECK(jg_type_info(4) == NULL && jg_type_info(GGUF_TYPE_COUNT) == NULL &&
          jg_type_info(UINT32_MAX) == NULL, "unknown ids must give NULL");
    CHECK(jg_row_bytes(GGUF_TYPE_F32, 10) == 40, "f32 row");
    CHECK(jg_row_bytes(GGUF_TYPE_BF16, 3) == 6, "bf16 row");
    CHECK(jg_row_bytes(GGUF_TYPE_Q8_0, 64) == 68, "q8_0 row");
    CHECK(jg_row_bytes(GGUF_TYPE_Q8_0, 33) == 0, "q8_0 row of 33 must be 0");
    CHECK(jg_row_bytes(GGUF_TYPE_Q4_K, 512) == 288, "q4_K row");
    CHECK(jg_row_bytes(GGUF_TYPE_Q6_K, 255) == 0, "q6_K row of 255 must be 0");
    CHECK(jg_row_bytes(99, 32) == 0 && jg_row_bytes(GGUF_TYPE_F32, -4) == 0, "bad args");
    CHECK(jg_row_bytes(GGUF_TYPE_F32, INT64_MAX) == 0, "overflowing row must be 0");
    CHECK(strcmp(jg_vtype_name(GGUF_V_F64), "f64") == 0 && strcmp(jg_vtype_name(99), "unknown") == 0,
          "vtype names");
    CHECK(jg_vtype_size(GGUF_V_BOOL) == 1 && jg_vtype_size(GGUF_V_I16) == 2 &&
          jg_vtype_size(GGUF_V_F32) == 4 && jg_vtype_size(GGUF_V_U64) == 8 &&
          jg_vtype_size(GGUF_V_STRING) == 0 && jg_vtype_size(GGUF_V_ARRAY) == 0, "vtype sizes");
}

/* The writer's bytes for a tiny file equal bytes laid out by hand. */
static void test_golden_bytes(void) {
    struct tb b = {0};
    tb_bytes(&b, "GGUF", 4);
    tb_u32(&b, 3);
    tb_u64(&b, 1);          /* n_tensors */
    tb_u64(&b, 2);          /* n_kv */
    tb_str(&b, "a");
    tb_u32(&b, GGUF_V_U32);
    tb_u32(&b, 7);
    tb_str(&b, "names");
    tb_u32(&b, GGUF_V_ARRAY);
    tb_u32(&b, GGUF_V_STRING);
    tb_u64(&b, 2);
    tb_str(&b, "x");
    tb_str(&b, "yz");
    tb_str(&b, "t");
    tb_u32(&b, 2);          /* n_dims */
    tb_u64(&b, 2);
    tb_u64(&b, 1);
    tb_u32(&b, GGUF_TYPE_F32);
    tb_u64(&b, 0);
    tb_pad(&b, 32);
    size_t data_at = b.n;
    tb_u32(&b, 0x3f800000u);   /* 1.0f */
    tb_u32(&b, 0xc0000000u);   /* -2.0f */
    tb_pad(&b, 32);

    struct gguf_writer *w = jg_writer_new();
    struct jerr err = {0};
    const char *names[] = {"x", "yz"};
    const float data[2] = {1.0f, -2.0f};
    const int64_t ne[2] = {2, 1};
    CHECK(jg_writer_set_u32(w, "a", 7) == JEPA_OK, "set");
    CHECK(jg_writer_set_arr_str(w, "names", names, 2) == JEPA_OK, "set");
    CHECK(jg_writer_add_tensor(w, "t", GGUF_TYPE_F32, 2, ne, data, 8, &err) == JEPA_OK, "%s", err.msg);
    void *mem = NULL;
    size_t size = 0;
    CHECK(jg_writer_write_mem(w, &mem, &size, &err) == JEPA_OK, "%s", err.msg);
    CHECK(size == b.n && mem && memcmp(mem, b.p, b.n) == 0,
          "writer bytes differ from the hand-made file (%zu vs %zu bytes)", size, b.n);
    free(mem);
    jg_writer_free(w);

    /* and the reader reads the hand-made bytes */
    struct gguf_file *g = NULL;
    CHECK(jg_open_memory(&g, b.p, b.n, &err) == JEPA_OK, "%s", err.msg);
    if (g) {
        const struct gguf_kv *kv = jg_find_kv(g, "names");
        CHECK(jg_n_kv(g) == 2 && jg_n_tensors(g) == 1 && jg_version(g) == 3, "counts");
        CHECK(kv && kv->type == GGUF_V_ARRAY && kv->arr_type == GGUF_V_STRING && kv->arr_n == 2 &&
              strcmp(kv->arr_str[0], "x") == 0 && strcmp(kv->arr_str[1], "yz") == 0, "names");
        CHECK(jg_find_kv(g, "a") && jg_find_kv(g, "a")->v.u == 7, "a");
        const struct gguf_tensor *t = jg_find_tensor(g, "t");
        CHECK(t && t->data == b.p + data_at && t->nbytes == 8 && t->ne[0] == 2 && t->ne[1] == 1 &&
              t->n_dims == 2 && t->n_elements == 2, "tensor t");
        CHECK(jg_data_offset(g) == data_at && jg_alignment(g) == 32, "data offset %zu",
              jg_data_offset(g));
        jg_close(g);
    }
    free(b.p);
}

/* ---- the full sample: every value type, every tensor type ---------------------------- */

struct sample_tensor { const char *name; uint32_t type; int n_dims; int64_t ne[4]; };
static const struct sample_tensor sample_tensors[] = {
    {"s.f32", GGUF_TYPE_F32, 1, {3, 1, 1, 1}},     {"s.f16", GGUF_TYPE_F16, 2, {4, 3, 1, 1}},
    {"s.bf16", GGUF_TYPE_BF16, 3, {2, 3, 4, 1}},   {"s.q4_0", GGUF_TYPE_Q4_0, 2, {32, 2, 1, 1}},
    {"s.q4_1", GGUF_TYPE_Q4_1, 3, {64, 1, 2, 1}},  {"s.q5_0", GGUF_TYPE_Q5_0, 2, {32, 3, 1, 1}},
    {"s.q5_1", GGUF_TYPE_Q5_1, 4, {32, 1, 1, 2}},  {"s.q8_0", GGUF_TYPE_Q8_0, 2, {96, 2, 1, 1}},
    {"s.q4_K", GGUF_TYPE_Q4_K, 2, {256, 2, 1, 1}}, {"s.q5_K", GGUF_TYPE_Q5_K, 1, {256, 1, 1, 1}},
    {"s.q6_K", GGUF_TYPE_Q6_K, 2, {512, 1, 1, 1}},
};
#define N_SAMPLE_TENSORS (sizeof sample_tensors / sizeof sample_tensors[0])

static size_t sample_nbytes(const struct sample_tensor *s) {
    return jg_row_bytes(s->type, s->ne[0]) * (size_t)(s->ne[1] * s->ne[2] * s->ne[3]);
}

static const char *const sample_strs[] = {"alpha", "", "\303\274ber", "with \"q\""};
static const uint32_t arr_u32[] = {2, 5, 8, 11};
static const int16_t arr_i16[] = {-32768, -1, 0, 32767};
static const float arr_f32[] = {0.485f, -0.5f, 1e-6f};
static const double arr_f64[] = {-1.0 / 3.0, 1e300};
static const uint8_t arr_bool[] = {1, 0, 1};
static const int64_t arr_i64[] = {INT64_MIN, -1, INT64_MAX};
static const uint64_t arr_u64[] = {0, UINT64_MAX};
static const int8_t arr_i8[] = {-128, 127};
static const uint8_t arr_u8[] = {0, 255};
static const uint16_t arr_u16[] = {65535};
static const int32_t arr_i32[] = {INT32_MIN, INT32_MAX};

static struct gguf_writer *sample_writer(uint32_t alignment, bool with_tensors) {
    struct gguf_writer *w = jg_writer_new();
    struct jerr err = {0};
    int ok = w != NULL;
    uint8_t u8 = 255;
    int8_t i8 = -128;
    uint16_t u16 = 65535;
    int16_t i16 = -32768;
    int64_t i64 = INT64_MIN;
    double f64 = -1.0 / 3.0;
    ok = ok && jg_writer_set_str(w, "general.architecture", "placeholder") == JEPA_OK;
    if (alignment) ok = ok && jg_writer_set_u32(w, "general.alignment", alignment) == JEPA_OK;
    ok = ok && jg_writer_set_scalar(w, "v.u8", GGUF_V_U8, &u8) == JEPA_OK;
    ok = ok && jg_writer_set_scalar(w, "v.i8", GGUF_V_I8, &i8) == JEPA_OK;
    ok = ok && jg_writer_set_scalar(w, "v.u16", GGUF_V_U16, &u16) == JEPA_OK;
    ok = ok && jg_writer_set_scalar(w, "v.i16", GGUF_V_I16, &i16) == JEPA_OK;
    ok = ok && jg_writer_set_u32(w, "v.u32", 4000000000u) == JEPA_OK;
    ok = ok && jg_writer_set_i32(w, "v.i32", INT32_MIN) == JEPA_OK;
    ok = ok && jg_writer_set_f32(w, "v.f32", 1e-6f) == JEPA_OK;
    ok = ok && jg_writer_set_bool(w, "v.bool", true) == JEPA_OK;
    ok = ok && jg_writer_set_str(w, "v.str", "vjepa2") == JEPA_OK;
    ok = ok && jg_writer_set_u64(w, "v.u64", UINT64_MAX) == JEPA_OK;
    ok = ok && jg_writer_set_scalar(w, "v.i64", GGUF_V_I64, &i64) == JEPA_OK;
    ok = ok && jg_writer_set_scalar(w, "v.f64", GGUF_V_F64, &f64) == JEPA_OK;
    ok = ok && jg_writer_set_arr(w, "a.u8", GGUF_V_U8, arr_u8, 2) == JEPA_OK;
    ok = ok && jg_writer_set_arr(w, "a.i8", GGUF_V_I8, arr_i8, 2) == JEPA_OK;
    ok = ok && jg_writer_set_arr(w, "a.u16", GGUF_V_U16, arr_u16, 1) == JEPA_OK;
    ok = ok && jg_writer_set_arr(w, "a.i16", GGUF_V_I16, arr_i16, 4) == JEPA_OK;
    ok = ok && jg_writer_set_arr(w, "a.u32", GGUF_V_U32, arr_u32, 4) == JEPA_OK;
    ok = ok && jg_writer_set_arr(w, "a.i32", GGUF_V_I32, arr_i32, 2) == JEPA_OK;
    ok = ok && jg_writer_set_arr(w, "a.f32", GGUF_V_F32, arr_f32, 3) == JEPA_OK;
    ok = ok && jg_writer_set_arr(w, "a.bool", GGUF_V_BOOL, arr_bool, 3) == JEPA_OK;
    ok = ok && jg_writer_set_arr(w, "a.u64", GGUF_V_U64, arr_u64, 2) == JEPA_OK;
    ok = ok && jg_writer_set_arr(w, "a.i64", GGUF_V_I64, arr_i64, 3) == JEPA_OK;
    ok = ok && jg_writer_set_arr(w, "a.f64", GGUF_V_F64, arr_f64, 2) == JEPA_OK;
    ok = ok && jg_writer_set_arr(w, "a.empty", GGUF_V_F32, NULL, 0) == JEPA_OK;
    ok = ok && jg_writer_set_arr_str(w, "a.str", sample_strs, 4) == JEPA_OK;
    ok = ok && jg_writer_set_arr_str(w, "a.str_empty", NULL, 0) == JEPA_OK;
    /* replacement: keeps the first position, takes the new type */
    ok = ok && jg_writer_set_str(w, "general.architecture", "jepa") == JEPA_OK;
    ok = ok && jg_writer_set_u32(w, "v.u8", 1) == JEPA_OK;
    ok = ok && jg_writer_set_scalar(w, "v.u8", GGUF_V_U8, &u8) == JEPA_OK;
    for (size_t i = 0; ok && with_tensors && i < N_SAMPLE_TENSORS; i++) {
        const struct sample_tensor *s = &sample_tensors[i];
        size_t n = sample_nbytes(s);
        uint8_t *d = malloc(n);
        ok = d != NULL;
        if (!ok) break;
        tc_fill(d, n, 100 + i);
        ok = jg_writer_add_tensor(w, s->name, s->type, s->n_dims, s->ne, d, n, &err) == JEPA_OK;
        free(d);
    }
    CHECK(ok, "building the sample writer failed: %s", err.msg);
    if (!ok) {
        jg_writer_free(w);
        return NULL;
    }
    return w;
}

static const char *const sample_keys[] = {
    "general.architecture", "v.u8", "v.i8", "v.u16", "v.i16", "v.u32", "v.i32", "v.f32", "v.bool",
    "v.str", "v.u64", "v.i64", "v.f64", "a.u8", "a.i8", "a.u16", "a.i16", "a.u32", "a.i32", "a.f32",
    "a.bool", "a.u64", "a.i64", "a.f64", "a.empty", "a.str", "a.str_empty",
};

static void check_sample(const struct gguf_file *g, const uint8_t *base, size_t align,
                         const char *where) {
    size_t nk = sizeof sample_keys / sizeof sample_keys[0];
    CHECK(jg_version(g) == 3, "%s: version", where);
    CHECK(jg_alignment(g) == align, "%s: alignment %zu", where, jg_alignment(g));
    CHECK(jg_n_kv(g) == (int64_t)nk + (align != 32), "%s: n_kv %lld", where, (long long)jg_n_kv(g));
    CHECK(jg_n_tensors(g) == (int64_t)N_SAMPLE_TENSORS, "%s: n_tensors", where);
    /* order: insertion order, replaced keys in their first place */
    for (int64_t i = 0, k = 0; i < jg_n_kv(g); i++) {
        const char *key = jg_kv_at(g, i)->key;
        if (strcmp(key, "general.alignment") == 0) continue;
        CHECK((size_t)k < nk && strcmp(key, sample_keys[k]) == 0, "%s: kv %lld is '%s'", where,
              (long long)i, key);
        k++;
    }
    const struct gguf_kv *kv;
#define KV(name, ty) ((kv = jg_find_kv(g, name)) != NULL && kv->type == (ty))
    CHECK(KV("general.architecture", GGUF_V_STRING) && strcmp(kv->v.s, "jepa") == 0, "%s: arch", where);
    CHECK(KV("v.u8", GGUF_V_U8) && kv->v.u == 255, "%s: u8", where);
    CHECK(KV("v.i8", GGUF_V_I8) && kv->v.i == -128, "%s: i8", where);
    CHECK(KV("v.u16", GGUF_V_U16) && kv->v.u == 65535, "%s: u16", where);
    CHECK(KV("v.i16", GGUF_V_I16) && kv->v.i == -32768, "%s: i16", where);
    CHECK(KV("v.u32", GGUF_V_U32) && kv->v.u == 4000000000u, "%s: u32", where);
    CHECK(KV("v.i32", GGUF_V_I32) && kv->v.i == INT32_MIN, "%s: i32", where);
    CHECK(KV("v.f32", GGUF_V_F32) && kv->v.f == (double)1e-6f, "%s: f32", where);
    CHECK(KV("v.bool", GGUF_V_BOOL) && kv->v.u == 1, "%s: bool", where);
    CHECK(KV("v.str", GGUF_V_STRING) && strcmp(kv->v.s, "vjepa2") == 0, "%s: str", where);
    CHECK(KV("v.u64", GGUF_V_U64) && kv->v.u == UINT64_MAX, "%s: u64", where);
    CHECK(KV("v.i64", GGUF_V_I64) && kv->v.i == INT64_MIN, "%s: i64", where);
    CHECK(KV("v.f64", GGUF_V_F64) && kv->v.f == -1.0 / 3.0, "%s: f64", where);
#define ARR(name, et, n) (KV(name, GGUF_V_ARRAY) && kv->arr_type == (et) && kv->arr_n == (n))
    CHECK(ARR("a.u8", GGUF_V_U8, 2) && jg_arr_u64(kv, 1) == 255, "%s: a.u8", where);
    CHECK(ARR("a.i8", GGUF_V_I8, 2) && jg_arr_i64(kv, 0) == -128 && jg_arr_i64(kv, 1) == 127, "%s: a.i8", where);
    CHECK(ARR("a.u16", GGUF_V_U16, 1) && jg_arr_u64(kv, 0) == 65535, "%s: a.u16", where);
    CHECK(ARR("a.i16", GGUF_V_I16, 4), "%s: a.i16", where);
    for (int i = 0; i < 4 && kv && kv->arr_n == 4; i++)
        CHECK(jg_arr_i64(kv, (uint64_t)i) == arr_i16[i], "%s: a.i16[%d]", where, i);
    CHECK(ARR("a.u32", GGUF_V_U32, 4), "%s: a.u32", where);
    for (int i = 0; i < 4 && kv && kv->arr_n == 4; i++)
        CHECK(jg_arr_u64(kv, (uint64_t)i) == arr_u32[i], "%s: a.u32[%d]", where, i);
    CHECK(ARR("a.i32", GGUF_V_I32, 2) && jg_arr_i64(kv, 0) == INT32_MIN && jg_arr_i64(kv, 1) == INT32_MAX,
          "%s: a.i32", where);
    CHECK(ARR("a.f32", GGUF_V_F32, 3) && jg_arr_f64(kv, 0) == (double)0.485f &&
          jg_arr_f64(kv, 2) == (double)1e-6f, "%s: a.f32", where);
    CHECK(ARR("a.bool", GGUF_V_BOOL, 3) && jg_arr_u64(kv, 0) == 1 && jg_arr_u64(kv, 1) == 0,
          "%s: a.bool", where);
    CHECK(ARR("a.u64", GGUF_V_U64, 2) && jg_arr_u64(kv, 1) == UINT64_MAX, "%s: a.u64", where);
    CHECK(ARR("a.i64", GGUF_V_I64, 3) && jg_arr_i64(kv, 0) == INT64_MIN && jg_arr_i64(kv, 2) == INT64_MAX,
          "%s: a.i64", where);
    CHECK(ARR("a.f64", GGUF_V_F64, 2) && jg_arr_f64(kv, 0) == -1.0 / 3.0 && jg_arr_f64(kv, 1) == 1e300,
          "%s: a.f64", where);
    CHECK(ARR("a.empty", GGUF_V_F32, 0), "%s: a.empty", where);
    CHECK(ARR("a.str", GGUF_V_STRING, 4), "%s: a.str", where);
    for (int i = 0; i < 4 && kv && kv->arr_n == 4; i++)
        CHECK(strcmp(kv->arr_str[i], sample_strs[i]) == 0, "%s: a.str[%d]", where, i);
    CHECK(ARR("a.str_empty", GGUF_V_STRING, 0), "%s: a.str_empty", where);
    CHECK(jg_find_kv(g, "missing") == NULL && jg_find_kv(g, "") == NULL, "%s: absent keys", where);

    /* tensors: order, shape, bytes, placement */
    size_t expect_off = 0;
    for (size_t i = 0; i < N_SAMPLE_TENSORS; i++) {
        const struct sample_tensor *s = &sample_tensors[i];
        const struct gguf_tensor *t = jg_tensor_at(g, (int64_t)i);
        CHECK(t && jg_find_tensor(g, s->name) == t, "%s: tensor %zu", where, i);
        if (!t) continue;
        size_t n = sample_nbytes(s);
        uint8_t *d = malloc(n);
        if (!d) abort();
        tc_fill(d, n, 100 + i);
        CHECK(strcmp(t->name, s->name) == 0 && t->type == s->type && t->n_dims == s->n_dims &&
              memcmp(t->ne, s->ne, sizeof t->ne) == 0 && t->nbytes == n &&
              t->n_elements == s->ne[0] * s->ne[1] * s->ne[2] * s->ne[3],
              "%s: tensor %s info", where, s->name);
        CHECK(memcmp(t->data, d, n) == 0, "%s: tensor %s bytes", where, s->name);
        size_t at = (size_t)((const uint8_t *)t->data - base);
        CHECK(at % align == 0 && at == jg_data_offset(g) + t->offset && t->offset == expect_off,
              "%s: tensor %s at %zu (offset %llu, expected %zu)", where, s->name, at,
              (unsigned long long)t->offset, expect_off);
        expect_off += (n + align - 1) / align * align;
        free(d);
    }
    CHECK(jg_data_offset(g) % align == 0 && jg_data_offset(g) + expect_off == jg_file_size(g),
          "%s: data section [%zu, +%zu] vs file %zu", where, jg_data_offset(g), expect_off,
          jg_file_size(g));
    CHECK(jg_tensor_at(g, -1) == NULL && jg_tensor_at(g, jg_n_tensors(g)) == NULL &&
          jg_kv_at(g, jg_n_kv(g)) == NULL && jg_find_tensor(g, "s.nope") == NULL, "%s: bounds", where);
#undef KV
#undef ARR
}

static char tmpdir[256];

static int file_exists(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0;
}

/* Is a temporary of path's writer left in its directory (".<name>.XXXXXX",
 * runtime/outfile.h)? */
static int temp_left(const char *path) {
    char dir[512], pfx[256];
    const char *slash = strrchr(path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    snprintf(pfx, sizeof pfx, ".%s.", slash ? slash + 1 : path);
    DIR *d = opendir(dir);
    int found = 0;
    for (struct dirent *de; d && (de = readdir(d));)
        if (!strncmp(de->d_name, pfx, strlen(pfx))) found = 1;
    if (d) closedir(d);
    return found;
}

static void test_sample(uint32_t alignment) {
    size_t align = alignment ? alignment : 32;
    char where[64];
    struct jerr err = {0};
    struct gguf_writer *w = sample_writer(alignment, true);
    if (!w) return;
    void *mem = NULL;
    size_t size = 0;
    CHECK(jg_writer_write_mem(w, &mem, &size, &err) == JEPA_OK, "write_mem: %s", err.msg);

    /* from memory: copy into a buffer aligned like a mapping */
    uint8_t *buf = aligned_alloc(4096, (size + 4095) / 4096 * 4096);
    if (!buf) abort();
    memcpy(buf, mem, size);
    struct gguf_file *g = NULL;
    snprintf(where, sizeof where, "memory, alignment %zu", align);
    CHECK(jg_open_memory(&g, buf, size, &err) == JEPA_OK, "%s: %s", where, err.msg);
    if (g) check_sample(g, buf, align, where);
    jg_close(g);

    /* to a file and back */
    char path[512], tmp[520];
    snprintf(path, sizeof path, "%s/sample%zu.gguf", tmpdir, align);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    /* a symlink planted at the name a writer might use must not redirect the write */
    char victim[560];
    snprintf(victim, sizeof victim, "%s/victim%zu", tmpdir, align);
    FILE *vf = fopen(victim, "w");
    if (vf) fputs("keep", vf), fclose(vf);
    CHECK(symlink(victim, tmp) == 0, "symlink %s", tmp);
    CHECK(jg_writer_write(w, path, &err) == JEPA_OK, "write: %s", err.msg);
    CHECK(!temp_left(path), "a temporary of %s is left after a successful write", path);
    vf = fopen(victim, "r");
    char vb[8] = "";
    if (vf) { if (!fgets(vb, sizeof vb, vf)) vb[0] = 0; fclose(vf); }
    CHECK(!strcmp(vb, "keep"), "the write went through the planted symlink %s", tmp);
    unlink(tmp), unlink(victim);
    FILE *f = fopen(path, "rb");
    uint8_t *back = malloc(size + 1);
    size_t got = f && back ? fread(back, 1, size + 1, f) : 0;
    CHECK(got == size && memcmp(back, mem, size) == 0, "file bytes (%zu) != write_mem bytes (%zu)", got, size);
    if (f) fclose(f);
    free(back);
    snprintf(where, sizeof where, "file, alignment %zu", align);
    g = NULL;
    CHECK(jg_open(&g, path, &err) == JEPA_OK, "%s: %s", where, err.msg);
    if (g) {
        const struct gguf_tensor *t0 = jg_tensor_at(g, 0);
        check_sample(g, (const uint8_t *)t0->data - jg_data_offset(g), align, where);
        CHECK((uintptr_t)t0->data % align == 0, "%s: mapped data not aligned", where);
    }

    /* copy_kv reproduces the metadata: copying every kv of the file gives the same bytes
     * as the sample writer without its tensors */
    if (g) {
        struct gguf_writer *c = jg_writer_new();
        struct gguf_writer *w0 = sample_writer(alignment, false);
        void *m1 = NULL, *m2 = NULL;
        size_t s1 = 0, s2 = 0;
        CHECK(c && jg_writer_copy_kv(c, g) == JEPA_OK, "copy_kv");
        CHECK(jg_writer_write_mem(c, &m1, &s1, &err) == JEPA_OK, "%s", err.msg);
        CHECK(w0 && jg_writer_write_mem(w0, &m2, &s2, &err) == JEPA_OK, "%s", err.msg);
        CHECK(m1 && m2 && s1 == s2 && memcmp(m1, m2, s1) == 0,
              "copy_kv output (%zu bytes) differs from the original kvs (%zu bytes)", s1, s2);
        free(m1);
        free(m2);
        jg_writer_free(w0);
        jg_writer_free(c);
    }
    jg_close(g);
    unlink(path);
    free(buf);
    free(mem);
    jg_writer_free(w);
}

static void test_version2(void) {
    struct gguf_writer *w = sample_writer(0, true);
    void *mem = NULL;
    size_t size = 0;
    struct jerr err = {0};
    if (!w || jg_writer_write_mem(w, &mem, &size, &err) != JEPA_OK) {
        CHECK(0, "write_mem: %s", err.msg);
        jg_writer_free(w);
        return;
    }
    ((uint8_t *)mem)[4] = 2;
    struct gguf_file *g = NULL;
    CHECK(jg_open_memory(&g, mem, size, &err) == JEPA_OK, "version 2: %s", err.msg);
    CHECK(g && jg_version(g) == 2 && jg_n_tensors(g) == (int64_t)N_SAMPLE_TENSORS, "version 2 view");
    jg_close(g);
    free(mem);
    jg_writer_free(w);
}

static void test_write_failures(void) {
    struct jerr err = {0};
    struct gguf_writer *w = jg_writer_new();
    const float one = 1.0f;
    const int64_t ne1[1] = {1};
    CHECK(jg_writer_add_tensor(w, "t", GGUF_TYPE_F32, 1, ne1, &one, 4, &err) == JEPA_OK, "%s", err.msg);

    /* a directory that does not exist */
    char path[512], tmp[520];
    snprintf(path, sizeof path, "%s/no/such/dir/x.gguf", tmpdir);
    jr_err_clear(&err);
    CHECK(jg_writer_write(w, path, &err) == JEPA_ERR_IO, "write into a missing dir must fail");
    CHECK(strstr(err.msg, "cannot create") != NULL, "message: %s", err.msg);
    CHECK(!file_exists(path), "nothing may be created");

    /* PATH is a directory: refused before anything is written (renaming over it would
     * fail; renaming over a device or FIFO would replace it), no .tmp is left */
    snprintf(path, sizeof path, "%s/isdir.gguf", tmpdir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    char inner[600];
    snprintf(inner, sizeof inner, "%s/keep", path);
    CHECK(mkdir(path, 0755) == 0, "mkdir %s", path);
    FILE *f = fopen(inner, "w");
    if (f) fclose(f);
    jr_err_clear(&err);
    CHECK(jg_writer_write(w, path, &err) == JEPA_ERR_IO, "writing over a directory must fail");
    CHECK(strstr(err.msg, "not a regular file") != NULL, "message: %s", err.msg);
    CHECK(!temp_left(path), "the temporary of %s must be removed after a failed write", path);
    CHECK(file_exists(inner), "the directory must be left alone");
    unlink(inner);
    rmdir(path);

    /* a write that fails half-way (file size limit, as on a full disk): the .tmp goes,
     * nothing appears at PATH. In a child, so the limit stays there. */
    snprintf(path, sizeof path, "%s/efbig.gguf", tmpdir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    struct gguf_writer *big = sample_writer(0, true);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {100, 100};
        struct jerr cerr = {0};
        int ok = big && setrlimit(RLIMIT_FSIZE, &rl) == 0 &&
                 jg_writer_write(big, path, &cerr) == JEPA_ERR_IO &&
                 strstr(cerr.msg, "cannot write") && !temp_left(path) && !file_exists(path);
        if (!ok) fprintf(stderr, "EFBIG child: %s\n", cerr.msg);
        _exit(ok ? 0 : 1);
    }
    int wst = 0;
    CHECK(pid > 0 && waitpid(pid, &wst, 0) == pid && WIFEXITED(wst) && WEXITSTATUS(wst) == 0,
          "a write cut short by RLIMIT_FSIZE must fail with IO and leave nothing");
    CHECK(!temp_left(path) && !file_exists(path), "nothing may be left after a failed write");
    jg_writer_free(big);

    /* a bad general.alignment refuses the write */
    CHECK(jg_writer_set_u32(w, "general.alignment", 48) == JEPA_OK, "set");
    jr_err_clear(&err);
    void *mem = NULL;
    size_t size = 0;
    CHECK(jg_writer_write_mem(w, &mem, &size, &err) == JEPA_ERR_ARG && mem == NULL,
          "alignment 48 must be refused");
    CHECK(strstr(err.msg, "general.alignment") != NULL, "message: %s", err.msg);
    CHECK(jg_writer_set_i32(w, "general.alignment", 32) == JEPA_OK, "set");
    jr_err_clear(&err);
    snprintf(path, sizeof path, "%s/badalign.gguf", tmpdir);
    CHECK(jg_writer_write(w, path, &err) == JEPA_ERR_ARG, "i32 alignment must be refused");
    CHECK(!file_exists(path), "nothing may be written");
    jg_writer_free(w);

    /* bad tensors and values */
    w = jg_writer_new();
    uint8_t q[68] = {0};
    const int64_t ne64[2] = {64, 1}, ne33[1] = {33}, ne0[2] = {32, 0};
    char longname[80];
    memset(longname, 'n', 64);
    longname[64] = '\0';
#define REFUSED(call, substr)                                                             \
    do {                                                                                  \
        jr_err_clear(&err);                                                                 \
        CHECK((call) == JEPA_ERR_ARG && strstr(err.msg, substr), #call ": %s", err.msg); \
    } while (0)
    CHECK(jg_writer_add_tensor(w, "q", GGUF_TYPE_Q8_0, 2, ne64, q, 68, &err) == JEPA_OK, "%s", err.msg);
    REFUSED(jg_writer_add_tensor(w, "q", GGUF_TYPE_Q8_0, 2, ne64, q, 68, &err), "duplicate");
    REFUSED(jg_writer_add_tensor(w, "q2", GGUF_TYPE_Q8_0, 2, ne64, q, 67, &err), "expected 68");
    REFUSED(jg_writer_add_tensor(w, "q3", GGUF_TYPE_Q8_0, 1, ne33, q, 34, &err), "block size");
    REFUSED(jg_writer_add_tensor(w, "q4", 20, 2, ne64, q, 68, &err), "no layout");
    REFUSED(jg_writer_add_tensor(w, "q5", GGUF_TYPE_F32, 0, ne64, q, 68, &err), "n_dims");
    REFUSED(jg_writer_add_tensor(w, "q6", GGUF_TYPE_F32, 5, ne64, q, 68, &err), "n_dims");
    REFUSED(jg_writer_add_tensor(w, "q7", GGUF_TYPE_F32, 2, ne0, q, 0, &err), "ne[1]");
    REFUSED(jg_writer_add_tensor(w, longname, GGUF_TYPE_Q8_0, 2, ne64, q, 68, &err), "at most 63");
    REFUSED(jg_writer_add_tensor(w, "", GGUF_TYPE_Q8_0, 2, ne64, q, 68, &err), "empty");
    longname[63] = '\0';
    CHECK(jg_writer_add_tensor(w, longname, GGUF_TYPE_Q8_0, 2, ne64, q, 68, &err) == JEPA_OK,
          "a 63-byte name is fine: %s", err.msg);
    uint8_t two = 2;
    CHECK(jg_writer_set_scalar(w, "b", GGUF_V_BOOL, &two) == JEPA_ERR_ARG, "bool 2");
    CHECK(jg_writer_set_arr(w, "b", GGUF_V_BOOL, &two, 1) == JEPA_ERR_ARG, "bool array 2");
    CHECK(jg_writer_set_scalar(w, "s", GGUF_V_STRING, "x") == JEPA_ERR_ARG, "scalar string");
    CHECK(jg_writer_set_arr(w, "s", GGUF_V_ARRAY, q, 1) == JEPA_ERR_ARG, "nested array");
    CHECK(jg_writer_set_u32(w, "", 1) == JEPA_ERR_ARG, "empty key");
    CHECK(jg_writer_set_str(w, "k", NULL) == JEPA_ERR_ARG, "NULL string");
#undef REFUSED
    jg_writer_free(w);
}

static void test_format(void) {
    char buf[256];
    struct gguf_kv kv = {0};
    kv.key = "k";
    kv.type = GGUF_V_U32; kv.v.u = 42;
    jg_kv_format(&kv, buf, sizeof buf, 4);
    CHECK(strcmp(buf, "42") == 0, "u32: %s", buf);
    kv.type = GGUF_V_I64; kv.v.i = -7;
    jg_kv_format(&kv, buf, sizeof buf, 4);
    CHECK(strcmp(buf, "-7") == 0, "i64: %s", buf);
    kv.type = GGUF_V_F32; kv.v.f = 1e-6f;
    jg_kv_format(&kv, buf, sizeof buf, 4);
    CHECK(strcmp(buf, "1e-06") == 0, "f32: %s", buf);
    kv.type = GGUF_V_F32; kv.v.f = 0.003921569f;
    jg_kv_format(&kv, buf, sizeof buf, 4);
    CHECK(strcmp(buf, "0.003921569") == 0, "f32: %s", buf);
    kv.type = GGUF_V_F64; kv.v.f = 0.1;
    jg_kv_format(&kv, buf, sizeof buf, 4);
    CHECK(strcmp(buf, "0.1") == 0, "f64: %s", buf);
    kv.type = GGUF_V_BOOL; kv.v.u = 0;
    jg_kv_format(&kv, buf, sizeof buf, 4);
    CHECK(strcmp(buf, "false") == 0, "bool: %s", buf);
    kv.type = GGUF_V_STRING; kv.v.s = "vjepa2";
    jg_kv_format(&kv, buf, sizeof buf, 4);
    CHECK(strcmp(buf, "\"vjepa2\"") == 0, "string: %s", buf);
    kv.v.s = "a\"b\n";
    jg_kv_format(&kv, buf, sizeof buf, 4);
    CHECK(strcmp(buf, "\"a\\\"b\\n\"") == 0, "escaped string: %s", buf);

    uint8_t raw[16];
    for (int i = 0; i < 4; i++) tb_poke(raw, (size_t)i * 4, arr_u32[i], 4);
    kv.type = GGUF_V_ARRAY; kv.arr_type = GGUF_V_U32; kv.arr_n = 4; kv.arr_data = raw;
    jg_kv_format(&kv, buf, sizeof buf, 8);
    CHECK(strcmp(buf, "[2, 5, 8, 11]") == 0, "array: %s", buf);
    jg_kv_format(&kv, buf, sizeof buf, 2);
    CHECK(strcmp(buf, "[2, 5, ... (4 items)]") == 0, "array, 2 items: %s", buf);
    jg_kv_format(&kv, buf, sizeof buf, 0);
    CHECK(strcmp(buf, "[4 x u32]") == 0, "array, 0 items: %s", buf);
    jg_kv_format(&kv, buf, 6, 8);
    CHECK(strlen(buf) == 5 && strncmp(buf, "[2, 5", 5) == 0, "truncated: %s", buf);
    const char *strs[] = {"a", "b", "c"};
    kv.arr_type = GGUF_V_STRING; kv.arr_n = 3; kv.arr_data = NULL; kv.arr_str = strs;
    jg_kv_format(&kv, buf, sizeof buf, 2);
    CHECK(strcmp(buf, "[\"a\", \"b\", ... (3 items)]") == 0, "string array: %s", buf);
    jg_kv_format(&kv, buf, sizeof buf, 0);
    CHECK(strcmp(buf, "[3 strings]") == 0, "string array, 0 items: %s", buf);
    kv.arr_n = 0;
    jg_kv_format(&kv, buf, sizeof buf, 0);
    CHECK(strcmp(buf, "[]") == 0, "empty array: %s", buf);
    jg_kv_format(&kv, buf, 0, 0);   /* must not write */

    /* conversions of the array accessors */
    uint8_t f[8];
    float vals[2] = {-3.5f, 1e30f};
    memcpy(f, vals, 8);
    kv.arr_type = GGUF_V_F32; kv.arr_n = 2; kv.arr_data = f; kv.arr_str = NULL;
    CHECK(jg_arr_i64(&kv, 0) == -3 && jg_arr_u64(&kv, 0) == 0 && jg_arr_u64(&kv, 1) == UINT64_MAX,
          "f32 conversions");
    CHECK(jg_arr_f64(&kv, 5) == 0 && jg_arr_u64(&kv, 2) == 0, "out of range index gives 0");
    int8_t m1 = -1;
    kv.arr_type = GGUF_V_I8; kv.arr_n = 1; kv.arr_data = &m1;
    CHECK(jg_arr_i64(&kv, 0) == -1 && jg_arr_u64(&kv, 0) == 0 && jg_arr_f64(&kv, 0) == -1.0,
          "i8 conversions");
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/jepa-gguf-test-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_types();
    test_golden_bytes();
    test_sample(0);
    test_sample(64);
    test_version2();
    test_write_failures();
    test_format();
    rmdir(tmpdir);
    return check_finish("test_gguf_roundtrip");
}
