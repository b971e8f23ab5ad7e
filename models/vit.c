/*
 * vit.c — the pieces every family's forward is made of: a linear layer over any weight
 * dtype, and the pre-LN ViT block
 *
 *     x += out(attn(rope(qkv(ln1(x)))))        (layer-scale: x += ls1 * out(...))
 *     x += down(act(up(ln2(x))))              (layer-scale: x += ls2 * down(...))
 *
 * Tested end to end by the parity tests (tests/models/test_parity.c) against the
 * reference outputs of Meta's and Hugging Face's PyTorch modules.
 */
#include <math.h>

#include "models/forward.h"
#include "runtime/dtype.h"

void jm_linear_forward(const struct jepa_ctx *c, float *y, size_t ldy, const float *x, size_t ldx,
            const struct jm_linear *L, int M, enum jk_epilogue epi, void *ws) {
    struct jk_gemm_args a = {
        .y = y, .ldy = ldy, .x = x, .ldx = ldx, .w = dw(c, L->w), .ldw = L->ldw,
        .bias = dw(c, L->b),
        .M = M, .N = L->n_out, .K = L->n_in, .epi = epi, .nthreads = c->nthreads, .ws = ws,
        .w_packed = jm_prepack_get(c, L, M),
    };
    c->k.gemm[L->dt](&a);
}

void jm_linear_act(const struct jepa_ctx *c, float *y, size_t ldy, const float *x, size_t ldx,
                   const struct jm_linear *L, int M, enum jm_act act, void *ws) {
    if (act == JM_ACT_GELU_ERF) {
        jm_linear_forward(c, y, ldy, x, ldx, L, M, JK_EPI_GELU, ws);
        return;
    }
    jm_linear_forward(c, y, ldy, x, ldx, L, M, JK_EPI_STORE, ws);
    jk_unary_fn *fn = act == JM_ACT_SILU ? c->k.silu : c->k.gelu_tanh;
    if (ldy == (size_t)L->n_out) fn(y, (size_t)M * ldy, c->nthreads);   /* one call, dense rows */
    else
        for (int m = 0; m < M; m++) fn(y + (size_t)m * ldy, (size_t)L->n_out, c->nthreads);
}

jepa_status jm_check_finite(struct jepa_ctx *c, const float *x, size_t n, const char *what) {
    const size_t i = f32_first_nonfinite(x, n);
    if (i < n)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "%s element %zu is %s: inputs must be finite", what, i,
                          isnan(x[i]) ? "NaN" : "infinite");
    return JEPA_OK;
}

int jm_vit_wide_cols(const struct jm_vit *vit) {
    int w = 3 * vit->d;
    return vit->ffn > w ? vit->ffn : w;
}

size_t jm_vit_ws_bytes(const struct jepa_ctx *c, int n, int n_head, int head_dim, const int *ks, int nk) {
    size_t w = c->k.attn_ws(c->nthreads, n_head, head_dim, n);
    for (int i = 0; i < nk; i++) {
        size_t g = c->k.gemm_ws(c->nthreads, ks[i]);
        if (g > w) w = g;
    }
    return w;
}

/* x += branch, or x += ls * branch with layer-scale: a matmul whose epilogue adds. */
static void residual_linear(const struct jepa_ctx *c, float *x, int d, const float *in,
                            size_t ldin, const struct jm_linear *L, const float *ls, int n,
                            const struct vit_scratch *s) {
    if (!ls) {
        jm_linear_forward(c, x, (size_t)d, in, ldin, L, n, JK_EPI_ADD, s->ws);
        return;
    }
    jm_linear_forward(c, s->tmp, (size_t)d, in, ldin, L, n, JK_EPI_STORE, s->ws);
    c->k.add(x, (size_t)d, s->tmp, (size_t)d, dw(c, ls), n, d, c->nthreads);
}

void jm_vit_block(const struct jepa_ctx *c, const struct jm_vit *vit, const struct jm_block *b,
               float *x, int n, int nb, const struct vit_scratch *s) {
    const int d = vit->d, hd = vit->head_dim, nh = vit->n_head, nt = c->nthreads;
    const int rows = n * nb;  /* row-wise ops see the clips as one matrix */
    const size_t ld3 = (size_t)3 * d;
    float *h = s->h;          /* [rows, d]  */
    float *qkv = s->wide;     /* [rows, 3d] rows [q | k | v] */

    /* attention branch: h = ln1(x); qkv = h W^T + b */
    c->k.layernorm(h, (size_t)d, x, (size_t)d, dw(c, b->ln1.w), dw(c, b->ln1.b), rows, d,
                   vit->ln_eps, nt);
    if (b->qkv_fused) {
        jm_linear_forward(c, qkv, ld3, h, (size_t)d, &b->qkv, rows, JK_EPI_STORE, s->ws);
    } else {
        jm_linear_forward(c, qkv, ld3, h, (size_t)d, &b->q, rows, JK_EPI_STORE, s->ws);
        jm_linear_forward(c, qkv + d, ld3, h, (size_t)d, &b->k, rows, JK_EPI_STORE, s->ws);
        jm_linear_forward(c, qkv + 2 * d, ld3, h, (size_t)d, &b->v, rows, JK_EPI_STORE, s->ws);
    }
    /* per clip: RoPE on q and k (before the 1/sqrt(hd) scaling), then
     * h = softmax(q k^T / sqrt(hd)) v per head (h is free again after the qkv matmul) */
    for (int cl = 0; cl < nb; cl++) {
        float *qc = qkv + (size_t)cl * n * ld3;
        if (s->cos) {
            /* k's heads follow q's in the row (d = nh hd, as the loader ensures and the
             * attention below assumes): one call rotates both as 2 nh heads */
            c->k.rope(qc, ld3, n, 2 * nh, hd, s->cos, s->sin, nt);
        }
        struct jk_attn_args at = {
            .o = h + (size_t)cl * n * d, .ldo = (size_t)d, .q = qc, .ldq = ld3, .k = qc + d,
            .ldk = ld3, .v = qc + 2 * d, .ldv = ld3, .nq = n, .nkv = n, .n_head = nh,
            .head_dim = hd, .scale = (float)(1.0 / sqrt((double)hd)), .q_pos = s->mask_pos,
            .k_pos = s->mask_pos, .nthreads = nt, .ws = s->ws,
        };
        c->k.attn(&at);
    }
    residual_linear(c, x, d, h, (size_t)d, &b->out, b->ls1, rows, s);

    /* MLP branch: x += down(act(up(ln2(x)))) */
    float *mid = s->wide;     /* [rows, ffn] */
    c->k.layernorm(h, (size_t)d, x, (size_t)d, dw(c, b->ln2.w), dw(c, b->ln2.b), rows, d,
                   vit->ln_eps, nt);
    jm_linear_act(c, mid, (size_t)vit->ffn, h, (size_t)d, &b->up, rows, vit->act, s->ws);
    residual_linear(c, x, d, mid, (size_t)vit->ffn, &b->down, b->ls2, rows, s);
}
