/*
 * api.h — what `jepa serve`'s routes answer, apart from HTTP: the JSON requests of
 * POST /v1/embeddings and /v1/classify turned into clips (decoded and preprocessed on the
 * calling connection's thread), run through the batcher, and the JSON responses; and
 * the bodies of GET /health, /v1/models and /metrics. docs/server.md is the reference.
 */
#ifndef JEPA_SERVER_API_H
#define JEPA_SERVER_API_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "input/preprocess.h"
#include "jepa.h"
#include "server/batcher.h"
#include "server/metrics.h"

/* Per-request bounds, beside --max-body-mb and --queue (docs/server.md, "Limits"). */
#define SV_MAX_INPUTS 256                        /* inputs in one request */
#define SV_MAX_CLIPS_PER_INPUT 64                /* a video's num_clips */
#define SV_MAX_FRAMES_PER_CLIP 1024
#define SV_MAX_CLIP_BYTES ((size_t)512 << 20)    /* preprocessed clips of one request, at most */
#define SV_MAX_OUTPUT_BYTES ((size_t)128 << 20)  /* outputs of one request (before JSON) */

struct sv_api {
    const jepa_model *model;
    jepa_model_info info;
    struct pre_cfg pre;          /* the model's preprocessing (jepa.pre.*) */
    const char *model_id;        /* what /v1/models calls it (the file's name) */
    char weight_types[64];       /* /health's dtype (api_weight_types) */
    struct sv_batcher *batcher;
    double timeout_ms;           /* per request, from its first byte */
    int queue;                   /* the queue's size in clips: a request may have no more */
    /* The decode budget: bytes of decoded, preprocessed input (clips of 3 x T x H x W
     * float32, tensors) that all requests together may hold, from their decoding to their
     * answer. A request's own inputs are checked against min(it, SV_MAX_CLIP_BYTES) from
     * their frame count and size before anything is decoded (413 past it); what the
     * requests in flight hold is reserved in `held` (429 while it is taken). */
    size_t decode_budget;
    atomic_size_t held;
};

struct sv_response {
    int status;
    char *body;                  /* malloc'ed (NULL: out of memory, answered 500) */
    size_t len;
    const char *content_type;
    int retry_after;             /* seconds, 0: no header */
    int reject;                  /* enum sv_reject, or -1 */
    int batch;                   /* the largest forward a clip of the request ran in (0: none) */
    int clips;
};

/* The decode budget the options give (serve.c's --decode-budget-mb 0): twice the queue's
 * clips at the model's own input size (3 x n_frames x crop^2 float32), at least 256 MiB. */
size_t api_default_decode_budget(const struct sv_api *a);

/* POST /v1/embeddings (classify false) and /v1/classify. t0_ms: when the request began;
 * cl: its client, asked whether it is still there before and while its clips wait. */
void api_run(struct sv_api *a, const char *body, size_t len, bool classify, double t0_ms,
             const struct sv_client *cl, struct sv_response *r);
/* GET /health: the status and the model's facts (no name, id or path: unauthenticated). */
void api_health(const struct sv_api *a, bool draining, struct sv_response *r);
/* What one vector per input is for this model (/v1/embeddings' default pool): "lewm" (LeWM's
 * projector, its world model's state), "cls" (families with a CLS token), else "mean". */
const char *api_natural_pool(const jepa_model_info *in);
const char *api_world_kind(const jepa_model_info *in);
/* The weights' types as jepa_model_describe lists them, f32 last ("f16+f32"), into buf. */
void api_weight_types(const jepa_model *m, char *buf, size_t n);
void api_models(const struct sv_api *a, struct sv_response *r);
void api_metrics(const struct sv_api *a, int in_flight, struct sv_response *r);
/* ---- for the routes of other files (server/world.c) ---- */
struct cJSON;
/* body into *root (cJSON_Delete it), within the value and key bounds: false after a 400. */
bool api_parse_json(const char *body, size_t len, struct cJSON **root, struct sv_response *r);
/* The body's "model", when given, names the served model: false after a 404. */
bool api_check_model(const struct sv_api *a, const struct cJSON *root, struct sv_response *r);
struct cJSON *api_obj_get(const struct cJSON *o, const char *key);
bool api_is_integer(const struct cJSON *j);
/* An integer field of o in [lo, hi] (absent: *v unchanged); where prefixes the message. */
bool api_get_int(struct cJSON *o, const char *key, long long lo, long long hi, int *v, const char *where,
                 struct sv_response *r);
/* Queue g's n jobs and wait for them until the request's deadline: false with r set (429
 * queue full, 503 stopping, 504 past the deadline, 499 client gone). */
bool api_submit_wait(const struct sv_api *a, struct sv_group *g, int n, double t0_ms, const struct sv_client *cl,
                     struct sv_response *r);
/* s as r's JSON body with this status (500 when s ran out of memory). */
void api_respond(struct sv_response *r, int status, struct sbuf *s);

/* An error response: {"error": {"message": ..., "type": ...}}. */
void api_error(struct sv_response *r, int status, const char *type, const char *fmt, ...) JEPA_PRINTF(4, 5);

#endif
