/*
 * lewm.c — the LeWM world-model predictor (jepa.pred.kind = lewm): an action-conditioned
 * transformer, causal over the T frames of each of B sequences, one token per frame
 * (docs/world-models.md). R = B*T rows; pd = jepa.pred.embed_dim; inner = n_head x
 * head_dim (16 x 64 = 1024 in the 192-d published model: not pd).
 *
 *   a   = embed2(act(embed0(actions)))                 [R, pd]   (act: jepa.pred.action_act)
 *   ca  = silu(a)                                      the adaLN input, the same in every block
 *   x   = emb + pos_embed[t]                           [R, pd]   t = the row's frame
 *   per block:
 *     mod = adaln(ca)                                  [R, 6pd]  shift_a | scale_a | gate_a |
 *                                                                shift_m | scale_m | gate_m
 *     h   = ln1(LN0(x) (1 + scale_a) + shift_a)        LN0: no affine, eps jepa.pred.adaln_eps
 *     x  += gate_a * out(attn(qkv(h)))                 causal: frame t sees frames 0..t
 *     h   = ln2(LN0(x) (1 + scale_m) + shift_m)
 *     x  += gate_m * down(act(up(h)))
 *   x    = norm(x)
 *   pred = proj2(act(proj0(x)))                        [R, out_dim]  (act: jepa.pred.proj_act)
 *
 * Row t of a sequence's prediction is the embedding of frame t + 1. Device-neutral like
 * the other forwards (models/context.h): every step is a kernel slot. Tested against a
 * float64 reference written from this recipe (tests/gen/gen_lewm.py) and by structural
 * checks (tests/models/test_world.c).
 */
#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "models/forward.h"

/* Columns of the `wide` buffer: fused qkv, the MLP hidden layer, and the hidden layers
 * of the action embedding and of the output projector. */
static int lewm_wide_cols(const struct jm_predictor *p) {
    const struct jm_vit *v = &p->vit;
    int w = 3 * v->n_head * v->head_dim;
    if (v->ffn > w) w = v->ffn;
    if (p->action_embed0.n_out > w) w = p->action_embed0.n_out;
    if (p->proj0.n_out > w) w = p->proj0.n_out;
    return w;
}

static jepa_status need_lewm(struct jepa_ctx *c) {
    if (!c->m->has_pred || c->m->pred.kind != JM_PRED_LEWM)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "this model file has no LeWM predictor (jepa.pred.kind = lewm)");
    return JEPA_OK;
}

/* Inputs of one call: B sequences of T frames. */
static jepa_status check_shape(struct jepa_ctx *c, int B, int T) {
    const struct jm_predictor *p = &c->m->pred;
    jepa_status st = need_lewm(c);
    if (st) return st;
    if (B < 1 || T < 1)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "%d sequences of %d frames: at least one of one", B, T);
    if (T > p->n_frames)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "%d frames: the predictor takes at most %d (jepa.pred.n_frames)",
                          T, p->n_frames);
    if ((int64_t)B * T > JM_MAX_CLIP_TOKENS)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "%d sequences of %d frames: more than %d rows in one call",
                          B, T, JM_MAX_CLIP_TOKENS);
    return JEPA_OK;
}

/* The forward on device buffers: emb [B*T, pd] and act [B*T, A] in c's memory, pred
 * [B*T, out] written there. Scratch planned by the caller (struct lewm_buf). */
struct lewm_buf {
    float *x, *ca, *mod, *h, *wide, *att, *tmp;
    int32_t *pos;     /* [T] frame index of each row of one sequence (device memory) */
    void *ws;
    char *attn_ws;    /* host: one single-thread attention workspace per thread */
    size_t attn_ws1;  /* its bytes per thread */
    /* 16-bit copies (forward.h): h16 [R, max(pd, A)] of the LayerNorm outputs and first of
     * the actions, wide16 [R, wide columns] of the attention output, the MLP's and the
     * projector's hidden layers and the action embedding's, ca16 [R, pd] of silu(a) for
     * every block's adaLN; NULL where nothing reads them */
    uint16_t *h16, *wide16, *ca16;
};

/* The matmuls of the predictor that may read a copy: the one after each LayerNorm (qkv,
 * up, proj0) or of the uploaded actions (action_embed0), after attention (out) and after
 * an activation (down, proj2, action_embed2). h: some of the first kind does; wide: some
 * of the others. */
static void lewm_x16(const struct jepa_ctx *c, bool *h, bool *wide) {
    const struct jm_predictor *p = &c->m->pred;
    *h = jm_x16_type(c, &p->proj0) >= 0 || jm_x16_type(c, &p->action_embed0) >= 0;
    *wide = jm_x16_type(c, &p->proj2) >= 0 || jm_x16_type(c, &p->action_embed2) >= 0;
    for (int l = 0; l < p->vit.n_layer; l++) {
        const struct jm_block *b = &p->vit.blk[l];
        *h = *h || jm_x16_type(c, &b->qkv) >= 0 || jm_x16_type(c, &b->up) >= 0;
        *wide = *wide || jm_x16_type(c, &b->out) >= 0 || jm_x16_type(c, &b->down) >= 0;
    }
}

/* The type of the copy of silu(a) that every block's adaLN reads: that of the first adaLN
 * that reads one (an adaLN of the other type reads f32); -1 where none does. */
static int lewm_ca16_type(const struct jepa_ctx *c) {
    const struct jm_vit *v = &c->m->pred.vit;
    for (int l = 0; l < v->n_layer; l++) {
        const int t = jm_x16_type(c, &v->blk[l].adaln);
        if (t >= 0) return t;
    }
    return -1;
}

static void plan_lewm(struct plan *pl, const struct jepa_ctx *c, int B, int T, struct lewm_buf *b,
                      struct staged *pos) {
    const struct jm_predictor *p = &c->m->pred;
    const struct jm_vit *v = &p->vit;
    const size_t R = (size_t)B * T, pd = (size_t)v->d, inner = (size_t)v->n_head * v->head_dim;
    bool h16, wide16;
    lewm_x16(c, &h16, &wide16);
    const size_t A = (size_t)p->action_dim;
    b->h16 = h16 ? plan_dev(pl, jm_x16_bytes(true, R * (pd > A ? pd : A))) : NULL;
    b->ca16 = lewm_ca16_type(c) >= 0 ? plan_dev(pl, jm_x16_bytes(true, R * pd)) : NULL;
    b->wide16 = wide16 ? plan_dev(pl, jm_x16_bytes(true, R * (size_t)lewm_wide_cols(p))) : NULL;
    b->x = plan_dev(pl, sizeof(float) * R * pd);
    b->ca = plan_dev(pl, sizeof(float) * R * pd);
    b->mod = plan_dev(pl, sizeof(float) * R * 6 * pd);
    b->h = plan_dev(pl, sizeof(float) * R * pd);
    b->wide = plan_dev(pl, sizeof(float) * R * (size_t)lewm_wide_cols(p));
    b->att = plan_dev(pl, sizeof(float) * R * inner);
    b->tmp = plan_dev(pl, sizeof(float) * R * pd);
    *pos = plan_staged(pl, sizeof(int32_t) * (size_t)T);
    const int ks[] = {p->action_dim, p->action_embed0.n_out, v->d, (int)inner, v->ffn, p->proj0.n_out};
    b->ws = plan_dev(pl, jm_vit_ws_bytes(c, T, v->n_head, v->head_dim, ks, (int)(sizeof ks / sizeof *ks)));
    b->attn_ws1 = (c->k.attn_ws(1, v->n_head, v->head_dim, T) + 63) / 64 * 64;
    b->attn_ws = c->dev->host_memory ? plan_dev(pl, b->attn_ws1 * (size_t)(c->nthreads > 0 ? c->nthreads : 1)) : NULL;
}

/* Causal attention of every sequence: qkv [R, 3 inner] -> att [R, inner] (and its copy
 * o16, [R, inner] at row stride o16->ld, where o16 && o16->p). On the CPU the
 * sequences (a few rows each: thousands of kernel calls of a planning batch) are spread
 * over the threads, each call single-threaded with its own workspace: one OpenMP region
 * instead of one per sequence, the same bits (the kernel gives them at any thread
 * count). On a GPU the calls are queued on the stream in turn. */
static void attend(const struct jepa_ctx *c, const struct lewm_buf *b, int B, int T,
                   const struct jm_x16 *o16) {
    const struct jm_vit *v = &c->m->pred.vit;
    const int nh = v->n_head, hd = v->head_dim, inner = nh * hd, nt = c->nthreads > 0 ? c->nthreads : 1;
    const size_t ld3 = (size_t)3 * inner;
    const bool host = b->attn_ws != NULL;
    (void)nt;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static) if (host && B > 1)
#endif
    for (int s = 0; s < B; s++) {
        const float *q = b->wide + (size_t)s * T * ld3;
        int tid = 0;
#ifdef _OPENMP
        tid = host && B > 1 ? omp_get_thread_num() : 0;
#endif
        struct jk_attn_args at = {
            .o = b->att + (size_t)s * T * inner, .ldo = (size_t)inner, .q = q, .ldq = ld3,
            .k = q + inner, .ldk = ld3, .v = q + 2 * inner, .ldv = ld3, .nq = T, .nkv = T,
            .n_head = nh, .head_dim = hd, .scale = (float)(1.0 / sqrt((double)hd)),
            .q_pos = b->pos, .k_pos = b->pos,
            .nthreads = host ? 1 : c->nthreads, .ws = host ? b->attn_ws + (size_t)tid * b->attn_ws1 : b->ws,
        };
        if (o16 && o16->p)
            at.o16 = o16->p + (size_t)s * T * inner, at.ldo16 = o16->ld, at.o16_type = o16->t;
        c->k.attn(&at);
    }
}

static jepa_status run_lewm(struct jepa_ctx *c, const float *emb, const float *act, int B, int T,
                            float *pred, const struct lewm_buf *b) {
    const struct jm_predictor *p = &c->m->pred;
    const struct jm_vit *v = &p->vit;
    const int pd = v->d, nh = v->n_head, hd = v->head_dim, inner = nh * hd, nt = c->nthreads;
    const int R = B * T;
    const size_t ld6 = (size_t)6 * pd, ld3 = (size_t)3 * inner;

    /* action embedding, then its SiLU: the input of every block's modulation */
    const size_t ha = (size_t)p->action_embed0.n_out;
    const size_t A = (size_t)p->action_dim;
    const struct jm_x16 in16 = jm_x16_for(c, &p->action_embed0, b->h16, A);   /* the actions' */
    const bool act16 = jm_round16(c, &in16, act, A, R, (int)A);
    const struct jm_x16 a16 = jm_x16_for(c, &p->action_embed2, b->wide16, ha);
    const bool ae16 = jm_linear_act16(c, b->wide, ha, act, A, act16 ? &in16 : NULL,
                                      &p->action_embed0, R, p->action_act, &a16, b->ws);
    jm_linear16(c, b->ca, (size_t)pd, b->wide, ha, ae16 ? &a16 : NULL, &p->action_embed2, R,
                JK_EPI_STORE, NULL, b->ws);
    const int cat = lewm_ca16_type(c);
    const struct jm_x16 ca16 = {cat >= 0 ? b->ca16 : NULL, (size_t)pd,
                                cat >= 0 ? (enum jk_dtype)cat : JK_F16};
    const bool ca16_on = jm_unary16(c, JM_ACT_SILU, b->ca, (size_t)pd, R, pd, &ca16);

    /* x = emb + pos_embed[t]: frame t of every sequence is a strided matrix of B rows
     * (stride T rows), and its table row is broadcast to them (T calls, not B) */
    c->dev->copy(c->dev, b->x, emb, sizeof(float) * (size_t)R * pd);
    for (int t = 0; t < T; t++)
        c->k.add(b->x + (size_t)t * pd, (size_t)T * pd, dw(c, p->pos_embed + (size_t)t * pd), 0, NULL, B, pd, nt);

    jepa_status st;
    for (int l = 0; l < v->n_layer; l++) {
        if ((st = jm_cancel_point(c))) return st;
        const struct jm_block *blk = &v->blk[l];
        float *mod = b->mod;
        jm_linear16(c, mod, ld6, b->ca, (size_t)pd, ca16_on ? &ca16 : NULL, &blk->adaln, R,
                    JK_EPI_STORE, NULL, b->ws);

        /* attention branch */
        c->k.layernorm(b->h, (size_t)pd, b->x, (size_t)pd, NULL, NULL, R, pd, p->adaln_eps, nt);
        c->k.madd(b->h, (size_t)pd, b->h, (size_t)pd, mod + pd, ld6, mod, ld6, 1.0f, R, pd, nt);
        const struct jm_x16 q16 = jm_x16_for(c, &blk->qkv, b->h16, (size_t)pd);
        jm_layernorm16(c, b->h, (size_t)pd, &q16, b->h, (size_t)pd, &blk->ln1, R, pd, v->ln_eps);
        jm_linear16(c, b->wide, ld3, b->h, (size_t)pd, &q16, &blk->qkv, R, JK_EPI_STORE, NULL, b->ws);
        const struct jm_x16 o16 = jm_x16_for(c, &blk->out, b->wide16, (size_t)inner);
        attend(c, b, B, T, &o16);
        jm_linear16(c, b->tmp, (size_t)pd, b->att, (size_t)inner, &o16, &blk->out, R, JK_EPI_STORE, NULL,
                    b->ws);
        c->k.madd(b->x, (size_t)pd, b->tmp, (size_t)pd, mod + 2 * pd, ld6, b->x, (size_t)pd, 0.0f, R, pd, nt);

        /* MLP branch */
        c->k.layernorm(b->h, (size_t)pd, b->x, (size_t)pd, NULL, NULL, R, pd, p->adaln_eps, nt);
        c->k.madd(b->h, (size_t)pd, b->h, (size_t)pd, mod + 4 * pd, ld6, mod + 3 * pd, ld6, 1.0f, R, pd, nt);
        const struct jm_x16 u16 = jm_x16_for(c, &blk->up, b->h16, (size_t)pd);
        const struct jm_x16 m16 = jm_x16_for(c, &blk->down, b->wide16, (size_t)v->ffn);
        jm_layernorm16(c, b->h, (size_t)pd, &u16, b->h, (size_t)pd, &blk->ln2, R, pd, v->ln_eps);
        const bool d16 = jm_linear_act16(c, b->wide, (size_t)v->ffn, b->h, (size_t)pd, &u16, &blk->up, R,
                                         v->act, &m16, b->ws);
        jm_linear16(c, b->tmp, (size_t)pd, b->wide, (size_t)v->ffn, d16 ? &m16 : NULL, &blk->down, R,
                    JK_EPI_STORE, NULL, b->ws);
        c->k.madd(b->x, (size_t)pd, b->tmp, (size_t)pd, mod + 5 * pd, ld6, b->x, (size_t)pd, 0.0f, R, pd, nt);
    }

    /* x = norm(x); pred = proj2(act(proj0(x))) */
    if ((st = jm_cancel_point(c))) return st;
    const size_t hp = (size_t)p->proj0.n_out;
    const struct jm_x16 x16 = jm_x16_for(c, &p->proj0, b->h16, (size_t)pd);
    const struct jm_x16 p16 = jm_x16_for(c, &p->proj2, b->wide16, hp);
    jm_layernorm16(c, b->x, (size_t)pd, &x16, b->x, (size_t)pd, &p->norm, R, pd, v->ln_eps);
    const bool pr16 = jm_linear_act16(c, b->wide, hp, b->x, (size_t)pd, &x16, &p->proj0, R, p->proj_act,
                                      &p16, b->ws);
    jm_linear16(c, pred, (size_t)p->out_dim, b->wide, hp, pr16 ? &p16 : NULL, &p->proj2, R, JK_EPI_STORE,
                NULL, b->ws);
    return JEPA_OK;
}

/* Plan the scratch and the device copies of the inputs and the output; fill the frame
 * indices. emb_d / act_d / pred_d: device buffers (on the CPU the caller's own). */
static jepa_status prepare(struct jepa_ctx *c, int B, int T, size_t n_emb, size_t n_act, size_t n_out,
                           float **emb_d, float **act_d, float **pred_d, struct lewm_buf *b) {
    struct staged pos;
    const bool host = c->dev->host_memory;
    for (int pass = 0; pass < 2; pass++) {
        struct plan pl = plan_begin(c, pass);
        if (!host) {
            *emb_d = plan_dev(&pl, sizeof(float) * n_emb);
            *act_d = plan_dev(&pl, sizeof(float) * n_act);
            *pred_d = plan_dev(&pl, sizeof(float) * n_out);
        }
        plan_lewm(&pl, c, B, T, b, &pos);
        jepa_status st;
        if (!pass && (st = jm_ctx_reserve(c, &pl))) return st;
    }
    int32_t *ph = pos.host;
    for (int t = 0; t < T; t++) ph[t] = t;   /* causal: key j visible to query i iff i >= j */
    stage_upload(c, &pos);
    b->pos = pos.dev;
    return JEPA_OK;
}

static jepa_status check_inputs(struct jepa_ctx *c, const float *emb, size_t n_emb, const float *act,
                                size_t n_act) {
    jepa_status st = jm_check_finite(c, emb, n_emb, "embedding");
    return st ? st : jm_check_finite(c, act, n_act, "action");
}

jepa_status jm_lewm_predict(struct jepa_ctx *c, const float *emb, const float *actions, int B, int T,
                            float *pred) {
    jepa_status st = check_shape(c, B, T);
    if (st) return st;
    const struct jm_predictor *p = &c->m->pred;
    const size_t R = (size_t)B * T;
    const size_t n_emb = R * p->vit.d, n_act = R * p->action_dim, n_out = R * p->out_dim;
    if ((st = check_inputs(c, emb, n_emb, actions, n_act))) return st;
    float *emb_d = (float *)emb, *act_d = (float *)actions, *pred_d = pred;
    struct lewm_buf b;
    if ((st = prepare(c, B, T, n_emb, n_act, n_out, &emb_d, &act_d, &pred_d, &b))) return st;
    if (!c->dev->host_memory) {
        c->dev->upload(c->dev, emb_d, emb, sizeof(float) * n_emb);
        c->dev->upload(c->dev, act_d, actions, sizeof(float) * n_act);
    }
    if ((st = run_lewm(c, emb_d, act_d, B, T, pred_d, &b))) return st;
    c->dev->download(c->dev, pred, pred_d, sizeof(float) * n_out);
    return JEPA_OK;
}

/* Rollout of B sequences: the window of step s is the last w = min(T + s, n_frames)
 * embeddings of the sequence so far (history, then the predictions appended) with
 * their actions; its last prediction row is step s's output and the next embedding.
 * The windows live in one device buffer per sequence, [T + steps, pd], that the
 * predictions are appended to. */
jepa_status jm_lewm_rollout(struct jepa_ctx *c, const float *emb, int B, int T, const float *actions,
                            int steps, float *traj) {
    const struct jm_predictor *p = &c->m->pred;
    jepa_status st = need_lewm(c);
    if (st) return st;
    if (B < 1 || T < 1 || steps < 1)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "rollout of %d steps from %d sequences of %d frames: at least one of each",
                          steps, B, T);
    if (p->out_dim != p->vit.d)
        return jr_err_set(&c->err, JEPA_ERR_UNSUPPORTED,
                          "rollout feeds predictions back as embeddings, but jepa.pred.out_dim = %d differs from the embedding width %d",
                          p->out_dim, p->vit.d);
    const int64_t L = (int64_t)T + steps;    /* embeddings of a sequence at the end */
    if (L > JM_MAX_CLIP_TOKENS || (int64_t)B * L > JM_MAX_CLIP_TOKENS)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "rollout of %d steps from %d sequences of %d frames: more than %d rows",
                          steps, B, T, JM_MAX_CLIP_TOKENS);
    /* the widest window, that of the last step (T + steps - 1 frames, at most n_frames) */
    const int W = L - 1 < p->n_frames ? (int)(L - 1) : p->n_frames;
    const int pd = p->vit.d, A = p->action_dim;
    const size_t n_emb = (size_t)B * T * pd, n_act = (size_t)B * (L - 1) * A;
    if ((st = check_inputs(c, emb, n_emb, actions, n_act))) return st;

    /* device buffers: seq [B, L, pd] (history + appended predictions), the actions
     * [B, L - 1, A], one window's inputs [B, W, pd | A] and prediction [B, W, pd] */
    float *seq = NULL, *act_d = NULL, *win_e = NULL, *win_a = NULL, *win_p = NULL;
    struct lewm_buf b;
    struct staged pos;
    for (int pass = 0; pass < 2; pass++) {
        struct plan pl = plan_begin(c, pass);
        seq = plan_dev(&pl, sizeof(float) * (size_t)B * L * pd);
        act_d = plan_dev(&pl, sizeof(float) * n_act);
        win_e = plan_dev(&pl, sizeof(float) * (size_t)B * W * pd);
        win_a = plan_dev(&pl, sizeof(float) * (size_t)B * W * A);
        win_p = plan_dev(&pl, sizeof(float) * (size_t)B * W * pd);
        plan_lewm(&pl, c, B, W, &b, &pos);
        if (!pass && (st = jm_ctx_reserve(c, &pl))) return st;
    }
    int32_t *ph = pos.host;
    for (int t = 0; t < W; t++) ph[t] = t;   /* a narrower window reads a prefix */
    stage_upload(c, &pos);
    b.pos = pos.dev;
    for (int s = 0; s < B; s++)
        c->dev->upload(c->dev, seq + (size_t)s * L * pd, emb + (size_t)s * T * pd, sizeof(float) * (size_t)T * pd);
    c->dev->upload(c->dev, act_d, actions, sizeof(float) * n_act);

    for (int k = 0; k < steps; k++) {
        const int len = T + k, w = len < p->n_frames ? len : p->n_frames, t0 = len - w;
        for (int s = 0; s < B; s++) {   /* gather the windows: rows t0 .. len of each sequence */
            c->dev->copy(c->dev, win_e + (size_t)s * w * pd, seq + ((size_t)s * L + t0) * pd,
                         sizeof(float) * (size_t)w * pd);
            c->dev->copy(c->dev, win_a + (size_t)s * w * A, act_d + ((size_t)s * (L - 1) + t0) * A,
                         sizeof(float) * (size_t)w * A);
        }
        if ((st = run_lewm(c, win_e, win_a, B, w, win_p, &b))) return st;
        for (int s = 0; s < B; s++) {   /* append the last prediction row; it is the output */
            const float *last = win_p + ((size_t)s * w + w - 1) * pd;
            c->dev->copy(c->dev, seq + ((size_t)s * L + len) * pd, last, sizeof(float) * (size_t)pd);
        }
    }
    for (int s = 0; s < B; s++)
        c->dev->download(c->dev, traj + (size_t)s * steps * pd, seq + ((size_t)s * L + T) * pd,
                         sizeof(float) * (size_t)steps * pd);
    return JEPA_OK;
}
