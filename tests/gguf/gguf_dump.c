/*
 * gguf_dump.c — print our reader's view of a GGUF file as JSON: version, alignment,
 * data offset, every key/value (exact values: floats in shortest round-trip form,
 * whole arrays) and every tensor (name, type, shape, offsets, size, FNV-1a of its
 * bytes). tests/gguf/check_gguf_py.py compares this with ggml's gguf-py reading the
 * same file. With --text it prints one human line per kv / tensor instead
 * (jg_kv_format). Exit 1 when the file is refused (the reason on stderr).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "tcheck.h"

static void json_str(const char *s) {
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') printf("\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f) printf("\\u%04x", *p);
        else putchar(*p);
    }
    putchar('"');
}

static void json_float(double v, int is_f32) {
    if (isnan(v)) { printf("NaN"); return; }
    if (isinf(v)) { printf(v < 0 ? "-Infinity" : "Infinity"); return; }
    printf(is_f32 ? "%.9g" : "%.17g", v);
}

/* One value of type vt: scalars come from kv->v, array elements through jg_arr_*. */
static void json_elem(const struct gguf_kv *kv, uint64_t i) {
    switch (kv->arr_type) {
    case GGUF_V_BOOL: printf("%s", jg_arr_u64(kv, i) ? "true" : "false"); break;
    case GGUF_V_U8: case GGUF_V_U16: case GGUF_V_U32: case GGUF_V_U64:
        printf("%" PRIu64, jg_arr_u64(kv, i)); break;
    case GGUF_V_I8: case GGUF_V_I16: case GGUF_V_I32: case GGUF_V_I64:
        printf("%" PRId64, jg_arr_i64(kv, i)); break;
    case GGUF_V_F32: json_float(jg_arr_f64(kv, i), 1); break;
    case GGUF_V_F64: json_float(jg_arr_f64(kv, i), 0); break;
    case GGUF_V_STRING: json_str(kv->arr_str[i]); break;
    default: printf("null"); break;
    }
}

static void json_scalar(const struct gguf_kv *kv) {
    switch (kv->type) {
    case GGUF_V_BOOL: printf("%s", kv->v.u ? "true" : "false"); break;
    case GGUF_V_U8: case GGUF_V_U16: case GGUF_V_U32: case GGUF_V_U64:
        printf("%" PRIu64, kv->v.u); break;
    case GGUF_V_I8: case GGUF_V_I16: case GGUF_V_I32: case GGUF_V_I64:
        printf("%" PRId64, kv->v.i); break;
    case GGUF_V_F32: json_float(kv->v.f, 1); break;
    case GGUF_V_F64: json_float(kv->v.f, 0); break;
    case GGUF_V_STRING: json_str(kv->v.s); break;
    default: printf("null"); break;
    }
}

int main(int argc, char **argv) {
    int text = argc == 3 && strcmp(argv[2], "--text") == 0;
    if (argc < 2 || (argc == 3 && !text) || argc > 3) {
        fprintf(stderr, "usage: gguf_dump FILE.gguf [--text]\n");
        return 2;
    }
    struct jerr err = {0};
    struct gguf_file *g = NULL;
    if (jg_open(&g, argv[1], &err) != JEPA_OK) {
        fprintf(stderr, "gguf_dump: %s (%s)\n", err.msg, jr_status_str(err.status));
        return 1;
    }
    const uint8_t *base = NULL;
    if (jg_n_tensors(g) > 0) {
        const struct gguf_tensor *t0 = jg_tensor_at(g, 0);
        base = (const uint8_t *)t0->data - jg_data_offset(g) - t0->offset;
    }
    if (text) {
        char buf[512];
        printf("version %u, alignment %zu, %" PRId64 " kv, %" PRId64 " tensors, data at %zu, %zu bytes\n",
               jg_version(g), jg_alignment(g), jg_n_kv(g), jg_n_tensors(g),
               jg_data_offset(g), jg_file_size(g));
        for (int64_t i = 0; i < jg_n_kv(g); i++) {
            const struct gguf_kv *kv = jg_kv_at(g, i);
            jg_kv_format(kv, buf, sizeof buf, 8);
            printf("%-40s %-8s %s\n", kv->key, jg_vtype_name(kv->type), buf);
        }
        for (int64_t i = 0; i < jg_n_tensors(g); i++) {
            const struct gguf_tensor *t = jg_tensor_at(g, i);
            printf("%-40s %-5s [%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 "] @%" PRIu64 " %zu bytes\n",
                   t->name, jg_type_info(t->type)->name, t->ne[0], t->ne[1], t->ne[2], t->ne[3],
                   t->offset, t->nbytes);
        }
        jg_close(g);
        return 0;
    }
    printf("{\"version\": %u, \"alignment\": %zu, \"data_offset\": %zu, \"file_size\": %zu,\n",
           jg_version(g), jg_alignment(g), jg_data_offset(g), jg_file_size(g));
    printf(" \"kv\": [\n");
    for (int64_t i = 0; i < jg_n_kv(g); i++) {
        const struct gguf_kv *kv = jg_kv_at(g, i);
        printf("  {\"key\": ");
        json_str(kv->key);
        printf(", \"type\": \"%s\"", jg_vtype_name(kv->type));
        if (kv->type == GGUF_V_ARRAY) {
            printf(", \"elem\": \"%s\", \"value\": [", jg_vtype_name(kv->arr_type));
            for (uint64_t k = 0; k < kv->arr_n; k++) {
                if (k) printf(", ");
                json_elem(kv, k);
            }
            printf("]");
        } else {
            printf(", \"value\": ");
            json_scalar(kv);
        }
        printf("}%s\n", i + 1 < jg_n_kv(g) ? "," : "");
    }
    printf(" ],\n \"tensors\": [\n");
    for (int64_t i = 0; i < jg_n_tensors(g); i++) {
        const struct gguf_tensor *t = jg_tensor_at(g, i);
        printf("  {\"name\": ");
        json_str(t->name);
        printf(", \"type\": %u, \"ne\": [", t->type);
        for (int d = 0; d < t->n_dims; d++) printf("%s%" PRId64, d ? ", " : "", t->ne[d]);
        printf("], \"n_elements\": %" PRId64 ", \"offset\": %" PRIu64
               ", \"file_offset\": %zu, \"nbytes\": %zu, \"fnv1a64\": \"%016" PRIx64 "\"}%s\n",
               t->n_elements, t->offset, (size_t)((const uint8_t *)t->data - base), t->nbytes,
               tc_fnv1a(t->data, t->nbytes), i + 1 < jg_n_tensors(g) ? "," : "");
    }
    printf(" ]}\n");
    jg_close(g);
    return 0;
}
