/*
 * ac.c — the V-JEPA 2-AC action-conditioned predictor (jepa.pred.kind = ac), after Meta's
 * VisionTransformerPredictorAC (docs/world-models.md). B sequences of F frames, each frame
 * N = grid_size^2 encoder tokens, one action and one state:
 *
 *   x_f  = [action_embed(a_f); state_embed(s_f); embed(tokens_f)]   N + 2 rows per frame
 *   RoPE (Meta's tiled table, theta 10000): patch token (h, w) of frame f at (f, h, w); the
 *        action and state tokens of frame f rotate only their depth segment, at f
 *   n_layer pre-LN blocks, attention frame-causal (a token of frame f sees frames 0 .. f,
 *        all their rows: the kernel's position rule on frame ids, no N x N mask)
 *   pred = proj(norm(x)) on the patch rows only                   [B, F * N, out_dim]
 *
 * Row f N + i of a sequence's output is the predicted token i of frame f + 1. Device-
 * neutral like the other forwards. Tested against a float64 transcription of Meta's module
 * (tests/gen/gen_ac.py) by tests/models/test_world.c.
 */
#include "models/forward.h"

jepa_status jm_ac_predict(struct jepa_ctx *c, const float *tokens, const float *actions, const float *states,
                          int B, int F, float *pred) {
    const struct jepa_model *m = c->m;
    const struct jm_predictor *pr = &m->pred;
    if (!m->has_pred || pr->kind != JM_PRED_AC)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "this model file has no V-JEPA 2-AC predictor (jepa.pred.kind = ac)");
    const struct jm_vit *vit = &pr->vit;
    const int g = pr->grid_size, N = g * g, NT = N + 2, pd = vit->d, hd = vit->head_dim, nt = c->nthreads;
    const int D = m->enc.vit.d, A = pr->action_dim, S = pr->state_dim, OD = pr->out_dim;
    if (B < 1 || F < 1)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "%d sequences of %d frames: at least one of one", B, F);
    if (S < 1 || !pr->state_embed.w)
        return jr_err_set(&c->err, JEPA_ERR_UNSUPPORTED, "a V-JEPA 2-AC predictor without state tokens (jepa.pred.state_dim = 0)");
    if ((int64_t)B * F * NT > JM_MAX_CLIP_TOKENS)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "%d sequences of %d frames of %d tokens: more than %d rows", B, F, NT,
                          JM_MAX_CLIP_TOKENS);
    const int n = F * NT, R = B * n, BF = B * F, BFN = BF * N;
    jepa_status st;
    if ((st = jm_check_finite(c, tokens, (size_t)BFN * D, "token")) ||
        (st = jm_check_finite(c, actions, (size_t)BF * A, "action")) ||
        (st = jm_check_finite(c, states, (size_t)BF * S, "state")))
        return st;

    struct jk_device *dev = c->dev;
    const bool host = dev->host_memory;
    float *tok_d = NULL, *act_d = NULL, *st_d = NULL, *src = NULL, *x = NULL, *h = NULL, *wide = NULL, *tmp = NULL,
          *xo = NULL, *out_d = NULL;
    struct staged cosb, sinb, posb, gin, gout;
    struct rope_pos *rp = NULL;
    void *ws = NULL;
    const int ks[] = {D, A, S, pd, vit->ffn};
    for (int pass = 0; pass < 2; pass++) {
        struct plan pl = plan_begin(c, pass);
        if (!host) {
            tok_d = plan_dev(&pl, sizeof(float) * (size_t)BFN * D);
            act_d = plan_dev(&pl, sizeof(float) * (size_t)BF * A);
            st_d = plan_dev(&pl, sizeof(float) * (size_t)BF * S);
            out_d = plan_dev(&pl, sizeof(float) * (size_t)BFN * OD);
        }
        src = plan_dev(&pl, sizeof(float) * (size_t)R * pd);   /* [actions | states | tokens], embedded */
        x = plan_dev(&pl, sizeof(float) * (size_t)R * pd);
        h = plan_dev(&pl, sizeof(float) * (size_t)R * pd);
        wide = plan_dev(&pl, sizeof(float) * (size_t)R * jm_vit_wide_cols(vit));
        tmp = plan_dev(&pl, sizeof(float) * (size_t)R * pd);
        xo = plan_dev(&pl, sizeof(float) * (size_t)BFN * pd);
        cosb = plan_staged(&pl, sizeof(float) * (size_t)n * hd);
        sinb = plan_staged(&pl, sizeof(float) * (size_t)n * hd);
        posb = plan_staged(&pl, sizeof(int32_t) * (size_t)n);
        gin = plan_staged(&pl, sizeof(int32_t) * (size_t)R);     /* x row r <- src row */
        gout = plan_staged(&pl, sizeof(int32_t) * (size_t)BFN);  /* patch rows of x */
        rp = plan_host(&pl, sizeof(struct rope_pos) * (size_t)n);
        ws = plan_dev(&pl, jm_vit_ws_bytes(c, n, hd, ks, (int)(sizeof ks / sizeof *ks)));
        if (!pass && (st = jm_ctx_reserve(c, &pl))) return st;
    }
    const float *tok = tokens, *act = actions, *sta = states;
    float *out = pred;
    if (!host) {
        dev->upload(dev, tok_d, tokens, sizeof(float) * (size_t)BFN * D);
        dev->upload(dev, act_d, actions, sizeof(float) * (size_t)BF * A);
        dev->upload(dev, st_d, states, sizeof(float) * (size_t)BF * S);
        tok = tok_d, act = act_d, sta = st_d, out = out_d;
    }
    /* the three embeddings into one source, then x in Meta's order by one gather */
    jm_linear_forward(c, src, (size_t)pd, act, (size_t)A, &pr->action_embed, BF, JK_EPI_STORE, ws);
    jm_linear_forward(c, src + (size_t)BF * pd, (size_t)pd, sta, (size_t)S, &pr->state_embed, BF, JK_EPI_STORE, ws);
    jm_linear_forward(c, src + (size_t)2 * BF * pd, (size_t)pd, tok, (size_t)D, &pr->embed, BFN, JK_EPI_STORE, ws);
    int32_t *gi = gin.host, *go = gout.host, *fp = posb.host;
    for (int b = 0; b < B; b++)
        for (int f = 0; f < F; f++) {
            const int bf = b * F + f, r0 = bf * NT;
            gi[r0] = bf;
            gi[r0 + 1] = BF + bf;
            for (int i = 0; i < N; i++) {
                gi[r0 + 2 + i] = 2 * BF + bf * N + i;
                go[bf * N + i] = r0 + 2 + i;
            }
        }
    for (int f = 0; f < F; f++)
        for (int j = 0; j < NT; j++) {
            const int r = f * NT + j, p = j - 2;
            fp[r] = f;   /* frame-causal: key visible iff its frame <= the query's */
            rp[r] = j < 2 ? (struct rope_pos){(float)f, 0, 0, false, true}
                          : (struct rope_pos){(float)f, (float)(p / g), (float)(p % g), false, false};
        }
    jm_rope_tables(cosb.host, sinb.host, rp, n, hd, pr->rope_theta, pr->rope_layout);
    stage_upload(c, &gin), stage_upload(c, &gout), stage_upload(c, &posb);
    stage_upload(c, &cosb), stage_upload(c, &sinb);
    c->k.gather(x, (size_t)pd, src, (size_t)pd, gin.dev, R, pd, nt);

    struct vit_scratch s = {.h = h, .wide = wide, .tmp = tmp, .cos = cosb.dev, .sin = sinb.dev,
                            .mask_pos = pr->frame_causal ? posb.dev : NULL, .ws = ws};
    for (int l = 0; l < vit->n_layer; l++) jm_vit_block(c, vit, &vit->blk[l], x, n, B, &s);

    /* the patch rows: norm, projection back to the encoder's width */
    c->k.gather(xo, (size_t)pd, x, (size_t)pd, gout.dev, BFN, pd, nt);
    c->k.layernorm(xo, (size_t)pd, xo, (size_t)pd, dw(c, pr->norm.w), dw(c, pr->norm.b), BFN, pd, vit->ln_eps, nt);
    jm_linear_forward(c, out, (size_t)OD, xo, (size_t)pd, &pr->proj, BFN, JK_EPI_STORE, ws);
    dev->download(dev, pred, out, sizeof(float) * (size_t)BFN * OD);
    return JEPA_OK;
}
