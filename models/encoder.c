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
 */
#include <limits.h>
#include <string.h>

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
            return jerr_set(&c->err, JEPA_ERR_ARG,
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

jepa_status encoder_forward(struct jepa_ctx *c, const float *x_in, int T, int H, int W,
                            const jepa_embed_params *p, jepa_embed_out *out) {
    const struct jepa_model *m = c->m;
    const struct jm_encoder *e = &m->enc;
    const struct jm_vit *vit = &e->vit;
    const int d = vit->d, hd = vit->head_dim, C = e->in_chans, P = e->patch, nt = c->nthreads;
    const int rope = e->pos_type == JM_POS_ROPE3D;
    const int ncls = e->cls ? 1 : 0;

    if (!family_supported(m->family) || e->n_registers > 0)
        return jerr_set(&c->err, JEPA_ERR_UNSUPPORTED,
                        "family '%s'%s: the encoder forward is not implemented yet", m->family_name,
                        e->n_registers > 0 ? " with register tokens" : "");
    if (T < 1 || H < P || W < P || H % P || W % P)
        return jerr_set(&c->err, JEPA_ERR_ARG,
                        "input %dx%dx%d: height and width must be positive multiples of the "
                        "patch size %d", T, H, W, P);
    if (out && out->cls && !e->cls)
        return jerr_set(&c->err, JEPA_ERR_ARG, "family '%s' has no CLS token", m->family_name);
    if (out && out->emb && !e->has_proj)
        return jerr_set(&c->err, JEPA_ERR_ARG, "family '%s' has no projector (emb is LeWM's)",
                        m->family_name);
    if (out && out->hier && !e->n_hier)
        return jerr_set(&c->err, JEPA_ERR_ARG, "family '%s' has no hierarchical outputs",
                        m->family_name);

    struct tokenizer tk;
    jepa_status st = pick_tokenizer(c, T, p ? p->kind : JEPA_INPUT_AUTO, &tk);
    if (st) return st;
    const int Tin = tk.repeat ? tk.repeat : T;
    const int gt = Tin / tk.tubelet, gh = H / P, gw = W / P;
    const int n_patch = gt * gh * gw;                   /* patch tokens of the whole input */
    const int F = tk.pe->n_in;                          /* C * tubelet * P * P */
    const int masked = p && p->ctx_ids;
    const int n = ncls + (masked ? p->n_ctx : n_patch); /* rows through the blocks */
    if (masked) {
        if (p->n_ctx < 1) return jerr_set(&c->err, JEPA_ERR_ARG, "masked encoder: no context ids");
        for (int i = 0; i < p->n_ctx; i++)
            if (p->ctx_ids[i] < 0 || p->ctx_ids[i] >= n_patch)
                return jerr_set(&c->err, JEPA_ERR_ARG,
                                "context id %d at position %d is outside the %d-token grid",
                                (int)p->ctx_ids[i], i, n_patch);
    }
    const int rows = ncls + n_patch;                    /* rows before masking */

    /* ---- plan: count, reserve, carve ---- */
    const int wide_cols = vit_wide_cols(vit) > F ? vit_wide_cols(vit) : F;
    const int max_k = vit->ffn > F ? vit->ffn : F;
    float *clip = NULL, *x = NULL, *h = NULL, *wide = NULL, *tmp = NULL, *cosb = NULL, *sinb = NULL;
    float *pos_tab = NULL;
    struct rope_pos *pos = NULL;
    int32_t *frame = NULL;
    float *emb_mid = NULL;
    void *ws = NULL;
    for (int pass = 0; pass < 2; pass++) {
        struct arena_cursor cur = {pass ? c->arena.base : NULL, 0};
        clip = tk.repeat ? arena_take(&cur, sizeof(float) * (size_t)C * Tin * H * W) : NULL;
        x = arena_take(&cur, sizeof(float) * (size_t)rows * d);         /* [rows, d] */
        h = arena_take(&cur, sizeof(float) * (size_t)rows * d);         /* [rows, d] */
        wide = arena_take(&cur, sizeof(float) * (size_t)rows * wide_cols);
        tmp = e->layer_scale ? arena_take(&cur, sizeof(float) * (size_t)n * d) : NULL;
        if (rope) {
            pos = arena_take(&cur, sizeof(struct rope_pos) * (size_t)rows);
            cosb = arena_take(&cur, sizeof(float) * (size_t)n * hd);    /* [n, hd] */
            sinb = arena_take(&cur, sizeof(float) * (size_t)n * hd);
        } else {
            pos_tab = arena_take(&cur, sizeof(float) * (size_t)n_patch * d); /* [n_patch, d] */
        }
        if (e->attn_mode == JM_ATTN_BLOCK_CAUSAL) frame = arena_take(&cur, sizeof(int32_t) * (size_t)rows);
        if (e->has_proj) emb_mid = arena_take(&cur, sizeof(float) * (size_t)e->proj0.n_out);
        ws = arena_take(&cur, vit_ws_bytes(c, rows, hd, max_k));
        if (!pass && (st = ctx_reserve(c, cur.used))) return st;
    }
    float *patches = x + (size_t)ncls * d;              /* [n_patch, d] after the CLS row */

    /* ---- patches = patchify(clip) . Wpe^T + b (+ modality embedding) ---- */
    const float *src = x_in;
    if (tk.repeat) {   /* [C, 1, H, W] -> [C, repeat, H, W] */
        const size_t plane = (size_t)H * W;
        for (int ch = 0; ch < C; ch++)
            for (int t = 0; t < Tin; t++)
                memcpy(clip + ((size_t)ch * Tin + t) * plane, x_in + (size_t)ch * plane,
                       plane * sizeof(float));
        src = clip;
    }
    c->k.patchify(wide, src, C, Tin, H, W, tk.tubelet, P, nt);          /* [n_patch, F] */
    linear(c, patches, (size_t)d, wide, (size_t)F, tk.pe, n_patch, JK_EPI_STORE, ws);
    if (tk.modality) c->k.add(patches, (size_t)d, tk.modality, 0, NULL, n_patch, d, nt);
    if (ncls) memcpy(x, e->cls_token, sizeof(float) * (size_t)d);

    /* ---- absolute positions: table rows added (CLS slot first), interpolated if needed ---- */
    if (!rope) {
        const float *tab = e->pos_embed + (size_t)ncls * d;
        const int g0 = e->img_size / P;                 /* training grid (square) */
        if (e->n_frames / e->tubelet != 1 || gt != 1)
            return jerr_set(&c->err, JEPA_ERR_UNSUPPORTED,
                            "family '%s': position tables for video inputs are not implemented",
                            m->family_name);
        if (gh != g0 || gw != g0) {
            pos_embed_interpolate(pos_tab, tab, g0, g0, gh, gw, d);
            tab = pos_tab;
        }
        c->k.add(patches, (size_t)d, tab, (size_t)d, NULL, n_patch, d, nt);
        if (ncls) c->k.add(x, (size_t)d, e->pos_embed, (size_t)d, NULL, 1, d, nt);
    }

    /* ---- RoPE positions of the patch tokens (t, h, w on the real grid); CLS: identity ---- */
    if (rope) {
        if (ncls) pos[0] = (struct rope_pos){0, 0, 0, true};
        rope_positions(pos + ncls, NULL, n_patch, gh, gw, e->rope_interpolate, e->rope_ref_grid);
    }
    if (frame) {   /* block-causal: key j visible to query i iff frame(i) >= frame(j) */
        if (ncls) frame[0] = INT32_MAX;   /* CLS row open, CLS column closed */
        for (int i = 0; i < n_patch; i++) frame[ncls + i] = i / (gh * gw);
    }

    /* ---- masked encoder: keep the CLS and the context patch rows, positions with them ---- */
    if (masked) {
        struct rope_pos *gpos = (struct rope_pos *)wide;          /* scratch: [n_ctx] */
        int32_t *gframe = (int32_t *)(gpos + p->n_ctx);           /* scratch: [n_ctx] */
        for (int i = 0; i < p->n_ctx; i++) {
            const int id = p->ctx_ids[i];
            memcpy(h + (size_t)i * d, patches + (size_t)id * d, sizeof(float) * (size_t)d);
            if (rope) gpos[i] = pos[ncls + id];
            if (frame) gframe[i] = frame[ncls + id];
        }
        memcpy(patches, h, sizeof(float) * (size_t)p->n_ctx * d);
        if (rope) memcpy(pos + ncls, gpos, sizeof(struct rope_pos) * (size_t)p->n_ctx);
        if (frame) memcpy(frame + ncls, gframe, sizeof(int32_t) * (size_t)p->n_ctx);
    }
    if (rope) rope_tables(cosb, sinb, pos, n, hd, e->rope_theta, e->rope_layout);

    /* ---- blocks ---- */
    struct vit_scratch s = {.h = h, .wide = wide, .tmp = tmp, .cos = cosb, .sin = sinb,
                            .mask_pos = frame, .ws = ws};
    int next_hier = 0;
    for (int l = 0; l < vit->n_layer; l++) {
        vit_block(c, vit, &vit->blk[l], x, n, &s);
        if (next_hier < e->n_hier && e->hier_layers[next_hier] == l) {
            if (out && out->hier)
                c->k.layernorm(out->hier + (size_t)next_hier * n * d, (size_t)d, x, (size_t)d,
                               e->hier_norm[next_hier].w, e->hier_norm[next_hier].b, n, d,
                               vit->ln_eps, nt);
            next_hier++;
        }
    }

    /* ---- tokens = norm(x); pooled = mean of the patch tokens; cls; lewm emb ---- */
    float *tokens = (out && out->tokens) ? out->tokens : h;
    c->k.layernorm(tokens, (size_t)d, x, (size_t)d, e->norm.w, e->norm.b, n, d, vit->ln_eps, nt);
    if (out && out->pooled) {
        for (int j = 0; j < d; j++) {
            double acc = 0.0;
            for (int i = ncls; i < n; i++) acc += tokens[(size_t)i * d + j];
            out->pooled[j] = (float)(acc / (n - ncls));
        }
    }
    if (out && out->cls) memcpy(out->cls, tokens, sizeof(float) * (size_t)d);
    if (out && out->emb) {   /* emb = proj2(act(proj0(cls))) */
        float *mid = emb_mid;   /* [proj hidden] */
        if (e->proj_act == JM_ACT_GELU_ERF) {
            linear(c, mid, (size_t)e->proj0.n_out, tokens, (size_t)d, &e->proj0, 1, JK_EPI_GELU, ws);
        } else {
            linear(c, mid, (size_t)e->proj0.n_out, tokens, (size_t)d, &e->proj0, 1, JK_EPI_STORE, ws);
            (e->proj_act == JM_ACT_SILU ? c->k.silu : c->k.gelu_tanh)(mid, (size_t)e->proj0.n_out, nt);
        }
        linear(c, out->emb, (size_t)e->proj2.n_out, mid, (size_t)e->proj0.n_out, &e->proj2, 1,
               JK_EPI_STORE, ws);
    }
    return JEPA_OK;
}
