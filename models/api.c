/*
 * api.c — the public API of include/jepa.h, every function of it (but
 * jepa_model_describe: describe.c) and nothing else public: on top of the loader
 * (models/loader.c), the family forwards (encoder.c, predictor.c, head.c), the pixel
 * pipeline (input/preprocess.c, handed the model's recipe) and the quantizer
 * (quantize.c). Checks arguments, owns the context (device, kernel table, threads, arenas,
 * the reference on the model's device weights, last error); never prints or exits.
 * (tests/check_symbols.sh checks that every jepa_ symbol of the library is declared
 * in include/jepa.h.)
 */
#include <stdlib.h>
#include <string.h>

#ifdef JEPA_HAVE_OPENMP
#include <omp.h>
#endif

#include "gguf/gguf.h"
#include "models/forward.h"
#include "models/quantize.h"
#include "runtime/cpu.h"

/* ---- status ---- */

const char *jepa_status_str(jepa_status s) { return jr_status_str(s); }

const char *jepa_version(void) { return JEPA_VERSION; }

/* ---- model ---- */

static jepa_status finish_load(jepa_model **out, struct gguf_file *g, jepa_status st,
                               struct jerr *e, char *err) {
    if (st == JEPA_OK) st = jm_load(out, g, e);
    else g = NULL;
    if (st != JEPA_OK) {
        if (g) jg_close(g);
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
    jepa_status st = jg_open(&g, path, &e);
    return finish_load(out, g, st, &e, err);
}

jepa_status jepa_model_load_memory(jepa_model **out, const void *data, size_t size, char *err) {
    struct jerr e = {0};
    struct gguf_file *g = NULL;
    if (!out || !data) {
        if (err) strcpy(err, "jepa_model_load_memory: NULL argument");
        return JEPA_ERR_ARG;
    }
    jepa_status st = jg_open_memory(&g, data, size, &e);
    return finish_load(out, g, st, &e, err);
}

void jepa_model_free(jepa_model *m) { jm_free(m); }

void jepa_model_get_info(const jepa_model *m, jepa_model_info *info) {
    if (!info) return;
    memset(info, 0, sizeof *info);
    if (!m) return;
    const struct jm_encoder *e = &m->enc;
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
    const struct jm_predictor *pr = &m->pred;
    info->predictor = !m->has_pred ? NULL : pr->kind == JM_PRED_MASKED ? "masked"
                    : pr->kind == JM_PRED_LEWM ? "lewm" : "ac";
    info->action_dim = m->has_pred ? pr->action_dim : 0;
    info->state_dim = m->has_pred ? pr->state_dim : 0;
    info->pred_n_frames = !m->has_pred ? 0 : pr->kind == JM_PRED_LEWM ? pr->n_frames
                        : pr->kind == JM_PRED_AC ? jm_ac_max_frames(m) : 0;
    info->pred_tokens_per_frame = m->has_pred && pr->kind == JM_PRED_AC ? pr->grid_size * pr->grid_size : 0;
    info->pred_embed_dim = m->has_pred ? pr->vit.d : 0;
    info->pred_n_layer = m->has_pred ? pr->vit.n_layer : 0;
    info->pred_n_head = m->has_pred ? pr->vit.n_head : 0;
    info->pred_ffn_dim = m->has_pred ? pr->vit.ffn : 0;
}

void jepa_model_get_preprocess(const jepa_model *m, jepa_preprocess_recipe *r) {
    if (!r) return;
    if (m) *r = m->pre;
    else memset(r, 0, sizeof *r);
}

double jepa_encoder_flops(const jepa_model_info *info, int n_tokens, int tubelet) {
    if (!info) return 0;
    const double d = info->embed_dim, f = info->ffn_dim, n = n_tokens;
    const double patch = 2.0 * n * d * info->in_chans * tubelet * info->patch_size * info->patch_size;
    const double layer = 2.0 * n * (3 * d * d + d * d + 2 * d * f) + 4.0 * n * n * d;
    return patch + info->n_layer * layer;
}

const char *jepa_model_label(const jepa_model *m, int i) {
    if (!m || m->head.kind == JM_HEAD_NONE || !m->head.labels || i < 0 || i >= m->head.n_classes)
        return NULL;
    return m->head.labels[i];
}

jepa_status jepa_model_grid(const jepa_model *m, int T, int H, int W, int *gt, int *gh, int *gw,
                            int *n_tokens) {
    struct jm_input in;
    if (!m) return JEPA_ERR_ARG;
    jepa_status st = jm_encoder_input(m, T, H, W, JEPA_INPUT_AUTO, &in, NULL);
    if (st) return st;
    if (gt) *gt = in.gt;
    if (gh) *gh = in.gh;
    if (gw) *gw = in.gw;
    if (n_tokens) *n_tokens = in.n_patch + (m->enc.cls ? 1 : 0);
    return JEPA_OK;
}

/* ---- context ---- */

jepa_ctx_params jepa_ctx_default_params(void) {
    jepa_ctx_params p = {.n_threads = 0, .cpu = NULL, .device = NULL, .precision = NULL};
    return p;
}

static int default_threads(void) {
#ifdef JEPA_HAVE_OPENMP
    return omp_get_num_procs();
#else
    return 1;
#endif
}

/* "cpu" (or NULL / ""): -1; "cuda": 0; "cuda:N": N; anything else: -2. */
static int parse_device(const char *s) {
    if (!s || !*s || !strcmp(s, "cpu")) return -1;
    if (strncmp(s, "cuda", 4)) return -2;
    if (!s[4]) return 0;
    if (s[4] != ':' || !s[5]) return -2;
    long v = 0;
    for (const char *q = s + 5; *q; q++) {
        if (*q < '0' || *q > '9' || v > 1000000) return -2;
        v = v * 10 + (*q - '0');
    }
    return (int)v;
}

/* The first matmul weight of m whose dtype has no kernel in k (NULL: all run). */
static const struct jm_linear *first_unsupported(const struct jepa_model *m,
                                                 const struct jk_kernels *k) {
    for (int i = 0; i < m->n_weights; i++)
        if (!k->gemm[m->weights[i].lin->dt]) return m->weights[i].lin;
    return NULL;
}

/* The slots every forward calls (the gemm slots: per dtype, first_unsupported). */
static const char *first_missing_slot(const struct jk_kernels *k) {
    for (int i = 0; i < jk_nslots; i++)
        if (jk_slots[i].dtype < 0 && !jk_slot_fn(k, &jk_slots[i])) return jk_slots[i].name;
    return NULL;
}

static void *arena_dev_alloc(void *ud, size_t n) {
    struct jk_device *d = ud;
    return d->alloc(d, n);
}

static void arena_dev_free(void *ud, void *p) {
    struct jk_device *d = ud;
    d->free(d, p);
}

/* Open the GPU, fill its table, check the model runs there, take the weights' copy. */
static jepa_status open_gpu(struct jepa_ctx *c, int ordinal, unsigned flags) {
    char why[JEPA_ERR_LEN];
    c->dev = jk_device_open_cuda(ordinal, why, sizeof why);
    if (!c->dev) return jr_err_set(&c->err, JEPA_ERR_DEVICE, "%s", why);
    c->dev->bind(c->dev);
    c->dev->init_kernels(c->dev, &c->k, flags);
    const char *slot = first_missing_slot(&c->k);
    if (slot)
        return jr_err_set(&c->err, JEPA_ERR_UNSUPPORTED, "%s: kernel '%s' is not implemented there",
                        c->dev->name, slot);
    const struct jm_linear *L = first_unsupported(c->m, &c->k);
    if (L)
        return jr_err_set(&c->err, JEPA_ERR_UNSUPPORTED,
                        "tensor '%s' is %s: not supported on the GPU yet; use an f16, bf16 or f32 "
                        "file", L->name, jk_dtype_name(L->dt));
    jm_weights_range(c->m, &c->w_host, &c->w_size);
    jepa_status st = jm_dev_weights_acquire(c->m, ordinal, c->k.x16, &c->w_dev, &c->wsplit,
                                            &c->err);
    if (st) c->w_dev = NULL, c->wsplit = NULL;
    return st;
}

jepa_status jepa_ctx_new(jepa_ctx **out, const jepa_model *m, const jepa_ctx_params *p, char *err) {
    if (err) err[0] = '\0';
    if (!out || !m) {
        if (err) strcpy(err, "jepa_ctx_new: NULL argument");
        if (out) *out = NULL;
        return JEPA_ERR_ARG;
    }
    *out = NULL;
    jepa_ctx_params dp = jepa_ctx_default_params();
    if (!p) p = &dp;
    struct jerr e = {0};
    const char *cap = p->cpu && *p->cpu ? p->cpu : getenv("JEPA_CPU");
    long flags = jr_cpu_cap(jr_cpu_detect(), cap);
    const int ordinal = parse_device(p->device);
    const char *tier = p->precision && *p->precision ? p->precision : getenv("JEPA_PRECISION");
    const int prec = jk_precision_parse(tier);
    if (flags < 0)
        jr_err_set(&e, JEPA_ERR_ARG, "unknown cpu level '%s' (auto, scalar, avx2, avx512, neon)",
                 cap);
    else if (ordinal == -2)
        jr_err_set(&e, JEPA_ERR_ARG, "unknown device '%s' (cpu, cuda, cuda:N)", p->device);
    else if (prec < 0)
        jr_err_set(&e, JEPA_ERR_ARG, "unknown precision '%s' (exact, high, bf16)", tier);
    if (e.status) {
        if (err) memcpy(err, e.msg, JEPA_ERR_LEN);
        return e.status;
    }
    struct jepa_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        if (err) strcpy(err, "out of memory");
        return JEPA_ERR_NOMEM;
    }
    c->m = m;
    c->nthreads = p->n_threads > 0 ? p->n_threads : default_threads();
    c->precision = (enum jk_precision)prec;
    if (ordinal < 0) {
        c->dev = jk_device_cpu();
        jk_init_precision(&c->k, (unsigned)flags, c->precision);
    } else if (open_gpu(c, ordinal, (unsigned)flags)) {
        if (err) memcpy(err, c->err.msg, JEPA_ERR_LEN);
        jepa_status st = c->err.status;
        jepa_ctx_free(c);
        return st;
    }
    c->arena.alloc = arena_dev_alloc;
    c->arena.free = arena_dev_free;
    c->arena.ud = c->dev;
    *out = c;
    return JEPA_OK;
}

void jepa_ctx_free(jepa_ctx *c) {
    if (!c) return;
    if (c->dev) jr_arena_free(&c->arena);
    jr_arena_free(&c->host);
    if (c->w_dev) jm_dev_weights_release(c->m, c->dev->ordinal);
    if (c->dev) c->dev->close(c->dev);
    jm_prepack_free(c->pp);
    free(c);
}

jepa_status jepa_ctx_set_prepack(jepa_ctx *c, int on) {
    if (!c) return JEPA_ERR_ARG;
    if (!on) {
        jm_prepack_free(c->pp);
        c->pp = NULL;
        return JEPA_OK;
    }
    return jm_prepack_enable(c);
}

size_t jepa_ctx_prepacked_bytes(const jepa_ctx *c) { return c ? jm_prepack_bytes(c->pp) : 0; }

/* The accessors take a NULL context as "none": a message, 0, or "" (never a crash). */
const char *jepa_ctx_error(const jepa_ctx *c) { return c ? c->err.msg : "no context"; }
void jepa_ctx_set_threads(jepa_ctx *c, int n) {
    if (c) c->nthreads = n > 0 ? n : default_threads();
}
int jepa_ctx_threads(const jepa_ctx *c) { return c ? c->nthreads : 0; }
const char *jepa_ctx_isa(const jepa_ctx *c) { return c ? c->k.isa : ""; }
const char *jepa_ctx_precision(const jepa_ctx *c) { return c ? jk_precision_name(c->precision) : ""; }
const char *jepa_ctx_matmul_isa(const jepa_ctx *c) { return c ? c->k.gemm_isa : ""; }
const char *jepa_ctx_attn_isa(const jepa_ctx *c) { return c && c->k.attn_isa ? c->k.attn_isa : ""; }
const char *jepa_ctx_device(const jepa_ctx *c) { return c ? c->dev->name : ""; }
size_t jepa_ctx_arena_bytes(const jepa_ctx *c) { return c ? c->arena.cap + c->host.cap : 0; }
void jepa_ctx_cancel(jepa_ctx *c) {
    if (c) atomic_store(&c->cancel, true);
}

/* ---- runs ---- */

/* Every public run: bind the device to this thread, run, wait for the device. A run the
 * forward refused keeps its own reason; otherwise a device failure (sticky: the device
 * stays failed) is JEPA_ERR_DEVICE with the device's message. */
static jepa_status finish(jepa_ctx *c, jepa_status st) {
    if (c->dev->sync(c->dev) && st == JEPA_OK)
        return jr_err_set(&c->err, JEPA_ERR_DEVICE, "%s: %s", c->dev->name, c->dev->error(c->dev));
    return st;
}

jepa_status jepa_ctx_embed(jepa_ctx *c, const float *x, int T, int H, int W,
                           const jepa_embed_params *p, jepa_embed_out *out) {
    if (!c) return JEPA_ERR_ARG;
    jr_err_clear(&c->err);
    if (!x) return jr_err_set(&c->err, JEPA_ERR_ARG, "embed: NULL input");
    c->dev->bind(c->dev);
    return finish(c, jm_encoder_forward(c, x, T, H, W, p, out));
}

jepa_status jepa_ctx_embed_input(jepa_ctx *c, int T, int H, int W, const jepa_embed_params *p,
                                 const jepa_embed_out *out, float **x) {
    if (x) *x = NULL;
    if (!c) return JEPA_ERR_ARG;
    jr_err_clear(&c->err);
    if (!x) return jr_err_set(&c->err, JEPA_ERR_ARG, "embed_input: NULL x");
    c->dev->bind(c->dev);
    float *room = NULL;
    jepa_status st = finish(c, jm_encoder_input_buffer(c, T, H, W, p, out, &room));
    if (!st) *x = room;
    return st;
}

jepa_status jepa_ctx_predict(jepa_ctx *c, const float *tokens, const jepa_predict_params *p,
                             float *pred, float *ctx_out) {
    if (!c) return JEPA_ERR_ARG;
    jr_err_clear(&c->err);
    if (!tokens || !pred) return jr_err_set(&c->err, JEPA_ERR_ARG, "predict: NULL buffer");
    c->dev->bind(c->dev);
    return finish(c, jm_predictor_forward(c, tokens, p, pred, ctx_out));
}

jepa_status jepa_ctx_lewm_predict(jepa_ctx *c, const float *emb, const float *actions, int B, int T,
                                  float *pred) {
    if (!c) return JEPA_ERR_ARG;
    jr_err_clear(&c->err);
    if (!emb || !actions || !pred) return jr_err_set(&c->err, JEPA_ERR_ARG, "lewm predict: NULL buffer");
    c->dev->bind(c->dev);
    return finish(c, jm_lewm_predict(c, emb, actions, B, T, pred));
}

jepa_status jepa_ctx_lewm_rollout(jepa_ctx *c, const float *emb, int B, int T, const float *actions,
                                  int steps, float *traj) {
    if (!c) return JEPA_ERR_ARG;
    jr_err_clear(&c->err);
    if (!emb || !actions || !traj) return jr_err_set(&c->err, JEPA_ERR_ARG, "lewm rollout: NULL buffer");
    c->dev->bind(c->dev);
    return finish(c, jm_lewm_rollout(c, emb, B, T, actions, steps, traj));
}

jepa_status jepa_ctx_ac_predict(jepa_ctx *c, const float *tokens, const float *actions, const float *states,
                                int B, int F, float *pred) {
    if (!c) return JEPA_ERR_ARG;
    jr_err_clear(&c->err);
    if (!tokens || !actions || !states || !pred) return jr_err_set(&c->err, JEPA_ERR_ARG, "ac predict: NULL buffer");
    c->dev->bind(c->dev);
    return finish(c, jm_ac_predict(c, tokens, actions, states, B, F, pred));
}

jepa_status jepa_ctx_ac_rollout(jepa_ctx *c, const float *tokens, const float *states, int B, int T,
                                const float *actions, int steps, int normalize, float *traj, float *traj_states) {
    if (!c) return JEPA_ERR_ARG;
    jr_err_clear(&c->err);
    if (!tokens || !states || !actions || !traj) return jr_err_set(&c->err, JEPA_ERR_ARG, "ac rollout: NULL buffer");
    c->dev->bind(c->dev);
    return finish(c, jm_ac_rollout(c, tokens, states, B, T, actions, steps, normalize ? JM_AC_NORMALIZE : 0u, traj,
                                   traj_states));
}

jepa_plan_params jepa_plan_default_params(void) {
    jepa_plan_params p = {.horizon = 5, .samples = 300, .iterations = 30, .elites = 30, .init_std = 1.0f,
                          .lo = 0.0f, .hi = 0.0f, .seed = 1234};
    return p;
}

jepa_status jepa_ctx_lewm_plan(jepa_ctx *c, const float *emb, int T, const float *past_actions,
                               const float *goal, const jepa_plan_params *p, float *actions, float *energies,
                               float *final_energy) {
    if (!c) return JEPA_ERR_ARG;
    jr_err_clear(&c->err);
    if (!emb || !goal || !actions) return jr_err_set(&c->err, JEPA_ERR_ARG, "lewm plan: NULL buffer");
    jepa_plan_params d = jepa_plan_default_params();
    c->dev->bind(c->dev);
    return finish(c, jm_lewm_plan(c, emb, T, past_actions, goal, p ? p : &d, actions, energies, final_energy));
}

/* The Franka action of Meta's planner: delta xyz, delta Euler angles (held at 0), gripper. */
static const jepa_plan_component franka_box[7] = {
    {-0.05f, 0.05f, 0.05f, 0.0f}, {-0.05f, 0.05f, 0.05f, 0.0f}, {-0.05f, 0.05f, 0.05f, 0.0f},
    {0.0f, 0.0f, 0.0f, 0.0f},     {0.0f, 0.0f, 0.0f, 0.0f},     {0.0f, 0.0f, 0.0f, 0.0f},
    {-0.75f, 0.75f, 1.0f, 0.25f},
};

jepa_plan_params jepa_plan_ac_default_params(void) {
    jepa_plan_params p = {.horizon = 2, .samples = 400, .iterations = 10, .elites = 10, .init_std = 0.05f,
                          .lo = -0.05f, .hi = 0.05f, .seed = 1234, .components = franka_box,
                          .momentum_mean = 0.15f, .momentum_std = 0.15f};
    return p;
}

jepa_status jepa_ctx_ac_plan(jepa_ctx *c, const float *tokens, const float *states, int T, const float *past_actions,
                             const float *goal, const jepa_plan_params *p, float *actions, float *energies,
                             float *final_energy) {
    if (!c) return JEPA_ERR_ARG;
    jr_err_clear(&c->err);
    if (!tokens || !states || !goal || !actions) return jr_err_set(&c->err, JEPA_ERR_ARG, "ac plan: NULL buffer");
    jepa_plan_params d = jepa_plan_ac_default_params();
    c->dev->bind(c->dev);
    return finish(c, jm_ac_plan(c, tokens, states, T, past_actions, goal, p ? p : &d, actions, energies, final_energy));
}

jepa_status jepa_ctx_classify(jepa_ctx *c, const float *tokens, int n_tokens, float *logits) {
    if (!c) return JEPA_ERR_ARG;
    jr_err_clear(&c->err);
    if (!tokens || !logits) return jr_err_set(&c->err, JEPA_ERR_ARG, "classify: NULL buffer");
    c->dev->bind(c->dev);
    return finish(c, jm_head_forward(c, tokens, n_tokens, logits));
}

/* ---- preprocessing ---- */

jepa_preprocess_params jepa_preprocess_default_params(void) {
    jepa_preprocess_params p = {JEPA_RESIZE_MODEL, 0, 0, JEPA_NORM_FUSED};
    return p;
}

static jepa_status report(struct jerr *e, char *err) {
    if (err) memcpy(err, e->msg, JEPA_ERR_LEN);
    return e->status;
}

/* ---- tools ---- */

jepa_status jepa_model_quantize(const jepa_model *m, const char *path, uint32_t type, char *err) {
    struct jerr e = {0};
    if (err) err[0] = '\0';
    if (!m || !path) {
        jr_err_set(&e, JEPA_ERR_ARG, "jepa_model_quantize: NULL argument");
        return report(&e, err);
    }
    struct gguf_writer *w = jg_writer_new();
    if (!w) jr_err_set(&e, JEPA_ERR_NOMEM, "out of memory");
    else if (!jm_quantize(m, w, type, false, &e)) jg_writer_write(w, path, &e);
    jg_writer_free(w);
    return report(&e, err);
}

jepa_status jepa_preprocess_size(const jepa_model *m, const jepa_preprocess_params *p, int *out_h,
                                 int *out_w) {
    struct jerr e = {0};
    struct pre_cfg c;
    if (!m) return JEPA_ERR_ARG;
    if (ji_pre_cfg(&m->pre, p, &c, &e)) return e.status;
    if (out_h) *out_h = c.crop;
    if (out_w) *out_w = c.crop;
    return JEPA_OK;
}

jepa_status jepa_preprocess_rgb(const jepa_model *m, const uint8_t *rgb, int h, int w,
                                const jepa_preprocess_params *p, float *out, int T, int t, char *err) {
    struct jerr e = {0};
    struct pre_cfg c;
    if (err) err[0] = '\0';
    if (!m || !rgb || !out) {
        jr_err_set(&e, JEPA_ERR_ARG, "jepa_preprocess_rgb: NULL argument");
        return report(&e, err);
    }
    if (T < 1 || t < 0 || t >= T || h < 1 || w < 1) {
        jr_err_set(&e, JEPA_ERR_ARG, "jepa_preprocess_rgb: frame %d of %d, size %dx%d", t, T, h, w);
        return report(&e, err);
    }
    if (ji_pre_cfg(&m->pre, p, &c, &e) || ji_pre_clip_frame(&c, rgb, h, w, out, T, t, &e))
        return report(&e, err);
    return JEPA_OK;
}
