/*
 * rope.c — per-token cos/sin tables of the 3-D RoPE (V-JEPA 2, V-JEPA 2.1, LeVJEPA) and
 * the token positions they are built from; the conventions are those of models/rope.h
 * (docs/rope.md). The kernel slot k->rope applies
 * the tables. Tested by tests/checkasm/test_ops.c against the formulas written out
 * independently there, and end to end by the parity tests (tests/models).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "models/rope.h"

/* One axis segment of a row: d dims at the position value v (what every axis computes
 * alike: the segment depends on v alone, not on the axis). */
static void rope_segment(float *c, float *s, double v, int d, float theta, enum jm_rope_layout layout) {
    const int half = d / 2;                     /* frequencies per axis */
    for (int j = 0; j < d; j++) {
        /* tiled: [f_0 .. f_{d/2-1}, f_0 .. f_{d/2-1}]; interleaved: [f_0, f_0, f_1, f_1, ..] */
        const int k = layout == JM_ROPE_TILED ? j % half : j / 2;
        const double omega = pow((double)theta, -(double)k / half);   /* theta^(-k/(d/2)) */
        const double ang = v * omega;
        c[j] = (float)cos(ang);
        s[j] = (float)sin(ang);
    }
}

/* A grid has few distinct position values (t, h and w each take a grid side's worth,
 * and the axes share them), so a segment already written for the same value is copied
 * rather than recomputed: a small direct-mapped memo of where each value's segment
 * lies in the tables. Same bits as computing every segment (the same function of the
 * value); a collision only costs a recomputation. */
enum { ROPE_MEMO = 256 };

void jm_rope_tables(float *cos_t, float *sin_t, const struct rope_pos *pos, int n, int head_dim,
                 float theta, enum jm_rope_layout layout) {
    const int d = 2 * ((head_dim / 3) / 2);     /* dims per axis: 20 for 64, 10 for 32 */
    struct { uint32_t bits; bool used; size_t at; } memo[ROPE_MEMO] = {{0}};
    for (int i = 0; i < n; i++) {
        float *c = cos_t + (size_t)i * head_dim, *s = sin_t + (size_t)i * head_dim;
        int j0 = 0;
        if (!pos[i].identity) {
            const float p[3] = {pos[i].t, pos[i].h, pos[i].w};
            const int n_ax = pos[i].depth_only ? 1 : 3;
            for (int ax = 0; ax < n_ax; ax++) {
                uint32_t bits;
                memcpy(&bits, &p[ax], sizeof bits);
                const size_t here = (size_t)i * head_dim + (size_t)ax * d;
                const unsigned slot = (bits * 2654435761u) >> 24;   /* 8 bits: ROPE_MEMO */
                if (memo[slot].used && memo[slot].bits == bits) {
                    memcpy(cos_t + here, cos_t + memo[slot].at, sizeof(float) * (size_t)d);
                    memcpy(sin_t + here, sin_t + memo[slot].at, sizeof(float) * (size_t)d);
                } else {
                    rope_segment(cos_t + here, sin_t + here, (double)p[ax], d, theta, layout);
                    memo[slot].bits = bits, memo[slot].used = true, memo[slot].at = here;
                }
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
