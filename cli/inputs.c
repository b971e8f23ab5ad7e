/*
 * inputs.c — see inputs.h: option parsing for pixel inputs, the loader that turns
 * images / frame arrays / videos into preprocessed clips, and the runs over several clips.
 *
 * Videos are decoded once, in order, never seeking. The clip plan (frame indices of every
 * clip) is made up front from the packet count; decoding then runs forward as far as the
 * next clip needs, converting and preprocessing only frames some clip uses, and keeps
 * the preprocessed frames that later clips still need (overlapping windows), so a long
 * video in dense mode costs one decode and memory for one window.
 *
 * Tested by tests/input/test_cli_input.sh (bit-identical outputs against the
 * torchvision-preprocessed tensors of tests/gen/gen_preprocess.py).
 */
#include "cli/inputs.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "input/image.h"
#include "input/video.h"

#define DEFAULT_FRAME_STEP 4      /* Meta's frame_step in every V-JEPA 2 / 2.1 eval config */

/* ---- parsing ------------------------------------------------------------------------ */

static int parse_int(const char *cmd, const char *opt, const char *v, long long lo, long long hi,
                     long long *out) {
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi)
        return cli_usage_error(cmd, "%s takes an integer in [%lld, %lld], not '%s'", opt, lo, hi, v);
    *out = x;
    return 0;
}

int inputs_parse(struct inputs_opts *o, const char *cmd, int argc, char **argv, int *i) {
    const char *a = argv[*i];
    const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    long long x = 0;
    int rc;
    enum { NONE, INT_FPC, INT_STEP, INT_CLIPS, INT_STRIDE, INT_SHORT } kind = NONE;
    if (!strcmp(a, "--dense")) { o->dense = 1; o->sampling_given = 1; return 1; }
    if (!strcmp(a, "--no-antialias")) { o->no_antialias = 1; o->pre_given = 1; return 1; }
    if (!strcmp(a, "-i") || !strcmp(a, "--image") || !strcmp(a, "--frames-npy") || !strcmp(a, "--norm") ||
        !strcmp(a, "--frames-per-clip") || !strcmp(a, "--frame-step") || !strcmp(a, "--num-clips") ||
        !strcmp(a, "--stride") || !strcmp(a, "--resize-short")) {
        if (!v) return cli_usage_error(cmd, "option %s needs a value", a);
        (*i)++;
    } else {
        return 0;
    }
    if (!strcmp(a, "-i") || !strcmp(a, "--image")) {
        if (o->n_images == INPUTS_MAX_IMAGES)
            return cli_usage_error(cmd, "at most %d images per clip", INPUTS_MAX_IMAGES);
        o->images[o->n_images++] = v;
        return 1;
    }
    if (!strcmp(a, "--frames-npy")) {
        if (o->frames_npy) return cli_usage_error(cmd, "--frames-npy given twice");
        o->frames_npy = v;
        return 1;
    }
    if (!strcmp(a, "--norm")) {
        o->pre_given = 1;
        if (!strcmp(v, "fused")) o->norm_sequential = 0;
        else if (!strcmp(v, "sequential")) o->norm_sequential = 1;
        else return cli_usage_error(cmd, "--norm takes fused or sequential, not '%s'", v);
        return 1;
    }
    if (!strcmp(a, "--frames-per-clip")) kind = INT_FPC;
    else if (!strcmp(a, "--frame-step")) kind = INT_STEP;
    else if (!strcmp(a, "--num-clips")) kind = INT_CLIPS;
    else if (!strcmp(a, "--stride")) kind = INT_STRIDE;
    else kind = INT_SHORT;
    long long hi = kind == INT_STRIDE ? (1LL << 40) : kind == INT_FPC ? 4096 : kind == INT_SHORT ? 65536 : 100000;
    if ((rc = parse_int(cmd, a, v, 1, hi, &x))) return rc;
    switch (kind) {
    case INT_FPC: o->fpc = (int)x; break;
    case INT_STEP: o->fstp = (int)x; break;
    case INT_CLIPS: o->num_clips = (int)x; break;
    case INT_STRIDE: o->stride = x; break;
    default: o->resize_short = (int)x; o->pre_given = 1; return 1;
    }
    o->sampling_given = 1;
    return 1;
}

int inputs_positional(struct inputs_opts *o, const char *cmd, const char *arg) {
    if (o->video) return cli_usage_error(cmd, "one video at a time ('%s' and '%s')", o->video, arg);
    o->video = arg;
    return 0;
}

int inputs_given(const struct inputs_opts *o) {
    return (o->n_images > 0) + (o->frames_npy != NULL) + (o->video != NULL);
}

int inputs_check(const struct inputs_opts *o, const char *cmd) {
    if (inputs_given(o) > 1) return cli_usage_error(cmd, "give one input: -i IMAGE..., --frames-npy F.npy or a VIDEO");
    if (o->pre_given && !inputs_given(o))
        return cli_usage_error(cmd, "--no-antialias / --resize-short / --norm preprocess -i, --frames-npy or a "
                                    "VIDEO; an --input-tensor is used as it is");
    if (o->sampling_given && !o->video)
        return cli_usage_error(cmd, "--frames-per-clip / --frame-step / --num-clips / --dense / --stride "
                                    "sample a VIDEO; images and --frames-npy are used as given");
    if (o->dense && o->num_clips)
        return cli_usage_error(cmd, "--dense tiles the whole video; it does not take --num-clips");
    if (o->stride && !o->dense) return cli_usage_error(cmd, "--stride goes with --dense");
    return 0;
}

void inputs_usage(void) {
    printf("  -i IMAGE              an image (repeat -i: the images form one clip, in order)\n"
           "  --frames-npy F.npy    uint8 [T, H, W, 3] RGB frames, one clip\n"
           "  VIDEO                 a video file (decoded in order, never seeking)\n"
           "  --frames-per-clip F   frames per clip (default: the model's jepa.enc.n_frames)\n"
           "  --frame-step S        a clip spans F*S frames, sampled with np.linspace (default 4)\n"
           "  --num-clips C         C clips over the video; classify averages their softmax\n"
           "  --dense [--stride K]  clips every K frames over the whole video (default: back to\n"
           "                        back); one output per clip\n"
           "  --no-antialias        cv2.INTER_LINEAR resize, as Meta's V-JEPA 2.1 eval (with\n"
           "                        --resize-short CROP --norm sequential: its whole transform)\n"
           "  --resize-short N      short side after the resize (default: jepa.pre.resize_short)\n"
           "  --norm fused|sequential  (px-255m)/(255s) as HF (default) or (px/255-m)/s as Meta\n");
}

/* ---- the reader ----------------------------------------------------------------------- */

enum src_kind { SRC_IMAGES, SRC_NPY, SRC_VIDEO };

struct cached {
    int64_t index;
    float *px;            /* [3][H][W], one preprocessed frame */
};

struct inputs_reader {
    const jepa_model *m;
    const struct inputs_opts *o;
    jepa_preprocess_params pp;
    enum src_kind kind;
    int H, W, T;          /* clip geometry */
    int n_clips, next_clip;
    int quiet;
    /* video */
    int64_t video_len;    /* packets = frames */
    int64_t *idx;         /* [n_clips][T] frame indices */
    int32_t *last_use;    /* [video_len] last clip that needs the frame, -1: none */
    struct video_reader *vr;
    int64_t next_frame;   /* index of the next frame the decoder returns */
    bool eof, warned;
    struct cached *cache;
    int n_cache, cap_cache;
    float *fill;          /* the last decoded frame, when decodable frames run out */
};

int inputs_n_clips(const struct inputs_reader *r) { return r->n_clips; }

const char *inputs_name(const struct inputs_reader *r) {
    return r->kind == SRC_VIDEO ? r->o->video : r->kind == SRC_NPY ? r->o->frames_npy : r->o->images[0];
}

void inputs_close(struct inputs_reader *r) {
    if (!r) return;
    for (int i = 0; i < r->n_cache; i++) free(r->cache[i].px);
    free(r->cache);
    free(r->fill);
    free(r->idx);
    free(r->last_use);
    video_close(r->vr);
    free(r);
}

static size_t frame_floats(const struct inputs_reader *r) { return (size_t)3 * r->H * r->W; }

/* Preprocess one RGB frame into frame t of a [3, T, H, W] clip. */
static int put_frame(const struct inputs_reader *r, const char *what, const uint8_t *rgb, int h, int w,
                     float *clip, int T, int t) {
    char err[JEPA_ERR_LEN];
    if (jepa_preprocess_rgb(r->m, rgb, h, w, &r->pp, clip, T, t, err))
        return cli_fail(what, "%s", err);
    return 0;
}

static int plan_video(struct inputs_reader *r, const jepa_model_info *info) {
    const struct inputs_opts *o = r->o;
    struct jerr e = {0};
    int h = 0, w = 0;
    if (video_probe(o->video, &r->video_len, &h, &w, &e)) return cli_fail(NULL, "%s", e.msg);
    if (r->video_len > INT32_MAX) return cli_fail(o->video, "%lld frames is too long", (long long)r->video_len);
    int fpc = o->fpc ? o->fpc : (info->n_frames > 0 ? info->n_frames : 1);
    int fstp = o->fstp ? o->fstp : DEFAULT_FRAME_STEP;
    r->T = fpc;
    if (o->dense) {
        int64_t n = video_dense_indices(r->video_len, fpc, fstp, o->stride, NULL);
        if (n < 1 || n > 1000000) return cli_fail(o->video, "cannot tile %lld frames", (long long)r->video_len);
        r->n_clips = (int)n;
    } else {
        r->n_clips = o->num_clips ? o->num_clips : 1;
    }
    r->idx = malloc(sizeof(int64_t) * (size_t)r->n_clips * (size_t)fpc);
    r->last_use = malloc(sizeof(int32_t) * (size_t)r->video_len);
    if (!r->idx || !r->last_use) return cli_fail(o->video, "out of memory for the clip plan");
    if (o->dense) video_dense_indices(r->video_len, fpc, fstp, o->stride, r->idx);
    else if (video_clip_indices(r->video_len, fpc, fstp, r->n_clips, r->idx, &e)) return cli_fail(o->video, "%s", e.msg);
    for (int64_t j = 0; j < r->video_len; j++) r->last_use[j] = -1;
    for (int k = 0; k < r->n_clips; k++)
        for (int t = 0; t < fpc; t++) r->last_use[r->idx[(size_t)k * fpc + t]] = k;
    if (!r->quiet) {
        fprintf(stderr, "jepa: %s: %lld frames of %dx%d; %d clip%s of %d frames, step %d (window %lld)%s",
                o->video, (long long)r->video_len, w, h, r->n_clips, r->n_clips > 1 ? "s" : "", fpc, fstp,
                (long long)fpc * fstp, r->n_clips == 1 ? ": frames" : "\n");
        if (r->n_clips == 1) {
            for (int t = 0; t < fpc; t++) fprintf(stderr, " %lld", (long long)r->idx[t]);
            fprintf(stderr, "\n");
        }
    }
    if (video_open(&r->vr, o->video, &e)) return cli_fail(NULL, "%s", e.msg);
    return 0;
}

int inputs_open(struct inputs_reader **out, const struct inputs_opts *o, const jepa_model *m, int quiet) {
    *out = NULL;
    struct inputs_reader *r = calloc(1, sizeof *r);
    if (!r) return cli_fail(NULL, "out of memory");
    r->m = m, r->o = o, r->quiet = quiet;
    r->pp = jepa_preprocess_default_params();
    if (o->no_antialias) r->pp.filter = JEPA_RESIZE_CV2_LINEAR;
    r->pp.resize_short = o->resize_short;
    r->pp.norm = o->norm_sequential ? JEPA_NORM_SEQUENTIAL : JEPA_NORM_FUSED;
    int rc;
    if (jepa_preprocess_size(m, &r->pp, &r->H, &r->W)) {
        rc = cli_fail(inputs_name(r), "the model's preprocessing (jepa.pre.*) with --resize-short %d does not fit",
                      o->resize_short);
        goto fail;
    }
    jepa_model_info info;
    jepa_model_get_info(m, &info);
    r->n_clips = 1;
    if (o->video) {
        r->kind = SRC_VIDEO;
        if ((rc = plan_video(r, &info))) goto fail;
    } else if (o->frames_npy) {
        r->kind = SRC_NPY;
    } else {
        r->kind = SRC_IMAGES;
        r->T = o->n_images;   /* a still is repeated by the model where its family wants it */
    }
    *out = r;
    return 0;
fail:
    inputs_close(r);
    return rc ? rc : CLI_EXIT_FAIL;
}

static int alloc_clip(struct npy *clip, int T, int H, int W) {
    memset(clip, 0, sizeof *clip);
    clip->dtype = NPY_F32;
    clip->ndim = 4;
    clip->shape[0] = 3, clip->shape[1] = T, clip->shape[2] = H, clip->shape[3] = W;
    clip->count = (int64_t)3 * T * H * W;
    clip->data = malloc(sizeof(float) * (size_t)clip->count);
    if (!clip->data) return cli_fail(NULL, "out of memory for a %dx%dx%d clip", T, H, W);
    return 0;
}

static int next_images(struct inputs_reader *r, float *x) {
    for (int i = 0; i < r->o->n_images; i++) {
        struct jerr e = {0};
        uint8_t *rgb = NULL;
        int h, w;
        if (image_load_rgb(r->o->images[i], &rgb, &h, &w, &e)) return cli_fail(NULL, "%s", e.msg);
        int rc = put_frame(r, r->o->images[i], rgb, h, w, x, r->T, i);
        free(rgb);
        if (rc) return rc;
    }
    return 0;
}

static int load_npy_frames(struct inputs_reader *r, struct npy *clip) {
    const char *path = r->o->frames_npy;
    struct jerr e = {0};
    struct npy a;
    if (npy_load(&a, path, &e)) return cli_fail(path, "%s", e.msg);
    int rc = 0;
    if (a.dtype != NPY_U8 || a.ndim != 4 || a.shape[3] != 3 || a.shape[0] < 1 || a.shape[1] < 1 || a.shape[2] < 1 ||
        a.shape[0] > 100000 || a.shape[1] > 65536 || a.shape[2] > 65536) {
        rc = cli_fail(path, "expected uint8 RGB frames [T, H, W, 3]");
        goto done;
    }
    const int n = (int)a.shape[0], h = (int)a.shape[1], w = (int)a.shape[2];
    r->T = n;
    if ((rc = alloc_clip(clip, r->T, r->H, r->W))) goto done;
    const size_t fsz = (size_t)h * w * 3;
    for (int t = 0; t < n && !rc; t++) rc = put_frame(r, path, (const uint8_t *)a.data + t * fsz, h, w, clip->data, r->T, t);
done:
    npy_free(&a);
    return rc;
}

static const float *cache_find(const struct inputs_reader *r, int64_t index) {
    for (int i = 0; i < r->n_cache; i++)
        if (r->cache[i].index == index) return r->cache[i].px;
    return NULL;
}

static int cache_add(struct inputs_reader *r, int64_t index, const uint8_t *rgb, int h, int w) {
    if (r->n_cache == r->cap_cache) {
        int cap = r->cap_cache ? 2 * r->cap_cache : 32;
        struct cached *c = realloc(r->cache, sizeof *c * (size_t)cap);
        if (!c) return cli_fail(r->o->video, "out of memory");
        r->cache = c, r->cap_cache = cap;
    }
    float *px = malloc(sizeof(float) * frame_floats(r));
    if (!px) return cli_fail(r->o->video, "out of memory");
    char what[64];
    snprintf(what, sizeof what, "frame %lld", (long long)index);
    int rc = put_frame(r, what, rgb, h, w, px, 1, 0);
    if (rc) {
        free(px);
        return rc;
    }
    r->cache[r->n_cache].index = index;
    r->cache[r->n_cache++].px = px;
    return 0;
}

/* Decode forward until every frame of clip k is cached (or the stream ends). */
static int decode_for_clip(struct inputs_reader *r, int k) {
    const int64_t *need = r->idx + (size_t)k * r->T;
    int64_t maxn = 0;
    for (int t = 0; t < r->T; t++)
        if (need[t] > maxn) maxn = need[t];
    while (!r->eof && r->next_frame <= maxn) {
        struct jerr e = {0};
        const int64_t j = r->next_frame;
        bool want = j < r->video_len && r->last_use[j] >= k;
        const uint8_t *rgb = NULL;
        int h = 0, w = 0;
        int64_t index = 0;
        bool eof = false;
        if (video_next(r->vr, want, &rgb, &h, &w, &index, &eof, &e)) return cli_fail(NULL, "%s", e.msg);
        if (eof) {
            r->eof = true;
            break;
        }
        r->next_frame = index + 1;
        if (want) {
            int rc = cache_add(r, index, rgb, h, w);
            if (rc) return rc;
        }
    }
    return 0;
}

static int next_video(struct inputs_reader *r, int k, float *x) {
    int rc = decode_for_clip(r, k);
    if (rc) return rc;
    const int64_t *need = r->idx + (size_t)k * r->T;
    const size_t hw = (size_t)r->H * r->W;
    for (int t = 0; t < r->T; t++) {
        const float *px = cache_find(r, need[t]);
        if (!px) {
            /* fewer decodable frames than packets: repeat the last decoded frame */
            if (!r->fill) {
                struct jerr e = {0};
                const uint8_t *rgb;
                int h, w;
                int64_t last;
                if (video_last(r->vr, &rgb, &h, &w, &last, &e)) return cli_fail(NULL, "%s", e.msg);
                if (!(r->fill = malloc(sizeof(float) * frame_floats(r)))) return cli_fail(r->o->video, "out of memory");
                if ((rc = put_frame(r, r->o->video, rgb, h, w, r->fill, 1, 0))) return rc;
                if (!r->quiet)
                    fprintf(stderr, "jepa: %s: note: %lld frames decode out of %lld packets; later frames repeat "
                                    "frame %lld\n", r->o->video, (long long)r->next_frame, (long long)r->video_len,
                            (long long)last);
            }
            px = r->fill;
        }
        for (int c = 0; c < 3; c++) memcpy(x + ((size_t)c * r->T + t) * hw, px + (size_t)c * hw, sizeof(float) * hw);
    }
    /* drop frames no later clip uses */
    int keep = 0;
    for (int i = 0; i < r->n_cache; i++) {
        int64_t j = r->cache[i].index;
        if (j < r->video_len && r->last_use[j] > k) r->cache[keep++] = r->cache[i];
        else free(r->cache[i].px);
    }
    r->n_cache = keep;
    return 0;
}

int inputs_next(struct inputs_reader *r, struct npy *clip, int *T, int *H, int *W) {
    int rc;
    if (r->next_clip >= r->n_clips) return cli_fail(inputs_name(r), "no more clips");
    int k = r->next_clip++;
    if (r->kind == SRC_NPY) {
        rc = load_npy_frames(r, clip);
    } else if ((rc = alloc_clip(clip, r->T, r->H, r->W)) == 0) {
        rc = r->kind == SRC_VIDEO ? next_video(r, k, clip->data) : next_images(r, clip->data);
    }
    if (rc) {
        npy_free(clip);
        return rc;
    }
    *T = r->T, *H = r->H, *W = r->W;
    return 0;
}

/* ---- runs over several clips ------------------------------------------------------------ */

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Indices of the k largest values of v[n], best first. */
static void top_k(const double *v, int n, int k, int *out) {
    for (int r = 0; r < k; r++) {
        int best = -1;
        for (int i = 0; i < n; i++) {
            bool used = false;
            for (int q = 0; q < r; q++) used |= out[q] == i;
            if (!used && (best < 0 || v[i] > v[best])) best = i;
        }
        out[r] = best;
    }
}

static void softmax(const float *logits, int K, double *p) {
    double mx = logits[0], sum = 0;
    for (int i = 1; i < K; i++)
        if (logits[i] > mx) mx = logits[i];
    for (int i = 0; i < K; i++) sum += p[i] = exp(logits[i] - mx);
    for (int i = 0; i < K; i++) p[i] /= sum;
}

int inputs_run_clips(struct inputs_reader *r, const jepa_model *m, jepa_ctx *c,
                     const struct inputs_run_opts *ro) {
    const char *cmd = ro->cmd == INPUTS_EMBED ? "embed" : ro->cmd == INPUTS_CLASSIFY ? "classify" : "predict";
    const char *name = inputs_name(r);
    if (ro->cmd == INPUTS_PREDICT)
        return cli_usage_error(cmd, "predict takes one clip; drop --num-clips / --dense");
    jepa_model_info info;
    jepa_model_get_info(m, &info);
    const bool pool_cls = ro->pool && !strcmp(ro->pool, "cls"), pool_mean = ro->pool && !strcmp(ro->pool, "mean");
    const bool pool_lewm = ro->pool && !strcmp(ro->pool, "lewm");
    if (ro->cmd == INPUTS_EMBED && pool_cls && !info.has_cls)
        return cli_usage_error(cmd, "--pool cls: family '%s' has no CLS token", info.family);
    if (ro->cmd == INPUTS_EMBED && pool_lewm && !info.emb_dim)
        return cli_usage_error(cmd, "--pool lewm: family '%s' has no LeWM projector", info.family);
    if (ro->cmd == INPUTS_EMBED && ro->hier && !info.n_hier)
        return cli_usage_error(cmd, "--hier: family '%s' has no hierarchical outputs", info.family);
    if (ro->cmd == INPUTS_CLASSIFY && !info.has_head) return cli_fail(NULL, "this model file has no classifier head");

    int gt, gh, gw, n;
    if (jepa_model_grid(m, r->T, r->H, r->W, &gt, &gh, &gw, &n))
        return cli_fail(name, "a %dx%dx%d clip does not fit this model (patch %d, tubelet %d)", r->T, r->H, r->W,
                        info.patch_size, info.tubelet_size);
    const int D = info.embed_dim, K = info.n_classes, NC = r->n_clips;
    const bool dense = r->o->dense;
    /* clips per forward pass (embed --batch): the outputs below hold one pass */
    const int G = ro->cmd == INPUTS_EMBED && ro->batch > 1 ? (ro->batch < NC ? ro->batch : NC) : 1;
    const size_t clip_floats = (size_t)3 * r->T * r->H * r->W;
    /* per-clip output block of embed */
    size_t per = ro->hier ? (size_t)info.n_hier * n * D : pool_lewm ? (size_t)info.emb_dim
               : (pool_mean || pool_cls) ? (size_t)D : (size_t)n * D;
    float *tokens = malloc(sizeof(float) * (size_t)G * n * D), *pooled = malloc(sizeof(float) * (size_t)G * D);
    float *cls = info.has_cls ? malloc(sizeof(float) * (size_t)G * D) : NULL;
    float *emb = info.emb_dim ? malloc(sizeof(float) * (size_t)G * info.emb_dim) : NULL;
    float *hier = ro->hier ? malloc(sizeof(float) * (size_t)G * info.n_hier * n * D) : NULL;
    float *xs = G > 1 ? malloc(sizeof(float) * (size_t)G * clip_floats) : NULL;   /* [G, 3, T, H, W] */
    float *all = ro->cmd == INPUTS_EMBED && ro->out ? malloc(sizeof(float) * per * (size_t)NC) : NULL;
    float *logits = ro->cmd == INPUTS_CLASSIFY ? malloc(sizeof(float) * (size_t)K * NC) : NULL;
    double *prob = ro->cmd == INPUTS_CLASSIFY ? calloc((size_t)K, sizeof(double)) : NULL;
    double *mean = ro->cmd == INPUTS_CLASSIFY ? calloc((size_t)K, sizeof(double)) : NULL;
    int *best = ro->cmd == INPUTS_CLASSIFY ? malloc(sizeof(int) * (size_t)K) : NULL;
    struct npy clip = {0};
    int rc = CLI_EXIT_FAIL;
    double t_enc = 0, t_in = 0;
    if (!tokens || !pooled || (info.has_cls && !cls) || (info.emb_dim && !emb) || (ro->hier && !hier) ||
        (G > 1 && !xs) || (ro->cmd == INPUTS_EMBED && ro->out && !all) ||
        (ro->cmd == INPUTS_CLASSIFY && (!logits || !prob || !mean || !best))) {
        cli_fail(NULL, "out of memory for %d clips", NC);
        goto done;
    }
    const int k_show = ro->topk < K ? ro->topk : K;
    for (int k0 = 0; k0 < NC; k0 += G) {
        const int g = NC - k0 < G ? NC - k0 : G;   /* clips in this pass */
        int T, H, W;
        const float *x = NULL;
        for (int j = 0; j < g; j++) {
            double t0 = now_ms();
            if ((rc = inputs_next(r, &clip, &T, &H, &W))) goto done;
            t_in += now_ms() - t0;
            if (G == 1) {
                x = clip.data;
            } else {   /* gather the pass's clips into one [g, 3, T, H, W] batch */
                memcpy(xs + (size_t)j * clip_floats, clip.data, sizeof(float) * clip_floats);
                npy_free(&clip);
                x = xs;
            }
        }
        rc = CLI_EXIT_FAIL;
        jepa_embed_out eo = {.tokens = tokens, .pooled = pooled, .cls = cls, .hier = hier, .emb = emb};
        jepa_embed_params ep = {.batch = g};
        double t1 = now_ms();
        if (jepa_ctx_embed(c, x, T, H, W, &ep, &eo)) {
            if (g == 1) cli_fail(name, "clip %d: %s", k0, jepa_ctx_error(c));
            else cli_fail(name, "clips %d..%d: %s", k0, k0 + g - 1, jepa_ctx_error(c));
            goto done;
        }
        npy_free(&clip);
        if (ro->cmd == INPUTS_EMBED) t_enc += now_ms() - t1;
        for (int j = 0; j < g; j++) {
            const int k = k0 + j;
            const int64_t *fr = r->kind == SRC_VIDEO ? r->idx + (size_t)k * r->T : NULL;
            long long f0 = fr ? (long long)fr[0] : 0, f1 = fr ? (long long)fr[r->T - 1] : 0;
            if (ro->cmd == INPUTS_EMBED) {
                const float *src = ro->hier ? hier : pool_lewm ? emb : pool_mean ? pooled : pool_cls ? cls : tokens;
                if (all) memcpy(all + per * (size_t)k, src + per * (size_t)j, sizeof(float) * per);
                if (!ro->quiet) {
                    double nrm = 0;
                    for (int q = 0; q < D; q++) nrm += (double)pooled[(size_t)j * D + q] * pooled[(size_t)j * D + q];
                    printf("clip %d frames %lld..%lld: pooled mean |v| = %.6g\n", k, f0, f1, sqrt(nrm));
                }
            } else {
                float *lg = logits + (size_t)K * k;
                if (jepa_ctx_classify(c, tokens + (size_t)j * n * D, n, lg)) {
                    cli_fail(name, "clip %d: classify: %s", k, jepa_ctx_error(c));
                    goto done;
                }
                t_enc += now_ms() - t1;   /* one clip per pass: encode + classify */
                softmax(lg, K, prob);
                for (int i = 0; i < K; i++) mean[i] += prob[i] / NC;
                if (dense) {
                    top_k(prob, K, k_show, best);
                    for (int q = 0; q < k_show; q++) {
                        const char *label = jepa_model_label(m, best[q]);
                        printf("%d\t%lld\t%lld\t%d\t%.4f\t%s\n", k, f0, f1, best[q], prob[best[q]], label ? label : "");
                    }
                }
            }
        }
    }
    if (ro->timing)
        fprintf(stderr, "time: %d clips, decode + preprocess %.1f ms, encode%s %.1f ms (%.1f ms per clip)\n", NC,
                t_in, ro->cmd == INPUTS_CLASSIFY ? " + classify" : "", t_enc, t_enc / NC);
    if (ro->cmd == INPUTS_CLASSIFY) {
        if (!dense) {
            /* Meta's evaluation: the mean of the per-clip softmax distributions */
            top_k(mean, K, k_show, best);
            for (int q = 0; q < k_show; q++) {
                const char *label = jepa_model_label(m, best[q]);
                printf("%d\t%.4f\t%s\n", best[q], mean[best[q]], label ? label : "");
            }
        }
        if (ro->logits_out) {
            struct jerr e = {0};
            int64_t shape[2] = {NC, K};
            if (npy_save_f32(ro->logits_out, logits, 2, shape, &e)) {
                cli_fail(ro->logits_out, "%s", e.msg);
                goto done;
            }
        }
    } else if (all) {
        struct jerr e = {0};
        int64_t shape[4] = {NC, 0, 0, 0};
        int nd;
        if (ro->hier) shape[1] = info.n_hier, shape[2] = n, shape[3] = D, nd = 4;
        else if (pool_lewm) shape[1] = info.emb_dim, nd = 2;
        else if (pool_mean || pool_cls) shape[1] = D, nd = 2;
        else shape[1] = n, shape[2] = D, nd = 3;
        if (npy_save_f32(ro->out, all, nd, shape, &e)) {
            cli_fail(ro->out, "%s", e.msg);
            goto done;
        }
    }
    rc = 0;
done:
    npy_free(&clip);
    free(tokens); free(pooled); free(cls); free(emb); free(hier); free(xs); free(all); free(logits); free(prob);
    free(mean); free(best);
    return rc;
}
