/*
 * image.h — still images in, decoded to packed 8-bit RGB as Hugging Face's processors get
 * them: PIL's Image.open, then transformers' image_transforms.convert_to_rgb (an image
 * whose PIL mode has alpha, or whose info has "transparency", is converted to RGBA and
 * composited onto white with PIL's integer rounding; any other is convert("RGB")). The
 * decoder is chosen by the file's first bytes, never by its name or the option that named
 * it, with one Debian library per format:
 *   PNG   stb_image (libstb-dev): every colour type and depth; 16-bit samples to their
 *         high byte, except 16-bit grey, which PIL clips at 255
 *   JPEG  libjpeg-turbo (libjpeg62-turbo-dev), at PIL's settings; grey, progressive, and
 *         CMYK / YCCK (read inverted, as PIL reads every CMYK JPEG, then PIL's CMYK to RGB)
 *   WebP  libwebp (libwebp-dev), still images
 *   BMP   stb_image: 1/4/8-bit palette, 24-bit, 32-bit (alpha only with an alpha bit mask,
 *         as PIL); 16-bit and RLE BMPs are refused by name
 *   GIF   giflib (libgif-dev): the first frame on its logical screen, as PIL's first frame
 *   TGA   stb_image: colour-mapped, grey, grey + alpha, 24/32-bit, RLE or not, any origin;
 *         16-bit colour refused by name
 *   TIFF  libtiff (libtiff-dev): the first page, strips in any compression libtiff reads;
 *         8-bit grey, grey + alpha, RGB, RGBA, palette, CMYK; 1-bit and 16-bit grey
 * PSD, HDR and PNM are named and refused. A build without one of the libraries names the
 * format and the library in its error ("this build has no TIFF decoding (libtiff not found;
 * install libtiff-dev)"). EXIF orientation is not applied (neither PIL's Image.open nor
 * the HF processors apply it) unless asked: IMAGE_EXIF_ROTATE, or image_exif_rotate for
 * the calls without flags, rotates as PIL's ImageOps.exif_transpose.
 *
 * Tested by tests/input/test_formats.c (every format against PIL-made fixtures,
 * tests/gen/gen_formats.py), tests/input/test_preprocess.c (PNG, JPEG, WebP) and end to
 * end by tests/input/test_cli_input.sh.
 */
#ifndef JEPA_INPUT_IMAGE_H
#define JEPA_INPUT_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/error.h"

/* The formats decoded, and what a file that is none of them (nor a video) is told. */
#define IMAGE_FORMATS "PNG, JPEG, WebP, BMP, GIF, TGA, TIFF"
#define IMAGE_NOT_MEDIA "not an image or video jepa reads (images: " IMAGE_FORMATS "; videos: what FFmpeg opens)"

/* The still-image format data[n] starts with, by its signature (TGA, which has none, by a
 * header PIL would accept): "PNG", "JPEG", "WebP", "BMP", "GIF", "TIFF", "TGA" (decoded),
 * "PSD", "HDR", "PNM" (named and refused), or NULL. */
const char *image_format(const void *data, size_t n);

/* Whether the file at path is one of the decoded formats by its first bytes (false if
 * unreadable): the one test that sends a file to the image decoder or to the video one. */
bool image_is_image_file(const char *path);

/* Apply the EXIF orientation (ImageOps.exif_transpose). */
#define IMAGE_EXIF_ROTATE 1u
/* The flags of image_load_rgb / image_decode_rgb: IMAGE_EXIF_ROTATE when true (the CLI's
 * --exif-rotate sets it once, before any input is read). */
extern bool image_exif_rotate;

/* Decode the file at path: *rgb (malloc'ed, h * w * 3 bytes, rows packed). */
jepa_status image_load_rgb(const char *path, uint8_t **rgb, int *h, int *w, struct jerr *e);
jepa_status image_load_rgb_flags(const char *path, unsigned flags, uint8_t **rgb, int *h, int *w, struct jerr *e);
/* The same from memory. */
jepa_status image_decode_rgb(const void *data, size_t size, uint8_t **rgb, int *h, int *w,
                             struct jerr *e);
jepa_status image_decode_rgb_flags(const void *data, size_t size, unsigned flags, uint8_t **rgb, int *h, int *w,
                                   struct jerr *e);

/* The error for a file that fopen could not open (errno set by it): "PATH: no such file",
 * or strerror; the same whichever decoder the file was meant for. */
jepa_status image_open_error(const char *path, struct jerr *e);

#endif
