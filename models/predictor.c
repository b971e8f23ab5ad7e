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
 * fixtures (tests/models/test_parity.c).
 */
#include <string.h>

#include "models/forward.h"

/* Image modality when every id lies in one temporal slice of the grid. */
static int ids_in_one_slice(const jepa_predict_params *p, int slice) {
    int t0 = (p->n_ctx ? p->ctx_ids[0] : p->tgt_ids[0]) / slice;
    for (int i = 0; i < p->n_ctx; i++) if (p->ctx_ids[i] / slice != t0) return 0;
    for (int i = 0; i < p->n_tgt; i++) if (p->tgt_ids[i] / slice != t0) return 0;
    return 1;
}

jepa_status predictor_forward(struct jepa_ctx *c, const float *tokens,
                              const jepa_predict_params *p, float *pred, float *ctx_out) {
    const struct jepa_model *m = c->m;
    const struct jm_predictor *pr = &m->pred;
    const struct jm_vit *vit = &pr->vit;
    const int pd = vit->d, hd = vit->head_dim, nt = c->nthreads;

    if (!m->has_pred)
        return jerr_set(&c->err, JEPA_ERR_ARG, "this model file has no predictor");
    if (pr->kind != JM_PRED_MASKED || pr->n_hier_in != 1)
        return jerr_set(&c->err, JEPA_ERR_UNSUPPORTED,
                        "predictor kind '%s' (n_hier_in %d): not implemented yet",
                        pr->kind == JM_PRED_MASKED ? "masked" : pr->kind == JM_PRED_AC ? "ac" : "lewm",
                        pr->n_hier_in);
    if (!p || !p->ctx_ids || !p->tgt_ids || p->n_ctx < 1 || p->n_tgt < 1)
        return jerr_set(&c->err, JEPA_ERR_ARG, "predict needs at least one context and one target id");
    if (ctx_out && !pr->context_proj)
        return jerr_set(&c->err, JEPA_ERR_ARG, "this predictor has no context projection");
    const int slice = pr->grid_size * pr->grid_size;
    for (int i = 0; i < p->n_ctx + p->n_tgt; i++) {
        int id = i < p->n_ctx ? p->ctx_ids[i] : p->tgt_ids[i - p->n_ctx];
        if (id < 0)
            return jerr_set(&c->err, JEPA_ERR_ARG, "%s id %d is negative",
                            i < p->n_ctx ? "context" : "target", id);
    }

    const int nc = p->n_ctx, ntg = p->n_tgt, n = nc + ntg;
    float *x = NULL, *h = NULL, *wide = NULL, *tmp = NULL, *cosb = NULL, *sinb = NULL;
    struct rope_pos *pos = NULL;
    int32_t *ids = NULL;
    void *ws = NULL;
    const int max_k = vit->ffn > m->enc.vit.d ? vit->ffn : m->enc.vit.d;
    for (int pass = 0; pass < 2; pass++) {
        struct arena_cursor cur = {pass ? c->arena.base : NULL, 0};
        x = arena_take(&cur, sizeof(float) * (size_t)n * pd);          /* [n, pd] */
        h = arena_take(&cur, sizeof(float) * (size_t)n * pd);          /* [n, pd] */
        wide = arena_take(&cur, sizeof(float) * (size_t)n * vit_wide_cols(vit));
        tmp = arena_take(&cur, sizeof(float) * (size_t)n * pd);
        pos = arena_take(&cur, sizeof(struct rope_pos) * (size_t)n);
        ids = arena_take(&cur, sizeof(int32_t) * (size_t)n);
        cosb = arena_take(&cur, sizeof(float) * (size_t)n * hd);
        sinb = arena_take(&cur, sizeof(float) * (size_t)n * hd);
        ws = arena_take(&cur, vit_ws_bytes(c, n, hd, max_k));
        jepa_status st;
        if (!pass && (st = ctx_reserve(c, cur.used))) return st;
    }

    /* x = [embed(ctx tokens); mask tokens] (+ modality) */
    linear(c, x, (size_t)pd, tokens, (size_t)m->enc.vit.d, &pr->embed, nc, JK_EPI_STORE, ws);
    int mi = p->mask_index % pr->n_mask_tokens;
    if (mi < 0) mi += pr->n_mask_tokens;
    const float *mask_tok = pr->mask_tokens + (size_t)mi * pd;
    for (int i = 0; i < ntg; i++) memcpy(x + (size_t)(nc + i) * pd, mask_tok, sizeof(float) * (size_t)pd);
    if (pr->modality_embed) {
        int image = p->modality == JEPA_MODALITY_IMAGE ||
                    (p->modality == JEPA_MODALITY_AUTO && ids_in_one_slice(p, slice));
        c->k.add(x, (size_t)pd, image ? pr->mod_embed_img : pr->mod_embed_video, 0, NULL, n, pd, nt);
    }

    /* positions of the ids on the grid_size x grid_size grid (raw, not interpolated) */
    memcpy(ids, p->ctx_ids, sizeof(int32_t) * (size_t)nc);
    memcpy(ids + nc, p->tgt_ids, sizeof(int32_t) * (size_t)ntg);
    rope_positions(pos, ids, n, pr->grid_size, pr->grid_size, pr->rope_interpolate, pr->rope_ref_grid);
    rope_tables(cosb, sinb, pos, n, hd, pr->rope_theta, pr->rope_layout);

    struct vit_scratch s = {.h = h, .wide = wide, .tmp = tmp, .cos = cosb, .sin = sinb,
                            .mask_pos = NULL, .ws = ws};
    for (int l = 0; l < vit->n_layer; l++) vit_block(c, vit, &vit->blk[l], x, n, &s);

    /* x = norm(x); project the targets (and the context) */
    c->k.layernorm(x, (size_t)pd, x, (size_t)pd, pr->norm.w, pr->norm.b, n, pd, vit->ln_eps, nt);
    linear(c, pred, (size_t)pr->out_dim, x + (size_t)nc * pd, (size_t)pd, &pr->proj, ntg,
           JK_EPI_STORE, ws);
    if (ctx_out)
        linear(c, ctx_out, (size_t)pr->out_dim, x, (size_t)pd, &pr->proj_context, nc,
               JK_EPI_STORE, ws);
    return JEPA_OK;
}
