/*
 * test_video.c — input/video.c's decoder against PyAV: for the three committed H.264
 * files of tests/input/data (BT.601 untagged with B-frames; BT.709 tagged, 98 pixels wide
 * so the colour conversion has a tail; full-range yuvj420p) every decoded frame's CRC32
 * equals that of PyAV's frame.to_ndarray(format="rgb24"), first and last frames are
 * compared in full, the frame count equals the packet count video_probe reports, and
 * the frames at Meta's clip indices equal the committed array. Exits 77 (skipped) when
 * the build has no FFmpeg.
 *
 * usage: test_video INPUT_DATA_DIR
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "input/npy.h"
#include "input/video.h"
#include "manifest.h"

static int fail;
static const char *dir;

static void path_of(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", dir, name); }

/* Decode a whole file; frames[i] (malloc'ed) when keep. Returns the frame count or -1. */
static int64_t decode_all(const char *name, int h, int w, uint32_t *crc, int64_t max, uint8_t **keep) {
    char path[1024];
    path_of(path, sizeof path, name);
    struct jerr e = {0};
    struct video_reader *r;
    if (video_open(&r, path, &e)) {
        printf("FAIL %s\n", e.msg);
        return -1;
    }
    int64_t n = 0;
    uint32_t last_crc = 0;
    for (;;) {
        const uint8_t *rgb;
        int fh, fw;
        int64_t index;
        bool eof;
        if (video_next(r, true, &rgb, &fh, &fw, &index, &eof, &e)) {
            printf("FAIL %s\n", e.msg);
            n = -1;
            break;
        }
        if (eof) break;
        if (index != n || fh != h || fw != w) {
            printf("FAIL %s: frame %lld came as index %lld, %dx%d\n", name, (long long)n, (long long)index, fw, fh);
            fail++;
        }
        last_crc = man_crc32(rgb, (size_t)h * w * 3);
        if (n < max) crc[n] = last_crc;
        if (keep && n < max) {
            keep[n] = malloc((size_t)h * w * 3);
            memcpy(keep[n], rgb, (size_t)h * w * 3);
        }
        n++;
    }
    /* the last frame is still there for readers whose plan outruns the decodable frames */
    if (n > 0) {
        const uint8_t *rgb;
        int fh, fw;
        int64_t last;
        if (video_last(r, &rgb, &fh, &fw, &last, &e) || last != n - 1 || man_crc32(rgb, (size_t)h * w * 3) != last_crc) {
            printf("FAIL %s: video_last does not give frame %lld again (%s)\n", name, (long long)(n - 1), e.msg);
            fail++;
        }
    }
    video_close(r);
    return n;
}

static void test_video(const struct man_line *l) {
    /* video NAME NFRAMES NPACKETS H W : crc... */
    const char *name = l->f[1];
    int64_t nf = atoll(l->f[2]), np = atoll(l->f[3]);
    int h = atoi(l->f[4]), w = atoi(l->f[5]);
    char path[1024];
    path_of(path, sizeof path, name);
    struct jerr e = {0};
    int64_t probed = 0;
    int ph = 0, pw = 0;
    if (video_probe(path, &probed, &ph, &pw, &e) || probed != np || ph != h || pw != w) {
        printf("FAIL %s: probe %lld frames %dx%d (want %lld, %dx%d) %s\n", name, (long long)probed, pw, ph,
               (long long)np, w, h, e.msg);
        fail++;
    }
    uint32_t *crc = calloc((size_t)nf + 1, sizeof(uint32_t));
    int64_t n = decode_all(name, h, w, crc, nf + 1, NULL);
    if (n != nf) {
        printf("FAIL %s: decoded %lld frames, PyAV %lld\n", name, (long long)n, (long long)nf);
        fail++;
    }
    int bad = 0;
    for (int64_t i = 0; i < nf && i < n; i++)
        if (crc[i] != (uint32_t)strtoul(l->f[7 + i], NULL, 16)) {
            if (bad++ < 5) printf("FAIL %s frame %lld: crc %08x, PyAV %s\n", name, (long long)i, crc[i], l->f[7 + i]);
        }
    if (bad) fail++;
    printf("%s: %lld frames %dx%d, %lld differ from PyAV\n", name, (long long)n, w, h, (long long)bad);
    free(crc);
}

static void test_frame(const struct man_line *l) {
    /* videoframe NAME INDEX FILE */
    struct npy ref;
    struct jerr e = {0};
    char path[1024];
    path_of(path, sizeof path, l->f[3]);
    if (npy_load(&ref, path, &e)) {
        printf("FAIL %s: %s\n", path, e.msg);
        fail++;
        return;
    }
    int64_t k = atoll(l->f[2]);
    int h = (int)ref.shape[0], w = (int)ref.shape[1];
    uint32_t *crc = calloc((size_t)k + 1, sizeof(uint32_t));
    uint8_t **keep = calloc((size_t)k + 1, sizeof(uint8_t *));
    int64_t n = decode_all(l->f[1], h, w, crc, k + 1, keep);
    if (n <= k || !keep[k] || memcmp(keep[k], ref.data, (size_t)h * w * 3)) {
        int maxd = 0;
        for (size_t i = 0; n > k && keep[k] && i < (size_t)h * w * 3; i++) {
            int d = abs((int)keep[k][i] - (int)((uint8_t *)ref.data)[i]);
            if (d > maxd) maxd = d;
        }
        printf("FAIL %s frame %lld differs from PyAV's (max abs diff %d)\n", l->f[1], (long long)k, maxd);
        fail++;
    }
    for (int64_t i = 0; i <= k; i++) free(keep[i]);
    free(keep);
    free(crc);
    npy_free(&ref);
}

static void test_e2e(const struct man_line *l) {
    /* e2e_video NAME FPC FSTP FRAMES.npy : idx... */
    struct npy ref;
    struct jerr e = {0};
    char path[1024];
    path_of(path, sizeof path, l->f[4]);
    if (npy_load(&ref, path, &e)) {
        printf("FAIL %s: %s\n", path, e.msg);
        fail++;
        return;
    }
    int fpc = atoi(l->f[2]), fstp = atoi(l->f[3]);
    path_of(path, sizeof path, l->f[1]);
    int64_t len = 0, idx[64];
    int h, w;
    if (video_probe(path, &len, &h, &w, &e) || fpc > 64 || video_clip_indices(len, fpc, fstp, 1, idx, &e)) {
        printf("FAIL %s: %s\n", path, e.msg);
        fail++;
        npy_free(&ref);
        return;
    }
    for (int t = 0; t < fpc; t++)
        if (idx[t] != atoll(l->f[6 + t])) printf("FAIL e2e index %d: %lld vs %s\n", t, (long long)idx[t], l->f[6 + t]), fail++;
    uint32_t *crc = calloc((size_t)len, sizeof(uint32_t));
    uint8_t **keep = calloc((size_t)len, sizeof(uint8_t *));
    int64_t n = decode_all(l->f[1], h, w, crc, len, keep);
    const size_t fs = (size_t)h * w * 3;
    for (int t = 0; t < fpc; t++)
        if (n <= idx[t] || memcmp(keep[idx[t]], (uint8_t *)ref.data + t * fs, fs))
            printf("FAIL e2e clip frame %d (video frame %lld) differs\n", t, (long long)idx[t]), fail++;
    for (int64_t i = 0; i < len; i++) free(keep[i]);
    free(keep);
    free(crc);
    npy_free(&ref);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_video INPUT_DATA_DIR\n");
        return 2;
    }
    dir = argv[1];
    if (!video_available()) {
        printf("this build has no video decoding: skipped\n");
        return 77;
    }
    char *text = man_read(dir), *cur = text;
    if (!text) return 1;
    static struct man_line l;
    int n_videos = 0;
    while (man_next(&cur, &l)) {
        if (!strcmp(l.f[0], "video")) test_video(&l), n_videos++;
        else if (!strcmp(l.f[0], "videoframe")) test_frame(&l);
        else if (!strcmp(l.f[0], "e2e_video")) test_e2e(&l);
    }
    /* errors: a missing file, a file that is not a video (FFmpeg plays text files as
     * ANSI art, so the binary .npy stands in) */
    struct jerr e = {0};
    struct video_reader *r = NULL;
    if (video_open(&r, "/nonexistent/v.mp4", &e) != JEPA_ERR_IO || r || !strstr(e.msg, "/nonexistent/v.mp4"))
        printf("FAIL missing file: '%s'\n", e.msg), fail++;
    char path[1024];
    path_of(path, sizeof path, "e2e_png_input.npy");
    e = (struct jerr){0};
    int64_t n;
    int h, w;
    if (video_probe(path, &n, &h, &w, &e) == JEPA_OK) printf("FAIL a text file probed as a video\n"), fail++;
    printf("%d videos checked against PyAV, %d failures\n", n_videos, fail);
    free(text);
    return fail || n_videos < 3 ? 1 : 0;
}
