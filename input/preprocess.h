/*
 * preprocess.h — the pixel pipeline between decoded RGB frames and the float clips the
 * encoders take: resize (torchvision-exact or cv2-exact), centre crop, normalisation.
 *
 * Everything works on interleaved 8-bit RGB (HWC, the layout decoders produce) and
 * writes planar float into a clip x[C, T, H, W]. The public entry points are the
 * jepa_preprocess_*() functions of include/jepa.h (defined in models/api.c, which hands
 * them the model's recipe); the pieces below are what they are built from, exposed for
 * the tests and the CLI. input/ knows nothing of models: what it needs of one is
 * its recipe, the public jepa_preprocess_recipe (jepa.pre.*).
 *
 * Tested by tests/input/test_preprocess.c against torchvision / cv2 / transformers
 * outputs made by tests/gen/gen_preprocess.py.
 */
#ifndef JEPA_INPUT_PREPROCESS_H
#define JEPA_INPUT_PREPROCESS_H

#include <stddef.h>
#include <stdint.h>

#include "jepa.h"
#include "runtime/error.h"

/* How pixels are resampled. The TV_* filters are
 * torchvision.transforms.v2.functional.resize on a uint8 CHW tensor (on x86 with AVX2
 * and on aarch64 torch runs its native uint8 path, which these reproduce bit for bit);
 * CV2_LINEAR is cv2.resize(..., interpolation=cv2.INTER_LINEAR) on a uint8 HWC array. */
enum pre_filter {
    PRE_TV_BILINEAR_AA,   /* antialias=True, triangle filter widened by the downscale factor */
    PRE_TV_BICUBIC_AA,    /* antialias=True, Keys cubic a = -0.5 widened likewise */
    PRE_TV_BILINEAR,      /* antialias=False */
    PRE_TV_BICUBIC,       /* antialias=False, Keys cubic a = -0.75 */
    PRE_CV2_LINEAR,       /* cv2 INTER_LINEAR, 11-bit fixed point */
};

enum pre_mode { PRE_SHORTEST_EDGE, PRE_SQUASH };   /* jepa.pre.resize_mode, in its order */
enum pre_norm { PRE_NORM_FUSED, PRE_NORM_SEQUENTIAL };

/* The largest resize target and crop side, from a file (jepa.pre.*) or an override: a
 * crop of 4096^2 pixels is 200 MB of floats per frame, far past any published model
 * (384 px). */
#define JI_MAX_PRE_SIDE 4096

/* One frame's pipeline: resize to (rh, rw), take the crop box (top, left, ch, cw),
 * normalise. */
struct pre_cfg {
    enum pre_filter filter;
    enum pre_mode mode;
    int resize_short;      /* shortest_edge: short side after the resize; squash: the side */
    int crop;              /* centre crop side */
    float mean[3], std[3];
    float rescale;         /* pixel scale, 1/255 */
    enum pre_norm norm;
};

struct pre_geom {
    int rh, rw;            /* size after the resize */
    int top, left;         /* crop box in the resized image */
    int ch, cw;            /* crop box size */
};

/* The resize target and crop box for an h x w frame. Shortest edge follows transformers'
 * get_resize_output_image_size (long side = int(short_side * long / short), truncated —
 * torchvision's and Meta's get_resize_sizes agree); the crop is HF's torchvision backend
 * (top = (rh - crop) / 2, rounded down). JEPA_ERR_ARG when the crop does not fit. */
jepa_status ji_pre_geometry(const struct pre_cfg *c, int h, int w, struct pre_geom *g,
                         struct jerr *e);

/* Resize src (h x w x ch interleaved u8, row stride src_stride bytes) to oh x ow and
 * write only the window rows [y0, y0 + ny) x columns [x0, x0 + nx) of the result into
 * dst (ny x nx x ch, packed). The window is bit-identical to cropping the full resize:
 * the torchvision weight precision is taken over every output position, as torch does. */
jepa_status ji_pre_resize_u8(const uint8_t *src, int h, int w, size_t src_stride, int ch,
                          enum pre_filter f, int oh, int ow, int y0, int x0, int ny, int nx,
                          uint8_t *dst, struct jerr *e);

/* Resize + crop one frame: rgb (h x w x 3, stride) -> out (g.ch x g.cw x 3, packed). */
jepa_status ji_pre_frame_u8(const struct pre_cfg *c, const uint8_t *rgb, int h, int w, size_t stride,
                         uint8_t *out, struct pre_geom *g, struct jerr *e);

/* Normalise a packed n-pixel RGB u8 frame into three planes out + c * plane_stride:
 *   fused       (px - m) / s with m = mean * k, s = std * k in float32, k = 1 / rescale
 *               (HF's torchvision backend);
 *   sequential  (px / k - mean) / std (Meta's ClipToTensor + Normalize).
 * k is snapped to the nearest integer when rescale is 1/integer up to float rounding, as
 * the Python side holds it in double. */
void ji_pre_normalize(const struct pre_cfg *c, const uint8_t *rgb, size_t n, float *out,
                   size_t plane_stride);

/* Fill a pre_cfg from a recipe and the caller's overrides (p NULL: none). JEPA_ERR_ARG
 * names a bad override. */
jepa_status ji_pre_cfg(const jepa_preprocess_recipe *r, const struct jepa_preprocess_params *p,
                       struct pre_cfg *c, struct jerr *e);

/* One h x w RGB frame (packed rows) through c into frame t of a clip out[3, T, crop, crop]
 * (the public jepa_preprocess_rgb once its arguments are checked). */
jepa_status ji_pre_clip_frame(const struct pre_cfg *c, const uint8_t *rgb, int h, int w,
                              float *out, int T, int t, struct jerr *e);

#endif
