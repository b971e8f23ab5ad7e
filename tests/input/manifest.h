/*
 * manifest.h — helpers shared by the tests of tests/input: reading
 * tests/input/data/manifest.txt (one case per line, space-separated fields, written by
 * tests/gen/gen_preprocess.py), the synthetic frames that script describes, CRC32.
 * Header-only, included by one test file each.
 */
#ifndef JEPA_TESTS_INPUT_MANIFEST_H
#define JEPA_TESTS_INPUT_MANIFEST_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAN_MAX_FIELDS 8192

struct man_line {
    int n;
    char *f[MAN_MAX_FIELDS];
};

/* Read the whole manifest; returns the text (tokenised in place by man_next). */
static inline char *man_read(const char *dir) {
    char path[1024];
    snprintf(path, sizeof path, "%s/manifest.txt", dir);
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        fprintf(stderr, "cannot open %s\n", path);
        return NULL;
    }
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (!s || fread(s, 1, (size_t)n, fp) != (size_t)n) {
        fclose(fp);
        free(s);
        return NULL;
    }
    s[n] = '\0';
    fclose(fp);
    return s;
}

/* Next non-comment line of *cur split into fields; 0 at the end. */
static inline int man_next(char **cur, struct man_line *l) {
    while (**cur) {
        char *line = *cur, *nl = strchr(line, '\n');
        if (nl) *nl = '\0', *cur = nl + 1;
        else *cur = line + strlen(line);
        if (line[0] == '#' || line[0] == '\0') continue;
        l->n = 0;
        for (char *tok = strtok(line, " "); tok && l->n < MAN_MAX_FIELDS; tok = strtok(NULL, " ")) l->f[l->n++] = tok;
        return 1;
    }
    return 0;
}

static inline uint32_t man_hash32(uint32_t a) {
    a = (a ^ (a >> 16)) * 0x7feb352du;
    a = (a ^ (a >> 15)) * 0x846ca68bu;
    return a ^ (a >> 16);
}

/* gen_preprocess.py's frame_pixel(kind, seed, h, w): uint8 [h][w][3]. */
static inline void man_frame(const char *kind, uint32_t seed, int h, int w, uint8_t *out) {
    const int smooth = strcmp(kind, "noise") != 0;
    for (uint32_t y = 0; y < (uint32_t)h; y++)
        for (uint32_t x = 0; x < (uint32_t)w; x++)
            for (uint32_t c = 0; c < 3; c++) {
                uint32_t key = ((seed * 1000003u + y) * 1000003u + x) * 4u + c;
                uint32_t noise = man_hash32(key) & 255u;
                uint32_t v = smooth ? ((x * (c + 1) * 7 + y * (3 - c) * 5) / 4 + (noise & 7u)) & 255u : noise;
                *out++ = (uint8_t)v;
            }
}

/* CRC-32 (IEEE, zlib's crc32) */
static inline uint32_t man_crc32(const uint8_t *p, size_t n) {
    static uint32_t table[256];
    if (!table[1])
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            table[i] = c;
        }
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

#endif
