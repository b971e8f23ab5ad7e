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

int jm_x16_type(const struct jepa_ctx *c, const struct jm_linear *L) {
    if (!c->k.x16) return -1;
    if (L->dt == JK_F16 || L->dt == JK_BF16) return (int)L->dt;
    return jk_dtype_is_block(L->dt) ? JK_F16 : -1;   /* the codes run on f16 tensor cores */
}

struct jm_x16 jm_x16_for(const struct jepa_ctx *c, const struct jm_linear *L, uint16_t *buf,
                         size_t ld) {
    const int t = jm_x16_type(c, L);
    struct jm_x16 r = {t >= 0 ? buf : NULL, ld, t >= 0 ? (enum jk_dtype)t : JK_F16};
    return r;
}

bool jm_vit_x16(const struct jepa_ctx *c, const struct jm_vit *vit) {
    if (!c->k.x16) return false;
    for (int l = 0; l < vit->n_layer; l++) {
        const struct jm_block *b = &vit->blk[l];
        const struct jm_linear *ls[] = {&b->out, &b->up, &b->down, &b->qkv, &b->q, &b->k, &b->v};
        const size_t nl = b->qkv_fused ? 4 : sizeof ls / sizeof *ls;
        for (size_t i = 0; i < nl; i++)
            if ((i != 3 || b->qkv_fused) && jm_x16_type(c, ls[i]) >= 0) return true;
    }
    return false;
}

void jm_layernorm16(const struct jepa_ctx *c, float *y, size_t ldy, const struct jm_x16 *out,
                    const float *x, size_t ldx, const struct jm_norm *nm, int n, int d, float eps) {
    const float *w = nm ? dw(c, nm->w) : NULL, *b = nm ? dw(c, nm->b) : NULL;
    if (out && out->p && c->k.layernorm16)
        c->k.layernorm16(y, ldy, out->p, out->ld, out->t, x, ldx, w, b, n, d, eps, c->nthreads);
    else
        c->k.layernorm(y, ldy, x, ldx, w, b, n, d, eps, c->nthreads);
}

void jm_linear16(const struct jepa_ctx *c, float *y, size_t ldy, const float *x, size_t ldx,
                 const struct jm_x16 *xin, const struct jm_linear *L, int M, enum jk_epilogue epi,
                 const struct jm_x16 *yout, void *ws) {
    struct jk_gemm_args a = {
        .y = y, .ldy = ldy, .x = x, .ldx = ldx, .w = dw(c, L->w), .ldw = L->ldw,
        .bias = dw(c, L->b),
        .M = M, .N = L->n_out, .K = L->n_in, .epi = epi, .nthreads = c->nthreads, .ws = ws,
        .w_packed = jm_prepack_get(c, L, M),
    };
    if (c->k.x16) {
        if (xin && xin->p && jm_x16_type(c, L) == (int)xin->t) a.x16 = xin->p, a.ldx16 = xin->ld;
        if (yout && yout->p && epi != JK_EPI_ADD)
            a.y16 = yout->p, a.ldy16 = yout->ld, a.y16_type = yout->t;
        if (L->dt == JK_F32) a.wsplit = jm_wsplit_find(c->wsplit, L->w, &a.ldwsplit);
    }
    c->k.gemm[L->dt](&a);
}

void jm_linear_forward(const struct jepa_ctx *c, float *y, size_t ldy, const float *x, size_t ldx,
            const struct jm_linear *L, int M, enum jk_epilogue epi, void *ws) {
    jm_linear16(c, y, ldy, x, ldx, NULL, L, M, epi, NULL, ws);
}

bool jm_linear_act16(const struct jepa_ctx *c, float *y, size_t ldy, const float *x, size_t ldx,
                     const struct jm_x16 *xin, const struct jm_linear *L, int M, enum jm_act act,
                     const struct jm_x16 *yout, void *ws) {
    if (act == JM_ACT_GELU_ERF) {
        jm_linear16(c, y, ldy, x, ldx, xin, L, M, JK_EPI_GELU, yout, ws);
        return c->k.x16 && yout && yout->p;
    }
    jm_linear16(c, y, ldy, x, ldx, xin, L, M, JK_EPI_STORE, NULL, ws);
    return jm_unary16(c, act, y, ldy, M, L->n_out, yout);
}

bool jm_unary16(const struct jepa_ctx *c, enum jm_act act, float *x, size_t ldx, int n, int d,
                const struct jm_x16 *out) {
    jk_unary16_fn *fn16 = act == JM_ACT_SILU ? c->k.silu16 : c->k.gelu_tanh16;
    if (out && out->p && fn16) {
        fn16(x, ldx, out->p, out->ld, out->t, n, d, c->nthreads);
        return true;
    }
    jk_unary_fn *fn = act == JM_ACT_SILU ? c->k.silu : c->k.gelu_tanh;
    if (ldx == (size_t)d) fn(x, (size_t)n * ldx, c->nthreads);   /* one call, dense rows */
    else
        for (int m = 0; m < n; m++) fn(x + (size_t)m * ldx, (size_t)d, c->nthreads);
    return false;
}

bool jm_round16(const struct jepa_ctx *c, const struct jm_x16 *out, const float *x, size_t ldx,
                int n, int d) {
    if (!out || !out->p || !c->k.round16) return false;
    c->k.round16(out->p, out->ld, out->t, x, ldx, n, d, c->nthreads);
    return true;
}

void jm_linear_act(const struct jepa_ctx *c, float *y, size_t ldy, const float *x, size_t ldx,
                   const struct jm_linear *L, int M, enum jm_act act, void *ws) {
    (void)jm_linear_act16(c, y, ldy, x, ldx, NULL, L, M, act, NULL, ws);
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

/* x += branch, or x += ls * branch with layer-scale: a matmul whose epilogue adds. in16:
 * the copy of in, or NULL. */
static void residual_linear(const struct jepa_ctx *c, float *x, int d, const float *in,
                            size_t ldin, const struct jm_x16 *in16, const struct jm_linear *L,
                            const float *ls, int n, const struct vit_scratch *s) {
    if (!ls) {
        jm_linear16(c, x, (size_t)d, in, ldin, in16, L, n, JK_EPI_ADD, NULL, s->ws);
        return;
    }
    jm_linear16(c, s->tmp, (size_t)d, in, ldin, in16, L, n, JK_EPI_STORE, NULL, s->ws);
    c->k.add(x, (size_t)d, s->tmp, (size_t)d, dw(c, ls), n, d, c->nthreads);
}

void jm_vit_block(const struct jepa_ctx *c, const struct jm_vit *vit, const struct jm_block *b,
               float *x, int n, int nb, const struct vit_scratch *s) {
    const int d = vit->d, hd = vit->head_dim, nh = vit->n_head, nt = c->nthreads;
    const int rows = n * nb;  /* row-wise ops see the clips as one matrix */
    const size_t ld3 = (size_t)3 * d;
    float *h = s->h;          /* [rows, d]  */
    float *qkv = s->wide;     /* [rows, 3d] rows [q | k | v] */

    /* attention branch: h = ln1(x); qkv = h W^T + b (h16: h's copy, in the type of the
     * q weights; a k or v of another type reads h) */
    const struct jm_x16 h16 =
        jm_x16_for(c, b->qkv_fused ? &b->qkv : &b->q, s->h16, (size_t)d);
    jm_layernorm16(c, h, (size_t)d, &h16, x, (size_t)d, &b->ln1, rows, d, vit->ln_eps);
    if (b->qkv_fused) {
        jm_linear16(c, qkv, ld3, h, (size_t)d, &h16, &b->qkv, rows, JK_EPI_STORE, NULL, s->ws);
    } else {
        jm_linear16(c, qkv, ld3, h, (size_t)d, &h16, &b->q, rows, JK_EPI_STORE, NULL, s->ws);
        jm_linear16(c, qkv + d, ld3, h, (size_t)d, &h16, &b->k, rows, JK_EPI_STORE, NULL, s->ws);
        jm_linear16(c, qkv + 2 * d, ld3, h, (size_t)d, &h16, &b->v, rows, JK_EPI_STORE, NULL,
                    s->ws);
    }
    /* the attention output's copy, for the output projection (h16 is free again) */
    const struct jm_x16 o16 = jm_x16_for(c, &b->out, s->h16, (size_t)d);
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
        if (o16.p) {
            at.o16 = o16.p + (size_t)cl * n * d, at.ldo16 = o16.ld, at.o16_type = o16.t;
        }
        c->k.attn(&at);
    }
    residual_linear(c, x, d, h, (size_t)d, &o16, &b->out, b->ls1, rows, s);

    /* MLP branch: x += down(act(up(ln2(x)))); the hidden layer's copy from up's epilogue
     * (the erf-GELU only) */
    float *mid = s->wide;     /* [rows, ffn] */
    const struct jm_x16 u16 = jm_x16_for(c, &b->up, s->h16, (size_t)d);
    const struct jm_x16 mid16 = jm_x16_for(c, &b->down, s->wide16, (size_t)vit->ffn);
    jm_layernorm16(c, h, (size_t)d, &u16, x, (size_t)d, &b->ln2, rows, d, vit->ln_eps);
    const bool down16 = jm_linear_act16(c, mid, (size_t)vit->ffn, h, (size_t)d, &u16, &b->up, rows,
                                        vit->act, &mid16, s->ws);
    residual_linear(c, x, d, mid, (size_t)vit->ffn, down16 ? &mid16 : NULL, &b->down, b->ls2,
                    rows, s);
}
