/*
 * test_gguf_fixtures.c — read the two fixture GGUFs (written by ggml's gguf-py for
 * jepa.cpp, see tests/data/README.md) and spot-check them against what is known about
 * them: counts, family, the shape and type of enc.blk.0.attn_qkv.weight, its first
 * values against the raw file bytes read with stdio, and every tensor's data pointer
 * inside the file, aligned, in order. (tests/gguf/check_gguf_py.py compares the whole
 * view with gguf-py.)
 * usage: test_gguf_fixtures DATA_DIR   (meson passes tests/data)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "tcheck.h"

struct fixture {
    const char *file, *family;
    int64_t n_tensors, n_kv, qkv_ne0, qkv_ne1;
    size_t size;
};

static void check_fixture(const char *dir, const struct fixture *fx) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, fx->file);
    struct jerr err = {0};
    struct gguf_file *g = NULL;
    CHECK(jg_open(&g, path, &err) == JEPA_OK, "%s: %s", path, err.msg);
    if (!g) return;
    CHECK(jg_version(g) == 3 && jg_alignment(g) == 32, "%s: version/alignment", fx->file);
    CHECK(jg_file_size(g) == fx->size, "%s: size %zu", fx->file, jg_file_size(g));
    CHECK(jg_n_tensors(g) == fx->n_tensors, "%s: %lld tensors", fx->file, (long long)jg_n_tensors(g));
    CHECK(jg_n_kv(g) == fx->n_kv, "%s: %lld kv", fx->file, (long long)jg_n_kv(g));
    const struct gguf_kv *kv = jg_find_kv(g, "jepa.family");
    CHECK(kv && kv->type == GGUF_V_STRING && strcmp(kv->v.s, fx->family) == 0, "%s: family", fx->file);
    kv = jg_find_kv(g, "jepa.schema_version");
    CHECK(kv && kv->type == GGUF_V_U32 && kv->v.u == 1, "%s: schema_version", fx->file);
    kv = jg_find_kv(g, "general.architecture");
    CHECK(kv && kv->type == GGUF_V_STRING && strcmp(kv->v.s, "jepa") == 0, "%s: architecture", fx->file);
    kv = jg_find_kv(g, "jepa.pre.mean");
    CHECK(kv && kv->type == GGUF_V_ARRAY && kv->arr_type == GGUF_V_F32 && kv->arr_n == 3 &&
          jg_arr_f64(kv, 0) == (double)0.485f && jg_arr_f64(kv, 2) == (double)0.406f,
          "%s: jepa.pre.mean", fx->file);

    const struct gguf_tensor *t = jg_find_tensor(g, "enc.blk.0.attn_qkv.weight");
    CHECK(t && t->type == GGUF_TYPE_F32 && t->n_dims == 2 && t->ne[0] == fx->qkv_ne0 &&
          t->ne[1] == fx->qkv_ne1 && t->nbytes == (size_t)(fx->qkv_ne0 * fx->qkv_ne1 * 4),
          "%s: enc.blk.0.attn_qkv.weight", fx->file);
    if (t) {
        /* the mapped bytes are the file's bytes at data_offset + offset */
        FILE *f = fopen(path, "rb");
        uint8_t raw[64];
        size_t at = jg_data_offset(g) + t->offset;
        int ok = f && fseek(f, (long)at, SEEK_SET) == 0 && fread(raw, 1, sizeof raw, f) == sizeof raw;
        CHECK(ok && memcmp(raw, t->data, sizeof raw) == 0, "%s: qkv bytes at %zu", fx->file, at);
        if (f) fclose(f);
    }

    /* every tensor: inside the file, aligned, packed in order as ggml writes them */
    const uint8_t *base = NULL;
    size_t expect = 0;
    for (int64_t i = 0; i < jg_n_tensors(g); i++) {
        t = jg_tensor_at(g, i);
        if (i == 0) base = (const uint8_t *)t->data - jg_data_offset(g) - t->offset;
        size_t at = (size_t)((const uint8_t *)t->data - base);
        CHECK(at % 32 == 0 && (uintptr_t)t->data % 32 == 0, "%s: %s not aligned", fx->file, t->name);
        CHECK(at >= jg_data_offset(g) && at + t->nbytes <= jg_file_size(g), "%s: %s outside", fx->file, t->name);
        CHECK(t->offset == expect, "%s: %s at %llu, expected %zu", fx->file, t->name,
              (unsigned long long)t->offset, expect);
        CHECK(jg_find_tensor(g, t->name) == t, "%s: lookup of %s", fx->file, t->name);
        CHECK(t->nbytes == jg_row_bytes(t->type, t->ne[0]) * (size_t)(t->n_elements / t->ne[0]),
              "%s: %s size", fx->file, t->name);
        expect += (t->nbytes + 31) / 32 * 32;
    }
    CHECK(jg_data_offset(g) + expect == jg_file_size(g), "%s: data section ends at %zu, file %zu",
          fx->file, jg_data_offset(g) + expect, jg_file_size(g));
    jg_close(g);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_gguf_fixtures DATA_DIR\n");
        return 2;
    }
    static const struct fixture fx[] = {
        {"vjepa2_tiny/model.gguf", "vjepa2", 112, 54, 128, 384, 5962400},
        {"vjepa2_1_tiny/model.gguf", "vjepa2_1", 219, 54, 64, 192, 3876608},
    };
    for (size_t i = 0; i < sizeof fx / sizeof fx[0]; i++) check_fixture(argv[1], &fx[i]);
    return check_finish("test_gguf_fixtures");
}
