/*
 * encoder.c — the ViT encoders of every family, one forward:
 *
 *   clip [C, T, H, W] --patchify(tubelet, p)--> [n, C*tub*p*p] --patch_embed--> patches [n, d]
 *   tokens x = [CLS?; patches]                                  (hfvit, lewm, levjepa: CLS)
 *   positions:  learned / sincos table added (row 0 = CLS slot; patch rows interpolated
 *               bicubically for grids other than the training grid)     ijepa, hfvit, lewm
 *           or  3-D RoPE tables on q, k (CLS: identity row)    vjepa2, vjepa2_1, levjepa
 *   V-JEPA 2.1: + modality embedding; image path = 1-frame tokenizer patch_embed_img
 *   masked encoder: keep only the context patch ids (with their true positions)
 *   n_layer pre-LN blocks (levjepa: block-causal attention by frame)
 *   tokens = enc.norm(x); pooled = mean(patch tokens); cls = row 0; lewm: emb = proj(cls)
 *   V-JEPA 2.1: hier[k] = hier_norm_k(x after block hier_layers[k])
 *
 * RoPE positions are decoded on the grid of the actual input (Meta's VisionTransformer;
 * Hugging Face's V-JEPA 2 uses the square training grid, which agrees only at the
 * training size). V-JEPA 2.1 rescales h, w onto rope_ref_grid. Tested against Meta's
 * and Hugging Face's outputs (tests/models/test_parity.c).
 *
 * Batch: B clips of one shape [B, C, T, H, W] run as one [B*n, d] matrix through every
 * row-wise op; patchify, the position tables, RoPE, attention and the pooling run per
 * clip with the same tables (and, masked, the same context ids). Outputs are stacked.
 * tests/models/test_batch.c checks a batch against single runs.
 *
 * Device-neutral (models/forward.h): host code reads and writes only host memory (the
 * caller's clip and output buffers, the staged tables); everything else is a kernel or a
 * device copy.
 */
#include <stdint.h>

#include "models/forward.h"
#include "models/posembed.h"

/* The tokenizer an input goes through. */
struct tokenizer {
    const struct jm_linear *pe;   /* patch embedding */
    int tubelet;
    const float *modality;        /* [d] added to every token, or NULL */
    int repeat;                   /* frames to repeat a single frame into (0: none) */
};

static jepa_status pick_tokenizer(struct jepa_ctx *c, int T, jepa_input_kind kind,
                                  struct tokenizer *tk) {
    const struct jm_encoder *e = &c->m->enc;
    int image = e->image_patch_embed && T == 1 && kind != JEPA_INPUT_VIDEO;
    tk->pe = image ? &e->patch_embed_img : &e->patch_embed;
    tk->tubelet = image ? 1 : e->tubelet;
    tk->modality = e->modality_embed ? (image ? e->mod_embed_img : e->mod_embed_video) : NULL;
    tk->repeat = 0;
    if (T % tk->tubelet) {
        if (T != 1)
            return jr_err_set(&c->err, JEPA_ERR_ARG,
                            "clip of %d frames: the frame count must be a multiple of the tubelet "
                            "size %d (or 1 for a still image)", T, tk->tubelet);
        tk->repeat = tk->tubelet;   /* the HF processor repeats a still to fill the tubelet */
    }
    return JEPA_OK;
}

static int family_supported(enum jm_family f) {
    return f == JM_FAMILY_VJEPA2 || f == JM_FAMILY_VJEPA2_1 || f == JM_FAMILY_IJEPA ||
           f == JM_FAMILY_HFVIT || f == JM_FAMILY_LEWM || f == JM_FAMILY_LEVJEPA;
}

jepa_status jm_encoder_forward(struct jepa_ctx *c, const float *x_in, int T, int H, int W,
                            const jepa_embed_params *p, jepa_embed_out *out) {
    const struct jepa_model *m = c->m;
    const struct jm_encoder *e = &m->enc;
    const struct jm_vit *vit = &e->vit;
    struct jk_device *dev = c->dev;
    const int d = vit->d, hd = vit->head_dim, C = e->in_chans, P = e->patch, nt = c->nthreads;
    const int rope = e->pos_type == JM_POS_ROPE3D;
    const int ncls = e->cls ? 1 : 0;
    const bool host = dev->host_memory;

    if (!family_supported(m->family) || e->n_registers > 0)
        return jr_err_set(&c->err, JEPA_ERR_UNSUPPORTED,
                        "family '%s'%s: the encoder forward is not implemented yet", m->family_name,
                        e->n_registers > 0 ? " with register tokens" : "");
    if (T < 1 || H < P || W < P || H % P || W % P)
        return jr_err_set(&c->err, JEPA_ERR_ARG,
                        "input %dx%dx%d: height and width must be positive multiples of the "
                        "patch size %d", T, H, W, P);
    if (p && p->batch < 0)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "batch %d: the clip count must be 0, 1 or more",
                        p->batch);
    if (out && out->cls && !e->cls)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "family '%s' has no CLS token", m->family_name);
    if (out && out->emb && !e->has_proj)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "family '%s' has no projector (emb is LeWM's)",
                        m->family_name);
    if (out && out->hier && !e->n_hier)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "family '%s' has no hierarchical outputs",
                        m->family_name);

    struct tokenizer tk;
    jepa_status st = pick_tokenizer(c, T, p ? p->kind : JEPA_INPUT_AUTO, &tk);
    if (st) return st;
    const int B = p && p->batch > 1 ? p->batch : 1;     /* clips */
    const int Tin = tk.repeat ? tk.repeat : T;
    const int gt = Tin / tk.tubelet, gh = H / P, gw = W / P;
    const int n_patch = gt * gh * gw;                   /* patch tokens of one clip */
    const int F = tk.pe->n_in;                          /* C * tubelet * P * P */
    const int masked = p && p->ctx_ids;
    const int n = ncls + (masked ? p->n_ctx : n_patch); /* rows of one clip through the blocks */
    if (masked) {
        if (p->n_ctx < 1) return jr_err_set(&c->err, JEPA_ERR_ARG, "masked encoder: no context ids");
        for (int i = 0; i < p->n_ctx; i++)
            if (p->ctx_ids[i] < 0 || p->ctx_ids[i] >= n_patch)
                return jr_err_set(&c->err, JEPA_ERR_ARG,
                                "context id %d at position %d is outside the %d-token grid",
                                (int)p->ctx_ids[i], i, n_patch);
    }
    const int g0 = e->img_size / P;                     /* training grid (square) */
    if (!rope && (e->n_frames / e->tubelet != 1 || gt != 1))
        return jr_err_set(&c->err, JEPA_ERR_UNSUPPORTED,
                        "family '%s': position tables for video inputs are not implemented",
                        m->family_name);
    const int interp = !rope && (gh != g0 || gw != g0); /* table resampled to this grid */
    const int rows0 = ncls + n_patch;                   /* rows of one clip before masking */
    const size_t in_floats = (size_t)C * T * H * W;     /* one clip of the caller's input */
    const size_t clip_floats = (size_t)C * Tin * H * W; /* one clip as patchify reads it */

    /* Where the patch embeddings go: straight into x's patch rows, except when masked
     * (into h, gathered into x afterwards). They form one [B*n_patch, d] matrix unless a
     * CLS row separates the clips' patch rows in x. */
    const int pcontig = masked || !ncls;

    /* ---- plan: count, reserve, carve ---- */
    const int wide_cols = jm_vit_wide_cols(vit) > F ? jm_vit_wide_cols(vit) : F;
    /* the K of every matmul: blocks (d, ffn), patch embedding, LeWM projector */
    const int ks[] = {d, vit->ffn, F, e->has_proj ? e->proj0.n_out : d};
    const bool want_tokens = out && out->tokens, want_pooled = out && out->pooled;
    const bool want_hier = out && out->hier, want_emb = out && out->emb;
    float *clip = NULL, *x = NULL, *h = NULL, *wide = NULL, *tmp = NULL, *emb_mid = NULL;
    float *pooled_d = NULL, *hier_d = NULL, *emb_d = NULL;
    int32_t *ids_d = NULL;
    struct rope_pos *pos = NULL;
    struct staged cosb = {0}, sinb = {0}, pos_tab = {0}, frame = {0};
    void *ws = NULL;
    for (int pass = 0; pass < 2; pass++) {
        struct plan pl = plan_begin(c, pass);
        /* the clip as patchify reads it: repeated frames, or a device copy of the input */
        if (tk.repeat || !host) clip = plan_dev(&pl, sizeof(float) * (size_t)B * clip_floats);
        x = plan_dev(&pl, sizeof(float) * (size_t)B * n * d);            /* [B*n, d] */
        h = plan_dev(&pl, sizeof(float) * (size_t)B * rows0 * d);        /* [B*rows0, d] */
        wide = plan_dev(&pl, sizeof(float) * (size_t)B * rows0 * wide_cols);
        tmp = e->layer_scale ? plan_dev(&pl, sizeof(float) * (size_t)B * n * d) : NULL;
        if (rope) {
            pos = plan_host(&pl, sizeof(struct rope_pos) * (size_t)n);
            cosb = plan_staged(&pl, sizeof(float) * (size_t)n * hd);     /* [n, hd] */
            sinb = plan_staged(&pl, sizeof(float) * (size_t)n * hd);
        }
        if (interp) pos_tab = plan_staged(&pl, sizeof(float) * (size_t)n_patch * d);
        if (e->attn_mode == JM_ATTN_BLOCK_CAUSAL)
            frame = plan_staged(&pl, sizeof(int32_t) * (size_t)n);
        if (masked && !host) ids_d = plan_dev(&pl, sizeof(int32_t) * (size_t)p->n_ctx);
        if (want_emb) emb_mid = plan_dev(&pl, sizeof(float) * (size_t)B * e->proj0.n_out);
        if (!host) {   /* outputs before their download (the CPU writes the caller's buffers) */
            if (want_pooled) pooled_d = plan_dev(&pl, sizeof(float) * (size_t)B * d);
            if (want_hier) hier_d = plan_dev(&pl, sizeof(float) * (size_t)B * e->n_hier * n * d);
            if (want_emb) emb_d = plan_dev(&pl, sizeof(float) * (size_t)B * e->proj2.n_out);
        }
        ws = plan_dev(&pl, jm_vit_ws_bytes(c, n, hd, ks, (int)(sizeof ks / sizeof *ks)));
        if (!pass && (st = jm_ctx_reserve(c, &pl))) return st;
    }
    if (host) {
        pooled_d = want_pooled ? out->pooled : NULL;
        hier_d = want_hier ? out->hier : NULL;
        emb_d = want_emb ? out->emb : NULL;
    }

    /* ---- the clip on the device: [B, C, Tin, H, W] ---- */
    const float *src = x_in;
    if (tk.repeat) {   /* [C, 1, H, W] -> [C, repeat, H, W]: one upload per plane */
        const size_t plane = (size_t)H * W;
        for (int b = 0; b < B; b++)
            for (int ch = 0; ch < C; ch++)
                for (int t = 0; t < Tin; t++)
                    dev->upload(dev,
                                clip + (size_t)b * clip_floats + ((size_t)ch * Tin + t) * plane,
                                x_in + (size_t)b * in_floats + (size_t)ch * plane,
                                plane * sizeof(float));
        src = clip;
    } else if (!host) {
        dev->upload(dev, clip, x_in, sizeof(float) * (size_t)B * in_floats);
        src = clip;
    }

    /* ---- patch embeddings = patchify(clip) . Wpe^T + b (+ modality embedding) ---- */
    float *pe = masked ? h : x + (size_t)ncls * d;      /* patch rows of clip 0 */
    const size_t pstride = pcontig ? (size_t)n_patch * d : (size_t)n * d;   /* clip to clip */
    for (int b = 0; b < B; b++)                                          /* [B*n_patch, F] */
        c->k.patchify(wide + (size_t)b * n_patch * F, src + (size_t)b * clip_floats, C, Tin, H,
                      W, tk.tubelet, P, nt);
    const int nblk = pcontig ? 1 : B, blk_rows = pcontig ? B * n_patch : n_patch;
    for (int i = 0; i < nblk; i++) {
        float *pb = pe + (size_t)i * pstride;
        jm_linear_forward(c, pb, (size_t)d, wide + (size_t)i * n_patch * F, (size_t)F, tk.pe, blk_rows,
               JK_EPI_STORE, ws);
        if (tk.modality) c->k.add(pb, (size_t)d, dw(c, tk.modality), 0, NULL, blk_rows, d, nt);
    }
    if (ncls)   /* the CLS row of every clip */
        for (int b = 0; b < B; b++)
            dev->copy(dev, x + (size_t)b * n * d, dw(c, e->cls_token), sizeof(float) * (size_t)d);

    /* ---- absolute positions: table rows added (CLS slot first), interpolated if needed ---- */
    if (!rope) {
        const float *tab = dw(c, e->pos_embed + (size_t)ncls * d);
        if (interp) {
            jm_pos_embed_interpolate(pos_tab.host, e->pos_embed + (size_t)ncls * d, g0, g0, gh, gw, d);
            stage_upload(c, &pos_tab);
            tab = pos_tab.dev;
        }
        for (int b = 0; b < B; b++)
            c->k.add(pe + (size_t)b * pstride, (size_t)d, tab, (size_t)d, NULL, n_patch, d, nt);
        if (ncls)   /* row 0 of the table on every clip's CLS row */
            c->k.add(x, (size_t)n * d, dw(c, e->pos_embed), 0, NULL, B, d, nt);
    }

    /* ---- masked encoder: keep the context patch rows (the same ids in every clip) ---- */
    if (masked) {
        const int32_t *ids = p->ctx_ids;
        if (!host) {
            dev->upload(dev, ids_d, p->ctx_ids, sizeof(int32_t) * (size_t)p->n_ctx);
            ids = ids_d;
        }
        for (int b = 0; b < B; b++)
            c->k.gather(x + ((size_t)b * n + ncls) * d, (size_t)d, pe + (size_t)b * pstride,
                        (size_t)d, ids, p->n_ctx, d, nt);
    }

    /* ---- RoPE tables of the kept rows (t, h, w on the real grid; CLS: identity) and the
     * block-causal frame ids: one clip's worth, computed on the host ---- */
    const int32_t *kept = masked ? p->ctx_ids : NULL;  /* patch id of row ncls + i (NULL: i) */
    if (rope) {
        if (ncls) pos[0] = (struct rope_pos){0, 0, 0, true};
        jm_rope_positions(pos + ncls, kept, n - ncls, gh, gw, e->rope_interpolate, e->rope_ref_grid);
        jm_rope_tables(cosb.host, sinb.host, pos, n, hd, e->rope_theta, e->rope_layout);
        stage_upload(c, &cosb);
        stage_upload(c, &sinb);
    }
    if (frame.dev) {   /* key j visible to query i iff frame(i) >= frame(j) */
        int32_t *fr = frame.host;
        if (ncls) fr[0] = INT32_MAX;   /* CLS row open, CLS column closed */
        for (int i = 0; i < n - ncls; i++) fr[ncls + i] = (kept ? kept[i] : i) / (gh * gw);
        stage_upload(c, &frame);
    }

    /* ---- blocks ---- */
    struct vit_scratch s = {.h = h, .wide = wide, .tmp = tmp, .cos = cosb.dev, .sin = sinb.dev,
                            .mask_pos = frame.dev, .ws = ws};
    int next_hier = 0;
    for (int l = 0; l < vit->n_layer; l++) {
        jm_vit_block(c, vit, &vit->blk[l], x, n, B, &s);
        if (next_hier < e->n_hier && e->hier_layers[next_hier] == l) {
            if (want_hier)   /* [B, n_hier, n, d]: level k of clip b */
                for (int b = 0; b < B; b++)
                    c->k.layernorm(hier_d + ((size_t)b * e->n_hier + next_hier) * n * d, (size_t)d,
                                   x + (size_t)b * n * d, (size_t)d,
                                   dw(c, e->hier_norm[next_hier].w),
                                   dw(c, e->hier_norm[next_hier].b), n, d, vit->ln_eps, nt);
            next_hier++;
        }
    }

    /* ---- tokens = norm(x); pooled = mean of the patch tokens; cls; lewm emb ---- */
    float *tokens = want_tokens && host ? out->tokens : h;              /* [B*n, d] */
    c->k.layernorm(tokens, (size_t)d, x, (size_t)d, dw(c, e->norm.w), dw(c, e->norm.b), B * n, d,
                   vit->ln_eps, nt);
    if (want_pooled)
        for (int b = 0; b < B; b++)
            c->k.mean_rows(pooled_d + (size_t)b * d, tokens + ((size_t)b * n + ncls) * d,
                           (size_t)d, n - ncls, d, nt);
    if (want_emb) {   /* emb = proj2(act(proj0(cls))): the CLS rows are n*d apart */
        const int hid = e->proj0.n_out;
        jm_linear_act(c, emb_mid, (size_t)hid, tokens, (size_t)n * d, &e->proj0, B, e->proj_act, ws);
        jm_linear_forward(c, emb_d, (size_t)e->proj2.n_out, emb_mid, (size_t)hid, &e->proj2, B,
               JK_EPI_STORE, ws);
    }

    /* ---- outputs to the caller (no-ops on the CPU, where they were written in place,
     * except cls, copied out of the token rows) ---- */
    if (want_tokens)
        dev->download(dev, out->tokens, tokens, sizeof(float) * (size_t)B * n * d);
    if (want_pooled) dev->download(dev, out->pooled, pooled_d, sizeof(float) * (size_t)B * d);
    if (want_hier)
        dev->download(dev, out->hier, hier_d, sizeof(float) * (size_t)B * e->n_hier * n * d);
    if (want_emb)
        dev->download(dev, out->emb, emb_d, sizeof(float) * (size_t)B * e->proj2.n_out);
    if (out && out->cls)
        for (int b = 0; b < B; b++)
            dev->download(dev, out->cls + (size_t)b * d, tokens + (size_t)b * n * d,
                          sizeof(float) * (size_t)d);
    return JEPA_OK;
}
