/* api.c — see api.h. */
#include "server/api.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/topk.h"
#include "input/clips.h"
#include "input/image.h"
#include "server/text.h"

/* ---- responses ---- */

void api_respond(struct sv_response *r, int status, struct sbuf *s) {
    r->status = status;
    r->content_type = "application/json";
    if (!(r->body = sb_take(s, &r->len))) {   /* out of memory for the text: a fixed answer */
        static const char oom[] = "{\"error\":{\"message\":\"out of memory for the response\",\"type\":\"server_error\"}}";
        r->status = 500;
        r->body = malloc(sizeof oom);
        r->len = r->body ? sizeof oom - 1 : 0;
        if (r->body) memcpy(r->body, oom, sizeof oom);
    }
}

void api_error(struct sv_response *r, int status, const char *type, const char *fmt, ...) {
    char msg[JEPA_ERR_LEN + 128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    struct sbuf s = {0};
    sb_puts(&s, "{\"error\":{\"message\":");
    sb_json_str(&s, msg);
    sb_puts(&s, ",\"type\":");
    sb_json_str(&s, type);
    sb_puts(&s, "}}");
    api_respond(r, status, &s);
}

#define BAD(...) api_error(r, 400, "invalid_request_error", __VA_ARGS__)

const char *api_natural_pool(const jepa_model_info *in) {
    return in->emb_dim ? "lewm" : in->has_cls ? "cls" : "mean";
}

/* What the world-model routes run: "lewm", "ac", or NULL (no world model in the file). */
const char *api_world_kind(const jepa_model_info *in) {
    if (!in->predictor) return NULL;
    return !strcmp(in->predictor, "lewm") ? "lewm" : !strcmp(in->predictor, "ac") ? "ac" : NULL;
}

void api_weight_types(const jepa_model *m, char *buf, size_t n) {
    snprintf(buf, n, "unknown");
    const size_t len = jepa_model_describe(m, NULL, 0);
    char *d = len ? malloc(len + 1) : NULL;
    if (!d) return;
    jepa_model_describe(m, d, len + 1);
    /* its line "weights     29 f32, 4 f16; 0.57 MiB ...": "COUNT TYPE" items before the ';' */
    char *w = strstr(d, "\nweights "), *save = NULL;
    char *end = w ? strpbrk(w + 1, ";\n") : NULL;
    if (end) {
        *end = 0;
        size_t at = 0;
        bool f32 = false;
        for (char *item = strtok_r(w + 9, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
            char type[16];
            long long count;
            if (sscanf(item, "%lld %15s", &count, type) != 2) continue;
            if (!strcmp(type, "f32")) f32 = true;
            else if (at + strlen(type) + 2 < n) at += (size_t)snprintf(buf + at, n - at, "%s%s", at ? "+" : "", type);
        }
        if (f32 && at + 5 < n) snprintf(buf + at, n - at, "%sf32", at ? "+" : "");
    }
    free(d);
}

void api_health(const struct sv_api *a, bool draining, struct sv_response *r) {
    const jepa_model_info *in = &a->info;
    const char *wk = api_world_kind(in);
    struct sbuf s = {0};
    sb_puts(&s, draining ? "{\"status\":\"shutting down\"" : "{\"status\":\"ok\"");
    sb_puts(&s, ",\"model\":{\"family\":");
    sb_json_str(&s, in->family);
    sb_puts(&s, ",\"modality\":");
    sb_json_str(&s, in->modality);
    sb_printf(&s, ",\"architecture\":\"ViT, %d layers x %d, %d heads, patch %d, tubelet %d\"", in->n_layer,
              in->embed_dim, in->n_head, in->patch_size, in->tubelet_size);
    sb_printf(&s, ",\"width\":%d,\"embedding_dim\":%d,\"n_layer\":%d,\"image_size\":%d,\"input_size\":%d,"
                  "\"frames\":%d,\"patch_size\":%d,\"tubelet_size\":%d,\"dtype\":",
              in->embed_dim, in->emb_dim ? in->emb_dim : in->embed_dim, in->n_layer, in->img_size, a->pre.crop,
              in->n_frames, in->patch_size, in->tubelet_size);
    sb_json_str(&s, a->weight_types);
    sb_printf(&s, ",\"natural_pool\":\"%s\",\"predictor\":", api_natural_pool(in));
    if (in->predictor) sb_json_str(&s, in->predictor);
    else sb_puts(&s, "null");
    sb_printf(&s, ",\"has_predictor\":%s,\"world_model\":", in->has_predictor ? "true" : "false");
    if (wk) sb_printf(&s, "\"%s\"", wk);
    else sb_puts(&s, "null");
    sb_printf(&s, ",\"action_dim\":%d,\"state_dim\":%d,\"has_classifier\":%s,\"n_classes\":%d}}",
              in->action_dim, in->state_dim, in->has_head ? "true" : "false", in->n_classes);
    api_respond(r, draining ? 503 : 200, &s);
}

static const char *default_pool(const jepa_model_info *in) { return api_natural_pool(in); }

void api_models(const struct sv_api *a, struct sv_response *r) {
    const jepa_model_info *in = &a->info;
    struct sbuf s = {0};
    sb_puts(&s, "{\"object\":\"list\",\"data\":[{\"id\":");
    sb_json_str(&s, a->model_id);
    sb_puts(&s, ",\"object\":\"model\",\"created\":0,\"owned_by\":\"jepa.c\",\"name\":");
    sb_json_str(&s, in->name);
    sb_puts(&s, ",\"family\":");
    sb_json_str(&s, in->family);
    sb_puts(&s, ",\"modality\":");
    sb_json_str(&s, in->modality);
    sb_printf(&s, ",\"embed_dim\":%d,\"n_layer\":%d,\"n_head\":%d,\"patch_size\":%d,\"tubelet_size\":%d,"
                  "\"img_size\":%d,\"n_frames\":%d,\"input_size\":%d,\"has_cls\":%s,\"n_hier\":%d,\"emb_dim\":%d,"
                  "\"has_head\":%s,\"n_classes\":%d,\"default_pool\":\"%s\",\"pools\":[\"none\",\"mean\"%s%s]}]}",
              in->embed_dim, in->n_layer, in->n_head, in->patch_size, in->tubelet_size, in->img_size, in->n_frames,
              a->pre.crop, in->has_cls ? "true" : "false", in->n_hier, in->emb_dim, in->has_head ? "true" : "false",
              in->n_classes, default_pool(in), in->has_cls ? ",\"cls\"" : "", in->emb_dim ? ",\"lewm\"" : "");
    api_respond(r, 200, &s);
}

void api_metrics(const struct sv_api *a, int in_flight, struct sv_response *r) {
    struct sv_stats st;
    sv_batcher_stats(a->batcher, &st);
    struct sbuf s = {0};
    metrics_render(&s, st.queued, st.running, in_flight);
    api_respond(r, 200, &s);
    r->content_type = "text/plain; version=0.0.4; charset=utf-8";
}

/* ---- JSON (cJSON) ---- */

#define SV_MAX_JSON_VALUES 16384   /* values in one request body (a request needs a few per input) */
#define SV_MAX_OBJECT_KEYS 64

cJSON *api_obj_get(const cJSON *o, const char *key) { return cJSON_GetObjectItemCaseSensitive(o, key); }
#define obj_get api_obj_get

bool api_is_integer(const cJSON *j) {
    return cJSON_IsNumber(j) && j->valuedouble == floor(j->valuedouble) && fabs(j->valuedouble) < 9007199254740992.0;
}

/* The number of JSON values in body, counted without building them (strings skipped,
 * escapes included): a parse tree costs ~64 bytes a value, so a body of 32 MiB of "0,"
 * would cost a gigabyte. Stops counting past limit. */
static size_t count_values(const char *p, size_t n, size_t limit) {
    size_t values = 0;
    bool in_str = false, in_scalar = false;
    for (size_t i = 0; i < n && values <= limit; i++) {
        const char c = p[i];
        if (in_str) {
            if (c == '\\') i++;
            else if (c == '"') in_str = false;
            continue;
        }
        const bool scalar_char = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '-' || c == '+' || c == '.' ||
                                 (c >= 'A' && c <= 'Z');
        if (c == '"' || c == '[' || c == '{' || (scalar_char && !in_scalar)) values++;
        if (c == '"') in_str = true;
        in_scalar = scalar_char;
    }
    return values;
}

/* Every object in the tree has distinct keys, at most SV_MAX_OBJECT_KEYS of them; if
 * not, why (n bytes) says which. Recursion is bounded by cJSON's nesting limit (1000). */
static bool keys_ok(const cJSON *j, char *why, size_t n) {
    for (; j; j = j->next) {
        if (cJSON_IsObject(j)) {
            int k = 0;
            for (const cJSON *a = j->child; a; a = a->next, k++) {
                if (k >= SV_MAX_OBJECT_KEYS)
                    return snprintf(why, n, "an object with more than %d keys", SV_MAX_OBJECT_KEYS), false;
                for (const cJSON *b = j->child; b != a; b = b->next)
                    if (a->string && b->string && !strcmp(a->string, b->string))
                        return snprintf(why, n, "duplicate key '%.64s'", a->string), false;
            }
        }
        if (j->child && !keys_ok(j->child, why, n)) return false;
    }
    return true;
}

bool api_parse_json(const char *body, size_t len, cJSON **root, struct sv_response *r) {
    *root = NULL;
    if (count_values(body, len, SV_MAX_JSON_VALUES) > SV_MAX_JSON_VALUES)
        return BAD("the body has more than %d JSON values", SV_MAX_JSON_VALUES), false;
    const char *end = NULL;
    *root = cJSON_ParseWithLengthOpts(body, len, &end, false);
    if (!*root) {
        if (!end || end < body || end > body + len) end = body;
        int line = 1, col = 1;
        for (const char *p = body; p < end; p++) {
            if (*p == '\n') line++, col = 1;
            else col++;
        }
        return BAD("invalid JSON at line %d, column %d", line, col), false;
    }
    size_t rest = (size_t)(end - body);
    while (rest < len && (body[rest] == ' ' || body[rest] == '\n' || body[rest] == '\r' || body[rest] == '\t')) rest++;
    if (rest < len) {
        cJSON_Delete(*root), *root = NULL;
        return BAD("invalid JSON: text after the value, at byte %zu", rest), false;
    }
    char why[128];
    if (!keys_ok(*root, why, sizeof why)) {
        cJSON_Delete(*root), *root = NULL;
        return BAD("%s", why), false;
    }
    return true;
}

/* ---- inputs ---- */

enum item_kind { IT_IMAGE, IT_VIDEO, IT_TENSOR };

struct item {
    enum item_kind kind;
    uint8_t *bytes;          /* the decoded base64 */
    size_t n_bytes;
    float *x;                /* [nb, 3, T, H, W] */
    int nb, T, H, W, n_tokens;
    bool stacked;            /* the output has a leading clip axis (a video's clips, a 5-D tensor) */
    int64_t shape[5];        /* a tensor's shape */
    int ndim;
};

/* What a request's clips point at, freed with its group. */
struct req_data {
    struct sv_api *api;
    size_t held;             /* bytes of the decode budget reserved for the items */
    struct item *items;
    int n_items;
    float *outs;             /* every clip's output, clip after clip */
};

static void req_data_free(void *p) {
    struct req_data *d = p;
    if (!d) return;
    if (d->held) atomic_fetch_sub(&d->api->held, d->held);
    for (int i = 0; i < d->n_items; i++) free(d->items[i].bytes), free(d->items[i].x);
    free(d->items);
    free(d->outs);
    free(d);
}

struct clip_opts {
    int fpc, fstp, num_clips;   /* 0: the default */
};

/* An integer field of o in [lo, hi] (absent: *v unchanged). false after answering 400. */
bool api_get_int(cJSON *o, const char *key, long long lo, long long hi, int *v, const char *where,
                    struct sv_response *r) {
    cJSON *j = obj_get(o, key);
    if (!j) return true;
    if (!api_is_integer(j) || (long long)j->valuedouble < lo || (long long)j->valuedouble > hi) {
        BAD("%s'%s' must be an integer in %lld..%lld", where, key, lo, hi);
        return false;
    }
    *v = (int)(long long)j->valuedouble;
    return true;
}

static bool get_clip_opts(cJSON *o, struct clip_opts *c, const char *where, struct sv_response *r) {
    return api_get_int(o, "frames_per_clip", 1, SV_MAX_FRAMES_PER_CLIP, &c->fpc, where, r) &&
           api_get_int(o, "frame_step", 1, 1024, &c->fstp, where, r) &&
           api_get_int(o, "num_clips", 1, SV_MAX_CLIPS_PER_INPUT, &c->num_clips, where, r);
}

/* What an input may be, for the messages that refuse text and URLs. */
#define SV_SUPPORTED "An input is the bytes of an image or video file in base64 (bare, or as a data:image/...;base64, " \
                     "or data:video/...;base64, URL), an object {\"image\" | \"video\" | \"tensor\": base64, ...}, " \
                     "or a list of those"

/* A scheme and "://" (http://, https://, ftp://, s3://, file://...) at the start of a string. */
static bool looks_like_url(const char *s, size_t n) {
    size_t i = 0;
    while (i < n && i < 16 && ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z'))) i++;
    return i > 0 && i + 3 <= n && !memcmp(s + i, "://", 3);
}

/* A data URL's or bare base64 string's bytes, and the kind its media type (or, for bare
 * base64 and application/octet-stream, its first bytes) says. */
static bool decode_payload(const char *str, size_t n, const char *name, enum item_kind *kind, bool kind_given,
                           struct item *it, struct sv_response *r) {
    const char *b64 = str;
    size_t nb = n;
    int mime_kind = -1;   /* from the data URL */
    if (n >= 5 && !memcmp(str, "data:", 5)) {
        const char *comma = memchr(str, ',', n);
        if (!comma) return BAD("%s: a data URL without ','", name), false;
        const size_t hl = (size_t)(comma - str);
        if (hl < 12 || memcmp(comma - 7, ";base64", 7))
            return BAD("%s: only base64 data URLs (data:<type>;base64,...) are read", name), false;
        const char *type = str + 5;
        const size_t tl = hl - 5 - 7;
        if (tl >= 6 && !memcmp(type, "image/", 6)) mime_kind = IT_IMAGE;
        else if (tl >= 6 && !memcmp(type, "video/", 6)) mime_kind = IT_VIDEO;
        else if (!(tl == 24 && !memcmp(type, "application/octet-stream", 24)) && tl)
            return BAD("%s: media type '%.*s' is neither image/* nor video/*", name, (int)(tl < 64 ? tl : 64), type),
                   false;
        b64 = comma + 1, nb = n - hl - 1;
    }
    if (mime_kind < 0 && b64 == str && looks_like_url(str, n))
        return BAD("%s: a URL; this server does not fetch URLs. " SV_SUPPORTED, name), false;
    long long bad;
    if (!base64_decode(b64, nb, &it->bytes, &it->n_bytes, &bad)) {
        if (bad < 0) return api_error(r, 500, "server_error", "%s: out of memory", name), false;
        if (b64 == str)   /* not a data URL: most likely text (the OpenAI request shape's) */
            return BAD("%s is not base64 (character %lld): this model embeds images and videos, not text. "
                       SV_SUPPORTED, name, bad), false;
        return BAD("%s: bad base64 at character %lld of the data URL's data", name, bad), false;
    }
    if (!it->n_bytes) return BAD("%s: empty", name), false;
    if (b64 == str && !kind_given && it->n_bytes < 64 && !image_format(it->bytes, it->n_bytes))
        return BAD("%s: %zu bytes, too few for an image or video file (text?). " SV_SUPPORTED, name, it->n_bytes),
               false;
    /* an image format's signature (decoded, or named and refused by the decoder) */
    const bool is_image = image_format(it->bytes, it->n_bytes) != NULL;
    if (!kind_given) *kind = mime_kind >= 0 ? (enum item_kind)mime_kind : is_image ? IT_IMAGE : IT_VIDEO;
    return true;
}

size_t api_default_decode_budget(const struct sv_api *a) {
    const uint64_t frames = a->info.n_frames > 0 ? (uint64_t)a->info.n_frames : 1;
    const uint64_t clip = 3 * frames * (uint64_t)a->pre.crop * (uint64_t)a->pre.crop * sizeof(float);
    const uint64_t b = 2 * clip * (uint64_t)a->queue, least = (uint64_t)256 << 20;
    return b < least ? (size_t)least : b > SIZE_MAX / 2 ? SIZE_MAX / 2 : (size_t)b;
}

/* Reserve n more bytes of decoded input for d, before they are decoded: false after
 * answering 413 (past what one request may decode) or 429 (other requests hold the
 * decode budget now). */
static bool reserve_input(struct req_data *d, uint64_t n, const char *name, struct sv_response *r) {
    struct sv_api *a = d->api;
    const size_t cap = a->decode_budget < SV_MAX_CLIP_BYTES ? a->decode_budget : SV_MAX_CLIP_BYTES;
    if (n > cap - d->held) {
        api_error(r, 413, "request_too_large", "%s: the inputs decode to %llu MiB (frames x height x width x 3 "
                  "float32), more than the %zu MiB one request may decode (--decode-budget-mb)", name,
                  (unsigned long long)((d->held + n) >> 20), cap >> 20);
        r->reject = REJ_DECODE_BUDGET;
        return false;
    }
    size_t cur = atomic_load(&a->held);
    do {
        if (n > a->decode_budget - cur) {
            api_error(r, 429, "rate_limit_error", "%s: the decode budget (%zu MiB, --decode-budget-mb) is held by "
                      "other requests now; retry later", name, a->decode_budget >> 20);
            r->retry_after = 1, r->reject = REJ_DECODE_BUDGET;
            return false;
        }
    } while (!atomic_compare_exchange_weak(&a->held, &cur, cur + (size_t)n));
    d->held += (size_t)n;
    return true;
}

/* Read clips of one input into it->x. false after answering. */
static bool read_clips(struct clip_reader *rd, const char *name, struct item *it,
                       struct req_data *d, struct sv_response *r) {
    it->nb = clips_count(rd);
    clips_shape(rd, &it->T, &it->H, &it->W);
    const size_t clip = (size_t)3 * it->T * it->H * it->W;
    if (!reserve_input(d, (uint64_t)it->nb * clip * sizeof(float), name, r)) return false;   /* nb <= 64, clip < 2^28 */
    if (!(it->x = malloc(sizeof(float) * clip * (size_t)it->nb)))
        return api_error(r, 500, "server_error", "%s: out of memory", name), false;
    for (int k = 0; k < it->nb; k++) {
        struct jerr e = {0};
        if (clips_next(rd, it->x + clip * (size_t)k, &e)) {
            api_error(r, e.status == JEPA_ERR_NOMEM ? 500 : 400, e.status == JEPA_ERR_NOMEM ? "server_error"
                      : "invalid_request_error", "%s", e.msg);
            return false;
        }
    }
    return true;
}

static bool load_tensor(const struct sv_api *a, cJSON *shape, const char *name, struct item *it,
                        struct req_data *req, struct sv_response *r) {
    if (!cJSON_IsArray(shape) || (size_t)cJSON_GetArraySize(shape) < 3 || (size_t)cJSON_GetArraySize(shape) > 5)
        return BAD("%s: 'shape' must be [C, H, W], [C, T, H, W] or [B, C, T, H, W]", name), false;
    it->ndim = (int)(size_t)cJSON_GetArraySize(shape);
    int64_t count = 1;
    for (int i = 0; i < it->ndim; i++) {
        cJSON *d = cJSON_GetArrayItem(shape, i);
        if (!api_is_integer(d) || (long long)d->valuedouble < 1 || (long long)d->valuedouble > 65536)
            return BAD("%s: shape[%d] must be an integer in 1..65536", name, i), false;
        it->shape[i] = (long long)d->valuedouble;
        count *= it->shape[i];
        if (count > (int64_t)(SV_MAX_CLIP_BYTES / sizeof(float)))
            return BAD("%s: a tensor of more than %zu MiB", name, SV_MAX_CLIP_BYTES >> 20), false;
    }
    if ((uint64_t)count * sizeof(float) != it->n_bytes)
        return BAD("%s: shape says %lld float32 values (%lld bytes), the data has %zu bytes", name, (long long)count,
                   (long long)count * 4, it->n_bytes), false;
    const int c0 = it->ndim == 5;
    if (it->shape[c0] != a->info.in_chans)
        return BAD("%s: expected %d channels first ([%sC, T, H, W]), got %lld", name, a->info.in_chans,
                   c0 ? "B, " : "", (long long)it->shape[c0]), false;
    it->nb = c0 ? (int)it->shape[0] : 1;
    it->stacked = c0;
    it->T = it->ndim == 3 ? 1 : (int)it->shape[c0 + 1];
    it->H = (int)it->shape[it->ndim - 2], it->W = (int)it->shape[it->ndim - 1];
    if (!reserve_input(req, (uint64_t)count * sizeof(float), name, r)) return false;
    it->x = (float *)(void *)it->bytes;   /* little-endian float32 as sent; malloc'ed, so aligned */
    it->bytes = NULL, it->n_bytes = 0;
    for (int64_t i = 0; i < count; i++)
        if (!isfinite(it->x[i])) return BAD("%s: element %lld is not finite", name, (long long)i), false;
    return true;
}

/* One element of "input" into it (decoded, preprocessed). false after answering. */
static bool load_item(const struct sv_api *a, cJSON *v, int idx, const struct clip_opts *defaults,
                      struct item *it, struct req_data *req, struct sv_response *r) {
    char name[48];
    snprintf(name, sizeof name, "input[%d]", idx);
    struct clip_opts co = *defaults;
    const char *str;
    size_t len;
    enum item_kind kind = IT_IMAGE;
    bool kind_given = false;
    cJSON *shape = NULL;
    if (cJSON_IsString(v)) {
        str = v->valuestring, len = strlen(v->valuestring);
    } else if (cJSON_IsObject(v)) {
        cJSON *im = obj_get(v, "image"), *vi = obj_get(v, "video"), *te = obj_get(v, "tensor");
        if (!!im + !!vi + !!te != 1)
            return BAD("%s: an object input has one of 'image', 'video' or 'tensor'", name), false;
        cJSON *d = im ? im : vi ? vi : te;
        if (!cJSON_IsString(d)) return BAD("%s: '%s' must be a base64 string", name, im ? "image" : vi ? "video" : "tensor"), false;
        str = d->valuestring, len = strlen(d->valuestring);
        kind = im ? IT_IMAGE : vi ? IT_VIDEO : IT_TENSOR;
        kind_given = true;
        if (!vi && (obj_get(v, "frames_per_clip") || obj_get(v, "frame_step") ||
                    obj_get(v, "num_clips")))
            return BAD("%s: frames_per_clip / frame_step / num_clips sample a video", name), false;
        if (vi && !get_clip_opts(v, &co, "", r)) return false;
        shape = obj_get(v, "shape");
        if (te && !shape) return BAD("%s: a tensor needs 'shape'", name), false;
        if (!te && shape) return BAD("%s: 'shape' goes with 'tensor'", name), false;
    } else {
        return BAD("%s: a %s. " SV_SUPPORTED, name, cJSON_IsArray(v) ? "list inside the list (token ids? this model "
                   "embeds images and videos, not text)" : "number, boolean or null"), false;
    }
    if (!decode_payload(str, len, name, &kind, kind_given, it, r)) return false;
    it->kind = kind;
    struct jerr e = {0};
    struct clip_reader *rd = NULL;
    bool ok;
    if (kind == IT_TENSOR) {
        ok = load_tensor(a, shape, name, it, req, r);
    } else if (kind == IT_IMAGE) {
        if (clips_open_image_memory(&rd, name, it->bytes, it->n_bytes, &a->pre, &e))
            return BAD("%s", e.msg), false;
        ok = read_clips(rd, name, it, req, r);
    } else {
        const struct clip_sampling s = clips_sampling_defaults(
            (struct clip_sampling){.frames_per_clip = co.fpc, .frame_step = co.fstp, .num_clips = co.num_clips},
            a->info.n_frames);
        if (clips_open_video_memory(&rd, name, it->bytes, it->n_bytes, &a->pre, &s, &e)) {
            api_error(r, e.status == JEPA_ERR_NOMEM ? 500 : 400,
                      e.status == JEPA_ERR_NOMEM ? "server_error" : "invalid_request_error", "%s", e.msg);
            return false;
        }
        ok = read_clips(rd, name, it, req, r);
        it->stacked = it->nb > 1;
    }
    clips_close(rd);
    if (!ok) return false;
    free(it->bytes), it->bytes = NULL, it->n_bytes = 0;   /* the clips are all that is needed now */
    int gt, gh, gw;
    if (jepa_model_grid(a->model, it->T, it->H, it->W, &gt, &gh, &gw, &it->n_tokens)) {
        const int P = a->info.patch_size, tub = a->info.tubelet_size;
        return BAD("%s: a %dx%dx%d input does not fit this model (patch %d, tubelet %d): %s", name, it->T, it->H,
                   it->W, P, tub, it->H < P || it->W < P ? "smaller than one patch"
                   : it->T > 1 && it->T < tub ? "fewer frames than one tubelet (1 frame is a still image)"
                                              : "more tokens than one clip may have"), false;
    }
    return true;
}

/* ---- POST /v1/embeddings, /v1/classify ---- */

static enum sv_want parse_pool(const char *p) {
    return !strcmp(p, "mean") ? SV_MEAN : !strcmp(p, "cls") ? SV_CLS : !strcmp(p, "lewm") ? SV_LEWM : SV_TOKENS;
}

/* The output shape of one input, as `jepa embed` writes its .npy. */
static int out_shape(const jepa_model_info *in, const struct item *it, enum sv_want w, int64_t *sh) {
    int nd = 0;
    if (it->stacked) sh[nd++] = it->nb;
    switch (w) {
    case SV_TOKENS: sh[nd++] = it->n_tokens, sh[nd++] = in->embed_dim; break;
    case SV_MEAN: case SV_CLS: sh[nd++] = in->embed_dim; break;
    case SV_LEWM: sh[nd++] = in->emb_dim; break;
    case SV_HIER: sh[nd++] = in->n_hier, sh[nd++] = it->n_tokens, sh[nd++] = in->embed_dim; break;
    case SV_LOGITS: sh[nd++] = in->n_classes; break;
    }
    return nd;
}

static void put_shape(struct sbuf *s, const int64_t *sh, int nd) {
    sb_putn(s, "[", 1);
    for (int i = 0; i < nd; i++) sb_printf(s, "%s%lld", i ? "," : "", (long long)sh[i]);
    sb_putn(s, "]", 1);
}

static void put_values(struct sbuf *s, const float *v, size_t n, bool b64) {
    if (b64) sb_json_base64(s, v, n * sizeof(float));
    else sb_json_floats(s, v, n);
}

/* What a request asks for, from its JSON body. */
struct run_req {
    cJSON *input;            /* the one input, or the list of them (in the body) */
    bool one;                /* input is not a list */
    int n_in;
    bool b64;                /* encoding_format "base64" */
    enum sv_want want;
    int top_k;               /* /v1/classify */
    bool want_logits;
    struct clip_opts defaults;
};

/* The body's "model", when given, must name the served model (its id or its name). */
bool api_check_model(const struct sv_api *a, const cJSON *root, struct sv_response *r) {
    const jepa_model_info *in = &a->info;
    cJSON *model = obj_get(root, "model");
    if (model && (!cJSON_IsString(model) ||
                  (strcmp(model->valuestring, a->model_id) &&
                   (!in->name || strcmp(model->valuestring, in->name))))) {
        api_error(r, 404, "not_found_error", "model %s%s%s is not served here; this server serves '%s'",
                  cJSON_IsString(model) ? "'" : "", cJSON_IsString(model) ? model->valuestring : "(not a string)",
                  cJSON_IsString(model) ? "'" : "", a->model_id);
        return false;
    }
    return true;
}

/* /v1/embeddings: "pool" and "hier" into q->want. */
static bool parse_embed_opts(const jepa_model_info *in, cJSON *root, struct run_req *q,
                             struct sv_response *r) {
    cJSON *pool = obj_get(root, "pool"), *hier = obj_get(root, "hier");
    const char *p = default_pool(in);
    if (pool) {
        if (!cJSON_IsString(pool) || (strcmp(pool->valuestring, "mean") && strcmp(pool->valuestring, "cls") &&
                                      strcmp(pool->valuestring, "lewm") && strcmp(pool->valuestring, "none")))
            return BAD("'pool' is \"mean\", \"cls\", \"lewm\" or \"none\""), false;
        p = pool->valuestring;
    }
    if (hier && !cJSON_IsBool(hier)) return BAD("'hier' is true or false"), false;
    q->want = parse_pool(pool || !cJSON_IsTrue(hier) ? p : "none");   /* hier: every token, not the natural pool */
    if (q->want == SV_CLS && !in->has_cls)
        return BAD("pool \"cls\": family '%s' has no CLS token", in->family), false;
    if (q->want == SV_LEWM && !in->emb_dim)
        return BAD("pool \"lewm\": family '%s' has no LeWM projector", in->family), false;
    if (cJSON_IsTrue(hier)) {
        if (!in->n_hier) return BAD("hier: family '%s' has no hierarchical outputs", in->family), false;
        if (q->want != SV_TOKENS) return BAD("hier gives every token of every level; drop 'pool'"), false;
        q->want = SV_HIER;
    }
    if (obj_get(root, "top_k") || obj_get(root, "logits"))
        return BAD("'top_k' and 'logits' belong to /v1/classify"), false;
    return true;
}

/* /v1/classify: "logits" and "top_k". */
static bool parse_classify_opts(const jepa_model_info *in, cJSON *root, struct run_req *q,
                                struct sv_response *r) {
    if (!in->has_head) return BAD("this model has no classifier head"), false;
    cJSON *lg = obj_get(root, "logits");
    if (lg && !cJSON_IsBool(lg)) return BAD("'logits' is true or false"), false;
    q->want_logits = cJSON_IsTrue(lg);
    if (q->top_k > in->n_classes) q->top_k = in->n_classes;   /* the default, 5, on a head of fewer classes */
    if (!api_get_int(root, "top_k", 1, in->n_classes, &q->top_k, "", r)) return false;
    if (obj_get(root, "pool") || obj_get(root, "hier"))
        return BAD("'pool' and 'hier' belong to /v1/embeddings"), false;
    return true;
}

/* Everything the body asks for except the inputs' contents, checked in this order. */
static bool parse_request(const struct sv_api *a, cJSON *root, bool classify, struct run_req *q,
                          struct sv_response *r) {
    if (!cJSON_IsObject(root)) return BAD("the body must be a JSON object"), false;
    if (!api_check_model(a, root, r)) return false;
    q->input = obj_get(root, "input");
    if (!q->input) return BAD("missing 'input'"), false;
    q->one = !cJSON_IsArray(q->input);
    const size_t listed = q->one ? 1 : (size_t)cJSON_GetArraySize(q->input);
    q->n_in = (int)(listed < SV_MAX_INPUTS + 1 ? listed : SV_MAX_INPUTS + 1);
    if (q->n_in < 1) return BAD("'input' is an empty list"), false;
    if (q->n_in > SV_MAX_INPUTS) return BAD("'input' has more than %d inputs", SV_MAX_INPUTS), false;
    cJSON *ef = obj_get(root, "encoding_format");
    if (ef) {
        if (!cJSON_IsString(ef) || (strcmp(ef->valuestring, "float") && strcmp(ef->valuestring, "base64")))
            return BAD("'encoding_format' is \"float\" or \"base64\""), false;
        q->b64 = !strcmp(ef->valuestring, "base64");
    }
    q->want = SV_LOGITS, q->top_k = 5;
    if (!classify && !parse_embed_opts(&a->info, root, q, r)) return false;
    if (classify && !parse_classify_opts(&a->info, root, q, r)) return false;
    return get_clip_opts(root, &q->defaults, "", r);
}

/* Decode and preprocess every input into d (on the connection's thread), within the queue's
 * clips and a response's bytes; the clips, tokens and output floats they make into *n_clips,
 * *tokens and *out_floats. */
static bool load_items(const struct sv_api *a, const struct run_req *q, struct req_data *d, int *n_clips,
                       long long *tokens, size_t *out_floats, struct sv_response *r) {
    if (!(d->items = calloc((size_t)q->n_in, sizeof *d->items))) {
        api_error(r, 500, "server_error", "out of memory");
        return false;
    }
    d->n_items = q->n_in;
    cJSON *elem = q->one ? q->input : q->input->child;
    for (int i = 0; i < q->n_in; i++, elem = q->one ? NULL : elem->next) {
        struct item *it = &d->items[i];
        if (!load_item(a, elem, i, &q->defaults, it, d, r)) return false;
        *n_clips += it->nb;
        if (*n_clips > a->queue)
            return BAD("the inputs make more than the %d clips the queue holds (--queue); send them in smaller "
                       "requests", a->queue), false;
        *tokens += (long long)it->nb * it->n_tokens;
        *out_floats += sv_want_floats(&a->info, q->want, it->n_tokens) * (size_t)it->nb;
        if (*out_floats * sizeof(float) > SV_MAX_OUTPUT_BYTES)
            return BAD("the outputs would be more than the %zu MiB a response may carry; ask for pooled outputs or "
                       "send fewer inputs", SV_MAX_OUTPUT_BYTES >> 20), false;
    }
    return true;
}

/* One job per clip of d's items, each writing its slice of d->outs. */
static void fill_jobs(const jepa_model_info *in, const struct req_data *d, enum sv_want want,
                      struct sv_group *g) {
    float *o = d->outs;
    for (int i = 0, k = 0; i < d->n_items; i++) {
        const struct item *it = &d->items[i];
        const size_t clip = (size_t)3 * it->T * it->H * it->W;
        for (int c = 0; c < it->nb; c++, k++) {
            struct sv_job *j = &g->jobs[k];
            j->x = it->x + clip * (size_t)c;
            j->T = it->T, j->H = it->H, j->W = it->W, j->n_tokens = it->n_tokens, j->want = want;
            j->out = o;
            o += sv_want_floats(in, want, j->n_tokens);
        }
    }
}

/* The client closed its connection: true after setting r (499, which nobody reads; the
 * log and /metrics count it). */
static bool client_left(const struct sv_client *cl, struct sv_response *r) {
    if (!cl || !cl->gone || !cl->gone(cl->fd)) return false;
    api_error(r, 499, "client_closed_request", "the client closed the connection; its work was dropped");
    r->reject = REJ_CLIENT_GONE;
    return true;
}

bool api_submit_wait(const struct sv_api *a, struct sv_group *g, int n_clips, double t0_ms,
                     const struct sv_client *cl, struct sv_response *r) {
    if (client_left(cl, r)) return false;   /* no batch for a closed connection */
    const enum sv_submit_result sr = sv_submit(a->batcher, g);
    if (sr == SV_QUEUE_FULL) {
        api_error(r, 429, "rate_limit_error", "the queue is full (%d clips); retry later", n_clips);
        r->retry_after = 1, r->reject = REJ_QUEUE_FULL;
        return false;
    }
    if (sr == SV_STOPPING) {
        api_error(r, 503, "unavailable", "the server is shutting down");
        r->retry_after = 1, r->reject = REJ_SHUTTING_DOWN;
        return false;
    }
    const enum sv_wait_result wr = sv_wait(a->batcher, g, t0_ms + a->timeout_ms, cl);
    if (wr == SV_TIMED_OUT) {
        api_error(r, 504, "timeout", "the request did not finish within %.0f s", a->timeout_ms / 1e3);
        r->reject = REJ_TIMEOUT;
        return false;
    }
    if (wr == SV_CLIENT_GONE) return client_left(cl, r), false;
    return true;
}

/* Queue g's n_clips jobs, wait for them until the request's deadline, and check what they
 * wrote; false with r set when they did not all give finite outputs. */
static bool run_jobs(const struct sv_api *a, struct sv_group *g, int n_clips, enum sv_want want,
                     double t0_ms, const struct sv_client *cl, struct sv_response *r) {
    if (!api_submit_wait(a, g, n_clips, t0_ms, cl, r)) return false;
    for (int k = 0; k < n_clips; k++) {
        const struct sv_job *j = &g->jobs[k];
        if (j->batch > r->batch) r->batch = j->batch;
        if (j->status) {
            const int st = j->status == JEPA_ERR_ARG ? 400 : 500;
            api_error(r, st, st == 400 ? "invalid_request_error" : "server_error", "%s", j->err);
            return false;
        }
        const size_t per = sv_want_floats(&a->info, want, j->n_tokens);
        for (size_t q = 0; q < per; q++)
            if (!isfinite(j->out[q])) {
                api_error(r, 500, "server_error", "output element %zu of clip %d is %s (non-finite weights in the "
                          "model?)", q, k, isnan(j->out[q]) ? "NaN" : "infinite");
                return false;
            }
    }
    return true;
}

/* One input's classification: the top k of the mean of its clips' softmax, as jepa classify
 * ranks them, and its logits when asked. prob holds 2 K doubles, order K ints. */
static void put_classification(struct sbuf *s, const struct sv_api *a, const struct run_req *q,
                               const struct item *it, const float *o, size_t n, const int64_t *sh, int nd,
                               double *prob, int *order) {
    const int K = a->info.n_classes;
    double *mean = prob + K;
    for (int c = 0; c < K; c++) mean[c] = 0;
    for (int k = 0; k < it->nb; k++) {
        topk_softmax(o + (size_t)K * k, K, prob);
        for (int c = 0; c < K; c++) mean[c] += prob[c] / it->nb;
    }
    topk_rank(mean, K, order);
    sb_puts(s, "\"top_k\":[");
    for (int i = 0; i < q->top_k; i++) {
        sb_printf(s, "%s{\"class\":%d,\"label\":", i ? "," : "", order[i]);
        const char *lb = jepa_model_label(a->model, order[i]);
        if (lb) sb_json_str(s, lb);
        else sb_puts(s, "null");
        sb_printf(s, ",\"probability\":%.9g}", mean[order[i]]);
    }
    sb_puts(s, "]");
    if (q->want_logits) {
        sb_puts(s, ",\"logits\":");
        put_values(s, o, n, q->b64);
        sb_puts(s, ",\"logits_shape\":");
        put_shape(s, sh, nd);
    }
}

/* The 200 response: one object per input, in the order given, then the model and usage. */
static void respond_outputs(const struct sv_api *a, const struct run_req *q, const struct req_data *rd,
                            bool classify, long long tokens, struct sv_response *r) {
    const jepa_model_info *in = &a->info;
    struct sbuf s = {0};
    sb_puts(&s, "{\"object\":\"list\",\"data\":[");
    const float *o = rd->outs;
    double *prob = classify ? malloc(sizeof(double) * (size_t)in->n_classes * 2) : NULL;
    int *order = classify ? malloc(sizeof(int) * (size_t)in->n_classes) : NULL;
    if (classify && (!prob || !order)) {
        free(prob), free(order), sb_free(&s);
        api_error(r, 500, "server_error", "out of memory");
        return;
    }
    for (int i = 0; i < q->n_in; i++) {
        const struct item *it = &rd->items[i];
        const size_t per = sv_want_floats(in, q->want, it->n_tokens), n = per * (size_t)it->nb;
        int64_t sh[5];
        const int nd = out_shape(in, it, q->want, sh);
        sb_printf(&s, "%s{\"object\":\"%s\",\"index\":%d,", i ? "," : "", classify ? "classification" : "embedding", i);
        if (!classify) {
            sb_puts(&s, "\"embedding\":");
            put_values(&s, o, n, q->b64);
            sb_puts(&s, ",\"shape\":");
            put_shape(&s, sh, nd);
        } else {
            put_classification(&s, a, q, it, o, n, sh, nd, prob, order);
        }
        sb_puts(&s, "}");
        o += n;
    }
    free(prob), free(order);
    sb_puts(&s, "],\"model\":");
    sb_json_str(&s, a->model_id);
    sb_printf(&s, ",\"usage\":{\"prompt_tokens\":%lld,\"total_tokens\":%lld}}", tokens, tokens);
    api_respond(r, 200, &s);
}

void api_run(struct sv_api *a, const char *body, size_t len, bool classify, double t0_ms,
             const struct sv_client *cl, struct sv_response *r) {
    struct sv_group *g = NULL;
    struct req_data *d = NULL;
    cJSON *root = NULL;
    struct run_req q = {0};
    int n_clips = 0;
    long long tokens = 0;
    size_t out_floats = 0;
    if (!api_parse_json(body, len, &root, r)) return;
    if (!parse_request(a, root, classify, &q, r)) goto done;
    if (!(d = calloc(1, sizeof *d))) {
        api_error(r, 500, "server_error", "out of memory");
        goto done;
    }
    d->api = a;
    if (client_left(cl, r) || !load_items(a, &q, d, &n_clips, &tokens, &out_floats, r)) goto done;
    cJSON_Delete(root), root = NULL, q.input = NULL;   /* the items hold all the inputs now */
    if (!(d->outs = malloc(sizeof(float) * (out_floats ? out_floats : 1))) || !(g = sv_group_new(n_clips))) {
        api_error(r, 500, "server_error", "out of memory");
        goto done;
    }
    fill_jobs(&a->info, d, q.want, g);
    g->free_user = req_data_free, g->user = d;
    d = NULL;   /* the group owns it now */
    r->clips = n_clips;
    if (run_jobs(a, g, n_clips, q.want, t0_ms, cl, r)) respond_outputs(a, &q, g->user, classify, tokens, r);
done:
    cJSON_Delete(root);
    req_data_free(d);
    if (g) sv_group_release(a->batcher, g);
}
