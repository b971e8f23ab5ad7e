/*
 * api.c — the public API of include/jepa.h on top of the loader (models/loader.c) and
 * the family forwards (encoder.c, predictor.c, head.c). Checks arguments, owns the
 * context (kernel table, threads, arena, last error); never prints or exits.
 */
#include <stdlib.h>
#include <string.h>

#ifdef JEPA_HAVE_OPENMP
#include <omp.h>
#endif

#include "gguf/gguf.h"
#include "models/forward.h"
#include "runtime/cpu.h"

/* ---- model ---- */

static jepa_status finish_load(jepa_model **out, struct gguf_file *g, jepa_status st,
                               struct jerr *e, char *err) {
    if (st == JEPA_OK) st = jm_load(out, g, e);
    else g = NULL;
    if (st != JEPA_OK) {
        if (g) gguf_close(g);
        *out = NULL;
        if (err) memcpy(err, e->msg, JEPA_ERR_LEN);
    }
    return st;
}

jepa_status jepa_model_load(jepa_model **out, const char *path, char *err) {
    struct jerr e = {0};
    struct gguf_file *g = NULL;
    if (!out || !path) {
        if (err) strcpy(err, "jepa_model_load: NULL argument");
        return JEPA_ERR_ARG;
    }
    jepa_status st = gguf_open(&g, path, &e);
    return finish_load(out, g, st, &e, err);
}

jepa_status jepa_model_load_memory(jepa_model **out, const void *data, size_t size, char *err) {
    struct jerr e = {0};
    struct gguf_file *g = NULL;
    if (!out || !data) {
        if (err) strcpy(err, "jepa_model_load_memory: NULL argument");
        return JEPA_ERR_ARG;
    }
    jepa_status st = gguf_open_memory(&g, data, size, &e);
    return finish_load(out, g, st, &e, err);
}

void jepa_model_free(jepa_model *m) { jm_free(m); }

void jepa_model_get_info(const jepa_model *m, jepa_model_info *info) {
    const struct jm_encoder *e = &m->enc;
    memset(info, 0, sizeof *info);
    info->family = m->family_name;
    info->modality = m->modality;
    info->name = m->name;
    info->embed_dim = e->vit.d;
    info->n_layer = e->vit.n_layer;
    info->n_head = e->vit.n_head;
    info->head_dim = e->vit.head_dim;
    info->ffn_dim = e->vit.ffn;
    info->patch_size = e->patch;
    info->tubelet_size = e->tubelet;
    info->img_size = e->img_size;
    info->n_frames = e->n_frames;
    info->in_chans = e->in_chans;
    info->has_cls = e->cls;
    info->has_predictor = m->has_pred;
    info->pred_out_dim = m->has_pred ? m->pred.out_dim : 0;
    info->has_head = m->head.kind != JM_HEAD_NONE;
    info->n_classes = info->has_head ? m->head.n_classes : 0;
    info->n_hier = e->n_hier;
    info->emb_dim = e->has_proj ? e->proj2.n_out : 0;
}

const char *jepa_model_label(const jepa_model *m, int i) {
    if (m->head.kind == JM_HEAD_NONE || !m->head.labels || i < 0 || i >= m->head.n_classes)
        return NULL;
    return m->head.labels[i];
}

jepa_status jepa_model_grid(const jepa_model *m, int T, int H, int W, int *gt, int *gh, int *gw,
                            int *n_tokens) {
    const struct jm_encoder *e = &m->enc;
    if (T < 1 || H < e->patch || W < e->patch || H % e->patch || W % e->patch) return JEPA_ERR_ARG;
    int tub = (e->image_patch_embed && T == 1) ? 1 : e->tubelet;
    int t = T == 1 ? 1 : (T % tub ? -1 : T / tub);
    if (t < 0) return JEPA_ERR_ARG;
    if (gt) *gt = t;
    if (gh) *gh = H / e->patch;
    if (gw) *gw = W / e->patch;
    if (n_tokens) *n_tokens = t * (H / e->patch) * (W / e->patch) + (e->cls ? 1 : 0);
    return JEPA_OK;
}

/* ---- context ---- */

jepa_ctx_params jepa_ctx_default_params(void) {
    jepa_ctx_params p = {0, NULL};
    return p;
}

static int default_threads(void) {
#ifdef JEPA_HAVE_OPENMP
    return omp_get_num_procs();
#else
    return 1;
#endif
}

jepa_status jepa_ctx_new(jepa_ctx **out, const jepa_model *m, const jepa_ctx_params *p) {
    if (!out || !m) return JEPA_ERR_ARG;
    *out = NULL;
    jepa_ctx_params dp = jepa_ctx_default_params();
    if (!p) p = &dp;
    const char *cap = p->cpu && *p->cpu ? p->cpu : getenv("JEPA_CPU");
    long flags = jepa_cpu_cap(jepa_cpu_detect(), cap);
    if (flags < 0) return JEPA_ERR_ARG;
    struct jepa_ctx *c = calloc(1, sizeof *c);
    if (!c) return JEPA_ERR_NOMEM;
    c->m = m;
    jk_init(&c->k, (unsigned)flags);
    c->nthreads = p->n_threads > 0 ? p->n_threads : default_threads();
    *out = c;
    return JEPA_OK;
}

void jepa_ctx_free(jepa_ctx *c) {
    if (!c) return;
    arena_free(&c->arena);
    free(c);
}

const char *jepa_ctx_error(const jepa_ctx *c) { return c ? c->err.msg : "no context"; }
void jepa_ctx_set_threads(jepa_ctx *c, int n) { c->nthreads = n > 0 ? n : default_threads(); }
int jepa_ctx_threads(const jepa_ctx *c) { return c->nthreads; }
const char *jepa_ctx_isa(const jepa_ctx *c) { return c->k.isa; }
size_t jepa_ctx_arena_bytes(const jepa_ctx *c) { return c->arena.cap; }

jepa_status ctx_reserve(struct jepa_ctx *c, size_t bytes) {
    if (arena_reserve(&c->arena, bytes))
        return jerr_set(&c->err, JEPA_ERR_NOMEM, "cannot allocate %zu MiB of activations",
                        bytes >> 20);
    return JEPA_OK;
}

/* ---- runs ---- */

jepa_status jepa_ctx_embed(jepa_ctx *c, const float *x, int T, int H, int W,
                           const jepa_embed_params *p, jepa_embed_out *out) {
    if (!c) return JEPA_ERR_ARG;
    jerr_clear(&c->err);
    if (!x) return jerr_set(&c->err, JEPA_ERR_ARG, "embed: NULL input");
    return encoder_forward(c, x, T, H, W, p, out);
}

jepa_status jepa_ctx_predict(jepa_ctx *c, const float *tokens, const jepa_predict_params *p,
                             float *pred, float *ctx_out) {
    if (!c) return JEPA_ERR_ARG;
    jerr_clear(&c->err);
    if (!tokens || !pred) return jerr_set(&c->err, JEPA_ERR_ARG, "predict: NULL buffer");
    return predictor_forward(c, tokens, p, pred, ctx_out);
}

jepa_status jepa_ctx_classify(jepa_ctx *c, const float *tokens, int n_tokens, float *logits) {
    if (!c) return JEPA_ERR_ARG;
    jerr_clear(&c->err);
    if (!tokens || !logits) return jerr_set(&c->err, JEPA_ERR_ARG, "classify: NULL buffer");
    return head_forward(c, tokens, n_tokens, logits);
}
