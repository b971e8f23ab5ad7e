/*
 * posembed.c — bicubic resampling of a position table (see posembed.h). Written from
 * the definition of torch's upsample_bicubic2d (align_corners = False): output pixel o
 * samples the input at src = (o + 0.5) * in/out - 0.5 with the cubic convolution kernel
 * of Keys (A = -0.75) on the 4 neighbours floor(src) - 1 .. floor(src) + 2, indices
 * clamped to the border. Computed in double. Tested by the hfvit / ijepa parity cases
 * at a non-training grid (tests/models/test_parity.c).
 */
#include <math.h>
#include <stddef.h>

#include "models/posembed.h"

static void cubic_weights(double t, double w[4]) {
    const double A = -0.75;
    double x;
    x = t + 1.0; w[0] = ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A;   /* 1 < |x| < 2 */
    x = t;       w[1] = ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;        /* |x| <= 1 */
    x = 1.0 - t; w[2] = ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
    x = 2.0 - t; w[3] = ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A;
}

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

void jm_pos_embed_interpolate(float *out, const float *tab, int g0h, int g0w, int gh, int gw, int d) {
    const double sh = (double)g0h / gh, sw = (double)g0w / gw;
    for (int oy = 0; oy < gh; oy++) {
        const double fy = (oy + 0.5) * sh - 0.5;
        const int y0 = (int)floor(fy);
        double wy[4];
        cubic_weights(fy - y0, wy);
        for (int ox = 0; ox < gw; ox++) {
            const double fx = (ox + 0.5) * sw - 0.5;
            const int x0 = (int)floor(fx);
            double wx[4];
            cubic_weights(fx - x0, wx);
            float *o = out + ((size_t)oy * gw + ox) * d;
            for (int k = 0; k < d; k++) {
                double acc = 0.0;
                for (int i = 0; i < 4; i++) {
                    const int yy = clampi(y0 - 1 + i, 0, g0h - 1);
                    double row = 0.0;
                    for (int j = 0; j < 4; j++) {
                        const int xx = clampi(x0 - 1 + j, 0, g0w - 1);
                        row += wx[j] * tab[((size_t)yy * g0w + xx) * d + k];
                    }
                    acc += wy[i] * row;
                }
                o[k] = (float)acc;
            }
        }
    }
}
