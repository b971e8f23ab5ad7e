/*
 * forward.h — what the per-family forward functions share: the context (kernel
 * table, threads, arena, last error) and the building blocks (linear layers, the
 * pre-LN ViT block, RoPE tables). Internal to the library.
 */
#ifndef JEPA_MODELS_FORWARD_H
#define JEPA_MODELS_FORWARD_H

#include "jepa.h"
#include "kernels/kernels.h"
#include "models/model.h"
#include "models/rope.h"
#include "runtime/arena.h"
#include "runtime/error.h"

struct jepa_ctx {
    const struct jepa_model *m;
    struct jk_kernels k;       /* filled once for the CPU (capped by params / JEPA_CPU) */
    int nthreads;
    struct arena arena;        /* activations; grows to the largest input seen */
    struct jerr err;
};

/* Scratch of one ViT stack over n rows of width d (planned in the arena):
 *   h    [n, d]                 LayerNorm output, then the attention output
 *   wide [n, max(3d, ffn, ...)] fused qkv, then the MLP hidden layer
 *   tmp  [n, d]                 branch output before layer-scale (NULL without it)
 *   cos, sin [n, head_dim]      RoPE tables (NULL: no RoPE)
 *   ws                          kernel workspace */
struct vit_scratch {
    float *h, *wide, *tmp;
    const float *cos, *sin;
    const int32_t *mask_pos;   /* attention mask rule (kernels.h), NULL = full */
    void *ws;
};

/* y = act/epi(x . W^T + b) for M rows (strides in floats). */
void linear(const struct jepa_ctx *c, float *y, size_t ldy, const float *x, size_t ldx,
            const struct jm_linear *L, int M, enum jk_epilogue epi, void *ws);

/* x [n, vit->d] += attn(ln1(x)); x += mlp(ln2(x)) — one pre-LN block. */
void vit_block(const struct jepa_ctx *c, const struct jm_vit *vit, const struct jm_block *b,
               float *x, int n, const struct vit_scratch *s);

/* Bytes of kernel workspace for a ViT stack of these dims over n rows; max_k is the
 * widest matmul input (ffn, or a patch's feature count). */
size_t vit_ws_bytes(const struct jepa_ctx *c, int n, int head_dim, int max_k);

/* Column count of the `wide` buffer for a stack. */
int vit_wide_cols(const struct jm_vit *vit);

/* Family forwards (models/encoder.c, predictor.c, head.c). They plan their buffers in
 * c->arena and record failures in c->err. */
jepa_status encoder_forward(struct jepa_ctx *c, const float *x, int T, int H, int W,
                            const jepa_embed_params *p, jepa_embed_out *out);
jepa_status predictor_forward(struct jepa_ctx *c, const float *tokens,
                              const jepa_predict_params *p, float *pred, float *ctx_out);
jepa_status head_forward(struct jepa_ctx *c, const float *tokens, int n, float *logits);

/* Reserve the planned bytes (cursor.used) in c->arena; JEPA_ERR_NOMEM on failure. */
jepa_status ctx_reserve(struct jepa_ctx *c, size_t bytes);

#endif
