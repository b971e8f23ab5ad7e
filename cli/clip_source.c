/*
 * clip_source.c — see clip_source.h.
 */
#include "cli/clip_source.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* The input tensor as a clip: [C, T, H, W], or [C, H, W] read as T = 1; with batch_ok also
 * [B, C, T, H, W], B clips (*nb = B; 1 otherwise). With peek, only the header (npy_peek_f32:
 * a->data NULL; the data read later by npy_read_f32). */
static int load_clip(const char *path, struct npy *a, int in_chans, int batch_ok, bool peek, int *nb,
                     int *T, int *H, int *W) {
    struct jerr e = {0};
    if (peek ? npy_peek_f32(a, path, &e) : npy_load_f32(a, path, &e)) return cli_fail(path, "%s", e.msg);
    const int c0 = a->ndim == 5 ? 1 : 0;   /* index of the channel axis */
    *nb = 1;
    if (a->ndim == 3) {
        *T = 1, *H = (int)a->shape[1], *W = (int)a->shape[2];
    } else if (a->ndim == 4 || (a->ndim == 5 && batch_ok)) {
        if (a->ndim == 5) *nb = (int)a->shape[0];
        *T = (int)a->shape[c0 + 1], *H = (int)a->shape[c0 + 2], *W = (int)a->shape[c0 + 3];
    } else {
        int nd = a->ndim;
        npy_free(a);
        return cli_fail(path, "expected a [C, T, H, W] or [C, H, W] array%s, got %d dimensions",
                        batch_ok ? " (or [B, C, T, H, W])" : "", nd);
    }
    if (a->shape[c0] != in_chans || *nb < 1) {
        int c = (int)a->shape[c0];
        npy_free(a);
        return cli_fail(path, "expected %d channels first ([%sC, T, H, W]), got %d", in_chans,
                        c0 ? "B, " : "", c);
    }
    return 0;
}

/* "TxHxW": three decimal integers joined by 'x', T in 1..4096, H and W in 1..8192. */
static int parse_dims(const char *s, int *T, int *H, int *W) {
    static const long hi[3] = {4096, 8192, 8192};
    int *dst[3] = {T, H, W};
    for (int i = 0; i < 3; i++) {
        long v = 0;
        int digits = 0;
        for (; *s >= '0' && *s <= '9'; s++, digits++) {
            v = v * 10 + (*s - '0');
            if (v > hi[i]) return -1;
        }
        if (!digits || v < 1 || *s != (i < 2 ? 'x' : '\0')) return -1;
        *dst[i] = (int)v;
        if (i < 2) s++;
    }
    return 0;
}

/* nb deterministic clips [nb, 3, T, H, W]: drifting colour gratings, normalised to about
 * [-2, 2] like an ImageNet-normalised frame, clip b with its own phase (clip 0 is the
 * pattern of a single run). For demos and benchmarks without files. pattern_shape reads
 * the spec and sizes a (data NULL), pattern_fill writes the values. */
static int pattern_shape(const char *spec, struct npy *a, int in_chans, int nb, int *T, int *H, int *W) {
    if (parse_dims(spec, T, H, W))
        return cli_usage_error("embed", "--test-pattern takes FRAMESxHEIGHTxWIDTH (1..4096 x 1..8192 x 1..8192), "
                               "e.g. 16x256x256, not '%s'", spec);
    memset(a, 0, sizeof *a);
    if ((int64_t)nb * in_chans * *T * *H * *W > ((int64_t)1 << 28))   /* 1 GiB of floats */
        return cli_usage_error("embed", "--test-pattern %s x %d clips is more than 1 GiB of input", spec, nb);
    a->dtype = NPY_F32;
    a->ndim = nb > 1 ? 5 : 4;
    int64_t *sh = a->shape + (nb > 1);
    if (nb > 1) a->shape[0] = nb;
    sh[0] = in_chans, sh[1] = *T, sh[2] = *H, sh[3] = *W;
    a->count = (int64_t)nb * in_chans * *T * *H * *W;
    return 0;
}

static void pattern_fill(float *x, int nb, int in_chans, int T, int H, int W) {
    for (int b = 0; b < nb; b++)
        for (int c = 0; c < in_chans; c++)
            for (int t = 0; t < T; t++)
                for (int y = 0; y < H; y++)
                    for (int xx = 0; xx < W; xx++)
                        *x++ = (float)(1.5 * sin(0.07 * (c + 1) * xx + 0.05 * y + 0.3 * t + 0.9 * b) *
                                       cos(0.04 * y - 0.02 * (c + 2) * xx + 0.1 * t + 0.5 * b));
}

int source_open(struct clip_source *s, const struct clip_request *rq, const jepa_model *m, int in_chans) {
    memset(s, 0, sizeof *s);
    s->nb = 1;
    if (inputs_given(rq->in)) {
        s->name = inputs_name(rq->in);
        if (inputs_open(&s->rdr, rq->in, m, rq->verbose)) return CLI_EXIT_FAIL;
        clips_shape(s->rdr, &s->T, &s->H, &s->W);
        s->nb = clips_count(s->rdr);
        s->stacked = s->nb > 1 || rq->in->images_npy;   /* an array of items gives an array */
        if (s->nb == 1) {   /* one clip: held like a tensor, read by source_load */
            s->mem.dtype = NPY_F32, s->mem.ndim = 4;
            s->mem.count = (int64_t)3 * s->T * s->H * s->W;
            s->one = s->rdr, s->rdr = NULL;
            s->pending = true;
        }
        return 0;
    }
    if (rq->test_pattern) {
        s->name = "test pattern";
        s->nb = rq->batch > 0 ? rq->batch : 1;
        s->stacked = s->nb > 1;
        s->in_chans = in_chans;
        int rc = pattern_shape(rq->test_pattern, &s->mem, in_chans, s->nb, &s->T, &s->H, &s->W);
        s->pending = !rc;
        return rc;
    }
    s->name = rq->input_tensor;
    int rc = load_clip(rq->input_tensor, &s->mem, in_chans, rq->batch_ok, true, &s->nb, &s->T, &s->H, &s->W);
    if (!rc && s->nb == 1) {   /* one clip: its data read by source_load */
        s->npy_path = rq->input_tensor;
        s->pending = true;
    } else if (!rc) {          /* a batch of clips: read now */
        rc = load_clip(rq->input_tensor, &s->mem, in_chans, rq->batch_ok, false, &s->nb, &s->T, &s->H, &s->W);
    }
    s->stacked = !rc && s->mem.ndim == 5;
    return rc;
}

void source_open_encoded(struct clip_source *s, const char *name, int T, int H, int W) {
    memset(s, 0, sizeof *s);
    s->nb = 1;
    s->name = name;
    s->T = T, s->H = H, s->W = W;
}

int source_load(struct clip_source *s, float *dst) {
    if (!s->pending) return 0;
    s->pending = false;
    float *x = dst ? dst : malloc(sizeof(float) * (size_t)s->mem.count);
    if (!x) return cli_fail(NULL, "out of memory for the %dx%dx%d input", s->T, s->H, s->W);
    s->mem.data = x;
    s->in_arena = dst != NULL;
    struct jerr e = {0};
    if (s->npy_path) {
        const int failed = npy_read_f32(&s->mem, s->npy_path, x, &e) != JEPA_OK;
        s->mem.dtype = NPY_F32;
        return failed ? cli_fail(s->npy_path, "%s", e.msg) : 0;
    }
    if (!s->one) {
        pattern_fill(x, s->nb, s->in_chans, s->T, s->H, s->W);
        return 0;
    }
    const int failed = clips_next(s->one, x, &e);
    clips_close(s->one);
    s->one = NULL;
    return failed ? cli_fail(NULL, "%s", e.msg) : 0;
}

const float *source_clips(struct clip_source *s, int k0, int g, float *buf, bool verbose) {
    const size_t clip_floats = (size_t)3 * s->T * s->H * s->W;
    if (!s->rdr) return (const float *)s->mem.data + (size_t)k0 * clip_floats;
    for (int j = 0; j < g; j++) {
        struct jerr e = {0};
        if (clips_next(s->rdr, buf + (size_t)j * clip_floats, &e)) {
            cli_fail(NULL, "%s", e.msg);
            return NULL;
        }
        const char *note = clips_take_note(s->rdr);
        if (note && verbose) fprintf(stderr, "jepa: %s: note: %s\n", s->name, note);
    }
    return buf;
}

const int64_t *source_frames(const struct clip_source *s, int k) {
    return s->rdr ? clips_frames(s->rdr, k) : NULL;
}

void source_close(struct clip_source *s) {
    clips_close(s->rdr);
    clips_close(s->one);
    if (s->in_arena) s->mem.data = NULL;
    npy_free(&s->mem);
}
