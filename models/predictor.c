/*
 * predictor.c — the masked predictors of V-JEPA 2 and V-JEPA 2.1.
 *
 *   ctx  = tokens[ctx] . Wembed^T + b                      [n_ctx, pd]
 *   tgt  = mask_tokens[mask_index % n_mask] for every id    [n_tgt, pd]
 *   x    = [ctx; tgt]          (2.1: + modality embedding on every row)
 *   positions of [ctx_ids; tgt_ids] decoded on the square grid_size grid (raw integers,
 *   never interpolated) -> RoPE tables; n_layer pre-LN blocks; x = pred.norm(x)
 *   pred    = x[n_ctx:] . Wproj^T + b                       [n_tgt, out_dim]
 *   ctx_out = x[:n_ctx] . Wproj_ctx^T + b  (2.1 context projection)
 *
 * Meta sorts the concatenated tokens by id and unsorts afterwards; attention is
 * permutation-equivariant, so the rows stay in caller order here. Tested against Meta's
 * fixtures (tests/models/test_parity.c). Device-neutral like the encoder (forward.h): the
 * mask-token rows are zeroed and the token added with a broadcast row.
 */
#include "models/forward.h"

/* Image modality when every id lies in one temporal slice of the grid. */
static int ids_in_one_slice(const jepa_predict_params *p, int slice) {
    int t0 = (p->n_ctx ? p->ctx_ids[0] : p->tgt_ids[0]) / slice;
    for (int i = 0; i < p->n_ctx; i++) if (p->ctx_ids[i] / slice != t0) return 0;
    for (int i = 0; i < p->n_tgt; i++) if (p->tgt_ids[i] / slice != t0) return 0;
    return 1;
}

/* What this predictor runs and what p asks of it, every id inside the predictor's grid. */
static jepa_status check_predict(struct jepa_ctx *c, const jepa_predict_params *p, const float *ctx_out) {
    const struct jepa_model *m = c->m;
    const struct jm_predictor *pr = &m->pred;
    if (!m->has_pred)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "this model file has no predictor");
    if (pr->kind == JM_PRED_LEWM)
        return jr_err_set(&c->err, JEPA_ERR_ARG,
                          "this is a LeWM world-model predictor: it runs through jepa_ctx_lewm_predict / _rollout");
    if (pr->kind != JM_PRED_MASKED || pr->n_hier_in != 1)
        return jr_err_set(&c->err, JEPA_ERR_UNSUPPORTED,
                        "predictor kind '%s' (n_hier_in %d): not implemented yet",
                        pr->kind == JM_PRED_MASKED ? "masked" : "ac", pr->n_hier_in);
    if (m->enc.pos_type != JM_POS_ROPE3D)
        return jr_err_set(&c->err, JEPA_ERR_UNSUPPORTED,
                          "a masked predictor with a position table (pred.pos_embed, %s): not implemented yet",
                          m->family_name);
    if (!p || !p->ctx_ids || !p->tgt_ids || p->n_ctx < 1 || p->n_tgt < 1)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "predict needs at least one context and one target id");
    if (ctx_out && !pr->context_proj)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "this predictor has no context projection");
    /* Ids index the predictor's position space: the training clip's tubelets x the
     * grid_size^2 grid (the loader bounds that product). Each list holds at most that
     * many ids (repeats allowed), so the attention is bounded by the grid, not by the
     * caller. */
    const int slice = pr->grid_size * pr->grid_size;
    const int64_t grid = (int64_t)(m->enc.n_frames / m->enc.tubelet) * slice;
    if (p->n_ctx > grid || p->n_tgt > grid)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "%d context / %d target ids: at most %lld each (the predictor's grid)",
                          p->n_ctx, p->n_tgt, (long long)grid);
    for (int i = 0; i < p->n_ctx + p->n_tgt; i++) {
        int id = i < p->n_ctx ? p->ctx_ids[i] : p->tgt_ids[i - p->n_ctx];
        if (id < 0 || id >= grid)
            return jr_err_set(&c->err, JEPA_ERR_ARG, "%s id %d at position %d is %s", i < p->n_ctx ? "context" : "target",
                              id, i < p->n_ctx ? i : i - p->n_ctx,
                              id < 0 ? "negative" : "outside the predictor's grid (jepa.enc.n_frames / tubelet x grid_size^2)");
    }
    return JEPA_OK;
}

/* x = [embed(ctx tokens); mask tokens] (+ modality): the n_ctx + n_tgt rows of width pd the
 * blocks take. tok: the context tokens as kernels read them. */
static void embed_predictor_input(struct jepa_ctx *c, const jepa_predict_params *p, const float *tok, float *x,
                                  uint16_t *tok16, void *ws) {
    const struct jm_predictor *pr = &c->m->pred;
    struct jk_device *dev = c->dev;
    const int pd = pr->vit.d, nt = c->nthreads, D = c->m->enc.vit.d;
    const int nc = p->n_ctx, ntg = p->n_tgt, n = nc + ntg, slice = pr->grid_size * pr->grid_size;
    const struct jm_x16 t16 = jm_x16_for(c, &pr->embed, tok16, (size_t)D);   /* tok's copy */
    const bool tok16_on = jm_round16(c, &t16, tok, (size_t)D, nc, D);
    jm_linear16(c, x, (size_t)pd, tok, (size_t)D, tok16_on ? &t16 : NULL, &pr->embed, nc,
                JK_EPI_STORE, NULL, ws);
    int mi = p->mask_index % pr->n_mask_tokens;
    if (mi < 0) mi += pr->n_mask_tokens;
    const float *mask_tok = pr->mask_tokens + (size_t)mi * pd;
    float *xt = x + (size_t)nc * pd;   /* target rows = 0 + the mask token (broadcast) */
    dev->zero(dev, xt, sizeof(float) * (size_t)ntg * pd);
    c->k.add(xt, (size_t)pd, dw(c, mask_tok), 0, NULL, ntg, pd, nt);
    if (pr->modality_embed) {
        int image = p->modality == JEPA_MODALITY_IMAGE ||
                    (p->modality == JEPA_MODALITY_AUTO && ids_in_one_slice(p, slice));
        c->k.add(x, (size_t)pd, dw(c, image ? pr->mod_embed_img : pr->mod_embed_video), 0, NULL, n,
                 pd, nt);
    }
}

jepa_status jm_predictor_forward(struct jepa_ctx *c, const float *tokens,
                              const jepa_predict_params *p, float *pred, float *ctx_out) {
    const struct jepa_model *m = c->m;
    const struct jm_predictor *pr = &m->pred;
    const struct jm_vit *vit = &pr->vit;
    struct jk_device *dev = c->dev;
    const int pd = vit->d, hd = vit->head_dim;

    jepa_status cst = check_predict(c, p, ctx_out);
    if (cst) return cst;
    const int nc = p->n_ctx, ntg = p->n_tgt, n = nc + ntg, D = m->enc.vit.d;
    jepa_status fst = jm_check_finite(c, tokens, (size_t)nc * D, "context token");
    if (fst) return fst;
    const bool host = dev->host_memory;
    float *x = NULL, *h = NULL, *wide = NULL, *tmp = NULL, *tok_d = NULL, *pred_d = NULL,
          *ctx_d = NULL;
    struct rope_pos *pos = NULL;
    struct staged cosb, sinb;
    void *ws = NULL;
    const int ks[] = {pd, vit->ffn, D};   /* K of every matmul: blocks, embed (proj: pd) */
    /* 16-bit copies (forward.h): h16 [n, pd] for the blocks and the projections, wide16
     * [n, ffn] for the blocks and first [n_ctx, D] of the uploaded tokens for the embedding
     * (its larger size); each adds its size rounded up to the arena alignment */
    const bool blk16 = jm_vit_x16(c, vit);
    const bool out16 = jm_x16_type(c, &pr->proj) >= 0 ||
                       (ctx_out && jm_x16_type(c, &pr->proj_context) >= 0);
    size_t wide16_n = blk16 ? (size_t)n * vit->ffn : 0;
    if (jm_x16_type(c, &pr->embed) >= 0 && wide16_n < (size_t)nc * D) wide16_n = (size_t)nc * D;
    uint16_t *h16 = NULL, *wide16 = NULL;
    for (int pass = 0; pass < 2; pass++) {
        struct plan pl = plan_begin(c, pass);
        if (blk16 || out16) h16 = plan_dev(&pl, jm_x16_bytes(true, (size_t)n * pd));
        if (wide16_n) wide16 = plan_dev(&pl, jm_x16_bytes(true, wide16_n));
        if (!host) tok_d = plan_dev(&pl, sizeof(float) * (size_t)nc * D);  /* [n_ctx, D] */
        x = plan_dev(&pl, sizeof(float) * (size_t)n * pd);          /* [n, pd] */
        h = plan_dev(&pl, sizeof(float) * (size_t)n * pd);          /* [n, pd] */
        wide = plan_dev(&pl, sizeof(float) * (size_t)n * jm_vit_wide_cols(vit));
        tmp = plan_dev(&pl, sizeof(float) * (size_t)n * pd);
        pos = plan_host(&pl, sizeof(struct rope_pos) * (size_t)n);
        cosb = plan_staged(&pl, sizeof(float) * (size_t)n * hd);
        sinb = plan_staged(&pl, sizeof(float) * (size_t)n * hd);
        if (!host) {
            pred_d = plan_dev(&pl, sizeof(float) * (size_t)ntg * pr->out_dim);
            if (ctx_out) ctx_d = plan_dev(&pl, sizeof(float) * (size_t)nc * pr->out_dim);
        }
        ws = plan_dev(&pl, jm_vit_ws_bytes(c, n, vit->n_head, hd, ks, 3));
        jepa_status st;
        if (!pass && (st = jm_ctx_reserve(c, &pl))) return st;
    }
    const float *tok = tokens;   /* the input tokens as kernels read them */
    if (host) {   /* the caller's buffers are the device buffers */
        pred_d = pred;
        ctx_d = ctx_out;
    } else {
        dev->upload(dev, tok_d, tokens, sizeof(float) * (size_t)nc * D);
        tok = tok_d;
    }

    embed_predictor_input(c, p, tok, x, wide16, ws);

    /* positions of [ctx_ids; tgt_ids] on the grid_size x grid_size grid (raw, not
     * interpolated): tables on the host, uploaded */
    jm_rope_positions(pos, p->ctx_ids, nc, pr->grid_size, pr->grid_size, pr->rope_interpolate,
                   pr->rope_ref_grid);
    jm_rope_positions(pos + nc, p->tgt_ids, ntg, pr->grid_size, pr->grid_size, pr->rope_interpolate,
                   pr->rope_ref_grid);
    jm_rope_tables(cosb.host, sinb.host, pos, n, hd, pr->rope_theta, pr->rope_layout);
    stage_upload(c, &cosb);
    stage_upload(c, &sinb);

    struct vit_scratch s = {.h = h, .wide = wide, .tmp = tmp, .cos = cosb.dev, .sin = sinb.dev,
                            .mask_pos = NULL, .ws = ws, .h16 = blk16 ? h16 : NULL,
                            .wide16 = blk16 ? wide16 : NULL};
    for (int l = 0; l <= vit->n_layer; l++) {   /* a cancel point before each block and after the last */
        if ((cst = jm_cancel_point(c))) return cst;
        if (l < vit->n_layer) jm_vit_block(c, vit, &vit->blk[l], x, n, 1, &s);
    }

    /* x = norm(x) (and its copy, in proj's type or else proj_context's); project the
     * targets (and the context) */
    struct jm_x16 x16 = jm_x16_for(c, &pr->proj, h16, (size_t)pd);
    if (!x16.p && ctx_out) x16 = jm_x16_for(c, &pr->proj_context, h16, (size_t)pd);
    jm_layernorm16(c, x, (size_t)pd, &x16, x, (size_t)pd, &pr->norm, n, pd, vit->ln_eps);
    struct jm_x16 t16 = x16;   /* the target rows' */
    if (t16.p) t16.p += (size_t)nc * pd;
    jm_linear16(c, pred_d, (size_t)pr->out_dim, x + (size_t)nc * pd, (size_t)pd, &t16, &pr->proj,
                ntg, JK_EPI_STORE, NULL, ws);
    if (ctx_out)
        jm_linear16(c, ctx_d, (size_t)pr->out_dim, x, (size_t)pd, &x16, &pr->proj_context, nc,
                    JK_EPI_STORE, NULL, ws);
    dev->download(dev, pred, pred_d, sizeof(float) * (size_t)ntg * pr->out_dim);
    if (ctx_out) dev->download(dev, ctx_out, ctx_d, sizeof(float) * (size_t)nc * pr->out_dim);
    return JEPA_OK;
}
