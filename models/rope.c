/*
 * rope.c — per-token cos/sin tables of the 3-D RoPE (V-JEPA 2, V-JEPA 2.1, LeVJEPA) and
 * the token positions they are built from; the conventions are those of models/rope.h
 * (docs/rope.md). The kernel slot k->rope applies
 * the tables. Tested by tests/checkasm/test_ops.c against the formulas written out
 * independently there, and end to end by the parity tests (tests/models).
 */
#include <math.h>

#include "models/rope.h"

void jm_rope_tables(float *cos_t, float *sin_t, const struct rope_pos *pos, int n, int head_dim,
                 float theta, enum jm_rope_layout layout) {
    const int d = 2 * ((head_dim / 3) / 2);     /* dims per axis: 20 for 64, 10 for 32 */
    const int half = d / 2;                     /* frequencies per axis */
    for (int i = 0; i < n; i++) {
        float *c = cos_t + (size_t)i * head_dim, *s = sin_t + (size_t)i * head_dim;
        int j0 = 0;
        if (!pos[i].identity) {
            const double p[3] = {pos[i].t, pos[i].h, pos[i].w};
            const int n_ax = pos[i].depth_only ? 1 : 3;
            for (int ax = 0; ax < n_ax; ax++)
                for (int j = 0; j < d; j++) {
                    /* tiled: [f_0 .. f_{d/2-1}, f_0 .. f_{d/2-1}]; interleaved: [f_0, f_0, f_1, f_1, ..] */
                    const int k = layout == JM_ROPE_TILED ? j % half : j / 2;
                    const double omega = pow((double)theta, -(double)k / half);   /* theta^(-k/(d/2)) */
                    const double ang = p[ax] * omega;
                    c[ax * d + j] = (float)cos(ang);
                    s[ax * d + j] = (float)sin(ang);
                }
            j0 = n_ax * d;
        }
        for (int j = j0; j < head_dim; j++) c[j] = 1.0f, s[j] = 0.0f;   /* identity / pass-through */
    }
}

void jm_rope_positions(struct rope_pos *pos, const int32_t *ids, int n, int gh, int gw,
                    bool interpolate, int ref_grid) {
    for (int i = 0; i < n; i++) {
        const int32_t id = ids ? ids[i] : i;
        const int t = id / (gh * gw), h = (id % (gh * gw)) / gw, w = id % gw;
        float ph = (float)h, pw = (float)w;
        if (interpolate) {
            /* V-JEPA 2.1 interpolate_rope, in float like the reference: h * (ref - 1) / (g - 1);
             * a grid side of 1 has only position 0 (no division by zero). */
            if (gh > 1) ph = (float)(h * (ref_grid - 1)) / (float)(gh - 1);
            if (gw > 1) pw = (float)(w * (ref_grid - 1)) / (float)(gw - 1);
        }
        pos[i] = (struct rope_pos){(float)t, ph, pw, false, false};
    }
}
