/*
 * gguf_write_sample.c — write a GGUF with our writer that exercises every value type,
 * numeric and string arrays (empty ones too), a replaced key and one tensor of every
 * schema-v1 tensor type (1-D to 4-D, deterministic pseudo-random bytes), plus a JSON
 * description of exactly what was written, built from the same in-memory values (not by
 * reading the file back). tests/gguf/check_gguf_py.py reads the GGUF with ggml's gguf-py
 * and checks it against the JSON.
 *
 * usage: gguf_write_sample OUT.gguf OUT.json [ALIGNMENT]
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "tcheck.h"

static FILE *js;
static int n_kv_written;

static void json_str(const char *s) {
    fputc('"', js);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(js, "\\%c", *p);
        else if (*p < 0x20) fprintf(js, "\\u%04x", *p);
        else fputc(*p, js);
    }
    fputc('"', js);
}

static void json_f(double v, int f32) {
    if (isnan(v)) fprintf(js, "NaN");
    else if (isinf(v)) fprintf(js, v < 0 ? "-Infinity" : "Infinity");
    else fprintf(js, f32 ? "%.9g" : "%.17g", v);
}

static void kv_begin(const char *key, const char *type, const char *elem) {
    fprintf(js, "%s  {\"key\": ", n_kv_written++ ? ",\n" : "");
    json_str(key);
    fprintf(js, ", \"type\": \"%s\"", type);
    if (elem) fprintf(js, ", \"elem\": \"%s\"", elem);
    fprintf(js, ", \"value\": ");
}

static int fail_st(jepa_status st, const char *what) {
    fprintf(stderr, "gguf_write_sample: %s failed: %s\n", what, jr_status_str(st));
    return 1;
}

#define TRY(call)                                        \
    do {                                                 \
        jepa_status st_ = (call);                        \
        if (st_ != JEPA_OK) return fail_st(st_, #call);  \
    } while (0)

int main(int argc, char **argv) {
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: gguf_write_sample OUT.gguf OUT.json [ALIGNMENT]\n");
        return 2;
    }
    uint32_t align = argc == 4 ? (uint32_t)strtoul(argv[3], NULL, 10) : 0;
    struct gguf_writer *w = jg_writer_new();
    js = fopen(argv[2], "w");
    if (!w || !js) return fail_st(JEPA_ERR_IO, "setup");
    fprintf(js, "{\"alignment\": %u,\n \"kv\": [\n", align ? align : GGUF_DEFAULT_ALIGNMENT);

    /* a key set first and replaced at the end keeps its first position */
    TRY(jg_writer_set_str(w, "general.architecture", "to be replaced"));
    kv_begin("general.architecture", "string", NULL);
    json_str("jepa");
    fprintf(js, "}");
    if (align) {
        TRY(jg_writer_set_u32(w, "general.alignment", align));
        kv_begin("general.alignment", "u32", NULL);
        fprintf(js, "%u}", align);
    }

    /* every scalar type, extreme values */
    uint8_t u8 = 200; int8_t i8 = -128; uint16_t u16 = 65535; int16_t i16 = -32768;
    uint32_t u32 = 4000000000u; int32_t i32 = INT32_MIN; float f32 = 0.1f;
    uint64_t u64 = UINT64_MAX; int64_t i64 = INT64_MIN; double f64 = -1.0 / 3.0;
    TRY(jg_writer_set_scalar(w, "t.u8", GGUF_V_U8, &u8));
    kv_begin("t.u8", "u8", NULL); fprintf(js, "%u}", u8);
    TRY(jg_writer_set_scalar(w, "t.i8", GGUF_V_I8, &i8));
    kv_begin("t.i8", "i8", NULL); fprintf(js, "%d}", i8);
    TRY(jg_writer_set_scalar(w, "t.u16", GGUF_V_U16, &u16));
    kv_begin("t.u16", "u16", NULL); fprintf(js, "%u}", u16);
    TRY(jg_writer_set_scalar(w, "t.i16", GGUF_V_I16, &i16));
    kv_begin("t.i16", "i16", NULL); fprintf(js, "%d}", i16);
    TRY(jg_writer_set_u32(w, "t.u32", u32));
    kv_begin("t.u32", "u32", NULL); fprintf(js, "%" PRIu32 "}", u32);
    TRY(jg_writer_set_i32(w, "t.i32", i32));
    kv_begin("t.i32", "i32", NULL); fprintf(js, "%" PRId32 "}", i32);
    TRY(jg_writer_set_f32(w, "t.f32", f32));
    kv_begin("t.f32", "f32", NULL); json_f(f32, 1); fprintf(js, "}");
    TRY(jg_writer_set_bool(w, "t.bool_true", true));
    kv_begin("t.bool_true", "bool", NULL); fprintf(js, "true}");
    TRY(jg_writer_set_bool(w, "t.bool_false", false));
    kv_begin("t.bool_false", "bool", NULL); fprintf(js, "false}");
    TRY(jg_writer_set_u64(w, "t.u64", u64));
    kv_begin("t.u64", "u64", NULL); fprintf(js, "%" PRIu64 "}", u64);
    TRY(jg_writer_set_scalar(w, "t.i64", GGUF_V_I64, &i64));
    kv_begin("t.i64", "i64", NULL); fprintf(js, "%" PRId64 "}", i64);
    TRY(jg_writer_set_scalar(w, "t.f64", GGUF_V_F64, &f64));
    kv_begin("t.f64", "f64", NULL); json_f(f64, 0); fprintf(js, "}");
    const char *strs[] = {"hello, GGUF", "", "\303\274n\303\257c\303\270d\303\251 \342\234\223",
                          "with \"quotes\", a \\ and a\nnewline"};
    for (int k = 0; k < 4; k++) {
        char key[32];
        snprintf(key, sizeof key, "t.str%d", k);
        TRY(jg_writer_set_str(w, key, strs[k]));
        kv_begin(key, "string", NULL); json_str(strs[k]); fprintf(js, "}");
    }

    /* arrays of every numeric type, from one deterministic stream */
    uint64_t seed = 42;
    static const uint32_t elems[] = {GGUF_V_U8, GGUF_V_I8, GGUF_V_U16, GGUF_V_I16, GGUF_V_U32,
                                     GGUF_V_I32, GGUF_V_F32, GGUF_V_BOOL, GGUF_V_U64, GGUF_V_I64,
                                     GGUF_V_F64};
    for (size_t e = 0; e < sizeof elems / sizeof elems[0]; e++) {
        uint32_t et = elems[e];
        size_t es = jg_vtype_size(et), n = 5 + e;
        uint8_t buf[8 * 16];
        char key[32];
        snprintf(key, sizeof key, "t.arr_%s", jg_vtype_name(et));
        kv_begin(key, "array", jg_vtype_name(et));
        fputc('[', js);
        for (size_t k = 0; k < n; k++) {
            uint64_t r = tc_rand(&seed);
            uint8_t *p = buf + k * es;
            if (k) fprintf(js, ", ");
            switch (et) {
            case GGUF_V_U8: { uint8_t v = (uint8_t)r; memcpy(p, &v, 1); fprintf(js, "%u", v); break; }
            case GGUF_V_I8: { int8_t v = (int8_t)(r >> 56); memcpy(p, &v, 1); fprintf(js, "%d", v); break; }
            case GGUF_V_U16: { uint16_t v = (uint16_t)r; memcpy(p, &v, 2); fprintf(js, "%u", v); break; }
            case GGUF_V_I16: { int16_t v = (int16_t)(r >> 48); memcpy(p, &v, 2); fprintf(js, "%d", v); break; }
            case GGUF_V_U32: { uint32_t v = (uint32_t)r; memcpy(p, &v, 4); fprintf(js, "%" PRIu32, v); break; }
            case GGUF_V_I32: { int32_t v = (int32_t)(r >> 32); memcpy(p, &v, 4); fprintf(js, "%" PRId32, v); break; }
            case GGUF_V_F32: {
                float v = k == 0 ? INFINITY : k == 1 ? NAN : k == 2 ? 1e-45f
                        : (float)((double)(int64_t)r / 9.2e15);
                memcpy(p, &v, 4); json_f(v, 1); break;
            }
            case GGUF_V_BOOL: { uint8_t v = (uint8_t)(r & 1); memcpy(p, &v, 1); fprintf(js, "%s", v ? "true" : "false"); break; }
            case GGUF_V_U64: { uint64_t v = r; memcpy(p, &v, 8); fprintf(js, "%" PRIu64, v); break; }
            case GGUF_V_I64: { int64_t v = (int64_t)r; memcpy(p, &v, 8); fprintf(js, "%" PRId64, v); break; }
            case GGUF_V_F64: {
                double v = k == 0 ? -INFINITY : (double)(int64_t)r / 3e10;
                memcpy(p, &v, 8); json_f(v, 0); break;
            }
            }
        }
        fprintf(js, "]}");
        TRY(jg_writer_set_arr(w, key, et, buf, n));
    }
    TRY(jg_writer_set_arr(w, "t.arr_empty", GGUF_V_U32, NULL, 0));
    kv_begin("t.arr_empty", "array", "u32"); fprintf(js, "[]}");
    TRY(jg_writer_set_arr_str(w, "t.arr_str", strs, 4));
    kv_begin("t.arr_str", "array", "string");
    fputc('[', js);
    for (int k = 0; k < 4; k++) { if (k) fprintf(js, ", "); json_str(strs[k]); }
    fprintf(js, "]}");
    TRY(jg_writer_set_arr_str(w, "t.arr_str_empty", NULL, 0));
    kv_begin("t.arr_str_empty", "array", "string"); fprintf(js, "[]}");
    TRY(jg_writer_set_str(w, "general.architecture", "jepa"));     /* the replacement */

    /* one tensor of every schema-v1 type */
    struct { const char *name; uint32_t type; int n_dims; int64_t ne[4]; } ts[] = {
        {"s.f32", GGUF_TYPE_F32, 1, {3}},
        {"s.f16", GGUF_TYPE_F16, 2, {4, 3}},
        {"s.bf16", GGUF_TYPE_BF16, 3, {2, 3, 4}},
        {"s.q4_0", GGUF_TYPE_Q4_0, 2, {32, 2}},
        {"s.q4_1", GGUF_TYPE_Q4_1, 3, {64, 1, 2}},
        {"s.q5_0", GGUF_TYPE_Q5_0, 2, {32, 3}},
        {"s.q5_1", GGUF_TYPE_Q5_1, 4, {32, 1, 1, 2}},
        {"s.q8_0", GGUF_TYPE_Q8_0, 2, {96, 2}},
        {"s.q4_K", GGUF_TYPE_Q4_K, 2, {256, 2}},
        {"s.q5_K", GGUF_TYPE_Q5_K, 1, {256}},
        {"s.q6_K", GGUF_TYPE_Q6_K, 2, {512, 1}},
    };
    fprintf(js, "\n ],\n \"tensors\": [\n");
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
        int64_t rows = 1;
        for (int d = 1; d < ts[i].n_dims; d++) rows *= ts[i].ne[d];
        size_t nbytes = jg_row_bytes(ts[i].type, ts[i].ne[0]) * (size_t)rows;
        uint8_t *data = malloc(nbytes);
        if (!data) return fail_st(JEPA_ERR_NOMEM, "malloc");
        tc_fill(data, nbytes, 1000 + i);
        struct jerr err = {0};
        TRY(jg_writer_add_tensor(w, ts[i].name, ts[i].type, ts[i].n_dims, ts[i].ne, data, nbytes, &err));
        fprintf(js, "%s  {\"name\": \"%s\", \"type\": %u, \"ne\": [", i ? ",\n" : "", ts[i].name, ts[i].type);
        for (int d = 0; d < ts[i].n_dims; d++) fprintf(js, "%s%" PRId64, d ? ", " : "", ts[i].ne[d]);
        fprintf(js, "], \"nbytes\": %zu, \"hex\": \"", nbytes);
        for (size_t k = 0; k < nbytes; k++) fprintf(js, "%02x", data[k]);
        fprintf(js, "\"}");
        free(data);
    }
    fprintf(js, "\n ]}\n");
    if (fclose(js) != 0) return fail_st(JEPA_ERR_IO, "writing the JSON");
    struct jerr err = {0};
    if (jg_writer_write(w, argv[1], &err) != JEPA_OK) {
        fprintf(stderr, "gguf_write_sample: %s\n", err.msg);
        return 1;
    }
    jg_writer_free(w);
    return 0;
}
