/*
 * image.h — still images in: PNG (stb_image, Debian's libstb-dev), JPEG (libjpeg-turbo,
 * libjpeg62-turbo-dev, at PIL's settings) and WebP (libwebp, libwebp-dev), decoded to
 * packed 8-bit RGB; other formats are refused by name.
 *
 * Pixels are what Hugging Face's processors get from PIL (transformers' convert_to_rgb):
 * RGB images as they are; every other PNG (grey, grey + alpha, palette, RGBA, with or
 * without tRNS) converted to RGBA and composited onto white with PIL's integer rounding;
 * low bit depths scaled and 16-bit samples reduced to their high byte, except 16-bit grey,
 * which PIL clips at 255. A WebP with alpha is composited onto white likewise. CMYK JPEGs are refused. EXIF orientation is not applied (neither PIL's Image.open nor the HF
 * processors apply it).
 *
 * Tested by tests/input/test_preprocess.c (a committed PNG against PIL's decode, and a
 * corrupt file) and end to end by tests/input/test_cli_input.sh.
 */
#ifndef JEPA_INPUT_IMAGE_H
#define JEPA_INPUT_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/error.h"

/* The still-image format data[n] starts with, by its signature: "PNG", "JPEG", "WebP"
 * (decoded), "BMP", "GIF", "PSD", "HDR", "PNM" (named and refused), or NULL. */
const char *image_format(const void *data, size_t n);

/* Whether the file at path starts with a PNG, JPEG or WebP signature (false if unreadable). */
bool image_is_image_file(const char *path);

/* Decode the file at path: *rgb (malloc'ed, h * w * 3 bytes, rows packed). */
jepa_status image_load_rgb(const char *path, uint8_t **rgb, int *h, int *w, struct jerr *e);
/* The same from memory. */
jepa_status image_decode_rgb(const void *data, size_t size, uint8_t **rgb, int *h, int *w,
                             struct jerr *e);

#endif
