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
 * jm_encoder_forward reads as those steps: check the request, plan the input
 * (jm_encoder_input) and the buffers, then tokenize, add table positions, keep the
 * context rows, build the RoPE and mask tables, run the blocks, write the outputs. What
 * the file's keys say (CLS, position kind, tokenizers, mask) is read from the model;
 * what only the family says is in family_traits below.
 *
 * RoPE positions are decoded on the grid of the actual input (Meta's VisionTransformer;
 * Hugging Face's V-JEPA 2 uses the square training grid, which agrees only at the
 * training size). V-JEPA 2.1 rescales h, w onto rope_ref_grid (docs/rope.md). Tested
 * against Meta's and Hugging Face's outputs (tests/models/test_parity.c).
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

/* What the encoder does differently per family where the file's keys do not say it. */
static const struct family_traits {
    bool forward;           /* the encoder forward runs this family */
    int still_frames;       /* a still image (T = 1) is fed as a clip of this many copies of
                               it (LeVJEPA: 16, the schema's family note, which is what its
                               model card's probe does); 0: a still is repeated to fill one
                               tubelet (the HF processors' rule) or, with
                               image_patch_embed, taken as it is */
} family_traits[] = {
    [JM_FAMILY_IJEPA] = {true, 0},    [JM_FAMILY_VJEPA] = {false, 0},
    [JM_FAMILY_VJEPA2] = {true, 0},   [JM_FAMILY_VJEPA2_1] = {true, 0},
    [JM_FAMILY_LEVJEPA] = {true, 16}, [JM_FAMILY_HFVIT] = {true, 0},
    [JM_FAMILY_LEWM] = {true, 0},
};

jepa_status jm_encoder_input(const struct jepa_model *m, int T, int H, int W, jepa_input_kind kind,
                             struct jm_input *in, struct jerr *err) {
    const struct jm_encoder *e = &m->enc;
    const int P = e->patch;
    /* Rows, columns and frames that do not fill a patch or a tubelet are dropped, as the
     * reference patch embeddings (Conv2d / Conv3d with stride = kernel, in Meta's and
     * Hugging Face's modules of every family) drop them: patchify floors the grid and
     * reads the input with its full strides (docs/architecture.md, "Input shapes"). */
    if (T < 1 || H < P || W < P)
        return jr_err_set(err, JEPA_ERR_ARG,
                          "input %dx%dx%d: height and width must be at least the patch size %d", T, H,
                          W, P);
    const bool image = e->image_patch_embed && T == 1 && kind != JEPA_INPUT_VIDEO;
    in->pe = image ? &e->patch_embed_img : &e->patch_embed;
    in->tubelet = image ? 1 : e->tubelet;
    in->modality = e->modality_embed ? (image ? e->mod_embed_img : e->mod_embed_video) : NULL;
    in->repeat = 0;
    const int still = family_traits[m->family].still_frames;
    if (T == 1 && !image && still && still % in->tubelet == 0) {
        in->repeat = still;
    } else if (T < in->tubelet) {
        /* fewer frames than one tubelet: a still is repeated to fill it (the HF modules'
         * rule); between 2 and tubelet - 1 frames the reference's Conv3d has nothing to
         * take and fails, so this refuses */
        if (T != 1)
            return jr_err_set(err, JEPA_ERR_ARG,
                              "clip of %d frames: fewer than one tubelet of %d frames (1 frame is a "
                              "still image)", T, in->tubelet);
        in->repeat = in->tubelet;
    }
    in->frames = in->repeat ? in->repeat : T;
    in->gt = in->frames / in->tubelet, in->gh = H / P, in->gw = W / P;
    /* gt gh < 2^62, and bounded before it is multiplied again: (2^30)^3 pixels must not
     * wrap past 2^63 to a small count */
    int64_t n = (int64_t)in->gt * in->gh;
    if (n <= JM_MAX_CLIP_TOKENS) n *= in->gw;
    if (n > JM_MAX_CLIP_TOKENS)
        return jr_err_set(err, JEPA_ERR_ARG, "input %dx%dx%d: %d x %d x %d tokens, at most %d per clip", T, H,
                          W, in->gt, in->gh, in->gw, JM_MAX_CLIP_TOKENS);
    in->n_patch = (int)n;
    return JEPA_OK;
}

/* Everything one call works with: the request, its sizes and the planned buffers. */
struct enc_run {
    const struct jm_encoder *e;
    const jepa_embed_params *p;
    jepa_embed_out *out;
    struct jm_input in;
    int B, T, H, W;
    int n;            /* rows of one clip through the blocks: CLS + patch or context rows */
    int ncls;
    bool rope, masked, interp, host;
    bool want_tokens, want_pooled, want_hier, want_emb;
    int g0;           /* training grid side (table positions) */
    int rows0;        /* rows of one clip before masking */
    size_t in_floats, clip_floats;   /* one clip as the caller gave it / as patchify reads it */
    /* Patch embeddings go straight into x's patch rows, except when masked (into h,
     * gathered into x afterwards); they form one [B*n_patch, d] matrix unless a CLS row
     * separates the clips' patch rows in x. */
    bool pcontig;
    float *pe;        /* patch rows of clip 0 */
    size_t pstride;   /* floats from one clip's patch rows to the next */
    /* buffers (device memory unless said otherwise) */
    const float *src; /* the clip patchify reads */
    /* The caller's input in this context's host memory (jepa_ctx_embed_input): planned
     * when that call asks for it or when x lies there already, else NULL. */
    bool input_here;
    float *input;
    float *clip, *x, *h, *wide, *tmp, *emb_mid, *tokens;
    float *pooled_d, *hier_d, *emb_d;
    int32_t *ids_d;
    struct rope_pos *pos;                       /* host */
    struct staged cosb, sinb, pos_tab, frame;
    void *ws;
    /* 16-bit copies (forward.h, a table with the x16 flag): h16 [B*n, d] and wide16, the
     * patches' copy [B*n_patch, F] while the clip is embedded, then the blocks' hidden
     * layer [B*n, ffn]; NULL where nothing reads them */
    uint16_t *h16, *wide16;
};

/* ---- the request: what the model can run, the input's geometry ---- */
static jepa_status check_request(struct jepa_ctx *c, const float *x, int T, int H, int W,
                                 const jepa_embed_params *p, jepa_embed_out *out, struct enc_run *r) {
    const struct jepa_model *m = c->m;
    const struct jm_encoder *e = &m->enc;
    if (!family_traits[m->family].forward || e->n_registers > 0)
        return jr_err_set(&c->err, JEPA_ERR_UNSUPPORTED,
                          "family '%s'%s: the encoder forward is not implemented yet", m->family_name,
                          e->n_registers > 0 ? " with register tokens" : "");
    jepa_status st = jm_encoder_input(m, T, H, W, p ? p->kind : JEPA_INPUT_AUTO, &r->in, &c->err);
    if (st) return st;
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
    r->e = e, r->p = p, r->out = out;
    r->B = p && p->batch > 1 ? p->batch : 1;
    r->T = T, r->H = H, r->W = W;
    r->ncls = e->cls ? 1 : 0;
    r->rope = e->pos_type == JM_POS_ROPE3D;
    r->host = c->dev->host_memory;
    r->masked = p && p->ctx_ids;
    const int n_patch = r->in.n_patch;
    if (r->masked) {
        if (p->n_ctx < 1) return jr_err_set(&c->err, JEPA_ERR_ARG, "masked encoder: no context ids");
        for (int i = 0; i < p->n_ctx; i++)
            if (p->ctx_ids[i] < 0 || p->ctx_ids[i] >= n_patch)
                return jr_err_set(&c->err, JEPA_ERR_ARG,
                                  "context id %d at position %d is outside the %d-token grid",
                                  (int)p->ctx_ids[i], i, n_patch);
    }
    r->n = r->ncls + (r->masked ? p->n_ctx : n_patch);
    r->g0 = e->img_size / e->patch;
    if (!r->rope && (e->n_frames / e->tubelet != 1 || r->in.gt != 1))
        return jr_err_set(&c->err, JEPA_ERR_UNSUPPORTED,
                          "family '%s': position tables for video inputs are not implemented",
                          m->family_name);
    r->interp = !r->rope && (r->in.gh != r->g0 || r->in.gw != r->g0);
    r->rows0 = r->ncls + n_patch;
    r->in_floats = (size_t)e->in_chans * T * H * W;
    r->clip_floats = (size_t)e->in_chans * r->in.frames * H * W;
    r->pcontig = r->masked || !r->ncls;
    /* x is NULL when jepa_ctx_embed_input plans the call (the input is not written yet) */
    if (x && (st = jm_check_finite(c, x, (size_t)r->B * r->in_floats, "input"))) return st;
    r->want_tokens = out && out->tokens, r->want_pooled = out && out->pooled;
    r->want_hier = out && out->hier, r->want_emb = out && out->emb;
    return JEPA_OK;
}

/* ---- the buffers: counted, reserved, carved (context.h) ---- */
static bool in_block(const struct arena *a, const void *p) {
    const uintptr_t q = (uintptr_t)p, b = (uintptr_t)a->base;
    return a->base && q >= b && q < b + a->cap;
}

static size_t round_up16(size_t n) { return (n + 15) & ~(size_t)15; }   /* 64-byte steps */

static jepa_status input_moved(struct jepa_ctx *c) {
    return jr_err_set(&c->err, JEPA_ERR_ARG,
                      "the input lies in this context's activation arena but not where "
                      "jepa_ctx_embed_input placed it for this call: give it the same shape, "
                      "parameters and outputs, and call nothing else on the context in between");
}

/* x: the caller's input, NULL when jepa_ctx_embed_input plans the call. */
static jepa_status plan_buffers(struct jepa_ctx *c, struct enc_run *r, const float *x) {
    const struct jm_encoder *e = r->e;
    const struct jm_vit *vit = &e->vit;
    const int d = vit->d, hd = vit->head_dim, B = r->B, n = r->n, F = r->in.pe->n_in;
    const int wide_cols = jm_vit_wide_cols(vit) > F ? jm_vit_wide_cols(vit) : F;
    /* the K of every matmul: blocks (d, ffn), patch embedding, LeWM projector */
    const int ks[] = {d, vit->ffn, F, e->has_proj ? e->proj0.n_out : d};
    r->clip = r->input = r->emb_mid = r->pooled_d = r->hier_d = r->emb_d = r->tmp = NULL;
    r->ids_d = NULL;
    struct arena *in_arena = r->host ? &c->arena : &c->host;   /* where a planned input lives */
    r->input_here = !x || in_block(in_arena, x);
    /* While the clip is embedded, wide holds the patches patchify writes [B*n_patch, F] and
     * behind them the clip patchify reads when it is not the caller's (the still's repeated
     * frames, or the device copy), then on the CPU the caller's input planned here. All of
     * it is dead once the patches are embedded, and the blocks reuse it: wide is sized for
     * the larger of the two uses. */
    const size_t patch_floats = round_up16((size_t)B * r->in.n_patch * F);
    const size_t clip_floats = r->in.repeat || !r->host ? round_up16((size_t)B * r->clip_floats) : 0;
    const size_t input_floats = r->input_here && r->host ? (size_t)B * r->in_floats : 0;
    size_t wide_floats = (size_t)B * r->rows0 * wide_cols;
    if (wide_floats < patch_floats + clip_floats + input_floats)
        wide_floats = patch_floats + clip_floats + input_floats;
    r->pos = NULL;
    r->cosb = r->sinb = r->pos_tab = r->frame = (struct staged){0};
    /* the copies: each adds its size rounded up to the arena alignment; the LeWM
     * projector's (the CLS rows [B, d] in h16, its hidden layer [B, hidden] in wide16) fit
     * in the blocks' or take their own size */
    const bool blk16 = jm_vit_x16(c, vit), pe16 = jm_x16_type(c, r->in.pe) >= 0;
    const bool pj0 = r->want_emb && jm_x16_type(c, &e->proj0) >= 0;
    const bool pj2 = r->want_emb && jm_x16_type(c, &e->proj2) >= 0;
    size_t wide16 = blk16 ? (size_t)B * n * vit->ffn : 0;
    if (pe16 && wide16 < (size_t)B * r->in.n_patch * F) wide16 = (size_t)B * r->in.n_patch * F;
    if (pj2 && wide16 < (size_t)B * e->proj0.n_out) wide16 = (size_t)B * e->proj0.n_out;
    const size_t h16 = blk16 ? (size_t)B * n * d : pj0 ? (size_t)B * d : 0;
    for (int pass = 0; pass < 2; pass++) {
        struct plan pl = plan_begin(c, pass);
        r->h16 = h16 ? plan_dev(&pl, jm_x16_bytes(true, h16)) : NULL;
        r->wide16 = wide16 ? plan_dev(&pl, jm_x16_bytes(true, wide16)) : NULL;
        r->x = plan_dev(&pl, sizeof(float) * (size_t)B * n * d);            /* [B*n, d] */
        r->h = plan_dev(&pl, sizeof(float) * (size_t)B * r->rows0 * d);     /* [B*rows0, d] */
        r->wide = plan_dev(&pl, sizeof(float) * wide_floats);
        if (clip_floats) r->clip = r->wide ? r->wide + patch_floats : NULL;
        if (r->input_here)
            r->input = r->host ? (r->wide ? r->wide + patch_floats + clip_floats : NULL)
                               : plan_host(&pl, sizeof(float) * (size_t)B * r->in_floats);
        r->tmp = e->layer_scale ? plan_dev(&pl, sizeof(float) * (size_t)B * n * d) : NULL;
        if (r->rope) {
            r->pos = plan_host(&pl, sizeof(struct rope_pos) * (size_t)n);
            r->cosb = plan_staged(&pl, sizeof(float) * (size_t)n * hd);     /* [n, hd] */
            r->sinb = plan_staged(&pl, sizeof(float) * (size_t)n * hd);
        }
        if (r->interp) r->pos_tab = plan_staged(&pl, sizeof(float) * (size_t)r->in.n_patch * d);
        if (e->attn_mode == JM_ATTN_BLOCK_CAUSAL)
            r->frame = plan_staged(&pl, sizeof(int32_t) * (size_t)n);
        if (r->masked && !r->host) r->ids_d = plan_dev(&pl, sizeof(int32_t) * (size_t)r->p->n_ctx);
        if (r->want_emb) r->emb_mid = plan_dev(&pl, sizeof(float) * (size_t)B * e->proj0.n_out);
        if (!r->host) {   /* outputs before their download (the CPU writes the caller's buffers) */
            if (r->want_pooled) r->pooled_d = plan_dev(&pl, sizeof(float) * (size_t)B * d);
            if (r->want_hier) r->hier_d = plan_dev(&pl, sizeof(float) * (size_t)B * e->n_hier * n * d);
            if (r->want_emb) r->emb_d = plan_dev(&pl, sizeof(float) * (size_t)B * e->proj2.n_out);
        }
        r->ws = plan_dev(&pl, jm_vit_ws_bytes(c, n, vit->n_head, hd, ks, (int)(sizeof ks / sizeof *ks)));
        jepa_status st;
        /* a planned input must stay where it was written: the arenas may not move */
        if (!pass && x && r->input_here &&
            (pl.dev.used > c->arena.cap || (!r->host && pl.host.used > c->host.cap)))
            return input_moved(c);
        if (!pass && (st = jm_ctx_reserve(c, &pl))) return st;
    }
    if (x && r->input_here && x != r->input) return input_moved(c);
    if (r->host) {
        r->pooled_d = r->want_pooled ? r->out->pooled : NULL;
        r->hier_d = r->want_hier ? r->out->hier : NULL;
        r->emb_d = r->want_emb ? r->out->emb : NULL;
    }
    r->pe = r->masked ? r->h : r->x + (size_t)r->ncls * d;
    r->pstride = r->pcontig ? (size_t)r->in.n_patch * d : (size_t)n * d;
    return JEPA_OK;
}

/* ---- the clip on the device: [B, C, frames, H, W] (a still repeated if it must be) ---- */
static void upload_clip(struct jepa_ctx *c, struct enc_run *r, const float *x_in) {
    struct jk_device *dev = c->dev;
    r->src = x_in;
    if (r->in.repeat) {   /* [C, 1, H, W] -> [C, repeat, H, W]: one upload per plane */
        const size_t plane = (size_t)r->H * r->W;
        const int Tin = r->in.frames;
        for (int b = 0; b < r->B; b++)
            for (int ch = 0; ch < r->e->in_chans; ch++)
                for (int t = 0; t < Tin; t++)
                    dev->upload(dev,
                                r->clip + (size_t)b * r->clip_floats + ((size_t)ch * Tin + t) * plane,
                                x_in + (size_t)b * r->in_floats + (size_t)ch * plane,
                                plane * sizeof(float));
        r->src = r->clip;
    } else if (!r->host) {
        dev->upload(dev, r->clip, x_in, sizeof(float) * (size_t)r->B * r->in_floats);
        r->src = r->clip;
    }
}

/* ---- patch embeddings = patchify(clip) . Wpe^T + b (+ modality embedding); CLS rows ---- */
static void tokenize(struct jepa_ctx *c, struct enc_run *r) {
    const int d = r->e->vit.d, n_patch = r->in.n_patch, F = r->in.pe->n_in, nt = c->nthreads;
    const struct jm_x16 p16 = jm_x16_for(c, r->in.pe, r->wide16, (size_t)F);   /* its copy */
    for (int b = 0; b < r->B; b++) {                                     /* [B*n_patch, F] */
        float *out = r->wide + (size_t)b * n_patch * F;
        const float *src = r->src + (size_t)b * r->clip_floats;
        if (p16.p)
            c->k.patchify16(out, p16.p + (size_t)b * n_patch * F, p16.t, src, r->e->in_chans,
                            r->in.frames, r->H, r->W, r->in.tubelet, r->e->patch, nt);
        else
            c->k.patchify(out, src, r->e->in_chans, r->in.frames, r->H, r->W, r->in.tubelet,
                          r->e->patch, nt);
    }
    const int nblk = r->pcontig ? 1 : r->B, blk_rows = r->pcontig ? r->B * n_patch : n_patch;
    for (int i = 0; i < nblk; i++) {
        float *pb = r->pe + (size_t)i * r->pstride;
        struct jm_x16 pi = p16;
        if (pi.p) pi.p += (size_t)i * n_patch * F;
        jm_linear16(c, pb, (size_t)d, r->wide + (size_t)i * n_patch * F, (size_t)F, &pi, r->in.pe,
                    blk_rows, JK_EPI_STORE, NULL, r->ws);
        if (r->in.modality) c->k.add(pb, (size_t)d, dw(c, r->in.modality), 0, NULL, blk_rows, d, nt);
    }
    if (r->ncls)   /* the CLS row of every clip */
        for (int b = 0; b < r->B; b++)
            c->dev->copy(c->dev, r->x + (size_t)b * r->n * d, dw(c, r->e->cls_token),
                         sizeof(float) * (size_t)d);
}

/* ---- absolute positions: table rows added (CLS slot first), interpolated if needed ---- */
static void add_table_positions(struct jepa_ctx *c, struct enc_run *r) {
    const struct jm_encoder *e = r->e;
    const int d = e->vit.d, ncls = r->ncls, nt = c->nthreads;
    if (r->rope) return;
    const float *tab = dw(c, e->pos_embed + (size_t)ncls * d);
    if (r->interp) {
        jm_pos_embed_interpolate(r->pos_tab.host, e->pos_embed + (size_t)ncls * d, r->g0, r->g0,
                                 r->in.gh, r->in.gw, d);
        stage_upload(c, &r->pos_tab);
        tab = r->pos_tab.dev;
    }
    for (int b = 0; b < r->B; b++)
        c->k.add(r->pe + (size_t)b * r->pstride, (size_t)d, tab, (size_t)d, NULL, r->in.n_patch, d, nt);
    if (ncls)   /* row 0 of the table on every clip's CLS row */
        c->k.add(r->x, (size_t)r->n * d, dw(c, e->pos_embed), 0, NULL, r->B, d, nt);
}

/* ---- masked encoder: keep the context patch rows (the same ids in every clip) ---- */
static void keep_context(struct jepa_ctx *c, struct enc_run *r) {
    if (!r->masked) return;
    const int d = r->e->vit.d;
    const int32_t *ids = r->p->ctx_ids;
    if (!r->host) {
        c->dev->upload(c->dev, r->ids_d, r->p->ctx_ids, sizeof(int32_t) * (size_t)r->p->n_ctx);
        ids = r->ids_d;
    }
    for (int b = 0; b < r->B; b++)
        c->k.gather(r->x + ((size_t)b * r->n + r->ncls) * d, (size_t)d, r->pe + (size_t)b * r->pstride,
                    (size_t)d, ids, r->p->n_ctx, d, c->nthreads);
}

/* ---- RoPE tables of the kept rows (t, h, w on the real grid; CLS: identity) and the
 * block-causal frame ids: one clip's worth, computed on the host ---- */
static void position_tables(struct jepa_ctx *c, struct enc_run *r) {
    const struct jm_encoder *e = r->e;
    const int n = r->n, ncls = r->ncls, gh = r->in.gh, gw = r->in.gw;
    const int32_t *kept = r->masked ? r->p->ctx_ids : NULL;   /* patch id of row ncls + i (NULL: i) */
    if (r->rope) {
        if (ncls) r->pos[0] = (struct rope_pos){0, 0, 0, true, false};
        jm_rope_positions(r->pos + ncls, kept, n - ncls, gh, gw, e->rope_interpolate, e->rope_ref_grid);
        jm_rope_tables(r->cosb.host, r->sinb.host, r->pos, n, e->vit.head_dim, e->rope_theta,
                       e->rope_layout);
        stage_upload(c, &r->cosb);
        stage_upload(c, &r->sinb);
    }
    if (r->frame.dev) {   /* key j visible to query i iff frame(i) >= frame(j) */
        int32_t *fr = r->frame.host;
        if (ncls) fr[0] = INT32_MAX;   /* CLS row open, CLS column closed */
        for (int i = 0; i < n - ncls; i++) fr[ncls + i] = (kept ? kept[i] : i) / (gh * gw);
        stage_upload(c, &r->frame);
    }
}

/* ---- the blocks; V-JEPA 2.1's hierarchical outputs on the way ---- */
static jepa_status run_blocks(struct jepa_ctx *c, struct enc_run *r) {
    const struct jm_encoder *e = r->e;
    const struct jm_vit *vit = &e->vit;
    const int d = vit->d, n = r->n;
    struct vit_scratch s = {.h = r->h, .wide = r->wide, .tmp = r->tmp, .cos = r->cosb.dev,
                            .sin = r->sinb.dev, .mask_pos = r->frame.dev, .ws = r->ws,
                            .h16 = r->h16, .wide16 = r->wide16};
    int next_hier = 0;
    jepa_status st;
    for (int l = 0; l < vit->n_layer; l++) {
        if ((st = jm_cancel_point(c))) return st;
        jm_vit_block(c, vit, &vit->blk[l], r->x, n, r->B, &s);
        if (next_hier < e->n_hier && e->hier_layers[next_hier] == l) {
            if (r->want_hier)   /* [B, n_hier, n, d]: level k of clip b */
                for (int b = 0; b < r->B; b++)
                    c->k.layernorm(r->hier_d + ((size_t)b * e->n_hier + next_hier) * n * d, (size_t)d,
                                   r->x + (size_t)b * n * d, (size_t)d,
                                   dw(c, e->hier_norm[next_hier].w),
                                   dw(c, e->hier_norm[next_hier].b), n, d, vit->ln_eps, c->nthreads);
            next_hier++;
        }
        if (r->p && r->p->on_layer) {   /* progress (jepa.h): after the block has run */
            if (!r->host) c->dev->sync(c->dev);   /* an error stays sticky: reported at the end */
            r->p->on_layer(r->p->user, l + 1, vit->n_layer);
        }
    }
    return jm_cancel_point(c);   /* before any output is written */
}

/* ---- tokens = norm(x); pooled = mean of the patch tokens; lewm emb = proj(cls) ---- */
static void final_outputs(struct jepa_ctx *c, struct enc_run *r) {
    const struct jm_encoder *e = r->e;
    const int d = e->vit.d, n = r->n, B = r->B, nt = c->nthreads;
    r->tokens = r->want_tokens && r->host ? r->out->tokens : r->h;       /* [B*n, d] */
    c->k.layernorm(r->tokens, (size_t)d, r->x, (size_t)d, dw(c, e->norm.w), dw(c, e->norm.b), B * n,
                   d, e->vit.ln_eps, nt);
    if (r->want_pooled)
        for (int b = 0; b < B; b++)
            c->k.mean_rows(r->pooled_d + (size_t)b * d, r->tokens + ((size_t)b * n + r->ncls) * d,
                           (size_t)d, n - r->ncls, d, nt);
    if (r->want_emb) {   /* emb = proj2(act(proj0(cls))): the CLS rows are n*d apart */
        const int hid = e->proj0.n_out;
        const struct jm_x16 c16 = jm_x16_for(c, &e->proj0, r->h16, (size_t)d);   /* their copy */
        const bool cls16 = jm_round16(c, &c16, r->tokens, (size_t)n * d, B, d);
        const struct jm_x16 m16 = jm_x16_for(c, &e->proj2, r->wide16, (size_t)hid);
        const bool mid16 = jm_linear_act16(c, r->emb_mid, (size_t)hid, r->tokens, (size_t)n * d,
                                           cls16 ? &c16 : NULL, &e->proj0, B, e->proj_act, &m16,
                                           r->ws);
        jm_linear16(c, r->emb_d, (size_t)e->proj2.n_out, r->emb_mid, (size_t)hid,
                    mid16 ? &m16 : NULL, &e->proj2, B, JK_EPI_STORE, NULL, r->ws);
    }
}

/* ---- outputs to the caller (no-ops on the CPU, where they were written in place, except
 * cls, copied out of the token rows) ---- */
static void download_outputs(struct jepa_ctx *c, const struct enc_run *r) {
    struct jk_device *dev = c->dev;
    const struct jm_encoder *e = r->e;
    const int d = e->vit.d, n = r->n, B = r->B;
    jepa_embed_out *out = r->out;
    if (r->want_tokens) dev->download(dev, out->tokens, r->tokens, sizeof(float) * (size_t)B * n * d);
    if (r->want_pooled) dev->download(dev, out->pooled, r->pooled_d, sizeof(float) * (size_t)B * d);
    if (r->want_hier)
        dev->download(dev, out->hier, r->hier_d, sizeof(float) * (size_t)B * e->n_hier * n * d);
    if (r->want_emb) dev->download(dev, out->emb, r->emb_d, sizeof(float) * (size_t)B * e->proj2.n_out);
    if (out && out->cls)
        for (int b = 0; b < B; b++)
            dev->download(dev, out->cls + (size_t)b * d, r->tokens + (size_t)b * n * d,
                          sizeof(float) * (size_t)d);
}

jepa_status jm_encoder_forward(struct jepa_ctx *c, const float *x, int T, int H, int W,
                               const jepa_embed_params *p, jepa_embed_out *out) {
    struct enc_run r;
    jepa_status st;
    if ((st = check_request(c, x, T, H, W, p, out, &r)) || (st = plan_buffers(c, &r, x))) return st;
    upload_clip(c, &r, x);
    tokenize(c, &r);
    add_table_positions(c, &r);
    keep_context(c, &r);
    position_tables(c, &r);
    if ((st = run_blocks(c, &r))) return st;
    final_outputs(c, &r);
    download_outputs(c, &r);
    return JEPA_OK;
}

jepa_status jm_encoder_input_buffer(struct jepa_ctx *c, int T, int H, int W, const jepa_embed_params *p,
                                    const jepa_embed_out *out, float **x) {
    struct enc_run r;
    jepa_status st;
    /* check_request and plan_buffers read out's pointers, never write through them */
    if ((st = check_request(c, NULL, T, H, W, p, (jepa_embed_out *)out, &r)) || (st = plan_buffers(c, &r, NULL)))
        return st;
    *x = r.input;
    return JEPA_OK;
}
