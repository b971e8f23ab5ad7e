/*
 * preprocess.c — resize, centre crop and normalisation of 8-bit RGB frames, bit-exact
 * with the Python pipelines the models were evaluated with (see preprocess.h).
 *
 * torchvision (TV_* filters): torchvision.transforms.v2.functional.resize on a uint8
 * tensor runs PyTorch's native uint8 kernel (aten/src/ATen/native/cpu/UpSampleKernel.cpp
 * and its AVX2 twin, itself a port of Pillow's ImagingResample). Its arithmetic, which
 * this file re-implements from the description in that code, is:
 *   - separable: a horizontal pass, then a vertical pass over the uint8 result;
 *   - per output position o: weights w_j = filter((j + xmin - centre + 0.5) * invscale)
 *     in double, centre = scale * (o + 0.5), scale = in / out, normalised to sum 1. With
 *     antialias the filter support is widened by the downscale factor (Pillow);
 *     without, they are the plain 2- or 4-tap weights with edge taps folded in;
 *   - the weights of one pass are quantised to int16 with a precision p chosen from the
 *     largest weight of the pass (the largest p < 22 with round(wmax * 2^(p+1)) < 2^15);
 *   - acc = 2^(p-1) + sum(w_j * px_j) in int32, out = clamp(acc >> p, 0, 255).
 * cv2 (CV2_LINEAR): cv2.resize INTER_LINEAR on uint8, OpenCV's fixed-point path:
 *   - per output position: f = (float)((o + 0.5) * scale - 0.5), s = floor(f),
 *     weights round((1 - (f - s)) * 2048), round((f - s) * 2048) (round-half-even);
 *     horizontally the source index is clamped and an out-of-range fraction zeroed,
 *     vertically only the row index is clamped;
 *   - horizontal pass into int32 (pixel * 2048 scale), vertical pass in OpenCV's SIMD
 *     form: ((h0 >> 4) * b0 >> 16) + ((h1 >> 4) * b1 >> 16), then (x + 2) >> 2.
 *   Checked against opencv-python 4.14 and 5.0 on random sizes, including the exact 2x
 *   down-scale that OpenCV routes to INTER_AREA (identical values).
 *
 * Only the crop window of the resized image is computed (rows and columns outside it
 * are never touched), which is exact because every output pixel depends only on its
 * own weights — except the torchvision precision p, which is therefore taken over all
 * output positions of the pass, as torch does.
 *
 * Tested by tests/input/test_preprocess.c (max abs diff 0 on the uint8 stage, 0 ulp
 * after normalisation) against references made by tests/gen/gen_preprocess.py.
 */
#include "input/preprocess.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The weight formulas must round like the reference: no fused multiply-add. */
#pragma STDC FP_CONTRACT OFF

#define MAX_SIDE (1 << 20)   /* largest resized side accepted (keeps every index in int) */

/* ---- torchvision: filters and weights ---------------------------------------------- */

static double filter_triangle(double x) {
    if (x < 0.0) x = -x;
    if (x < 1.0) return 1.0 - x;
    return 0.0;
}

static double keys_cubic(double x, double a) {
    x = fabs(x);
    if (x < 1.0) return ((a + 2) * x - (a + 3)) * x * x + 1;
    if (x < 2.0) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
    return 0.0;
}

static double filter_cubic_aa(double x) { return keys_cubic(x, -0.5); }
static double filter_cubic(double x) { return keys_cubic(x, -0.75); }

/* Quantised weights of one pass for n output positions starting at o0. */
struct taps {
    int K;            /* weights per position (stride of w) */
    int prec;         /* fixed-point precision */
    int *start;       /* [n] first source index */
    int *len;         /* [n] number of taps */
    int16_t *w;       /* [n][K] */
};

static void taps_free(struct taps *t) {
    free(t->start);
    free(t->len);
    free(t->w);
    memset(t, 0, sizeof *t);
}

/* Antialiased weights of output position i (Pillow's bounds): xmin/xsize out, weights
 * into w[K], returns the largest normalised weight. */
static double weights_aa(int64_t i, int64_t in, double scale, double support, int K,
                         double (*filt)(double), double *w, int64_t *xmin, int64_t *xsize) {
    double center = scale * ((double)i + 0.5);
    double total = 0.0;
    double invscale = scale >= 1.0 ? 1.0 / scale : 1.0;
    int64_t lo = (int64_t)(center - support + 0.5);
    int64_t hi = (int64_t)(center + support + 0.5);
    if (lo < 0) lo = 0;
    if (hi > in) hi = in;
    int64_t n = hi - lo;
    if (n < 0) n = 0;
    if (n > K) n = K;
    for (int64_t j = 0; j < n; j++) {
        double v = filt(((double)(j + lo) - center + 0.5) * invscale);
        w[j] = v;
        total += v;
    }
    double wmax = 0.0;
    if (total != 0.0)
        for (int64_t j = 0; j < n; j++) {
            w[j] /= total;
            if (w[j] > wmax) wmax = w[j];
        }
    for (int64_t j = n; j < K; j++) w[j] = 0.0;
    *xmin = lo;
    *xsize = n;
    return wmax;
}

/* Plain (antialias=False) weights of output position i: K = 2 or 4 taps around the
 * source coordinate, taps falling outside the image folded onto the edge pixel. */
static double weights_plain(int64_t i, int64_t in, double scale, int K, double (*filt)(double),
                            double *w, int64_t *xmin, int64_t *xsize) {
    bool cubic = K > 2;
    double real = scale * ((double)i + 0.5) - 0.5;
    if (!cubic && real < 0.0) real = 0.0;
    /* torch floors through float here (floorf on a double argument) */
    int64_t idx = (int64_t)floorf((float)real);
    if (idx > in - 1) idx = in - 1;
    double lambda = real - (double)idx;
    if (lambda < 0.0) lambda = 0.0;
    if (lambda > 1.0) lambda = 1.0;
    int64_t support = (int64_t)(K * 0.5);
    int64_t umin = idx - support + 1, umax = idx + support + 1;
    int64_t lo = umin > 0 ? umin : 0;
    int64_t n = (umax < in ? umax : in) - lo;
    if (n < 0) n = 0;
    if (n > K) n = K;
    double wmax = 0.0;
    int64_t wi = 0;
    for (int j = 0; j < K; j++) {
        w[j] = 0.0;
        double v = filt((double)(j + 1 - support) - lambda);
        if (umin + j <= 0) wi = 0;
        else if (umin + j >= in - 1) wi = n - 1;
        if (wi >= 0 && wi < K) {
            w[wi] += v;
            if (w[wi] > wmax) wmax = w[wi];
        }
        wi++;
    }
    *xmin = lo;
    *xsize = n;
    return wmax;
}

/* Weights of a 1-D resize in -> out for output positions [o0, o0 + n). */
static jepa_status tv_taps(int in, int out, int o0, int n, enum pre_filter f, struct taps *t,
                           struct jerr *e) {
    bool aa = f == PRE_TV_BILINEAR_AA || f == PRE_TV_BICUBIC_AA;
    bool cubic = f == PRE_TV_BICUBIC_AA || f == PRE_TV_BICUBIC;
    double (*filt)(double) = !cubic ? filter_triangle : aa ? filter_cubic_aa : filter_cubic;
    int interp = cubic ? 4 : 2;
    double scale = (double)in / (double)out;
    double support = aa ? (scale >= 1.0 ? interp * 0.5 * scale : interp * 0.5) : interp * 0.5;
    double Kd = aa ? ceil(support) * 2 + 1 : interp;
    if (Kd > 4.0 * MAX_SIDE + 1) return jr_err_set(e, JEPA_ERR_ARG, "resize %d -> %d: filter too wide", in, out);
    int K = (int)Kd;
    memset(t, 0, sizeof *t);
    double *w = malloc(sizeof(double) * (size_t)K * ((size_t)n + 1));
    t->start = malloc(sizeof(int) * (size_t)n);
    t->len = malloc(sizeof(int) * (size_t)n);
    t->w = malloc(sizeof(int16_t) * (size_t)K * (size_t)n);
    if (!w || !t->start || !t->len || !t->w) {
        free(w);
        taps_free(t);
        return jr_err_set(e, JEPA_ERR_NOMEM, "resize %d -> %d: out of memory for the filter taps", in, out);
    }
    t->K = K;
    /* the precision depends on the largest weight over every output position */
    double wmax = 0.0;
    double *scratch = w + (size_t)K * (size_t)n;
    for (int o = 0; o < out; o++) {
        int64_t lo, len;
        bool mine = o >= o0 && o < o0 + n;
        double *wo = mine ? w + (size_t)K * (size_t)(o - o0) : scratch;
        double m = aa ? weights_aa(o, in, scale, support, K, filt, wo, &lo, &len)
                      : weights_plain(o, in, scale, K, filt, wo, &lo, &len);
        if (m > wmax) wmax = m;
        if (mine) {
            t->start[o - o0] = (int)lo;
            t->len[o - o0] = (int)len;
        }
    }
    int prec;
    for (prec = 0; prec < 22; prec++) {
        int next = (int)(0.5 + wmax * (double)(1 << (prec + 1)));
        if (next >= (1 << 15)) break;
    }
    t->prec = prec;
    for (size_t k = 0; k < (size_t)K * (size_t)n; k++) {
        double v = w[k] * (double)(1 << prec);
        t->w[k] = (int16_t)(v < 0 ? (int)(-0.5 + v) : (int)(0.5 + v));
    }
    free(w);
    return JEPA_OK;
}

static inline uint8_t clamp_shift(int32_t acc, int prec) {
    if (acc < 0) return 0;
    acc >>= prec;
    return (uint8_t)(acc > 255 ? 255 : acc);
}

/* ---- torchvision: the two passes ----------------------------------------------------- */

static jepa_status resize_tv(const uint8_t *src, int h, int w, size_t stride, int ch,
                             enum pre_filter f, int oh, int ow, int y0, int x0, int ny, int nx,
                             uint8_t *dst, struct jerr *e) {
    bool need_h = ow != w, need_v = oh != h;
    struct taps th = {0}, tv = {0};
    uint8_t *tmp = NULL;
    jepa_status st = JEPA_OK;
    /* source rows the vertical pass reads */
    int r0 = y0, r1 = y0 + ny;
    if (need_v) {
        if ((st = tv_taps(h, oh, y0, ny, f, &tv, e))) goto done;
        r0 = h, r1 = 0;
        for (int i = 0; i < ny; i++) {
            if (tv.len[i] <= 0) continue;
            if (tv.start[i] < r0) r0 = tv.start[i];
            if (tv.start[i] + tv.len[i] > r1) r1 = tv.start[i] + tv.len[i];
        }
        if (r1 <= r0) r0 = 0, r1 = 1;
    }
    /* horizontal pass: rows [r0, r1) x window columns -> tmp (uint8) */
    const uint8_t *hsrc;
    size_t hstride;
    const size_t row = (size_t)nx * (size_t)ch;
    if (need_h) {
        if ((st = tv_taps(w, ow, x0, nx, f, &th, e))) goto done;
        tmp = malloc(row * (size_t)(r1 - r0));
        if (!tmp) { st = jr_err_set(e, JEPA_ERR_NOMEM, "resize: out of memory"); goto done; }
        const int K = th.K, prec = th.prec;
        const int32_t half = (int32_t)1 << (prec - 1);
#pragma omp parallel for schedule(static) if ((r1 - r0) * row > 65536)
        for (int y = r0; y < r1; y++) {
            const uint8_t *s = src + (size_t)y * stride;
            uint8_t *d = tmp + (size_t)(y - r0) * row;
            for (int x = 0; x < nx; x++) {
                const int16_t *k = th.w + (size_t)x * (size_t)K;
                const uint8_t *p = s + (size_t)th.start[x] * (size_t)ch;
                const int len = th.len[x];
                if (ch == 3) {   /* the RGB case, one pass over the taps */
                    int32_t a0 = half, a1 = half, a2 = half;
                    for (int j = 0; j < len; j++, p += 3) {
                        a0 += (int32_t)k[j] * p[0];
                        a1 += (int32_t)k[j] * p[1];
                        a2 += (int32_t)k[j] * p[2];
                    }
                    d[3 * (size_t)x] = clamp_shift(a0, prec);
                    d[3 * (size_t)x + 1] = clamp_shift(a1, prec);
                    d[3 * (size_t)x + 2] = clamp_shift(a2, prec);
                    continue;
                }
                for (int c = 0; c < ch; c++) {
                    int32_t acc = half;
                    for (int j = 0; j < len; j++) acc += (int32_t)k[j] * p[(size_t)j * ch + c];
                    d[(size_t)x * ch + c] = clamp_shift(acc, prec);
                }
            }
        }
        hsrc = tmp;
        hstride = row;
    } else {
        hsrc = src + (size_t)r0 * stride + (size_t)x0 * (size_t)ch;
        hstride = stride;
    }
    /* vertical pass (or the row copy) into dst */
    if (need_v) {
        const int K = tv.K, prec = tv.prec;
        const int32_t half = (int32_t)1 << (prec - 1);
        /* row-wise: acc[x] += k_j * row_j[x] streams through the rows (exact integer sums,
         * so the order of the taps does not matter) */
        int32_t *accs = malloc(sizeof(int32_t) * row * (size_t)ny);
        if (!accs) { st = jr_err_set(e, JEPA_ERR_NOMEM, "resize: out of memory"); goto done; }
#pragma omp parallel for schedule(static) if ((size_t)ny * row > 65536)
        for (int y = 0; y < ny; y++) {
            const int16_t *k = tv.w + (size_t)y * (size_t)K;
            const uint8_t *s = hsrc + (size_t)(tv.start[y] - r0) * hstride;
            int32_t *acc = accs + (size_t)y * row;
            uint8_t *d = dst + (size_t)y * row;
            for (size_t x = 0; x < row; x++) acc[x] = half;
            for (int j = 0; j < tv.len[y]; j++) {
                const int32_t kj = k[j];
                const uint8_t *sj = s + (size_t)j * hstride;
                for (size_t x = 0; x < row; x++) acc[x] += kj * sj[x];
            }
            for (size_t x = 0; x < row; x++) d[x] = clamp_shift(acc[x], prec);
        }
        free(accs);
    } else {
        for (int y = 0; y < ny; y++) memcpy(dst + (size_t)y * row, hsrc + (size_t)y * hstride, row);
    }
done:
    free(tmp);
    taps_free(&th);
    taps_free(&tv);
    return st;
}

/* ---- cv2 INTER_LINEAR ---------------------------------------------------------------- */

/* Source index and 11-bit weights of output position o; clamp: the horizontal rule. */
static void cv2_coeffs(int in, int out, int o, bool clamp, int *s, int16_t a[2]) {
    double scale = 1.0 / ((double)out / (double)in);
    float fx = (float)(((double)o + 0.5) * scale - 0.5);
    int sx = (int)floorf(fx);
    fx -= (float)sx;
    if (clamp) {
        if (sx < 0) fx = 0.f, sx = 0;
        if (sx >= in - 1) fx = 0.f, sx = in - 1;
    }
    *s = sx;
    a[0] = (int16_t)lrintf((1.f - fx) * 2048.f);
    a[1] = (int16_t)lrintf(fx * 2048.f);
}

static jepa_status resize_cv2(const uint8_t *src, int h, int w, size_t stride, int ch, int oh,
                              int ow, int y0, int x0, int ny, int nx, uint8_t *dst, struct jerr *e) {
    const size_t row = (size_t)nx * (size_t)ch;
    int *xs = malloc(sizeof(int) * (size_t)nx), *ys = malloc(sizeof(int) * (size_t)ny);
    int16_t *xa = malloc(sizeof(int16_t) * 2 * (size_t)nx), *ya = malloc(sizeof(int16_t) * 2 * (size_t)ny);
    int32_t *hor = NULL;
    jepa_status st = JEPA_OK;
    if (!xs || !ys || !xa || !ya) { st = jr_err_set(e, JEPA_ERR_NOMEM, "resize: out of memory"); goto done; }
    for (int x = 0; x < nx; x++) cv2_coeffs(w, ow, x0 + x, true, &xs[x], &xa[2 * x]);
    for (int y = 0; y < ny; y++) cv2_coeffs(h, oh, y0 + y, false, &ys[y], &ya[2 * y]);
    /* source rows read: clamp(s), clamp(s + 1) */
    int r0 = h - 1, r1 = 0;
    for (int y = 0; y < ny; y++) {
        int a = ys[y] < 0 ? 0 : ys[y] > h - 1 ? h - 1 : ys[y];
        int b = ys[y] + 1 < 0 ? 0 : ys[y] + 1 > h - 1 ? h - 1 : ys[y] + 1;
        if (a < r0) r0 = a;
        if (b + 1 > r1) r1 = b + 1;
    }
    hor = malloc(sizeof(int32_t) * row * (size_t)(r1 - r0));
    if (!hor) { st = jr_err_set(e, JEPA_ERR_NOMEM, "resize: out of memory"); goto done; }
#pragma omp parallel for schedule(static) if ((r1 - r0) * row > 65536)
    for (int y = r0; y < r1; y++) {
        const uint8_t *s = src + (size_t)y * stride;
        int32_t *d = hor + (size_t)(y - r0) * row;
        for (int x = 0; x < nx; x++) {
            const uint8_t *p0 = s + (size_t)xs[x] * (size_t)ch;
            const uint8_t *p1 = s + (size_t)(xs[x] + 1 < w ? xs[x] + 1 : w - 1) * (size_t)ch;
            for (int c = 0; c < ch; c++)
                d[(size_t)x * ch + c] = (int32_t)p0[c] * xa[2 * x] + (int32_t)p1[c] * xa[2 * x + 1];
        }
    }
#pragma omp parallel for schedule(static) if ((size_t)ny * row > 65536)
    for (int y = 0; y < ny; y++) {
        int a = ys[y] < 0 ? 0 : ys[y] > h - 1 ? h - 1 : ys[y];
        int b = ys[y] + 1 < 0 ? 0 : ys[y] + 1 > h - 1 ? h - 1 : ys[y] + 1;
        const int32_t *s0 = hor + (size_t)(a - r0) * row, *s1 = hor + (size_t)(b - r0) * row;
        const int32_t b0 = ya[2 * y], b1 = ya[2 * y + 1];
        uint8_t *d = dst + (size_t)y * row;
        for (size_t x = 0; x < row; x++) {
            /* s >= 0, so the shifts are plain divisions by powers of two */
            int32_t v = (((s0[x] >> 4) * b0) >> 16) + (((s1[x] >> 4) * b1) >> 16);
            v = (v + 2) >> 2;
            d[x] = (uint8_t)(v > 255 ? 255 : v);
        }
    }
done:
    free(xs); free(ys); free(xa); free(ya); free(hor);
    return st;
}

/* ---- public pieces ------------------------------------------------------------------- */

jepa_status ji_pre_resize_u8(const uint8_t *src, int h, int w, size_t src_stride, int ch,
                          enum pre_filter f, int oh, int ow, int y0, int x0, int ny, int nx,
                          uint8_t *dst, struct jerr *e) {
    if (!src || !dst || h < 1 || w < 1 || ch < 1 || oh < 1 || ow < 1 || src_stride < (size_t)w * ch)
        return jr_err_set(e, JEPA_ERR_ARG, "resize: bad source (%dx%dx%d) or target (%dx%d)", h, w, ch, oh, ow);
    if (oh > MAX_SIDE || ow > MAX_SIDE || h > MAX_SIDE || w > MAX_SIDE)
        return jr_err_set(e, JEPA_ERR_ARG, "resize %dx%d -> %dx%d: sides are limited to %d", h, w, oh, ow, MAX_SIDE);
    if (y0 < 0 || x0 < 0 || ny < 1 || nx < 1 || y0 + ny > oh || x0 + nx > ow)
        return jr_err_set(e, JEPA_ERR_ARG, "resize: window %d+%d x %d+%d outside the %dx%d result", y0, ny, x0, nx, oh, ow);
    if (f == PRE_CV2_LINEAR) return resize_cv2(src, h, w, src_stride, ch, oh, ow, y0, x0, ny, nx, dst, e);
    return resize_tv(src, h, w, src_stride, ch, f, oh, ow, y0, x0, ny, nx, dst, e);
}

jepa_status ji_pre_geometry(const struct pre_cfg *c, int h, int w, struct pre_geom *g, struct jerr *e) {
    if (h < 1 || w < 1) return jr_err_set(e, JEPA_ERR_ARG, "empty %dx%d frame", h, w);
    int S = c->resize_short;
    if (S < 1 || c->crop < 1) return jr_err_set(e, JEPA_ERR_ARG, "resize %d / crop %d must be positive", S, c->crop);
    if (c->mode == PRE_SQUASH) {
        g->rh = g->rw = S;
    } else {
        int sh = w <= h ? w : h, lg = w <= h ? h : w;
        double L = (double)((int64_t)S * lg) / (double)sh;   /* int(S * long / short) */
        if (L > MAX_SIDE)
            return jr_err_set(e, JEPA_ERR_ARG, "a %dx%d frame resized to short side %d is too long", h, w, S);
        int nl = (int)L;
        if (w <= h) g->rw = S, g->rh = nl;
        else g->rh = S, g->rw = nl;
    }
    if (c->crop > g->rh || c->crop > g->rw)
        return jr_err_set(e, JEPA_ERR_ARG, "crop %d does not fit the %dx%d resized frame", c->crop, g->rh, g->rw);
    g->ch = g->cw = c->crop;
    g->top = (g->rh - c->crop) / 2;
    g->left = (g->rw - c->crop) / 2;
    return JEPA_OK;
}

jepa_status ji_pre_frame_u8(const struct pre_cfg *c, const uint8_t *rgb, int h, int w, size_t stride,
                         uint8_t *out, struct pre_geom *g, struct jerr *e) {
    jepa_status st = ji_pre_geometry(c, h, w, g, e);
    if (st) return st;
    return ji_pre_resize_u8(rgb, h, w, stride, 3, c->filter, g->rh, g->rw, g->top, g->left, g->ch, g->cw,
                         out, e);
}

/* 1 / rescale as the Python side holds it: rescale is a float32 copy of a double
 * 1/255, so an inverse within float rounding of an integer is that integer. */
static double inverse_rescale(float rescale, bool *integral) {
    double k = 1.0 / (double)rescale;
    double r = nearbyint(k);
    *integral = r >= 1.0 && fabs(k - r) <= 1e-5 * r;
    return *integral ? r : k;
}

void ji_pre_normalize(const struct pre_cfg *c, const uint8_t *rgb, size_t n, float *out, size_t plane_stride) {
    bool integral;
    double k = inverse_rescale(c->rescale, &integral);
    for (int ch = 0; ch < 3; ch++) {
        float *o = out + (size_t)ch * plane_stride;
        const uint8_t *p = rgb + ch;
        if (c->norm == PRE_NORM_FUSED) {
            const float m = c->mean[ch] * (float)k, s = c->std[ch] * (float)k;
            for (size_t i = 0; i < n; i++) o[i] = ((float)p[3 * i] - m) / s;
        } else if (integral) {
            const float kf = (float)k, m = c->mean[ch], s = c->std[ch];
            for (size_t i = 0; i < n; i++) o[i] = ((float)p[3 * i] / kf - m) / s;
        } else {
            const float r = c->rescale, m = c->mean[ch], s = c->std[ch];
            for (size_t i = 0; i < n; i++) o[i] = ((float)p[3 * i] * r - m) / s;
        }
    }
}

jepa_status ji_pre_cfg(const jepa_preprocess_recipe *r, const struct jepa_preprocess_params *p,
                       struct pre_cfg *c, struct jerr *e) {
    static const jepa_preprocess_params none = {JEPA_RESIZE_MODEL, 0, 0, JEPA_NORM_FUSED};
    if (!p) p = &none;
    memset(c, 0, sizeof *c);
    switch (p->filter) {
    case JEPA_RESIZE_MODEL:
        c->filter = r->resample == JEPA_RESAMPLE_BICUBIC ? PRE_TV_BICUBIC_AA : PRE_TV_BILINEAR_AA;
        break;
    case JEPA_RESIZE_BILINEAR_AA: c->filter = PRE_TV_BILINEAR_AA; break;
    case JEPA_RESIZE_BICUBIC_AA: c->filter = PRE_TV_BICUBIC_AA; break;
    case JEPA_RESIZE_BILINEAR: c->filter = PRE_TV_BILINEAR; break;
    case JEPA_RESIZE_CV2_LINEAR: c->filter = PRE_CV2_LINEAR; break;
    default: return jr_err_set(e, JEPA_ERR_ARG, "preprocess: unknown resize filter %d", (int)p->filter);
    }
    if (p->norm != JEPA_NORM_FUSED && p->norm != JEPA_NORM_SEQUENTIAL)
        return jr_err_set(e, JEPA_ERR_ARG, "preprocess: unknown normalisation %d", (int)p->norm);
    if (p->resize_short < 0 || p->crop < 0 || p->resize_short > JI_MAX_PRE_SIDE || p->crop > JI_MAX_PRE_SIDE)
        return jr_err_set(e, JEPA_ERR_ARG, "preprocess: resize_short %d / crop %d out of range (0 .. %d)",
                          p->resize_short, p->crop, JI_MAX_PRE_SIDE);
    c->mode = r->mode == JEPA_RESIZE_MODE_SQUASH ? PRE_SQUASH : PRE_SHORTEST_EDGE;
    c->resize_short = p->resize_short ? p->resize_short : r->resize_short;
    c->crop = p->crop ? p->crop : r->crop;
    memcpy(c->mean, r->mean, sizeof c->mean);
    memcpy(c->std, r->std, sizeof c->std);
    c->rescale = r->rescale;
    c->norm = p->norm == JEPA_NORM_SEQUENTIAL ? PRE_NORM_SEQUENTIAL : PRE_NORM_FUSED;
    if (c->crop > c->resize_short)
        return jr_err_set(e, JEPA_ERR_ARG, "preprocess: crop %d is larger than the resize %d", c->crop, c->resize_short);
    return JEPA_OK;
}

jepa_status ji_pre_clip_frame(const struct pre_cfg *c, const uint8_t *rgb, int h, int w,
                              float *out, int T, int t, struct jerr *e) {
    struct pre_geom g = {0};
    const size_t n = (size_t)c->crop * (size_t)c->crop;
    uint8_t *tmp = malloc(n * 3);
    if (!tmp) return jr_err_set(e, JEPA_ERR_NOMEM, "preprocess: out of memory for a %dx%d frame", c->crop, c->crop);
    jepa_status st = ji_pre_frame_u8(c, rgb, h, w, (size_t)w * 3, tmp, &g, e);
    if (st == JEPA_OK) ji_pre_normalize(c, tmp, n, out + (size_t)t * n, (size_t)T * n);
    free(tmp);
    return st;
}
