/*
 * fuzz_image.c — libFuzzer target for the image decoder (input/image.c,
 * image_decode_rgb): an accepted image has a size within the decoder's bounds and
 * h x w x 3 readable bytes; a refusal carries a reason. Replayed over
 * tests/fuzz/corpus_image by fuzz_image_replay (tests/fuzz/meson.build).
 */
#include <stdint.h>
#include <stdlib.h>

#include "input/image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *rgb = NULL;
    int h = 0, w = 0;
    struct jerr err = {0};
    if (image_decode_rgb(data, size, &rgb, &h, &w, &err) != JEPA_OK) {
        if (!err.msg[0] || rgb) __builtin_trap();
        return 0;
    }
    if (!rgb || h < 1 || w < 1 || (int64_t)h * w > (1 << 26)) __builtin_trap();
    sink = rgb[0] + rgb[(size_t)h * w * 3 - 1];
    free(rgb);
    return 0;
}
