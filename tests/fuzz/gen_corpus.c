/*
 * gen_corpus.c — regenerate the seed corpus in tests/fuzz/corpus: small valid GGUFs
 * from our writer (every value type, string arrays, every schema-v1 tensor type,
 * alignment 64, version 2, a jepa-like file) and a few corrupted ones (truncated, bad
 * type, overlapping tensors, nested array, absurd counts). Each is a few hundred bytes
 * to a few KB. Not a test; run by hand: gen_corpus tests/fuzz/corpus
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"

static const char *outdir;

static void save(const char *name, const void *p, size_t n) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", outdir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n) {
        fprintf(stderr, "gen_corpus: cannot write %s\n", path);
        exit(1);
    }
    fclose(f);
    printf("%-28s %6zu bytes\n", name, n);
}

static void *mem_of(struct gguf_writer *w, size_t *n) {
    void *p = NULL;
    struct jerr err = {0};
    if (jg_writer_write_mem(w, &p, n, &err) != JEPA_OK) {
        fprintf(stderr, "gen_corpus: %s\n", err.msg);
        exit(1);
    }
    return p;
}

static void add(struct gguf_writer *w, const char *name, uint32_t type, int nd, int64_t ne0,
                int64_t ne1, int64_t ne2, int64_t ne3) {
    int64_t ne[4] = {ne0, ne1, ne2, ne3};
    size_t n = jg_row_bytes(type, ne0) * (size_t)(ne1 * ne2 * ne3);
    unsigned char *d = malloc(n);
    if (!d) exit(1);
    for (size_t i = 0; i < n; i++) d[i] = (unsigned char)(i * 31 + type);
    struct jerr err = {0};
    if (jg_writer_add_tensor(w, name, type, nd, ne, d, n, &err) != JEPA_OK) {
        fprintf(stderr, "gen_corpus: %s\n", err.msg);
        exit(1);
    }
    free(d);
}

static void put_le(unsigned char *p, unsigned long long v, int n) {
    for (int i = 0; i < n; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* Offset of the u32 type field after tensor `name`'s n_dims and dims. */
static size_t tensor_field(const unsigned char *p, size_t n, const char *name, int which) {
    unsigned char *at = memmem(p, n, name, strlen(name));
    if (!at) exit(1);
    size_t o = (size_t)(at - p) + strlen(name);
    unsigned nd = p[o];
    size_t type_at = o + 4 + 8 * nd;
    return which == 0 ? type_at : type_at + 4;   /* 0: type, 1: offset */
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: gen_corpus OUTDIR\n");
        return 2;
    }
    outdir = argv[1];
    size_t n;
    unsigned char *p;

    struct gguf_writer *w = jg_writer_new();
    p = mem_of(w, &n);
    save("minimal.gguf", p, n);
    free(p);

    uint8_t u8 = 7; int8_t i8 = -7; uint16_t u16 = 700; int16_t i16 = -700; int64_t i64 = -7000000000;
    double f64 = 2.5;
    jg_writer_set_scalar(w, "s.u8", GGUF_V_U8, &u8);
    jg_writer_set_scalar(w, "s.i8", GGUF_V_I8, &i8);
    jg_writer_set_scalar(w, "s.u16", GGUF_V_U16, &u16);
    jg_writer_set_scalar(w, "s.i16", GGUF_V_I16, &i16);
    jg_writer_set_u32(w, "s.u32", 70000);
    jg_writer_set_i32(w, "s.i32", -70000);
    jg_writer_set_f32(w, "s.f32", 1e-6f);
    jg_writer_set_bool(w, "s.bool", true);
    jg_writer_set_str(w, "s.str", "vjepa2");
    jg_writer_set_u64(w, "s.u64", 1ull << 40);
    jg_writer_set_scalar(w, "s.i64", GGUF_V_I64, &i64);
    jg_writer_set_scalar(w, "s.f64", GGUF_V_F64, &f64);
    p = mem_of(w, &n);
    save("kv_scalars.gguf", p, n);
    free(p);
    jg_writer_free(w);

    w = jg_writer_new();
    unsigned char raw[64];
    for (int i = 0; i < 64; i++) raw[i] = (unsigned char)(i * 37);
    unsigned char bools[5] = {0, 1, 1, 0, 1};
    static const uint32_t et[] = {GGUF_V_U8, GGUF_V_I8, GGUF_V_U16, GGUF_V_I16, GGUF_V_U32, GGUF_V_I32,
                                  GGUF_V_F32, GGUF_V_U64, GGUF_V_I64, GGUF_V_F64};
    for (size_t i = 0; i < sizeof et / sizeof et[0]; i++) {
        char key[32];
        snprintf(key, sizeof key, "a.%s", jg_vtype_name(et[i]));
        jg_writer_set_arr(w, key, et[i], raw, 64 / jg_vtype_size(et[i]) / 2);
    }
    jg_writer_set_arr(w, "a.bool", GGUF_V_BOOL, bools, 5);
    jg_writer_set_arr(w, "a.empty", GGUF_V_I32, NULL, 0);
    const char *labels[] = {"c0", "c1", "", "\xc3\xa9t\xc3\xa9", "a \"quoted\" label"};
    jg_writer_set_arr_str(w, "a.str", labels, 5);
    jg_writer_set_arr_str(w, "a.str_empty", NULL, 0);
    p = mem_of(w, &n);
    save("kv_arrays.gguf", p, n);
    free(p);
    jg_writer_free(w);

    w = jg_writer_new();
    jg_writer_set_str(w, "general.architecture", "jepa");
    add(w, "t.f32", GGUF_TYPE_F32, 1, 5, 1, 1, 1);
    add(w, "t.f16", GGUF_TYPE_F16, 2, 3, 2, 1, 1);
    add(w, "t.bf16", GGUF_TYPE_BF16, 3, 2, 2, 2, 1);
    add(w, "t.q4_0", GGUF_TYPE_Q4_0, 4, 32, 1, 1, 1);
    add(w, "t.q4_1", GGUF_TYPE_Q4_1, 1, 32, 1, 1, 1);
    add(w, "t.q5_0", GGUF_TYPE_Q5_0, 1, 32, 1, 1, 1);
    add(w, "t.q5_1", GGUF_TYPE_Q5_1, 2, 32, 1, 1, 1);
    add(w, "t.q8_0", GGUF_TYPE_Q8_0, 2, 64, 1, 1, 1);
    add(w, "t.q4_K", GGUF_TYPE_Q4_K, 1, 256, 1, 1, 1);
    add(w, "t.q5_K", GGUF_TYPE_Q5_K, 1, 256, 1, 1, 1);
    add(w, "t.q6_K", GGUF_TYPE_Q6_K, 1, 256, 1, 1, 1);
    p = mem_of(w, &n);
    save("tensors_all_types.gguf", p, n);
    free(p);
    jg_writer_free(w);

    w = jg_writer_new();
    jg_writer_set_u32(w, "general.alignment", 64);
    jg_writer_set_str(w, "general.name", "aligned");
    add(w, "x", GGUF_TYPE_F32, 2, 3, 3, 1, 1);
    add(w, "y", GGUF_TYPE_Q8_0, 1, 32, 1, 1, 1);
    p = mem_of(w, &n);
    save("align64.gguf", p, n);
    p[4] = 2;
    save("version2.gguf", p, n);
    free(p);
    jg_writer_free(w);

    /* a jepa-like bundle in miniature */
    w = jg_writer_new();
    jg_writer_set_str(w, "general.architecture", "jepa");
    jg_writer_set_u32(w, "jepa.schema_version", 1);
    jg_writer_set_str(w, "jepa.family", "vjepa2_1");
    jg_writer_set_u32(w, "jepa.enc.embed_dim", 8);
    jg_writer_set_f32(w, "jepa.enc.ln_eps", 1e-6f);
    jg_writer_set_bool(w, "jepa.enc.rope_interpolate", true);
    uint32_t hier[4] = {2, 5, 8, 11};
    jg_writer_set_arr(w, "jepa.enc.hier_layers", GGUF_V_U32, hier, 4);
    float mean[3] = {0.485f, 0.456f, 0.406f};
    jg_writer_set_arr(w, "jepa.pre.mean", GGUF_V_F32, mean, 3);
    add(w, "enc.blk.0.attn_qkv.weight", GGUF_TYPE_F32, 2, 8, 24, 1, 1);
    add(w, "enc.blk.0.attn_qkv.bias", GGUF_TYPE_F32, 1, 24, 1, 1, 1);
    add(w, "enc.norm.weight", GGUF_TYPE_F32, 1, 8, 1, 1, 1);
    p = mem_of(w, &n);
    save("jepa_mini.gguf", p, n);

    /* corrupted variants of jepa_mini */
    size_t infos = (size_t)((unsigned char *)memmem(p, n, "enc.blk.0.attn_qkv.bias", 23) - p);
    save("trunc_infos.gguf", p, infos + 5);
    save("trunc_data.gguf", p, n - 100);
    unsigned char *q = malloc(n);
    if (!q) return 1;
    memcpy(q, p, n);
    put_le(q + tensor_field(q, n, "enc.norm.weight", 0), 99, 4);
    save("bad_tensor_type.gguf", q, n);
    memcpy(q, p, n);
    put_le(q + tensor_field(q, n, "enc.norm.weight", 1), 0, 8);
    save("overlap.gguf", q, n);
    memcpy(q, p, n);
    put_le(q + 8, 1ull << 62, 8);
    save("huge_n_tensors.gguf", q, n);
    memcpy(q, p, n);
    unsigned char *h = memmem(q, n, "jepa.enc.hier_layers", 20);
    put_le(h + 20 + 4, GGUF_V_ARRAY, 4);
    save("nested_array.gguf", q, n);
    free(q);
    free(p);
    jg_writer_free(w);
    return 0;
}
