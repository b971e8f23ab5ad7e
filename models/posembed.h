/*
 * posembed.h — resampling a learned / sincos position table to another patch grid, as
 * the reference implementations do for inputs of other sizes (Hugging Face's
 * interpolate_pos_encoding: torch.nn.functional.interpolate, bicubic, align_corners=False,
 * no antialias, to the output size).
 */
#ifndef JEPA_MODELS_POSEMBED_H
#define JEPA_MODELS_POSEMBED_H

/* out [gh*gw, d] <- tab [g0h*g0w, d] (rows in h-major order), bicubic (A = -0.75),
 * align_corners = False, border pixels clamped — torch's upsample_bicubic2d. */
void jm_pos_embed_interpolate(float *out, const float *tab, int g0h, int g0w, int gh, int gw, int d);

#endif
