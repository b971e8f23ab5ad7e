/*
 * head.c — the attentive-pool classifier of V-JEPA 2 (Hugging Face's
 * VJEPA2AttentivePooler + classifier; Meta's AttentiveClassifier):
 *
 *   x = encoder tokens                                         [n, D]
 *   n_pool_layers self-attention blocks (pre-LN, no RoPE)      x += attn(ln1 x); x += mlp(ln2 x)
 *   q0 = head.query (raw, not normalised); kv = ln_kv(x)
 *   o = softmax(q0 Wq^T (kv Wk^T)^T / sqrt(hd)) (kv Wv^T)      [1, D], no output projection
 *   y = q0 + o;  y += down(gelu(up(ln2 y)))
 *   logits = y Wcls^T + b                                      [n_classes], no final norm
 *
 * Every LayerNorm of the head uses jepa.head.ln_eps (1e-6 in Hugging Face files, 1e-5
 * in Meta's evaluation heads). Tested against Meta's fixture (case D). Device-neutral
 * like the encoder (forward.h).
 */
#include <math.h>

#include "models/forward.h"

jepa_status jm_head_forward(struct jepa_ctx *c, const float *tokens, int n, float *logits) {
    const struct jepa_model *m = c->m;
    const struct jm_head *hd_ = &m->head;
    const struct jm_vit *vit = &hd_->vit;
    const int D = m->enc.vit.d, nt = c->nthreads;

    if (hd_->kind == JM_HEAD_NONE)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "this model file has no classifier head");
    if (hd_->kind != JM_HEAD_ATTENTIVE_POOL)
        return jr_err_set(&c->err, JEPA_ERR_UNSUPPORTED, "head kind linear_cls: not implemented yet");
    if (n < 1) return jr_err_set(&c->err, JEPA_ERR_ARG, "classify needs at least one token");
    if (n > JM_MAX_CLIP_TOKENS)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "classify: %d tokens, at most %d", n, JM_MAX_CLIP_TOKENS);
    jepa_status fst = jm_check_finite(c, tokens, (size_t)n * D, "token");
    if (fst) return fst;

    struct jk_device *dev = c->dev;
    const bool host = dev->host_memory;
    const int hdim = D / hd_->n_head, ffn = hd_->up.n_out;
    const int wide_cols = jm_vit_wide_cols(vit) > ffn ? jm_vit_wide_cols(vit) : ffn;
    /* the blocks update the tokens in place: a working copy, unless the CPU has no block
     * to run (the caller's tokens are then read where they are) */
    const bool copy_in = !host || vit->n_layer > 0;
    const int ks[] = {D, vit->ffn, ffn};   /* K of every matmul: blocks, q/k/v/up/cls, down */
    size_t wsb = jm_vit_ws_bytes(c, n, hd_->n_head, hdim, ks, 3);   /* + the blocks' own attention */
    const size_t wsa = vit->n_layer ? jm_vit_ws_bytes(c, n, vit->n_head, vit->head_dim, NULL, 0) : 0;
    if (wsa > wsb) wsb = wsa;
    float *x = NULL, *h = NULL, *wide = NULL, *tmp = NULL, *q = NULL, *y = NULL, *yn = NULL;
    float *mid = NULL, *logits_d = NULL;
    void *ws = NULL;
    /* 16-bit copies (forward.h): h16 [n, D] for the blocks and ln_kv's output, wide16
     * [n, ffn] for the blocks (the one-row matmuls after the pooling read f32); each adds
     * its size rounded up to the arena alignment */
    const bool blk16 = jm_vit_x16(c, vit);
    const bool kv16 = jm_x16_type(c, &hd_->k) >= 0 || jm_x16_type(c, &hd_->v) >= 0;
    uint16_t *h16 = NULL, *wide16 = NULL;
    for (int pass = 0; pass < 2; pass++) {
        struct plan pl = plan_begin(c, pass);
        if (blk16 || kv16) h16 = plan_dev(&pl, jm_x16_bytes(true, (size_t)n * D));
        if (blk16) wide16 = plan_dev(&pl, jm_x16_bytes(true, (size_t)n * vit->ffn));
        if (copy_in) x = plan_dev(&pl, sizeof(float) * (size_t)n * D);  /* [n, D] */
        h = plan_dev(&pl, sizeof(float) * (size_t)n * D);           /* [n, D] */
        wide = plan_dev(&pl, sizeof(float) * (size_t)n * wide_cols);/* [n, 3D | ffn] */
        tmp = plan_dev(&pl, sizeof(float) * (size_t)n * D);
        q = plan_dev(&pl, sizeof(float) * (size_t)D);               /* [1, D] */
        y = plan_dev(&pl, sizeof(float) * (size_t)D);
        yn = plan_dev(&pl, sizeof(float) * (size_t)D);
        mid = plan_dev(&pl, sizeof(float) * (size_t)ffn);           /* [1, ffn] */
        if (!host) logits_d = plan_dev(&pl, sizeof(float) * (size_t)hd_->n_classes);
        ws = plan_dev(&pl, wsb);
        jepa_status st;
        if (!pass && (st = jm_ctx_reserve(c, &pl))) return st;
    }
    if (host) logits_d = logits;

    /* self-attention blocks over all tokens, no positions */
    const float *xs = tokens;   /* the tokens after the blocks, as kernels read them */
    if (copy_in) {
        dev->upload(dev, x, tokens, sizeof(float) * (size_t)n * D);
        xs = x;
    }
    struct vit_scratch s = {.h = h, .wide = wide, .tmp = tmp, .cos = NULL, .sin = NULL,
                            .mask_pos = NULL, .ws = ws, .h16 = blk16 ? h16 : NULL,
                            .wide16 = wide16};
    for (int l = 0; l < vit->n_layer; l++) jm_vit_block(c, vit, &vit->blk[l], x, n, 1, &s);

    /* cross-attention: the raw query attends to ln_kv(x) (its copy in k's type, else v's) */
    const float *query = dw(c, hd_->query);
    float *kmat = wide, *vmat = wide + D;          /* [n, D] each, row stride 2D */
    struct jm_x16 kv = jm_x16_for(c, &hd_->k, h16, (size_t)D);
    if (!kv.p) kv = jm_x16_for(c, &hd_->v, h16, (size_t)D);
    jm_layernorm16(c, h, (size_t)D, &kv, xs, (size_t)D, &hd_->ln_kv, n, D, hd_->ln_eps);
    jm_linear_forward(c, q, (size_t)D, query, (size_t)D, &hd_->q, 1, JK_EPI_STORE, ws);
    jm_linear16(c, kmat, (size_t)2 * D, h, (size_t)D, &kv, &hd_->k, n, JK_EPI_STORE, NULL, ws);
    jm_linear16(c, vmat, (size_t)2 * D, h, (size_t)D, &kv, &hd_->v, n, JK_EPI_STORE, NULL, ws);
    struct jk_attn_args at = {
        .o = y, .ldo = (size_t)D, .q = q, .ldq = (size_t)D, .k = kmat, .ldk = (size_t)2 * D,
        .v = vmat, .ldv = (size_t)2 * D, .nq = 1, .nkv = n, .n_head = hd_->n_head,
        .head_dim = hdim, .scale = (float)(1.0 / sqrt((double)hdim)), .nthreads = nt, .ws = ws,
    };
    c->k.attn(&at);
    c->k.add(y, (size_t)D, query, (size_t)D, NULL, 1, D, nt);   /* residual: the raw query */

    /* y += down(gelu(up(ln2 y))); logits = y Wcls^T + b */
    c->k.layernorm(yn, (size_t)D, y, (size_t)D, dw(c, hd_->ln2.w), dw(c, hd_->ln2.b), 1, D,
                   hd_->ln_eps, nt);
    jm_linear_forward(c, mid, (size_t)ffn, yn, (size_t)D, &hd_->up, 1, JK_EPI_GELU, ws);
    jm_linear_forward(c, y, (size_t)D, mid, (size_t)ffn, &hd_->down, 1, JK_EPI_ADD, ws);
    jm_linear_forward(c, logits_d, (size_t)hd_->n_classes, y, (size_t)D, &hd_->cls, 1, JK_EPI_STORE, ws);
    dev->download(dev, logits, logits_d, sizeof(float) * (size_t)hd_->n_classes);
    return JEPA_OK;
}
