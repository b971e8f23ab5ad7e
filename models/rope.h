/*
 * rope.h — per-token cos/sin tables of the 3-D RoPE used by V-JEPA 2, V-JEPA 2.1 and
 * LeVJEPA (the conventions, and where they come from: docs/rope.md).
 *
 * Each token has a position (t, h, w) (floats: 2.1 rescales h, w to a reference grid).
 * With d = 2 * ((head_dim / 3) / 2) dims per axis, dims [0, d) rotate with t, [d, 2d)
 * with h, [2d, 3d) with w, and [3d, head_dim) pass through (cos 1, sin 0).
 * Within an axis segment, omega_k = theta^(-k / (d/2)), k = 0 .. d/2 - 1, and dim j of
 * the segment uses the angle pos * omega_f(j):
 *   tiled (V-JEPA 2, LeVJEPA):   f(j) = j mod (d/2)     (Meta's repeat(1,1,1,2) table)
 *   interleaved (V-JEPA 2.1):    f(j) = j / 2           (repeat_interleave: textbook RoPE)
 * The kernel slot k->rope then applies x*cos + rot90(x)*sin.
 */
#ifndef JEPA_MODELS_ROPE_H
#define JEPA_MODELS_ROPE_H

#include "models/model.h"

/* One token's position; identity = true gives cos 1 / sin 0 everywhere (CLS);
 * depth_only = true rotates the t segment only, h and w pass through (V-JEPA 2-AC's
 * action and state tokens). */
struct rope_pos {
    float t, h, w;
    bool identity, depth_only;
};

/* cos, sin: [n, head_dim]. Angles are computed in double and rounded once. */
void jm_rope_tables(float *cos, float *sin, const struct rope_pos *pos, int n, int head_dim,
                 float theta, enum jm_rope_layout layout);

/* Positions of token ids on a gt x gh x gw grid (id = t*gh*gw + h*gw + w), optionally
 * with h, w rescaled by (ref_grid - 1) / (g - 1) (V-JEPA 2.1 interpolate_rope; a grid
 * side of 1 keeps position 0). ids NULL means 0 .. n-1. */
void jm_rope_positions(struct rope_pos *pos, const int32_t *ids, int n, int gh, int gw,
                    bool interpolate, int ref_grid);

#endif
