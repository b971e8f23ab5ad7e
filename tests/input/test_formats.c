/*
 * test_formats.c — input/image.c's BMP, GIF, TGA, TIFF, CMYK JPEG, PNG-with-key and EXIF
 * decodes against PIL: every case of data/formats/manifest.txt ("name file height width
 * rotate", from tests/gen/gen_formats.py) decodes to exactly the bytes of name.npy, which
 * are transformers' convert_to_rgb of PIL's Image.open(file) (after
 * ImageOps.exif_transpose where rotate is 1, our IMAGE_EXIF_ROTATE). A format this build
 * has no library for must be refused naming the format and the library, and its cases
 * are counted as not run. Then the errors every decoder shares: a missing file, a text
 * file, the formats refused by name.
 *
 * Usage: test_formats DATA_DIR   (tests/input/data)
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "input/image.h"
#include "input/npy.h"
#include "tests/check.h"

static const char *data_dir;

/* The library a format's decoder needs, as the build's error names it. */
static const char *library_of(const char *file) {
    const char *ext = strrchr(file, '.');
    return !ext ? "?" : !strcmp(ext, ".tif") ? "libtiff" : !strcmp(ext, ".gif") ? "giflib"
         : !strcmp(ext, ".jpg") ? "JPEG decoding" : "stb_image";
}

static void one_case(const char *name, const char *file, int h, int w, int rotate, int *run, int *skipped) {
    char path[1024];
    snprintf(path, sizeof path, "%s/formats/%s", data_dir, file);
    uint8_t *rgb = NULL;
    int ih = 0, iw = 0;
    struct jerr e = {0};
    jepa_status st = image_load_rgb_flags(path, rotate ? IMAGE_EXIF_ROTATE : 0, &rgb, &ih, &iw, &e);
    if (st == JEPA_ERR_UNSUPPORTED && strstr(e.msg, "this build has no")) {
        CHECK(strstr(e.msg, library_of(file)) != NULL, "%s: the refusal names the library: '%s'", name, e.msg);
        ++*skipped;
        return;
    }
    ++*run;
    CHECK(st == JEPA_OK && ih == h && iw == w, "%s: %s (%dx%d, expected %dx%d)", name, e.msg, ih, iw, h, w);
    struct npy ref;
    struct jerr le = {0};
    snprintf(path, sizeof path, "%s/formats/%s.npy", data_dir, name);
    if (npy_load(&ref, path, &le)) {
        CHECK(0, "cannot load %s: %s", path, le.msg);
    } else {
        const bool shape = ref.dtype == NPY_U8 && ref.ndim == 3 && ref.shape[0] == h && ref.shape[1] == w &&
                           ref.shape[2] == 3;
        CHECK(shape, "%s: reference shape", name);
        if (st == JEPA_OK && shape && ih == h && iw == w) {
            size_t differ = 0, first = 0;
            const uint8_t *want = ref.data;
            for (size_t i = (size_t)h * w * 3; i-- > 0;)
                if (rgb[i] != want[i]) differ++, first = i;
            CHECK(!differ, "%s: %zu of %d bytes differ from PIL's (first at pixel %zu: %u, PIL %u)", name, differ,
                  h * w * 3, first / 3, differ ? rgb[first] : 0, differ ? want[first] : 0);
        }
        npy_free(&ref);
    }
    free(rgb);
}

static void test_manifest(void) {
    char path[1024], line[512];
    snprintf(path, sizeof path, "%s/formats/manifest.txt", data_dir);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "cannot open %s", path);
    if (!f) return;
    int run = 0, skipped = 0;
    while (fgets(line, sizeof line, f)) {
        char name[128], file[128];
        int h, w, rotate;
        if (line[0] == '#' || sscanf(line, "%127s %127s %d %d %d", name, file, &h, &w, &rotate) != 5) continue;
        one_case(name, file, h, w, rotate, &run, &skipped);
    }
    fclose(f);
    CHECK(run + skipped >= 50, "formats manifest: %d cases", run + skipped);
    printf("formats: %d files decoded as PIL + convert_to_rgb give them", run);
    if (skipped) printf("; %d not run (this build lacks their library)", skipped);
    printf("\n");
}

/* The errors: one message for a missing file, "not an image or video" for a text file,
 * formats refused by name, a file read through either entry point the same way. */
static void test_errors(void) {
    char path[1024];
    uint8_t *rgb = NULL;
    int h, w;
    struct jerr e = {0};
    CHECK(image_load_rgb("/nonexistent/x.bmp", &rgb, &h, &w, &e) == JEPA_ERR_IO && !rgb &&
              !strcmp(e.msg, "/nonexistent/x.bmp: no such file"),
          "a missing file: '%s'", e.msg);
    snprintf(path, sizeof path, "%s/formats/manifest.txt", data_dir);
    e = (struct jerr){0};
    CHECK(image_load_rgb(path, &rgb, &h, &w, &e) == JEPA_ERR_FORMAT && strstr(e.msg, "not an image or video jepa reads"),
          "a text file: '%s'", e.msg);
    CHECK(!image_is_image_file(path), "a text file is not an image file");
    snprintf(path, sizeof path, "%s/formats/tga_rgb.tga", data_dir);
    CHECK(image_is_image_file(path), "a TGA (no signature) is an image file by its header");
    static const char psd[] = "8BPS\0\1\0\0\0\0\0\0\0\3";
    e = (struct jerr){0};
    CHECK(image_decode_rgb(psd, sizeof psd, &rgb, &h, &w, &e) == JEPA_ERR_UNSUPPORTED && strstr(e.msg, "PSD"),
          "a PSD is refused by name: '%s'", e.msg);
    /* a 16-bit BMP header: stb's and PIL's 5-bit scaling differ, so it is refused */
    uint8_t bmp16[70] = {'B', 'M'};
    bmp16[14] = 40, bmp16[18] = 2, bmp16[22] = 2, bmp16[26] = 1, bmp16[28] = 16;
    e = (struct jerr){0};
    CHECK(image_decode_rgb(bmp16, sizeof bmp16, &rgb, &h, &w, &e) == JEPA_ERR_UNSUPPORTED && strstr(e.msg, "16-bit BMP"),
          "a 16-bit BMP is refused by name: '%s'", e.msg);
    /* an mp4's first bytes are no image: the file goes to the video decoder */
    static const uint8_t mp4[24] = {0, 0, 0, 0x18, 'f', 't', 'y', 'p', 'i', 's', 'o', 'm'};
    CHECK(image_format(mp4, sizeof mp4) == NULL, "an MP4 header is not taken for an image (TGA has no signature)");
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_formats DATA_DIR\n");
        return 2;
    }
    data_dir = argv[1];
    test_manifest();
    test_errors();
    return check_finish("formats");
}
