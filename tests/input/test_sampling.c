/*
 * test_sampling.c — clip frame indices of input/video.c against numpy: Meta's
 * loadvideo_decord sampling (np.linspace over a window of F * S frames, partitions,
 * overlapping clips of short videos) and the dense tiling, for the grid of lengths,
 * clip sizes, steps, clip counts and strides in tests/input/data/manifest.txt
 * (tests/gen/gen_preprocess.py). Pure arithmetic: runs without FFmpeg.
 *
 * usage: test_sampling INPUT_DATA_DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "input/video.h"
#include "manifest.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_sampling INPUT_DATA_DIR\n");
        return 2;
    }
    char *text = man_read(argv[1]), *cur = text;
    if (!text) return 1;
    static struct man_line l;
    int n_clips = 0, n_dense = 0, fail = 0;
    while (man_next(&cur, &l)) {
        int dense = !strcmp(l.f[0], "dense");
        if (!dense && strcmp(l.f[0], "clips")) continue;
        /* clips LEN FPC FSTP NCLIPS : idx...   dense LEN FPC FSTP STRIDE NCLIPS : idx... */
        int64_t len = atoll(l.f[1]);
        int fpc = atoi(l.f[2]), fstp = atoi(l.f[3]);
        int64_t nc = dense ? atoll(l.f[5]) : atoll(l.f[4]);
        int colon = dense ? 6 : 5;
        int64_t n = l.n - colon - 1;
        if (strcmp(l.f[colon], ":") || n != nc * fpc) {
            printf("FAIL malformed manifest line (%s %lld)\n", l.f[0], (long long)len);
            fail++;
            continue;
        }
        int64_t *got = calloc((size_t)n, sizeof(int64_t));
        int64_t got_nc = nc;
        if (dense) {
            got_nc = video_dense_indices(len, fpc, fstp, atoll(l.f[4]), NULL);
            if (got_nc == nc) video_dense_indices(len, fpc, fstp, atoll(l.f[4]), got);
            n_dense++;
        } else {
            struct jerr e = {0};
            if (video_clip_indices(len, fpc, fstp, (int)nc, got, &e)) {
                printf("FAIL clips %lld %d %d %lld: %s\n", (long long)len, fpc, fstp, (long long)nc, e.msg);
                fail++;
            }
            n_clips++;
        }
        int bad = got_nc != nc;
        for (int64_t i = 0; !bad && i < n; i++) bad = got[i] != atoll(l.f[colon + 1 + i]);
        if (bad) {
            printf("FAIL %s len %lld fpc %d step %d %s %s: %lld clips (want %lld), first indices", l.f[0],
                   (long long)len, fpc, fstp, dense ? "stride" : "clips", l.f[4], (long long)got_nc, (long long)nc);
            for (int64_t i = 0; i < n && i < 16; i++) printf(" %lld/%s", (long long)got[i], l.f[colon + 1 + i]);
            printf("\n");
            fail++;
        }
        free(got);
    }
    /* argument errors */
    struct jerr e = {0};
    int64_t idx[4];
    if (video_clip_indices(0, 4, 1, 1, idx, &e) != JEPA_ERR_ARG || !e.msg[0]) printf("FAIL empty video accepted\n"), fail++;
    if (video_dense_indices(10, 0, 1, 0, NULL) != 0) printf("FAIL zero frames per clip accepted\n"), fail++;
    printf("%d sampled and %d dense index sets checked against numpy, %d failed\n", n_clips, n_dense, fail);
    free(text);
    return fail || n_clips < 100 || n_dense < 50 ? 1 : 0;
}
