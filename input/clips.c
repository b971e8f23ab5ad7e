/* clips.c — see clips.h. */
#include "input/clips.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "input/image.h"
#include "input/npy.h"
#include "input/video.h"

enum src_kind { SRC_IMAGES, SRC_FRAMES, SRC_VIDEO };

struct cached {
    int64_t index;
    float *px;            /* [3][H][W], one preprocessed frame */
};

struct clip_reader {
    enum src_kind kind;
    struct pre_cfg cfg;
    const char *name;     /* the video, the .npy, or the first image */
    int T, H, W;          /* every clip's geometry */
    int n_clips, next_clip;
    bool items;           /* images / frames: clip k is the k-th image or row (T = 1) */
    /* images: files, or one image in memory (img_data) */
    const char *const *paths;
    const void *img_data;
    size_t img_size;
    /* frames */
    struct npy frames;
    /* video */
    int vw, vh;
    int64_t video_len;    /* packets = frames */
    int64_t *idx;         /* [n_clips][T] frame indices */
    int32_t *last_use;    /* [video_len] last clip that needs the frame, -1: none */
    struct video_reader *vr;
    int64_t next_frame;   /* index of the next frame the decoder returns */
    bool eof;
    struct cached *cache;
    int n_cache, cap_cache;
    float *fill;          /* the last decoded frame, when decodable frames run out */
    char note[160];
    bool note_taken;
};

static size_t frame_floats(const struct clip_reader *r) { return (size_t)3 * r->H * r->W; }

/* Preprocess one RGB frame into frame t of a [3, T, H, W] clip; a failure's reason is
 * prefixed with `what` (the file or the frame). */
static jepa_status put_frame(const struct clip_reader *r, const char *what, const uint8_t *rgb, int h,
                             int w, float *clip, int T, int t, struct jerr *e) {
    struct jerr pe = {0};
    if (ji_pre_clip_frame(&r->cfg, rgb, h, w, clip, T, t, &pe))
        return jr_err_set(e, pe.status, "%s: %s", what, pe.msg);
    return JEPA_OK;
}

static jepa_status reader_new(struct clip_reader **out, enum src_kind kind, const char *name,
                              const struct pre_cfg *cfg, struct jerr *e) {
    struct clip_reader *r = calloc(1, sizeof *r);
    *out = r;
    if (!r) return jr_err_set(e, JEPA_ERR_NOMEM, "out of memory");
    r->kind = kind, r->cfg = *cfg, r->name = name;
    r->H = r->W = cfg->crop;
    r->n_clips = 1;
    return JEPA_OK;
}

/* A clip of T frames of the reader's crop within CLIPS_MAX_CLIP_BYTES. */
static jepa_status check_clip_size(const struct clip_reader *r, int64_t T, struct jerr *e) {
    const int64_t bytes = (int64_t)3 * 4 * r->H * r->W * T;
    if (T > 0 && bytes <= CLIPS_MAX_CLIP_BYTES) return JEPA_OK;
    return jr_err_set(e, JEPA_ERR_ARG, "%s: a clip of %lld frames of %dx%d is %lld MiB, more than %lld MiB", r->name,
                      (long long)T, r->W, r->H, (long long)(bytes >> 20), (long long)(CLIPS_MAX_CLIP_BYTES >> 20));
}

static jepa_status fail_open(struct clip_reader **r, jepa_status st) {
    clips_close(*r);
    *r = NULL;
    return st;
}

void clips_close(struct clip_reader *r) {
    if (!r) return;
    for (int i = 0; i < r->n_cache; i++) free(r->cache[i].px);
    free(r->cache);
    free(r->fill);
    free(r->idx);
    free(r->last_use);
    video_close(r->vr);
    npy_free(&r->frames);
    free(r);
}

int clips_count(const struct clip_reader *r) { return r->n_clips; }

void clips_shape(const struct clip_reader *r, int *T, int *H, int *W) {
    *T = r->T, *H = r->H, *W = r->W;
}

const int64_t *clips_frames(const struct clip_reader *r, int k) {
    return r->kind == SRC_VIDEO && k >= 0 && k < r->n_clips ? r->idx + (size_t)k * r->T : NULL;
}

int64_t clips_video_length(const struct clip_reader *r, int *w, int *h) {
    if (w) *w = r->vw;
    if (h) *h = r->vh;
    return r->kind == SRC_VIDEO ? r->video_len : 0;
}

const char *clips_take_note(struct clip_reader *r) {
    if (!r->note[0] || r->note_taken) return NULL;
    r->note_taken = true;
    return r->note;
}

/* ---- what a caller names ---- */

struct clip_sampling clips_sampling_defaults(struct clip_sampling s, int model_frames) {
    if (!s.frames_per_clip) s.frames_per_clip = model_frames > 0 ? model_frames : 1;
    if (!s.frame_step) s.frame_step = CLIPS_DEFAULT_FRAME_STEP;
    if (!s.num_clips) s.num_clips = 1;
    return s;
}

jepa_status clips_open_inputs(struct clip_reader **r, const struct clip_inputs *in, const jepa_preprocess_recipe *recipe,
                              const struct jepa_preprocess_params *pp, int model_frames, const char *resize_opt,
                              struct jerr *e) {
    *r = NULL;
    const char *name = in->video ? in->video : in->frames_npy ? in->frames_npy
                     : in->n_images ? in->images[0] : "input";
    struct pre_cfg cfg;
    struct jerr pe = {0};
    if (ji_pre_cfg(recipe, pp, &cfg, &pe))
        return jr_err_set(e, pe.status, "%s: the model's preprocessing (jepa.pre.*) with %s %d does not fit", name,
                          resize_opt, pp ? pp->resize_short : 0);
    if (in->video) {
        const struct clip_sampling s = clips_sampling_defaults(in->sampling, model_frames);
        return clips_open_video(r, in->video, &cfg, &s, e);
    }
    if (in->frames_npy)
        return in->items ? clips_open_frame_items(r, in->frames_npy, &cfg, e) : clips_open_frames(r, in->frames_npy, &cfg, e);
    return in->items ? clips_open_image_items(r, in->images, in->n_images, &cfg, e)
                     : clips_open_images(r, in->images, in->n_images, &cfg, e);
}

/* ---- images and frame arrays ---- */

jepa_status clips_open_images(struct clip_reader **r, const char *const *paths, int n,
                              const struct pre_cfg *cfg, struct jerr *e) {
    if (n < 1 || n > CLIPS_MAX_IMAGES)
        return jr_err_set(e, JEPA_ERR_ARG, "%d images: a clip takes 1 to %d", n, CLIPS_MAX_IMAGES);
    jepa_status st = reader_new(r, SRC_IMAGES, paths[0], cfg, e);
    if (st) return fail_open(r, st);
    (*r)->paths = paths;
    (*r)->T = n;
    if ((st = check_clip_size(*r, n, e))) return fail_open(r, st);
    return JEPA_OK;
}

jepa_status clips_open_image_items(struct clip_reader **r, const char *const *paths, int n,
                                   const struct pre_cfg *cfg, struct jerr *e) {
    jepa_status st = clips_open_images(r, paths, n > 0 ? 1 : 0, cfg, e);
    if (st) return st;
    (*r)->items = true;
    (*r)->n_clips = n;
    return JEPA_OK;
}

jepa_status clips_open_image_memory(struct clip_reader **r, const char *name, const void *data, size_t size,
                                    const struct pre_cfg *cfg, struct jerr *e) {
    jepa_status st = reader_new(r, SRC_IMAGES, name, cfg, e);
    if (st) return fail_open(r, st);
    (*r)->img_data = data, (*r)->img_size = size;
    (*r)->T = 1;
    return JEPA_OK;
}

static jepa_status next_images(struct clip_reader *r, int k, float *x, struct jerr *e) {
    if (r->img_data) {
        uint8_t *rgb = NULL;
        int h, w;
        struct jerr de = {0};
        jepa_status st = image_decode_rgb(r->img_data, r->img_size, &rgb, &h, &w, &de);
        if (st) st = jr_err_set(e, st, "%s: %s", r->name, de.msg);
        else st = put_frame(r, r->name, rgb, h, w, x, 1, 0, e);
        free(rgb);
        return st;
    }
    for (int i = 0; i < r->T; i++) {
        uint8_t *rgb = NULL;
        int h, w;
        const char *path = r->paths[r->items ? k : i];
        jepa_status st = image_load_rgb(path, &rgb, &h, &w, e);
        if (!st) st = put_frame(r, path, rgb, h, w, x, r->T, i, e);
        free(rgb);
        if (st) return st;
    }
    return JEPA_OK;
}

/* A uint8 [T, H, W, 3] array: the frames of one clip, or with items T clips of one frame. */
static jepa_status open_frames(struct clip_reader **r, const char *path, const struct pre_cfg *cfg, bool items,
                               struct jerr *e) {
    jepa_status st = reader_new(r, SRC_FRAMES, path, cfg, e);
    if (st) return fail_open(r, st);
    struct npy *a = &(*r)->frames;
    struct jerr le = {0};
    if ((st = npy_load(a, path, &le))) return fail_open(r, jr_err_set(e, st, "%s: %s", path, le.msg));
    if (a->dtype != NPY_U8 || a->ndim != 4 || a->shape[3] != 3 || a->shape[0] < 1 || a->shape[1] < 1 ||
        a->shape[2] < 1 || a->shape[0] > 100000 || a->shape[1] > 65536 || a->shape[2] > 65536)
        return fail_open(r, jr_err_set(e, JEPA_ERR_ARG, "%s: expected uint8 RGB %s [%c, H, W, 3]", path,
                                       items ? "images" : "frames", items ? 'N' : 'T'));
    (*r)->items = items;
    (*r)->T = items ? 1 : (int)a->shape[0];
    (*r)->n_clips = items ? (int)a->shape[0] : 1;
    if ((st = check_clip_size(*r, (*r)->T, e))) return fail_open(r, st);
    return JEPA_OK;
}

jepa_status clips_open_frames(struct clip_reader **r, const char *path, const struct pre_cfg *cfg,
                              struct jerr *e) {
    return open_frames(r, path, cfg, false, e);
}

jepa_status clips_open_frame_items(struct clip_reader **r, const char *npy_path, const struct pre_cfg *cfg,
                                   struct jerr *e) {
    return open_frames(r, npy_path, cfg, true, e);
}

static jepa_status next_frames(struct clip_reader *r, int k, float *x, struct jerr *e) {
    const struct npy *a = &r->frames;
    const int h = (int)a->shape[1], w = (int)a->shape[2];
    const size_t fsz = (size_t)h * w * 3;
    for (int t = 0; t < r->T; t++) {
        const size_t row = (size_t)(r->items ? k : t);
        jepa_status st = put_frame(r, r->name, (const uint8_t *)a->data + row * fsz, h, w, x, r->T, t, e);
        if (st) return st;
    }
    return JEPA_OK;
}

/* ---- video: the clip plan, forward decoding, the frame cache ---- */

static jepa_status open_video(struct clip_reader **out, const char *path, const void *data, size_t size,
                              const struct pre_cfg *cfg, const struct clip_sampling *s, struct jerr *e) {
    jepa_status st = reader_new(out, SRC_VIDEO, path, cfg, e);
    if (st) return fail_open(out, st);
    struct clip_reader *r = *out;
    const int fpc = s->frames_per_clip, fstp = s->frame_step;
    if (fpc < 1 || fstp < 1 || (!s->dense && (s->num_clips < 1 || s->num_clips > CLIPS_MAX_CLIPS)))
        return fail_open(out, jr_err_set(e, JEPA_ERR_ARG, "%s: bad clip sampling (%d frames, step %d, %d clips)",
                                         path, fpc, fstp, s->num_clips));
    r->T = fpc;
    if ((st = check_clip_size(r, fpc, e))) return fail_open(out, st);
    if ((st = data ? video_probe_memory(path, data, size, &r->video_len, &r->vh, &r->vw, e)
                   : video_probe(path, &r->video_len, &r->vh, &r->vw, e)))
        return fail_open(out, st);
    if (r->video_len > CLIPS_MAX_VIDEO_FRAMES)
        return fail_open(out, jr_err_set(e, JEPA_ERR_ARG, "%s: %lld frames, more than %lld", path,
                                         (long long)r->video_len, (long long)CLIPS_MAX_VIDEO_FRAMES));
    if (s->dense) {
        int64_t n = video_dense_indices(r->video_len, fpc, fstp, s->stride, NULL);
        if (n < 1 || n > CLIPS_MAX_CLIPS)
            return fail_open(out, jr_err_set(e, JEPA_ERR_ARG, "%s: cannot tile %lld frames", path,
                                             (long long)r->video_len));
        r->n_clips = (int)n;
    } else {
        r->n_clips = s->num_clips;
    }
    if ((int64_t)r->n_clips * fpc > CLIPS_MAX_PLAN)
        return fail_open(out, jr_err_set(e, JEPA_ERR_ARG, "%s: %d clips of %d frames is a plan of more than %lld frames",
                                         path, r->n_clips, fpc, (long long)CLIPS_MAX_PLAN));
    r->idx = malloc(sizeof(int64_t) * (size_t)r->n_clips * (size_t)fpc);
    r->last_use = malloc(sizeof(int32_t) * (size_t)(r->video_len > 0 ? r->video_len : 1));
    if (!r->idx || !r->last_use)
        return fail_open(out, jr_err_set(e, JEPA_ERR_NOMEM, "%s: out of memory for the clip plan", path));
    if (s->dense) {
        video_dense_indices(r->video_len, fpc, fstp, s->stride, r->idx);
    } else {
        struct jerr ie = {0};
        if ((st = video_clip_indices(r->video_len, fpc, fstp, r->n_clips, r->idx, &ie)))
            return fail_open(out, jr_err_set(e, st, "%s: %s", path, ie.msg));
    }
    for (int64_t j = 0; j < r->video_len; j++) r->last_use[j] = -1;
    for (int k = 0; k < r->n_clips; k++)
        for (int t = 0; t < fpc; t++) r->last_use[r->idx[(size_t)k * fpc + t]] = k;
    if ((st = data ? video_open_memory(&r->vr, path, data, size, e) : video_open(&r->vr, path, e)))
        return fail_open(out, st);
    return JEPA_OK;
}

jepa_status clips_open_video(struct clip_reader **r, const char *path, const struct pre_cfg *cfg,
                             const struct clip_sampling *s, struct jerr *e) {
    return open_video(r, path, NULL, 0, cfg, s, e);
}

jepa_status clips_open_video_memory(struct clip_reader **r, const char *name, const void *data, size_t size,
                                    const struct pre_cfg *cfg, const struct clip_sampling *s, struct jerr *e) {
    if (!data || !size) {
        *r = NULL;
        return jr_err_set(e, JEPA_ERR_ARG, "%s: an empty video", name);
    }
    return open_video(r, name, data, size, cfg, s, e);
}

static const float *cache_find(const struct clip_reader *r, int64_t index) {
    for (int i = 0; i < r->n_cache; i++)
        if (r->cache[i].index == index) return r->cache[i].px;
    return NULL;
}

static jepa_status cache_add(struct clip_reader *r, int64_t index, const uint8_t *rgb, int h, int w,
                             struct jerr *e) {
    if (r->n_cache == r->cap_cache) {
        int cap = r->cap_cache ? 2 * r->cap_cache : 32;
        struct cached *c = realloc(r->cache, sizeof *c * (size_t)cap);
        if (!c) return jr_err_set(e, JEPA_ERR_NOMEM, "%s: out of memory", r->name);
        r->cache = c, r->cap_cache = cap;
    }
    float *px = malloc(sizeof(float) * frame_floats(r));
    if (!px) return jr_err_set(e, JEPA_ERR_NOMEM, "%s: out of memory", r->name);
    char what[64];
    snprintf(what, sizeof what, "frame %lld", (long long)index);
    jepa_status st = put_frame(r, what, rgb, h, w, px, 1, 0, e);
    if (st) {
        free(px);
        return st;
    }
    r->cache[r->n_cache].index = index;
    r->cache[r->n_cache++].px = px;
    return JEPA_OK;
}

/* Decode forward until every frame of clip k is cached (or the stream ends). */
static jepa_status decode_for_clip(struct clip_reader *r, int k, struct jerr *e) {
    const int64_t *need = r->idx + (size_t)k * r->T;
    int64_t maxn = 0;
    for (int t = 0; t < r->T; t++)
        if (need[t] > maxn) maxn = need[t];
    while (!r->eof && r->next_frame <= maxn) {
        const int64_t j = r->next_frame;
        bool want = j < r->video_len && r->last_use[j] >= k;
        const uint8_t *rgb = NULL;
        int h = 0, w = 0;
        int64_t index = 0;
        bool eof = false;
        jepa_status st = video_next(r->vr, want, &rgb, &h, &w, &index, &eof, e);
        if (st) return st;
        if (eof) {
            r->eof = true;
            break;
        }
        r->next_frame = index + 1;
        if (want && (st = cache_add(r, index, rgb, h, w, e))) return st;
    }
    return JEPA_OK;
}

static jepa_status next_video(struct clip_reader *r, int k, float *x, struct jerr *e) {
    jepa_status st = decode_for_clip(r, k, e);
    if (st) return st;
    const int64_t *need = r->idx + (size_t)k * r->T;
    const size_t hw = (size_t)r->H * r->W;
    for (int t = 0; t < r->T; t++) {
        const float *px = cache_find(r, need[t]);
        if (!px) {
            /* fewer decodable frames than packets: repeat the last decoded frame */
            if (!r->fill) {
                const uint8_t *rgb;
                int h, w;
                int64_t last;
                if ((st = video_last(r->vr, &rgb, &h, &w, &last, e))) return st;
                if (!(r->fill = malloc(sizeof(float) * frame_floats(r))))
                    return jr_err_set(e, JEPA_ERR_NOMEM, "%s: out of memory", r->name);
                if ((st = put_frame(r, r->name, rgb, h, w, r->fill, 1, 0, e))) return st;
                snprintf(r->note, sizeof r->note, "%lld frames decode out of %lld packets; later frames repeat frame %lld",
                         (long long)r->next_frame, (long long)r->video_len, (long long)last);
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
    return JEPA_OK;
}

jepa_status clips_next(struct clip_reader *r, float *x, struct jerr *e) {
    if (r->next_clip >= r->n_clips) return jr_err_set(e, JEPA_ERR_ARG, "%s: no more clips", r->name);
    const int k = r->next_clip++;
    switch (r->kind) {
    case SRC_IMAGES: return next_images(r, k, x, e);
    case SRC_FRAMES: return next_frames(r, k, x, e);
    default: return next_video(r, k, x, e);
    }
}
