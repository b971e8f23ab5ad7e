/*
 * resize_tool.c — a developer tool, not a test: runs one ji_pre_resize_u8() on raw pixels
 * so tests/gen/gen_preprocess.py --fuzz N can compare thousands of random sizes against
 * torchvision and cv2 (the committed cases are the ones test_preprocess.c replays).
 *
 *   resize_tool FILTER H W C OH OW [Y0 X0 NY NX] < in.raw > out.raw
 *   FILTER: tv_bilinear_aa | tv_bicubic_aa | tv_bilinear | tv_bicubic | cv2_linear
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "input/preprocess.h"

int main(int argc, char **argv) {
    static const char *names[] = {"tv_bilinear_aa", "tv_bicubic_aa", "tv_bilinear", "tv_bicubic", "cv2_linear"};
    if (argc != 7 && argc != 11) {
        fprintf(stderr, "usage: resize_tool FILTER H W C OH OW [Y0 X0 NY NX] < in.raw > out.raw\n");
        return 2;
    }
    int f = -1;
    for (int i = 0; i < 5; i++)
        if (!strcmp(argv[1], names[i])) f = i;
    int h = atoi(argv[2]), w = atoi(argv[3]), c = atoi(argv[4]), oh = atoi(argv[5]), ow = atoi(argv[6]);
    int y0 = 0, x0 = 0, ny = oh, nx = ow;
    if (argc == 11) y0 = atoi(argv[7]), x0 = atoi(argv[8]), ny = atoi(argv[9]), nx = atoi(argv[10]);
    if (f < 0 || h < 1 || w < 1 || c < 1 || c > 4 || ny < 1 || nx < 1) {
        fprintf(stderr, "resize_tool: bad arguments\n");
        return 2;
    }
    size_t n_in = (size_t)h * w * c, n_out = (size_t)ny * nx * c;
    unsigned char *in = malloc(n_in), *out = malloc(n_out);
    if (!in || !out || fread(in, 1, n_in, stdin) != n_in) {
        fprintf(stderr, "resize_tool: cannot read %zu bytes\n", n_in);
        return 1;
    }
    struct jerr e = {0};
    if (ji_pre_resize_u8(in, h, w, (size_t)w * c, c, (enum pre_filter)f, oh, ow, y0, x0, ny, nx, out, &e)) {
        fprintf(stderr, "resize_tool: %s\n", e.msg);
        return 1;
    }
    fwrite(out, 1, n_out, stdout);
    free(in);
    free(out);
    return 0;
}
