/*
 * tuning.c — the run-time blocking of the CPU kernels (kernels/tuning.h): the kinds, the
 * limits, the built-in table by CPU, the tuning file (format, checksum, reader), and the
 * values in force, decided once per process.
 *
 * The tuning file, version 2 (text, written by `jepa tune`, at most JK_TUNE_FILE_MAX bytes
 * of printable ASCII and newlines; '#' lines are comments), one record per kernel build:
 *   jepa-tune 2
 *   cpu <vendor> <family> <model> <stepping> <isa>
 *   gemm <kind> kc=<n> mc=<n> nc=<n> ahead=<0|1> colp=<n> rowt=<n>     (0 or more)
 *   attn <kind> bk=<n> pack=<n>                                         (0 or more)
 *   sum <16 hex digits>
 * sum: FNV-1a 64 of every byte before the sum line. A kind appears at most once; every
 * key of its line must be there, each a decimal number of at most 9 digits; the set must
 * pass the limits. Anything else makes the whole file ignored.
 */
#include "kernels/tuning.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the kinds ------------------------------------------------------------------------ */

/* Each gemm_tmpl.h build defines its own info; the builds of another architecture are
 * absent here (mr = nr = 0: never valid, so a file naming them is refused). */
#if defined(__x86_64__) || defined(_M_X64)
extern const struct jk_gemm_kind_info jk_gemm_kind_avx2, jk_gemm_kind_avx512,
    jk_gemm_kind_avx512_bf16, jk_gemm_kind_amx_bf16, jk_gemm_kind_amx_high;
extern const struct jk_attn_kind_info jk_attn_kind_avx2, jk_attn_kind_avx512;
static const struct jk_attn_kind_info *const attn_kinds[] = {&jk_attn_kind_avx2, &jk_attn_kind_avx512};
#elif defined(__aarch64__)
extern const struct jk_gemm_kind_info jk_gemm_kind_neon, jk_gemm_kind_neon_bf16;
extern const struct jk_attn_kind_info jk_attn_kind_neon;
static const struct jk_attn_kind_info *const attn_kinds[] = {&jk_attn_kind_neon};
#else
static const struct jk_attn_kind_info *const attn_kinds[] = {NULL};
#endif

static const char *const gemm_kind_names[JK_NGK] = {
    "avx2", "avx512", "avx512_bf16", "amx_bf16", "amx_high", "neon", "neon_bf16",
};
const char *const jk_attn_kind_names[JK_NAK] = {"avx2", "avx512", "neon"};

const struct jk_gemm_kind_info *jk_gemm_kind(enum jk_gemm_kind k) {
    static struct jk_gemm_kind_info absent[JK_NGK];
    switch (k) {
#if defined(__x86_64__) || defined(_M_X64)
    case JK_GK_AVX2: return &jk_gemm_kind_avx2;
    case JK_GK_AVX512: return &jk_gemm_kind_avx512;
    case JK_GK_AVX512_BF16: return &jk_gemm_kind_avx512_bf16;
    case JK_GK_AMX_BF16: return &jk_gemm_kind_amx_bf16;
    case JK_GK_AMX_HIGH: return &jk_gemm_kind_amx_high;
#elif defined(__aarch64__)
    case JK_GK_NEON: return &jk_gemm_kind_neon;
    case JK_GK_NEON_BF16: return &jk_gemm_kind_neon_bf16;
#endif
    default: break;
    }
    if ((unsigned)k >= JK_NGK) k = JK_GK_AVX2;
    absent[k].name = gemm_kind_names[k];   /* (the same value from every thread) */
    return &absent[k];
}

int jk_gemm_kind_by_name(const char *name) {
    for (int k = 0; k < JK_NGK; k++)
        if (!strcmp(name, gemm_kind_names[k])) return k;
    return -1;
}

int jk_gemm_tuning_valid(const struct jk_gemm_tuning *t, enum jk_gemm_kind k) {
    if (!t || (unsigned)k >= JK_NGK) return 0;
    const struct jk_gemm_kind_info *ki = jk_gemm_kind(k);
    if (ki->mr <= 0 || ki->nr <= 0) return 0;
    return t->kc >= 8 && t->kc <= JK_TUNE_KC_MAX && t->kc % 8 == 0 && t->mc >= ki->mr &&
           t->mc <= JK_TUNE_MC_MAX && t->mc % ki->mr == 0 && t->nc >= ki->nr &&
           t->nc <= JK_TUNE_NC_MAX && t->nc % ki->nr == 0 && (t->ahead == 0 || t->ahead == 1) &&
           t->colp >= 1 && t->colp <= JK_TUNE_SPLIT_MAX && t->rowt >= 1 &&
           t->rowt <= JK_TUNE_SPLIT_MAX;
}

int jk_attn_tuning_valid(const struct jk_attn_tuning *t) { return t && jk_attn_tuning_ok(t); }

int jk_attn_kind_of(void (*fn)(const struct jk_attn_args *a)) {
    for (size_t i = 0; i < sizeof attn_kinds / sizeof *attn_kinds; i++)
        if (fn && attn_kinds[i] && attn_kinds[i]->fn == fn) return (int)attn_kinds[i]->kind;
    return -1;
}

/* The attention grid: the key tile at the default's 4096 floats (a K and a V tile of 16 KiB
 * in a 32 KiB L1d at head_dim 64), half, twice and a quarter of it; the K/V copy from the
 * default's 1536 keys, or 512, 1024, 2048, 3072 (which of the shapes' key counts copy is
 * what the tuner measures: thresholds that copy on the same shapes behave the same). */
int jk_attn_candidates(struct jk_attn_tuning *out, int max) {
    static const int bks[] = {4096, 2048, 8192, 1024}, packs[] = {1536, 512, 1024, 2048, 3072};
    int n = 0;
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 5; b++) {
            if (out && n < max) out[n] = (struct jk_attn_tuning){bks[a], packs[b]};
            n++;
        }
    return n;
}

/* The grid `jepa tune` searches, around each kind's defaults: K blocks of 256 .. 768, the X
 * block at half, once and twice the default rows, the W panel at once and twice the
 * default columns, the next-panel prefetch on and off, and the column split from 4, 2 or 8
 * panels per thread (rowt is not searched: it acts only on pre-packed weights). */
int jk_gemm_candidates(enum jk_gemm_kind k, struct jk_gemm_tuning *out, int max) {
    static const int kc_grid[] = {256, 384, 512, 768}, colps[] = {4, 2, 8};
    const struct jk_gemm_kind_info *ki = jk_gemm_kind(k);
    if (ki->mr <= 0) return 0;
    int kcs[5] = {ki->def.kc}, nkc = 1;   /* the default first (index 0 is the defaults) */
    for (int i = 0; i < 4; i++)
        if (kc_grid[i] != ki->def.kc) kcs[nkc++] = kc_grid[i];
    const int mcs[] = {ki->def.mc, ki->def.mc / 2 / ki->mr * ki->mr, 2 * ki->def.mc};
    const int ncs[] = {ki->def.nc, 2 * ki->def.nc};
    int n = 0;
    for (int a = 0; a < nkc; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 2; c++)
                for (int d = 0; d < 2; d++)
                    for (int e = 0; e < 3; e++) {
                        const struct jk_gemm_tuning t = {kcs[a], mcs[b], ncs[c], 1 - d, colps[e],
                                                         ki->def.rowt};
                        if (!jk_gemm_tuning_valid(&t, k)) continue;
                        if (out && n < max) out[n] = t;
                        n++;
                    }
    return n;
}

/* ---- the built-in table ---------------------------------------------------------------
 * Reasoning and sources: docs/notes/kernel-tuning.md#tuning-table. "measured": timed on
 * that CPU; every other entry is derived from the caches per core by the rules measured on
 * Zen 4 (the A micro-panel in L1d, the X block about a quarter of L2). */
struct table_entry {
    const char *name;
    const char *vendor;
    int family, model_lo, model_hi;   /* model range, inclusive */
    enum jk_gemm_kind kind;
    struct jk_gemm_tuning g;
};

static const struct table_entry table[] = {
    /* AMD Zen 3 (32 KiB L1d, 512 KiB L2; AVX2): the X block 144 KiB */
    {"zen3", "AuthenticAMD", 0x19, 0x00, 0x0f, JK_GK_AVX2, {512, 72, 1536, 1, 4, 4}},
    {"zen3", "AuthenticAMD", 0x19, 0x20, 0x5f, JK_GK_AVX2, {512, 72, 1536, 1, 4, 4}},
    /* AMD Zen 4 (32 KiB L1d, 1 MiB L2): measured; the constants of gemm_avx512.c / _avx2.c */
    {"zen4", "AuthenticAMD", 0x19, 0x10, 0x1f, JK_GK_AVX512, {384, 168, 1024, 1, 4, 4}},
    {"zen4", "AuthenticAMD", 0x19, 0x60, 0x7f, JK_GK_AVX512, {384, 168, 1024, 1, 4, 4}},
    {"zen4", "AuthenticAMD", 0x19, 0xa0, 0xaf, JK_GK_AVX512, {384, 168, 1024, 1, 4, 4}},
    /* AMD Zen 5 (48 KiB L1d, 1 MiB L2, full-width 512-bit FMAs): KC 512, the X block 252 KiB */
    {"zen5", "AuthenticAMD", 0x1a, 0x00, 0xff, JK_GK_AVX512, {512, 126, 1024, 1, 4, 4}},
    /* Intel Skylake-SP, Cascade Lake, Cooper Lake (32 KiB L1d, 1 MiB L2): Zen 4's caches */
    {"skylake-sp", "GenuineIntel", 6, 0x55, 0x55, JK_GK_AVX512, {384, 168, 1024, 1, 4, 4}},
    /* Intel Ice Lake-SP (48 KiB L1d, 1.25 MiB L2) */
    {"icelake-sp", "GenuineIntel", 6, 0x6a, 0x6a, JK_GK_AVX512, {512, 154, 1024, 1, 4, 4}},
    {"icelake-sp", "GenuineIntel", 6, 0x6c, 0x6c, JK_GK_AVX512, {512, 154, 1024, 1, 4, 4}},
    /* Intel Sapphire / Emerald / Granite Rapids (48 KiB L1d, 2 MiB L2) */
    {"sapphirerapids", "GenuineIntel", 6, 0x8f, 0x8f, JK_GK_AVX512, {512, 252, 1024, 1, 4, 4}},
    {"emeraldrapids", "GenuineIntel", 6, 0xcf, 0xcf, JK_GK_AVX512, {512, 252, 1024, 1, 4, 4}},
    {"graniterapids", "GenuineIntel", 6, 0xad, 0xae, JK_GK_AVX512, {512, 252, 1024, 1, 4, 4}},
    /* Arm Neoverse N1, V1, V2 (64 KiB L1d, 1 MiB L2; V2 also ships with 2 MiB: 1 MiB's
     * values fit both) */
    {"neoverse-n1", "arm-0x41", 8, 0xd0c, 0xd0c, JK_GK_NEON, {512, 128, 1536, 1, 4, 4}},
    {"neoverse-v1", "arm-0x41", 8, 0xd40, 0xd40, JK_GK_NEON, {512, 128, 1536, 1, 4, 4}},
    {"neoverse-v1", "arm-0x41", 8, 0xd40, 0xd40, JK_GK_NEON_BF16, {512, 128, 1536, 1, 4, 4}},
    {"neoverse-v2", "arm-0x41", 8, 0xd4f, 0xd4f, JK_GK_NEON, {512, 128, 1536, 1, 4, 4}},
    {"neoverse-v2", "arm-0x41", 8, 0xd4f, 0xd4f, JK_GK_NEON_BF16, {512, 128, 1536, 1, 4, 4}},
};

int jk_tune_table_gemm(int i, enum jk_gemm_kind *kind, struct jk_gemm_tuning *t) {
    const int n = (int)(sizeof table / sizeof *table);
    if (i >= 0 && i < n) *kind = table[i].kind, *t = table[i].g;
    return n;
}

static void defaults(struct jk_tuning *t) {
    static const struct jk_attn_tuning ad = JK_ATTN_DEFAULT_TUNING;
    for (int k = 0; k < JK_NGK; k++) t->gemm[k] = jk_gemm_kind((enum jk_gemm_kind)k)->def;
    for (int k = 0; k < JK_NAK; k++) t->attn[k] = ad;
}

/* The entries for id over the defaults into out (may be NULL); *mask: the kinds they set. */
static const char *table_apply(const struct jr_cpu_id *id, struct jk_tuning *out, unsigned *mask) {
    const char *name = NULL;
    *mask = 0;
    if (out) defaults(out);
    for (size_t i = 0; i < sizeof table / sizeof *table; i++) {
        const struct table_entry *e = &table[i];
        if (strcmp(id->vendor, e->vendor) || id->family != e->family || id->model < e->model_lo ||
            id->model > e->model_hi || !jk_gemm_tuning_valid(&e->g, e->kind))
            continue;
        name = e->name;
        *mask |= 1u << e->kind;
        if (out) out->gemm[e->kind] = e->g;
    }
    return name;
}

const char *jk_tune_table_entry(const struct jr_cpu_id *id, struct jk_tuning *out) {
    unsigned mask;
    return table_apply(id, out, &mask);
}

/* ---- the CPU id, the path ------------------------------------------------------------- */

void jk_cpu_id_string(const struct jr_cpu_id *id, char *buf, size_t size) {
    char raw[96];
    snprintf(raw, sizeof raw, "%s-f%d-m%d-s%d-%s", id->vendor, id->family, id->model, id->stepping,
             id->isa);
    size_t n = 0;
    for (const char *p = raw; *p && n + 1 < size; p++) {
        const char c = *p >= 'A' && *p <= 'Z' ? (char)(*p - 'A' + 'a') : *p;
        buf[n++] = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ? c : '-';
    }
    if (size) buf[n] = '\0';
}

int jk_tune_default_path(const struct jr_cpu_id *id, char *buf, size_t size) {
    char cid[96];
    jk_cpu_id_string(id, cid, sizeof cid);
    /* the cache folder as `jepa pull` finds it (common/hub.c) */
    const char *env = getenv("JEPA_CACHE"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (env && *env) n = snprintf(buf, size, "%s/tune-%s.txt", env, cid);
    else if (xdg && *xdg == '/') n = snprintf(buf, size, "%s/jepa/tune-%s.txt", xdg, cid);
    else if (home && *home) n = snprintf(buf, size, "%s/.cache/jepa/tune-%s.txt", home, cid);
    else return -1;
    return n > 0 && (size_t)n < size ? 0 : -1;
}

/* ---- the file ------------------------------------------------------------------------- */

static uint64_t fnv1a(const char *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
    return h;
}

static void whyf(char *why, size_t size, const char *fmt, ...) {
    if (!why || !size) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, size, fmt, ap);
    va_end(ap);
}

/* A decimal of 1 .. 9 digits at p (up to end), no sign: the value, *p past it; -1 if none. */
static long decimal(const char **p, const char *end) {
    long v = 0;
    int nd = 0;
    while (*p < end && **p >= '0' && **p <= '9') {
        if (++nd > 9) return -1;
        v = v * 10 + (**p - '0');
        (*p)++;
    }
    return nd ? v : -1;
}

/* The next word of the line [*p, end) (up to a space), or NULL at the end. */
static const char *word(const char **p, const char *end, size_t *len) {
    while (*p < end && **p == ' ') (*p)++;
    if (*p >= end) return NULL;
    const char *w = *p;
    while (*p < end && **p != ' ') (*p)++;
    *len = (size_t)(*p - w);
    return w;
}

static int word_is(const char *w, size_t len, const char *s) {
    return w && strlen(s) == len && !memcmp(w, s, len);
}

/* "key=<decimal>" pairs of a line into v[] in the order of keys[] (each exactly once). */
static int keyvals(const char *p, const char *end, const char *const *keys, int nkeys, int *v,
                   char *why, size_t why_size) {
    unsigned seen = 0;
    size_t len;
    const char *w;
    while ((w = word(&p, end, &len))) {
        const char *eq = memchr(w, '=', len);
        int k = 0;
        while (k < nkeys && !(eq && word_is(w, (size_t)(eq - w), keys[k]))) k++;
        if (k == nkeys || seen >> k & 1) {
            whyf(why, why_size, "unknown or repeated key '%.*s'", (int)(len > 32 ? 32 : len), w);
            return -1;
        }
        const char *q = eq + 1;
        const long x = decimal(&q, w + len);
        if (x < 0 || q != w + len) {
            whyf(why, why_size, "%s is not a number of at most 9 digits", keys[k]);
            return -1;
        }
        v[k] = (int)x;
        seen |= 1u << k;
    }
    if (seen != (1u << nkeys) - 1) {
        whyf(why, why_size, "a line lacks a key");
        return -1;
    }
    return 0;
}

int jk_tune_parse(const char *buf, size_t n, const struct jr_cpu_id *id,
                  const struct jk_tuning *base, struct jk_tuning *out, unsigned *gemm_set,
                  unsigned *attn_set, char *why, size_t why_size) {
    static const char *const gkeys[] = {"kc", "mc", "nc", "ahead", "colp", "rowt"};
    static const char *const akeys[] = {"bk", "pack"};
    if (n > JK_TUNE_FILE_MAX) {
        whyf(why, why_size, "larger than %d bytes", JK_TUNE_FILE_MAX);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if (buf[i] != '\n' && (buf[i] < 0x20 || buf[i] > 0x7e)) {
            whyf(why, why_size, "not a text file (byte 0x%02x at offset %zu)", (unsigned char)buf[i], i);
            return -1;
        }
    struct jk_tuning t = *base;
    unsigned gset = 0, aset = 0;
    int version = -1, cpu_ok = 0, summed = 0;
    const char *p = buf, *end = buf + n;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) {
            whyf(why, why_size, "truncated (the last line has no newline)");
            return -1;
        }
        const char *line = p, *q = p;
        p = nl + 1;
        if (summed) {
            whyf(why, why_size, "text after the checksum line");
            return -1;
        }
        if (line == nl || *line == '#') continue;
        size_t len;
        const char *w = word(&q, nl, &len);
        if (!w) continue;
        if (version < 0) {
            if (!word_is(w, len, "jepa-tune")) {
                whyf(why, why_size, "not a jepa tuning file (no 'jepa-tune' header)");
                return -1;
            }
            const char *v = word(&q, nl, &len), *ve = v ? v + len : NULL;
            const long x = v ? decimal(&v, ve) : -1;
            if (x < 0 || v != ve || word(&q, nl, &len)) {
                whyf(why, why_size, "a malformed header line");
                return -1;
            }
            if (x != JK_TUNE_VERSION) {
                whyf(why, why_size, "version %ld (this build reads version %d): run `jepa tune` again",
                     x, JK_TUNE_VERSION);
                return -1;
            }
            version = (int)x;
        } else if (word_is(w, len, "sum")) {
            const char *h = word(&q, nl, &len);
            char hex[17];
            snprintf(hex, sizeof hex, "%016llx", (unsigned long long)fnv1a(buf, (size_t)(line - buf)));
            if (!h || len != 16 || memcmp(h, hex, 16) || word(&q, nl, &len)) {
                whyf(why, why_size, "the checksum does not match (corrupted or edited)");
                return -1;
            }
            summed = 1;
        } else if (word_is(w, len, "cpu")) {
            char want[160], have[160];
            snprintf(want, sizeof want, "%s %d %d %d %s", id->vendor, id->family, id->model,
                     id->stepping, id->isa);
            while (q < nl && *q == ' ') q++;
            const size_t hl = (size_t)(nl - q) < sizeof have - 1 ? (size_t)(nl - q) : sizeof have - 1;
            memcpy(have, q, hl);
            have[hl] = '\0';
            if (strcmp(have, want)) {
                whyf(why, why_size, "written for another CPU (%s; this one is %s)", have, want);
                return -1;
            }
            cpu_ok = 1;
        } else if (word_is(w, len, "gemm") || word_is(w, len, "attn")) {
            const int g = word_is(w, len, "gemm");
            const char *kn = word(&q, nl, &len);
            char name[24] = "";
            if (kn && len < sizeof name) memcpy(name, kn, len), name[len] = '\0';
            int k = -1;
            if (g) k = jk_gemm_kind_by_name(name);
            else
                for (int i = 0; i < JK_NAK; i++)
                    if (!strcmp(name, jk_attn_kind_names[i])) k = i;
            if (k < 0 || (g ? gset : aset) >> k & 1) {
                whyf(why, why_size, "an unknown or repeated %s kind", g ? "gemm" : "attn");
                return -1;
            }
            int v[6];
            if (keyvals(q, nl, g ? gkeys : akeys, g ? 6 : 2, v, why, why_size)) return -1;
            if (g) {
                const struct jk_gemm_tuning s = {v[0], v[1], v[2], v[3], v[4], v[5]};
                if (!jk_gemm_tuning_valid(&s, (enum jk_gemm_kind)k)) {
                    whyf(why, why_size, "gemm %s: values outside the limits of this build", name);
                    return -1;
                }
                t.gemm[k] = s, gset |= 1u << k;
            } else {
                const struct jk_attn_tuning s = {v[0], v[1]};
                if (!jk_attn_tuning_valid(&s)) {
                    whyf(why, why_size, "attn %s: values outside the limits", name);
                    return -1;
                }
                t.attn[k] = s, aset |= 1u << k;
            }
        } else {
            whyf(why, why_size, "an unknown line '%.*s'", (int)(len > 32 ? 32 : len), w);
            return -1;
        }
    }
    if (version < 0) whyf(why, why_size, "empty");
    else if (!summed) whyf(why, why_size, "truncated (no checksum line)");
    else if (!cpu_ok) whyf(why, why_size, "no cpu line");
    if (version < 0 || !summed || !cpu_ok) return -1;
    *out = t;
    if (gemm_set) *gemm_set = gset;
    if (attn_set) *attn_set = aset;
    return 0;
}

size_t jk_tune_format(char *buf, size_t size, const struct jr_cpu_id *id, const struct jk_tuning *t,
                      unsigned gemm_mask, unsigned attn_mask) {
    size_t n = 0;
    int w = snprintf(buf, size,
                     "# jepa tuning file (`jepa tune`): the blocking of the CPU kernels; an edit\n"
                     "# breaks the checksum and the file is then ignored\n"
                     "jepa-tune %d\ncpu %s %d %d %d %s\n",
                     JK_TUNE_VERSION, id->vendor, id->family, id->model, id->stepping, id->isa);
    if (w < 0 || (size_t)w >= size) return 0;
    n = (size_t)w;
    for (int k = 0; k < JK_NGK; k++) {
        if (!(gemm_mask >> k & 1)) continue;
        const struct jk_gemm_tuning *g = &t->gemm[k];
        w = snprintf(buf + n, size - n, "gemm %s kc=%d mc=%d nc=%d ahead=%d colp=%d rowt=%d\n",
                     gemm_kind_names[k], g->kc, g->mc, g->nc, g->ahead, g->colp, g->rowt);
        if (w < 0 || (size_t)w >= size - n) return 0;
        n += (size_t)w;
    }
    for (int k = 0; k < JK_NAK; k++) {
        if (!(attn_mask >> k & 1)) continue;
        w = snprintf(buf + n, size - n, "attn %s bk=%d pack=%d\n", jk_attn_kind_names[k],
                     t->attn[k].bk, t->attn[k].pack);
        if (w < 0 || (size_t)w >= size - n) return 0;
        n += (size_t)w;
    }
    w = snprintf(buf + n, size - n, "sum %016llx\n", (unsigned long long)fnv1a(buf, n));
    if (w < 0 || (size_t)w >= size - n) return 0;
    return n + (size_t)w;
}

long jk_tune_read(const char *path, char *buf, size_t size, char *why, size_t why_size) {
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; the type is checked next */
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        whyf(why, why_size, "%s", strerror(errno));
        return -1;
    }
    struct stat st;
    long got = -1;
    if (fstat(fd, &st) != 0) whyf(why, why_size, "%s", strerror(errno));
    else if (!S_ISREG(st.st_mode)) whyf(why, why_size, "not a regular file");
    else if (st.st_size > JK_TUNE_FILE_MAX || (size_t)st.st_size > size)
        whyf(why, why_size, "larger than %d bytes", JK_TUNE_FILE_MAX);
    else {
        size_t n = 0;
        ssize_t r = 0;
        /* at most size bytes, whatever the file grows to meanwhile */
        while (n < size && (r = read(fd, buf + n, size - n)) > 0) n += (size_t)r;
        if (r < 0) whyf(why, why_size, "%s", strerror(errno));
        else if (n > (size_t)st.st_size) whyf(why, why_size, "it grew while it was read");
        else got = (long)n;
    }
    close(fd);
    return got;
}

/* ---- the values in force -------------------------------------------------------------- */

struct jk_tuning jk_tune;
/* sources: NULL (generic), table_src ("built-in <entry>") or file_src (the file's path) */
static const char *gemm_src[JK_NGK], *attn_src[JK_NAK];
static char table_src[64], file_src[1024];

const char *jk_tune_gemm_source(enum jk_gemm_kind k) {
    return (unsigned)k < JK_NGK && gemm_src[k] ? gemm_src[k] : "generic";
}
const char *jk_tune_attn_source(enum jk_attn_kind k) {
    return (unsigned)k < JK_NAK && attn_src[k] ? attn_src[k] : "generic";
}

static void tune_load(void) {
    const struct jr_cpu_id *id = jr_cpu_id();
    struct jk_tuning t;
    unsigned mask;
    const char *entry = table_apply(id, &t, &mask);
    if (entry) snprintf(table_src, sizeof table_src, "built-in %s", entry);
    for (int k = 0; k < JK_NGK; k++)   /* the kinds the entry sets (Zen 4's equal the defaults) */
        if (mask >> k & 1) gemm_src[k] = table_src;
    const char *mode = getenv("JEPA_TUNE");
    const char *file = getenv("JEPA_TUNE_FILE");
    char path[1024];
    const int named = file && *file, off = mode && !strcmp(mode, "off");
    int have_path = 0;
    if (!off)
        have_path = named ? snprintf(path, sizeof path, "%s", file) < (int)sizeof path
                          : jk_tune_default_path(id, path, sizeof path) == 0;
    if (have_path) {
        static char buf[JK_TUNE_FILE_MAX];
        char why[256];
        struct stat st;
        /* the default path may well not exist: silence then; a named file must */
        if (named || stat(path, &st) == 0) {
            long n = jk_tune_read(path, buf, sizeof buf, why, sizeof why);
            unsigned gs = 0, as = 0;
            if (n >= 0 && jk_tune_parse(buf, (size_t)n, id, &t, &t, &gs, &as, why, sizeof why) == 0) {
                snprintf(file_src, sizeof file_src, "%s", path);
                for (int k = 0; k < JK_NGK; k++)
                    if (gs >> k & 1) gemm_src[k] = file_src;
                for (int k = 0; k < JK_NAK; k++)
                    if (as >> k & 1) attn_src[k] = file_src;
            } else {
                fprintf(stderr, "jepa: tuning file %s ignored: %s; the built-in blocking is in force\n",
                        path, why);
            }
        }
    }
    jk_tune = t;
}

static pthread_once_t tune_once = PTHREAD_ONCE_INIT;
void jk_tune_init(void) { pthread_once(&tune_once, tune_load); }
