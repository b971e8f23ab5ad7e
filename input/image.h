/*
 * image.h — still images in: PNG (stb_image, Debian's libstb-dev) and JPEG
 * (libjpeg-turbo, libjpeg62-turbo-dev, at PIL's settings), decoded to packed 8-bit RGB;
 * other formats are refused by name.
 *
 * Grey and grey+alpha images are expanded to RGB by replication, alpha is dropped (what
 * PIL's convert("RGB") does); 16-bit PNGs are reduced to 8 bits by stb; CMYK JPEGs are
 * refused. EXIF orientation is not applied (neither PIL's Image.open nor the HF
 * processors apply it).
 *
 * Tested by tests/input/test_preprocess.c (a committed PNG against PIL's decode, and a
 * corrupt file) and end to end by tests/input/test_cli_input.sh.
 */
#ifndef JEPA_INPUT_IMAGE_H
#define JEPA_INPUT_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/error.h"

/* Decode the file at path: *rgb (malloc'ed, h * w * 3 bytes, rows packed). */
jepa_status image_load_rgb(const char *path, uint8_t **rgb, int *h, int *w, struct jerr *e);
/* The same from memory. */
jepa_status image_decode_rgb(const void *data, size_t size, uint8_t **rgb, int *h, int *w,
                             struct jerr *e);

#endif
