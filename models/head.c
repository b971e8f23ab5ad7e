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
 * in Meta's evaluation heads). Tested against Meta's fixture (case D).
 */
#include <math.h>
#include <string.h>

#include "models/forward.h"

jepa_status head_forward(struct jepa_ctx *c, const float *tokens, int n, float *logits) {
    const struct jepa_model *m = c->m;
    const struct jm_head *hd_ = &m->head;
    const struct jm_vit *vit = &hd_->vit;
    const int D = m->enc.vit.d, nt = c->nthreads;

    if (hd_->kind == JM_HEAD_NONE)
        return jerr_set(&c->err, JEPA_ERR_ARG, "this model file has no classifier head");
    if (hd_->kind != JM_HEAD_ATTENTIVE_POOL)
        return jerr_set(&c->err, JEPA_ERR_UNSUPPORTED, "head kind linear_cls: not implemented yet");
    if (n < 1) return jerr_set(&c->err, JEPA_ERR_ARG, "classify needs at least one token");

    const int hdim = D / hd_->n_head, ffn = hd_->up.n_out;
    const int wide_cols = vit_wide_cols(vit) > ffn ? vit_wide_cols(vit) : ffn;
    float *x = NULL, *h = NULL, *wide = NULL, *tmp = NULL, *q = NULL, *y = NULL, *yn = NULL, *mid = NULL;
    void *ws = NULL;
    for (int pass = 0; pass < 2; pass++) {
        struct arena_cursor cur = {pass ? c->arena.base : NULL, 0};
        x = arena_take(&cur, sizeof(float) * (size_t)n * D);           /* [n, D] */
        h = arena_take(&cur, sizeof(float) * (size_t)n * D);           /* [n, D] */
        wide = arena_take(&cur, sizeof(float) * (size_t)n * wide_cols);/* [n, 3D | ffn] */
        tmp = arena_take(&cur, sizeof(float) * (size_t)n * D);
        q = arena_take(&cur, sizeof(float) * (size_t)D);               /* [1, D] */
        y = arena_take(&cur, sizeof(float) * (size_t)D);
        yn = arena_take(&cur, sizeof(float) * (size_t)D);
        mid = arena_take(&cur, sizeof(float) * (size_t)ffn);           /* [1, ffn] */
        ws = arena_take(&cur, vit_ws_bytes(c, n, hdim, ffn > D ? ffn : D));
        jepa_status st;
        if (!pass && (st = ctx_reserve(c, cur.used))) return st;
    }

    /* self-attention blocks over all tokens, no positions */
    memcpy(x, tokens, sizeof(float) * (size_t)n * D);
    struct vit_scratch s = {.h = h, .wide = wide, .tmp = tmp, .cos = NULL, .sin = NULL,
                            .mask_pos = NULL, .ws = ws};
    for (int l = 0; l < vit->n_layer; l++) vit_block(c, vit, &vit->blk[l], x, n, &s);

    /* cross-attention: the raw query attends to ln_kv(x) */
    float *kmat = wide, *vmat = wide + D;          /* [n, D] each, row stride 2D */
    c->k.layernorm(h, (size_t)D, x, (size_t)D, hd_->ln_kv.w, hd_->ln_kv.b, n, D, hd_->ln_eps, nt);
    linear(c, q, (size_t)D, hd_->query, (size_t)D, &hd_->q, 1, JK_EPI_STORE, ws);
    linear(c, kmat, (size_t)2 * D, h, (size_t)D, &hd_->k, n, JK_EPI_STORE, ws);
    linear(c, vmat, (size_t)2 * D, h, (size_t)D, &hd_->v, n, JK_EPI_STORE, ws);
    struct jk_attn_args at = {
        .o = y, .ldo = (size_t)D, .q = q, .ldq = (size_t)D, .k = kmat, .ldk = (size_t)2 * D,
        .v = vmat, .ldv = (size_t)2 * D, .nq = 1, .nkv = n, .n_head = hd_->n_head,
        .head_dim = hdim, .scale = (float)(1.0 / sqrt((double)hdim)), .nthreads = nt, .ws = ws,
    };
    c->k.attn(&at);
    for (int j = 0; j < D; j++) y[j] += hd_->query[j];      /* residual: the raw query */

    /* y += down(gelu(up(ln2 y))); logits = y Wcls^T + b */
    c->k.layernorm(yn, (size_t)D, y, (size_t)D, hd_->ln2.w, hd_->ln2.b, 1, D, hd_->ln_eps, nt);
    linear(c, mid, (size_t)ffn, yn, (size_t)D, &hd_->up, 1, JK_EPI_GELU, ws);
    linear(c, y, (size_t)D, mid, (size_t)ffn, &hd_->down, 1, JK_EPI_ADD, ws);
    linear(c, logits, (size_t)hd_->n_classes, y, (size_t)D, &hd_->cls, 1, JK_EPI_STORE, ws);
    return JEPA_OK;
}
