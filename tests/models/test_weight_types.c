/*
 * test_weight_types.c — the table of weight types (runtime/weight_types.h) against what
 * is written independently of it: ggml's numbering and names as fixed here by hand, the
 * GGUF reader's own layout table (gguf/types.c), the messages the CLI and the loader print,
 * and the list of generated kernel symbols in the table's comment (every listed name is
 * generated, every generated name is listed).
 *
 * usage: test_weight_types PATH/runtime/weight_types.h
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "kernels/kernels.h"
#include "runtime/dtype.h"
#include "tests/check.h"

/* enum jk_dtype's values and ggml's ids, which files and callers store: never renumbered */
static const struct { const char *name; int id; uint32_t gguf; int block, bytes; } want[] = {
    {"f32", 0, 0, 1, 4},       {"f16", 1, 1, 1, 2},       {"bf16", 2, 30, 1, 2},
    {"q8_0", 3, 8, 32, 34},    {"q4_0", 4, 2, 32, 18},    {"q4_1", 5, 3, 32, 20},
    {"q5_0", 6, 6, 32, 22},    {"q5_1", 7, 7, 32, 24},    {"q4_K", 8, 12, 256, 144},
    {"q5_K", 9, 13, 256, 176}, {"q6_K", 10, 14, 256, 210},
};
#define NWANT (int)(sizeof want / sizeof *want)

static const char *const isas[] = {"ref", "avx2", "avx512", "neon", "cuda"};

static void check_rows(void) {
    CHECK(JK_NDTYPES == NWANT, "%d weight types, expected %d", JK_NDTYPES, NWANT);
    for (int i = 0; i < NWANT && i < JK_NDTYPES; i++) {
        const enum jk_dtype t = (enum jk_dtype)want[i].id;
        CHECK(!strcmp(jk_dtype_name(t), want[i].name), "type %d is named %s, expected %s", i,
              jk_dtype_name(t), want[i].name);
        CHECK(jk_dtype_gguf(t) == want[i].gguf, "%s: ggml id %u, expected %u", want[i].name,
              jk_dtype_gguf(t), want[i].gguf);
        CHECK(jk_dtype_of_gguf(want[i].gguf) == want[i].id, "ggml id %u maps to %d, expected %d",
              want[i].gguf, jk_dtype_of_gguf(want[i].gguf), want[i].id);
        CHECK(jk_dtype_block(t) == want[i].block, "%s: block %d", want[i].name, jk_dtype_block(t));
        CHECK(jk_dtype_is_block(t) == (want[i].block > 1), "%s: is_block", want[i].name);
        CHECK(jk_row_bytes(t, 3 * want[i].block) == 3 * (size_t)want[i].bytes, "%s: row bytes %zu",
              want[i].name, jk_row_bytes(t, 3 * want[i].block));
        CHECK(jr_block_bytes(want[i].id) == (want[i].block > 1 ? (size_t)want[i].bytes : 0),
              "%s: jr_block_bytes %zu", want[i].name, jr_block_bytes(want[i].id));
        if (want[i].block > 1)
            CHECK(jk_row_bytes(t, want[i].block + 1) == 0, "%s: a partial block has a size", want[i].name);
        /* the reader's own table, written apart from this one */
        const struct jg_type_info *ti = jg_type_info(want[i].gguf);
        CHECK(ti && !strcmp(ti->name, want[i].name) && ti->block_size == want[i].block &&
                  ti->type_size == (size_t)want[i].bytes,
              "%s: gguf/types.c disagrees (%s, %d, %zu)", want[i].name, ti ? ti->name : "none",
              ti ? (int)ti->block_size : 0, ti ? (size_t)ti->type_size : 0);
        /* the slot list: gemm_<name> holds type t */
        char slot[32];
        snprintf(slot, sizeof slot, "gemm_%s", want[i].name);
        int found = 0;
        for (int s = 0; s < jk_nslots; s++)
            if (!strcmp(jk_slots[s].name, slot)) found = jk_slots[s].dtype == want[i].id;
        CHECK(found, "slot %s missing or of another type", slot);
    }
    CHECK(!strcmp(jk_dtype_name((enum jk_dtype)JK_NDTYPES), "?"), "a value out of range has a name");
    CHECK(jk_row_bytes((enum jk_dtype)JK_NDTYPES, 256) == 0, "a value out of range has a row size");
    static const uint32_t others[] = {GGUF_TYPE_Q8_1, GGUF_TYPE_Q2_K, GGUF_TYPE_Q3_K, GGUF_TYPE_Q8_K, 4, 99};
    for (size_t i = 0; i < sizeof others / sizeof *others; i++)
        CHECK(jk_dtype_of_gguf(others[i]) == -1, "ggml id %u is taken as a weight type", others[i]);
}

static void check_names(void) {
    CHECK(jk_dtype_by_name("q6_K") == JK_Q6_K && jk_dtype_by_name("Q6_k") == JK_Q6_K, "q6_K by name");
    CHECK(jk_dtype_by_name("BF16") == JK_BF16 && jk_dtype_by_name("f32") == JK_F32, "bf16, f32 by name");
    static const char *const bad[] = {"", "q6", "q6_K_", "q6_K2", "f3", "q8_1", "q2_K", "-f16"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK(jk_dtype_by_name(bad[i]) == -1, "'%s' is taken as a type", bad[i]);
    /* as `jepa quantize --type` and the loader print them */
    char buf[160];
    jk_dtype_list(buf, sizeof buf, " or ");
    CHECK(!strcmp(buf, "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_K, q5_K or q6_K"), "list: %s", buf);
    jk_dtype_list(buf, sizeof buf, ", ");
    CHECK(!strcmp(buf, "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_K, q5_K, q6_K"), "list: %s", buf);
    char small[12];
    memset(small, 'x', sizeof small);
    jk_dtype_list(small, 10, ", ");
    CHECK(!strcmp(small, "f32, f16,") && small[10] == 'x' && small[11] == 'x', "truncated list: %.12s", small);
}

/* Every jk_gemm_<name>_<isa> in the text of the table's header is a generated symbol, and
 * every generated symbol is there. */
static void check_symbol_comment(const char *path) {
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL, "cannot open %s", path);
    if (!f) return;
    static char text[1 << 16];
    const size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    int listed[64][5] = {{0}}, nlisted = 0;
    for (const char *p = strstr(text, "jk_gemm_"); p; p = strstr(p + 1, "jk_gemm_")) {
        size_t len = 0;
        while (isalnum((unsigned char)p[len]) || p[len] == '_') len++;
        if (len < 9 || p[len] == '#' || (p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '_')))
            continue;   /* jk_gemm_##name##_##isa in a macro, or part of a longer name */
        char sym[64];
        snprintf(sym, sizeof sym, "%.*s", (int)len, p);
        int hit = 0;
        for (int t = 0; t < JK_NDTYPES; t++)
            for (int j = 0; j < 5; j++) {
                char g[64];
                snprintf(g, sizeof g, "jk_gemm_%s_%s", jk_dtype_name((enum jk_dtype)t), isas[j]);
                if (!strcmp(g, sym)) hit = 1, listed[t][j] = 1;
            }
        CHECK(hit, "%s names %s, which the table does not generate", path, sym);
        nlisted++;
    }
    for (int t = 0; t < JK_NDTYPES; t++)
        for (int j = 0; j < 5; j++)
            CHECK(listed[t][j], "%s does not list jk_gemm_%s_%s", path, jk_dtype_name((enum jk_dtype)t),
                  isas[j]);
    CHECK(nlisted == JK_NDTYPES * 5, "%d symbols listed, %d generated", nlisted, JK_NDTYPES * 5);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s PATH/runtime/weight_types.h\n", argv[0]);
        return 2;
    }
    check_rows();
    check_names();
    check_symbol_comment(argv[1]);
    return check_finish("test_weight_types");
}
