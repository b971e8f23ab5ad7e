/* world.c — see world.h. */
#include "server/world.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/text.h"

#define BAD(...) api_error(r, 400, "invalid_request_error", __VA_ARGS__)

/* Per-request bounds of the world routes, beside the body's (docs/server.md, "Limits"). */
#define SW_MAX_SEQUENCES 256        /* B */
#define SW_MAX_STEPS 4096           /* a rollout's steps (the CLI: 1 << 20) */
#define SW_MAX_PLAN_ROLLOUTS (1 << 20)   /* a plan's samples x iters */

/* ---- the workers' side ---- */

static bool is_plan(enum sv_world_op op) { return op == SW_LEWM_PLAN || op == SW_AC_PLAN; }

bool sv_world_same(const struct sv_world *a, const struct sv_world *b) {
    return !is_plan(a->op) && a->op == b->op && a->T == b->T && a->steps == b->steps && a->normalize == b->normalize;
}

/* Floats per sequence of w's input x, actions, states, out and out_states. */
static void per_sequence(const jepa_model_info *in, const struct sv_world *w, size_t n[5]) {
    const size_t T = (size_t)w->T, K = (size_t)w->steps, N = (size_t)in->pred_tokens_per_frame;
    const size_t A = (size_t)in->action_dim, S = (size_t)in->state_dim;
    memset(n, 0, sizeof(size_t) * 5);
    switch (w->op) {
    case SW_LEWM_PREDICT: n[0] = T * in->emb_dim, n[1] = T * A, n[3] = T * in->pred_out_dim; break;
    case SW_LEWM_ROLLOUT: n[0] = T * in->emb_dim, n[1] = (T + K - 1) * A, n[3] = K * in->emb_dim; break;
    case SW_AC_PREDICT: n[0] = T * N * in->embed_dim, n[1] = T * A, n[2] = T * S, n[3] = T * N * in->pred_out_dim; break;
    case SW_AC_ROLLOUT:
        n[0] = T * N * in->embed_dim, n[1] = (T + K - 1) * A, n[2] = T * S, n[3] = K * N * in->embed_dim, n[4] = K * S;
        break;
    default: break;
    }
}

/* One call of op over B sequences. */
static jepa_status call(jepa_ctx *c, struct sv_world *w, int B, const float *x, const float *act,
                        const float *st, float *out, float *ost) {
    switch (w->op) {
    case SW_LEWM_PREDICT: return jepa_ctx_lewm_predict(c, x, act, B, w->T, out);
    case SW_LEWM_ROLLOUT: return jepa_ctx_lewm_rollout(c, x, B, w->T, act, w->steps, out);
    case SW_AC_PREDICT: return jepa_ctx_ac_predict(c, x, act, st, B, w->T, out);
    case SW_AC_ROLLOUT: return jepa_ctx_ac_rollout(c, x, st, B, w->T, act, w->steps, w->normalize, out, ost);
    case SW_LEWM_PLAN:
        return jepa_ctx_lewm_plan(c, x, w->T, act, w->goal, &w->pp, out, w->energies, &w->final_energy);
    case SW_AC_PLAN:
        return jepa_ctx_ac_plan(c, x, st, w->T, act, w->goal, &w->pp, out, w->energies, &w->final_energy);
    }
    return JEPA_ERR_ARG;
}

static void set_status(struct sv_job **jobs, int g, jepa_status st, const char *why) {
    for (int k = 0; k < g; k++) {
        jobs[k]->batch = g, jobs[k]->status = st;
        if (st) snprintf(jobs[k]->err, sizeof jobs[k]->err, "%s", why);
    }
}

void sv_world_run(jepa_ctx *c, const jepa_model_info *in, struct sv_job **jobs, int g) {
    struct sv_world *w0 = jobs[0]->world;
    if (g == 1) {
        const jepa_status st = call(c, w0, w0->B, w0->x, w0->actions, w0->states, w0->out, w0->out_states);
        set_status(jobs, 1, st, st ? jepa_ctx_error(c) : "");
        return;
    }
    /* the jobs' sequences side by side: one call, then each job's rows copied back */
    size_t n[5], total = 0;
    per_sequence(in, w0, n);
    for (int k = 0; k < g; k++) total += (size_t)jobs[k]->world->B;
    float *buf[5] = {0};
    bool ok = true;
    for (int i = 0; i < 5; i++)
        if (n[i] && !(buf[i] = malloc(sizeof(float) * n[i] * total))) ok = false;
    if (!ok) {
        set_status(jobs, g, JEPA_ERR_NOMEM, "out of memory for the batch");
    } else {
        size_t at = 0;
        for (int k = 0; k < g; k++) {
            const struct sv_world *w = jobs[k]->world;
            const float *src[3] = {w->x, w->actions, w->states};
            for (int i = 0; i < 3; i++)
                if (n[i]) memcpy(buf[i] + at * n[i], src[i], sizeof(float) * n[i] * (size_t)w->B);
            at += (size_t)w->B;
        }
        const jepa_status st = call(c, w0, (int)total, buf[0], buf[1], buf[2], buf[3], buf[4]);
        set_status(jobs, g, st, st ? jepa_ctx_error(c) : "");
        at = 0;
        for (int k = 0; k < g && !st; k++) {
            const struct sv_world *w = jobs[k]->world;
            float *dst[2] = {w->out, w->out_states};
            for (int i = 3; i < 5; i++)
                if (n[i]) memcpy(dst[i - 3], buf[i] + at * n[i], sizeof(float) * n[i] * (size_t)w->B);
            at += (size_t)w->B;
        }
    }
    for (int i = 0; i < 5; i++) free(buf[i]);
}

/* ---- requests ---- */

/* A float32 array from the body: a nested JSON list of numbers, or {"tensor": base64 of
 * little-endian float32, "shape": [...]}; at most 3 axes, every value finite. */
struct arr {
    float *v;
    int64_t shape[3];
    int ndim;
    size_t n;
};

static void arr_free(struct arr *a) { free(a->v), a->v = NULL; }

/* The nested list j's shape (rectangular, numbers at the leaves) into a: false after a 400. */
static bool list_shape(const cJSON *j, const char *key, struct arr *a, struct sv_response *r) {
    a->ndim = 0;
    for (const cJSON *e = j; cJSON_IsArray(e); e = e->child) {
        if (a->ndim == 3) return BAD("'%s': more than 3 axes", key), false;
        const int n = cJSON_GetArraySize(e);
        if (n < 1) return BAD("'%s': an empty list", key), false;
        a->shape[a->ndim++] = n;
    }
    if (!a->ndim) return BAD("'%s' is a list of numbers (nested up to 3 deep) or {\"tensor\": base64, \"shape\": [...]}", key), false;
    a->n = 1;
    for (int i = 0; i < a->ndim; i++) a->n *= (size_t)a->shape[i];
    return true;
}

/* Copy the leaves of list j (depth d of a's shape) into a->v at *at: false after a 400. */
static bool list_fill(const cJSON *j, int d, const char *key, struct arr *a, size_t *at, struct sv_response *r) {
    if (d >= 3 || cJSON_GetArraySize(j) != a->shape[d]) return BAD("'%s': rows of different lengths (not a rectangular array)", key), false;
    for (const cJSON *e = j->child; e; e = e->next) {
        if (d + 1 < a->ndim) {
            if (!cJSON_IsArray(e) || !list_fill(e, d + 1, key, a, at, r)) {
                if (!cJSON_IsArray(e)) BAD("'%s': rows of different depths (not a rectangular array)", key);
                return false;
            }
        } else {
            if (!cJSON_IsNumber(e)) return BAD("'%s': a %s where a number belongs", key, cJSON_IsArray(e) ? "list" : "non-number"), false;
            a->v[(*at)++] = (float)e->valuedouble;
        }
    }
    return true;
}

static bool get_array(cJSON *root, const char *key, struct arr *a, struct sv_response *r) {
    cJSON *j = api_obj_get(root, key);
    memset(a, 0, sizeof *a);
    if (!j) return BAD("missing '%s'", key), false;
    if (cJSON_IsObject(j)) {
        cJSON *t = api_obj_get(j, "tensor"), *sh = api_obj_get(j, "shape");
        if (!cJSON_IsString(t) || !cJSON_IsArray(sh) || cJSON_GetArraySize(j) != 2)
            return BAD("'%s': an object is {\"tensor\": base64 of float32, \"shape\": [...]}", key), false;
        a->ndim = cJSON_GetArraySize(sh);
        if (a->ndim < 1 || a->ndim > 3) return BAD("'%s': a shape of 1 to 3 axes", key), false;
        a->n = 1;
        int i = 0;
        for (const cJSON *d = sh->child; d; d = d->next, i++) {
            if (!api_is_integer(d) || d->valuedouble < 1 || d->valuedouble > (1 << 24))
                return BAD("'%s': shape entries are integers in 1..%d", key, 1 << 24), false;
            a->shape[i] = (int64_t)d->valuedouble;
            if (a->n > ((size_t)1 << 30) / (size_t)a->shape[i]) return BAD("'%s': the shape is too large", key), false;
            a->n *= (size_t)a->shape[i];
        }
        uint8_t *bytes = NULL;
        size_t nb = 0;
        long long bad;
        if (!base64_decode(t->valuestring, strlen(t->valuestring), &bytes, &nb, &bad)) {
            if (bad < 0) return api_error(r, 500, "server_error", "out of memory"), false;
            return BAD("'%s': bad base64 at character %lld", key, bad), false;
        }
        if (nb != a->n * sizeof(float)) {
            free(bytes);
            return BAD("'%s': %zu bytes of data for a shape of %zu float32 (%zu bytes)", key, nb, a->n, a->n * sizeof(float)), false;
        }
        a->v = (float *)bytes;   /* malloc'ed: aligned for float (little-endian hosts, as the tensor input) */
    } else {
        if (!list_shape(j, key, a, r)) return false;
        if (!(a->v = malloc(sizeof(float) * a->n))) return api_error(r, 500, "server_error", "out of memory"), false;
        size_t at = 0;
        if (!list_fill(j, 0, key, a, &at, r)) return arr_free(a), false;
    }
    for (size_t i = 0; i < a->n; i++)
        if (!isfinite(a->v[i])) {
            arr_free(a);
            return BAD("'%s': element %zu is not finite (or not a float32)", key, i), false;
        }
    return true;
}

/* Every key of root is one of the route's: false after a 400 naming it. */
static bool keys_known(const cJSON *root, const char *const *known, const char *route, struct sv_response *r) {
    for (const cJSON *e = root->child; e; e = e->next) {
        bool k = false;
        for (int i = 0; known[i] && !k; i++) k = !strcmp(e->string, known[i]);
        if (k) continue;
        char list[256] = "";
        for (int i = 0; known[i]; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", known[i]);
        return BAD("%s: unknown field '%.64s' (this model's fields: %s)", route, e->string, list), false;
    }
    return true;
}

/* [B, rows, width] of a 2-D or 3-D array (B 1 for 2-D): false after a 400. */
static bool rows3(const struct arr *a, const char *key, const char *what, int64_t *B, int64_t *rows, int64_t *w,
                  struct sv_response *r) {
    if (a->ndim != 2 && a->ndim != 3) return BAD("'%s': %d axes; expected %s [rows, width] or [B, rows, width]", key, a->ndim, what), false;
    *B = a->ndim == 3 ? a->shape[0] : 1;
    *rows = a->shape[a->ndim - 2], *w = a->shape[a->ndim - 1];
    if (*B > SW_MAX_SEQUENCES) return BAD("'%s': %lld sequences; a request may have %d", key, (long long)*B, SW_MAX_SEQUENCES), false;
    return true;
}

/* What a world request holds until it is answered (freed with its group). */
struct world_req {
    struct sv_world w;
    struct arr x, act, st, goal;
    float *out, *out_states, *energies;
    size_t n_out, n_out_states;
    int64_t shape[3], sshape[3];
    int nd;
};

static void world_req_free(void *p) {
    struct world_req *q = p;
    if (!q) return;
    arr_free(&q->x), arr_free(&q->act), arr_free(&q->st), arr_free(&q->goal);
    free(q->out), free(q->out_states), free(q->energies);
    free(q);
}

/* LeWM predict / rollout: emb, actions (and steps). */
static bool parse_lewm(const jepa_model_info *in, cJSON *root, bool rollout, struct world_req *q, struct sv_response *r) {
    int64_t B, T, D, Ba, Ta, Aw;
    if (!get_array(root, "emb", &q->x, r) || !get_array(root, "actions", &q->act, r)) return false;
    if (!rows3(&q->x, "emb", "embeddings", &B, &T, &D, r) || !rows3(&q->act, "actions", "actions", &Ba, &Ta, &Aw, r)) return false;
    if (q->x.ndim != q->act.ndim || B != Ba)
        return BAD("%lld sequences of actions for %lld sequences of embeddings (both 2-D, or both [B, ...])",
                   (long long)Ba, (long long)B), false;
    if (D != in->emb_dim) return BAD("'emb': embeddings of width %lld; this model's are %d wide", (long long)D, in->emb_dim), false;
    if (Aw != in->action_dim)
        return BAD("'actions': actions of width %lld; this model takes %d (jepa.pred.action_dim)", (long long)Aw, in->action_dim), false;
    const int64_t want = rollout ? T + q->w.steps - 1 : T;
    if (Ta != want)
        return BAD(rollout ? "'actions': %lld actions for a history of %lld and steps %d: expected %lld (T + steps - 1)"
                           : "'actions': %lld actions for %lld frames: one per frame", (long long)Ta, (long long)T, q->w.steps,
                   (long long)want), false;
    if (!rollout && T > in->pred_n_frames)
        return BAD("'emb': %lld frames: the predictor takes at most %d (jepa.pred.n_frames; /v1/rollout slides a window)",
                   (long long)T, in->pred_n_frames), false;
    q->w.op = rollout ? SW_LEWM_ROLLOUT : SW_LEWM_PREDICT;
    q->w.B = (int)B, q->w.T = (int)T;
    const int64_t rows = rollout ? q->w.steps : T, width = rollout ? in->emb_dim : in->pred_out_dim;
    q->nd = q->x.ndim;
    q->shape[0] = B, q->shape[1] = rows, q->shape[2] = width;
    q->n_out = (size_t)(B * rows * width);
    return true;
}

/* V-JEPA 2-AC predict / rollout: tokens, actions, states (and steps, normalize). */
static bool parse_ac(const jepa_model_info *in, cJSON *root, bool rollout, struct world_req *q, struct sv_response *r) {
    int64_t B, rows, w, Ba, Fa, Aw, Bs, F, Sw;
    const int N = in->pred_tokens_per_frame, D = in->embed_dim;
    if (!get_array(root, "tokens", &q->x, r) || !get_array(root, "actions", &q->act, r) || !get_array(root, "states", &q->st, r))
        return false;
    if (!rows3(&q->x, "tokens", "tokens", &B, &rows, &w, r) || !rows3(&q->act, "actions", "actions", &Ba, &Fa, &Aw, r) ||
        !rows3(&q->st, "states", "states", &Bs, &F, &Sw, r))
        return false;
    if (q->x.ndim != q->act.ndim || q->act.ndim != q->st.ndim || Ba != B || Bs != B)
        return BAD("tokens, actions and states must all be 2-D or all [B, ...] with the same B"), false;
    if (w != D) return BAD("'tokens': tokens of width %lld; this model's encoder gives %d", (long long)w, D), false;
    if (Aw != in->action_dim)
        return BAD("'actions': actions of width %lld; this model takes %d (jepa.pred.action_dim)", (long long)Aw, in->action_dim), false;
    if (Sw != in->state_dim)
        return BAD("'states': states of width %lld; this model takes %d (jepa.pred.state_dim)", (long long)Sw, in->state_dim), false;
    const int64_t want = rollout ? F + q->w.steps - 1 : F;
    if (Fa != want)
        return BAD(rollout ? "'actions': %lld actions for a history of %lld frames and steps %d: expected %lld (F + steps - 1)"
                           : "'actions': %lld actions for %lld states: one of each per frame", (long long)Fa, (long long)F,
                   q->w.steps, (long long)want), false;
    if (F > in->pred_n_frames)
        return BAD("'states': %lld frames: the predictor takes at most %d (jepa.enc.n_frames / tubelet_size)%s", (long long)F,
                   in->pred_n_frames, rollout ? "" : "; /v1/rollout slides a window"), false;
    if (rows != F * N)
        return BAD("'tokens': %lld token rows for %lld frames: expected %lld (%d tokens per frame, frame-major)", (long long)rows,
                   (long long)F, (long long)F * N, N), false;
    q->w.op = rollout ? SW_AC_ROLLOUT : SW_AC_PREDICT;
    q->w.B = (int)B, q->w.T = (int)F;
    const int64_t frames = rollout ? q->w.steps : F;
    const int width = rollout ? D : in->pred_out_dim;
    q->nd = q->x.ndim;
    q->shape[0] = B, q->shape[1] = frames * N, q->shape[2] = width;
    q->n_out = (size_t)(B * frames * N * width);
    if (rollout) {
        q->sshape[0] = B, q->sshape[1] = frames, q->sshape[2] = Sw;
        q->n_out_states = (size_t)(B * frames * Sw);
    }
    return true;
}

/* A number field of root in [lo, hi] into *v (absent: unchanged): false after a 400. */
static bool get_real(cJSON *root, const char *key, double lo, double hi, double *v, struct sv_response *r) {
    cJSON *j = api_obj_get(root, key);
    if (!j) return true;
    if (!cJSON_IsNumber(j) || !(j->valuedouble >= lo && j->valuedouble <= hi))
        return BAD("'%s' takes a number in [%g, %g]", key, lo, hi), false;
    *v = j->valuedouble;
    return true;
}

/* The plan's settings (jepa plan's options by their names) over the kind's defaults. */
static bool parse_plan_settings(const jepa_model_info *in, cJSON *root, bool ac, struct world_req *q, struct sv_response *r) {
    jepa_plan_params *pp = &q->w.pp;
    *pp = ac ? jepa_plan_ac_default_params() : jepa_plan_default_params();
    if (ac && (api_obj_get(root, "std") || api_obj_get(root, "bounds")))
        return BAD("V-JEPA 2-AC plans in Meta's action box: 'maxnorm' sets its xyz range (not 'std' / 'bounds')"), false;
    if (!ac && (api_obj_get(root, "maxnorm") || api_obj_get(root, "states")))
        return BAD("'maxnorm' and 'states' are V-JEPA 2-AC's; this is a LeWM model"), false;
    if (ac && in->action_dim != 7)
        return BAD("the V-JEPA 2-AC planner moves Meta's 7-d Franka action; this predictor takes %d-d actions", in->action_dim),
               false;
    if (!api_get_int(root, "horizon", 1, 1024, &pp->horizon, "", r) || !api_get_int(root, "samples", 1, 65536, &pp->samples, "", r) ||
        !api_get_int(root, "iters", 1, 100000, &pp->iterations, "", r) || !api_get_int(root, "elites", 1, 65536, &pp->elites, "", r))
        return false;
    cJSON *seed = api_obj_get(root, "seed");
    if (seed) {
        if (!api_is_integer(seed) || seed->valuedouble < 0)
            return BAD("'seed' takes an integer in 0..9007199254740991"), false;
        pp->seed = (uint64_t)seed->valuedouble;
    }
    double m = -1, std = -1, maxnorm = -1;
    if (!get_real(root, "momentum", 0, 1, &m, r) || !get_real(root, "std", 0, 1e6, &std, r) ||
        !get_real(root, "maxnorm", 0, 1e6, &maxnorm, r))
        return false;
    if (m >= 0) pp->momentum_mean = pp->momentum_std = (float)m;
    if (std >= 0) pp->init_std = (float)std;
    cJSON *b = api_obj_get(root, "bounds");
    if (b && !cJSON_IsNull(b)) {
        if (!cJSON_IsArray(b) || cJSON_GetArraySize(b) != 2 || !cJSON_IsNumber(b->child) || !cJSON_IsNumber(b->child->next) ||
            !isfinite(b->child->valuedouble) || !isfinite(b->child->next->valuedouble) ||
            !(b->child->valuedouble < b->child->next->valuedouble))
            return BAD("'bounds' takes [lo, hi] with lo < hi, both finite (or null: none)"), false;
        pp->lo = (float)b->child->valuedouble, pp->hi = (float)b->child->next->valuedouble;
    }
    if (ac && maxnorm >= 0) {
        memcpy(q->w.box, pp->components, sizeof(jepa_plan_component) * 7);
        for (int j = 0; j < 3; j++)
            q->w.box[j].lo = (float)-maxnorm, q->w.box[j].hi = (float)maxnorm, q->w.box[j].init_std = (float)maxnorm;
        pp->components = q->w.box;
    }
    if (pp->elites > pp->samples) return BAD("'elites' %d is more than 'samples' %d", pp->elites, pp->samples), false;
    if ((long long)pp->samples * pp->iterations > SW_MAX_PLAN_ROLLOUTS)
        return BAD("'samples' x 'iters' = %lld candidate rollouts; a request may run %d", (long long)pp->samples * pp->iterations,
                   SW_MAX_PLAN_ROLLOUTS), false;
    pp->on_iteration = NULL, pp->user = NULL;
    return true;
}

/* /v1/plan: history, goal, past_actions, states (V-JEPA 2-AC), settings. */
static bool parse_plan(const jepa_model_info *in, cJSON *root, bool ac, struct world_req *q, struct sv_response *r) {
    if (!parse_plan_settings(in, root, ac, q, r)) return false;
    const int N = ac ? in->pred_tokens_per_frame : 1, D = ac ? in->embed_dim : in->emb_dim, A = in->action_dim;
    if (!get_array(root, "history", &q->x, r) || !get_array(root, "goal", &q->goal, r)) return false;
    const struct arr *h = &q->x;
    const int64_t rows = h->ndim == 2 ? h->shape[0] : 1, w = h->shape[h->ndim - 1];
    if (h->ndim > 2 || w != D || rows % N || rows / N > 4096)
        return BAD(ac ? "'history': expected [T %d, %d] tokens (%d per frame)" : "'history': expected [T, %d] or [%d] embeddings",
                   ac ? N : D, D, N), false;
    q->w.T = (int)(rows / N);
    if (q->goal.n != (size_t)N * D || q->goal.ndim > 2)
        return BAD(ac ? "'goal': expected one frame's tokens [%d, %d]" : "'goal': expected one embedding of %d", ac ? N : D, D), false;
    if (ac) {
        if (!api_obj_get(root, "states")) return BAD("a V-JEPA 2-AC plan needs 'states' (the robot's pose, [T, 7] or [7])"), false;
        if (!get_array(root, "states", &q->st, r)) return false;
        if (q->st.n != (size_t)q->w.T * 7 || q->st.ndim > 2)
            return BAD("'states': expected the %d states [%d, 7] of the history", q->w.T, q->w.T), false;
    }
    if (q->w.T > 1 && !api_obj_get(root, "past_actions"))
        return BAD("a history of %d frames needs 'past_actions' [%d, %d]", q->w.T, q->w.T - 1, A), false;
    if (api_obj_get(root, "past_actions")) {
        if (!get_array(root, "past_actions", &q->act, r)) return false;
        if (q->act.ndim != 2 || q->act.shape[0] != q->w.T - 1 || q->act.shape[1] != A)
            return BAD("'past_actions': expected the %d past actions [%d, %d] of the history", q->w.T - 1, q->w.T - 1, A), false;
    }
    q->w.op = ac ? SW_AC_PLAN : SW_LEWM_PLAN;
    q->w.B = 1;
    q->w.goal = q->goal.v;
    q->nd = 2, q->shape[0] = q->w.pp.horizon, q->shape[1] = A;
    q->n_out = (size_t)q->w.pp.horizon * A;
    return true;
}

static const char *const PREDICT_KEYS[2][6] = {{"model", "encoding_format", "emb", "actions", NULL},
                                               {"model", "encoding_format", "tokens", "actions", "states", NULL}};
static const char *const ROLLOUT_KEYS[2][8] = {{"model", "encoding_format", "emb", "actions", "steps", NULL},
                                               {"model", "encoding_format", "tokens", "actions", "states", "steps", "normalize", NULL}};
static const char *const PLAN_KEYS[2][16] = {
    {"model", "encoding_format", "history", "goal", "past_actions", "horizon", "samples", "iters", "elites", "momentum", "std",
     "bounds", "seed", NULL},
    {"model", "encoding_format", "history", "goal", "past_actions", "states", "horizon", "samples", "iters", "elites",
     "momentum", "maxnorm", "seed", NULL}};

/* Everything the body asks for, checked in order, into q: false after answering. */
static bool parse_world(const struct sv_api *a, cJSON *root, enum sv_world_route route, struct world_req *q, bool *b64,
                        struct sv_response *r) {
    const jepa_model_info *in = &a->info;
    static const char *const path[] = {"/v1/predict", "/v1/rollout", "/v1/plan"};
    if (!cJSON_IsObject(root)) return BAD("the body must be a JSON object"), false;
    if (!api_check_model(a, root, r)) return false;
    const char *kind = api_world_kind(in);
    if (!kind)
        return BAD("%s runs a world model (LeWM or V-JEPA 2-AC); this model (family '%s') has %s", path[route], in->family,
                   in->predictor ? "a masked predictor, which the server does not run" : "none"), false;
    const bool ac = !strcmp(kind, "ac");
    if (!keys_known(root, route == SW_ROUTE_PREDICT ? PREDICT_KEYS[ac] : route == SW_ROUTE_ROLLOUT ? ROLLOUT_KEYS[ac] : PLAN_KEYS[ac],
                    path[route], r))
        return false;
    cJSON *ef = api_obj_get(root, "encoding_format");
    if (ef && (!cJSON_IsString(ef) || (strcmp(ef->valuestring, "float") && strcmp(ef->valuestring, "base64"))))
        return BAD("'encoding_format' is \"float\" or \"base64\""), false;
    *b64 = ef && !strcmp(ef->valuestring, "base64");
    q->w.normalize = 1;
    if (route == SW_ROUTE_ROLLOUT) {
        if (!api_obj_get(root, "steps")) return BAD("missing 'steps'"), false;
        if (!api_get_int(root, "steps", 1, SW_MAX_STEPS, &q->w.steps, "", r)) return false;
        cJSON *nz = api_obj_get(root, "normalize");
        if (nz && !cJSON_IsBool(nz)) return BAD("'normalize' is true or false"), false;
        q->w.normalize = !cJSON_IsFalse(nz);
    }
    bool ok = route == SW_ROUTE_PLAN ? parse_plan(in, root, ac, q, r)
            : ac ? parse_ac(in, root, route == SW_ROUTE_ROLLOUT, q, r) : parse_lewm(in, root, route == SW_ROUTE_ROLLOUT, q, r);
    if (!ok) return false;
    if ((q->n_out + q->n_out_states) * sizeof(float) > SV_MAX_OUTPUT_BYTES)
        return BAD("the outputs would be more than the %zu MiB a response may carry; send fewer sequences or steps",
                   SV_MAX_OUTPUT_BYTES >> 20), false;
    q->w.x = q->x.v, q->w.actions = q->act.v, q->w.states = q->st.v;
    return true;
}

static void put_array(struct sbuf *s, const char *key, const char *shape_key, const float *v, size_t n, const int64_t *sh, int nd,
                      bool b64) {
    sb_printf(s, ",\"%s\":", key);
    if (b64) sb_json_base64(s, v, n * sizeof(float));
    else sb_json_floats(s, v, n);
    sb_printf(s, ",\"%s\":[", shape_key);
    for (int i = 0; i < nd; i++) sb_printf(s, "%s%lld", i ? "," : "", (long long)sh[i]);
    sb_puts(s, "]");
}

static bool all_finite(const float *v, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i])) return false;
    return true;
}

static void respond_world(const struct sv_api *a, const struct world_req *q, enum sv_world_route route, bool b64,
                          struct sv_response *r) {
    const int off = q->nd == 3 ? 0 : 1;   /* a 2-D request: no leading B */
    struct sbuf s = {0};
    static const char *const object[] = {"world.prediction", "world.rollout", "world.plan"};
    sb_printf(&s, "{\"object\":\"%s\",\"model\":", object[route]);
    sb_json_str(&s, a->model_id);
    if (route == SW_ROUTE_PLAN) {
        put_array(&s, "actions", "shape", q->out, q->n_out, q->shape, 2, b64);
        sb_puts(&s, ",\"energies\":");
        sb_json_floats(&s, q->energies, (size_t)q->w.pp.iterations);
        sb_printf(&s, ",\"final_energy\":%.9g", (double)q->w.final_energy);
    } else {
        put_array(&s, route == SW_ROUTE_PREDICT ? "prediction" : "trajectory", "shape", q->out, q->n_out, q->shape + off,
                  q->nd, b64);
        if (q->out_states) put_array(&s, "states", "states_shape", q->out_states, q->n_out_states, q->sshape + off, q->nd, b64);
    }
    sb_puts(&s, "}");
    api_respond(r, 200, &s);
}

void api_world(struct sv_api *a, const char *body, size_t len, enum sv_world_route route, double t0_ms,
               const struct sv_client *cl, struct sv_response *r) {
    cJSON *root = NULL;
    struct sv_group *g = NULL;
    struct world_req *q = calloc(1, sizeof *q);
    bool b64 = false;
    if (!q) {
        api_error(r, 500, "server_error", "out of memory");
        return;
    }
    if (!api_parse_json(body, len, &root, r) || !parse_world(a, root, route, q, &b64, r)) goto done;
    cJSON_Delete(root), root = NULL;
    const bool plan = route == SW_ROUTE_PLAN;
    if (!(q->out = malloc(sizeof(float) * q->n_out)) ||
        (q->n_out_states && !(q->out_states = malloc(sizeof(float) * q->n_out_states))) ||
        (plan && !(q->energies = malloc(sizeof(float) * (size_t)q->w.pp.iterations))) || !(g = sv_group_new(1))) {
        api_error(r, 500, "server_error", "out of memory");
        goto done;
    }
    q->w.out = q->out, q->w.out_states = q->out_states, q->w.energies = q->energies;
    g->jobs[0].world = &q->w;
    g->free_user = world_req_free, g->user = q;
    struct world_req *held = q;
    q = NULL;   /* the group owns it now */
    r->clips = 1;
    if (!api_submit_wait(a, g, 1, t0_ms, cl, r)) goto done;
    const struct sv_job *j = &g->jobs[0];
    r->batch = j->batch;
    if (j->status) {
        const int st = j->status == JEPA_ERR_ARG ? 400 : 500;
        api_error(r, st, st == 400 ? "invalid_request_error" : "server_error", "%s", j->err);
    } else if (!all_finite(held->out, held->n_out) || (held->out_states && !all_finite(held->out_states, held->n_out_states)) ||
               (plan && (!all_finite(held->energies, (size_t)held->w.pp.iterations) || !isfinite(held->w.final_energy)))) {
        api_error(r, 500, "server_error", "the world model's output is not finite (non-finite weights in the model, or inputs "
                  "that overflow?)");
    } else {
        respond_world(a, held, route, b64, r);
    }
done:
    cJSON_Delete(root);
    world_req_free(q);
    if (g) sv_group_release(a->batcher, g);
}
