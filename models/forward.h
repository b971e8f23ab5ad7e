/*
 * forward.h — what the per-family forward functions share: the context (device, kernel
 * table, threads, arenas, last error) and the building blocks (linear layers, the pre-LN
 * ViT block, buffer planning). Internal to the library.
 *
 * Device model. A forward is one piece of code for the CPU and a GPU (kernels/device.h):
 *  - activations live in c->arena, allocated with c->dev->alloc (device memory on a
 *    GPU); only kernels of c->k and the device's copy / zero / upload / download touch
 *    them — never host code;
 *  - weights are passed to kernels through dw(c, p), the identity on the CPU and the
 *    same offset into the device copy of the model's data section on a GPU;
 *  - tables computed on the host (RoPE cos / sin, frame ids, interpolated position
 *    tables) go into a "staged" buffer: on the CPU one arena buffer, computed in place
 *    (upload with the same pointer is a no-op); on a GPU a host buffer in c->host plus
 *    its device twin in c->arena, uploaded once filled;
 *  - outputs are computed into device buffers and downloaded; on the CPU the "device
 *    buffer" is the caller's own buffer and the download is a no-op.
 * The public calls (api.c) bind the device first and sync it last; device failures are
 * sticky and reported there (JEPA_ERR_DEVICE).
 */
#ifndef JEPA_MODELS_FORWARD_H
#define JEPA_MODELS_FORWARD_H

#include <assert.h>
#include <stdbool.h>

#include "jepa.h"
#include "kernels/device.h"
#include "kernels/kernels.h"
#include "models/model.h"
#include "models/rope.h"
#include "runtime/arena.h"
#include "runtime/error.h"

struct jepa_ctx {
    const struct jepa_model *m;
    struct jk_device *dev;     /* jk_device_cpu(), or a CUDA device the context opened */
    struct jk_kernels k;       /* the device's table (CPU: capped by params / JEPA_CPU) */
    int nthreads;
    struct arena arena;        /* activations, device memory; grows to the largest input */
    struct arena host;         /* host side of staged buffers (GPU contexts only) */
    /* The model's data section on the host and its device copy (NULL on the CPU), shared
     * with every context of the model on the same device (models/devcache.c). */
    const uint8_t *w_host;
    size_t w_size;
    uint8_t *w_dev;
    struct jerr err;
};

/* A weight pointer (into the model's mapping) as c's kernels take it. */
static inline const void *dw(const struct jepa_ctx *c, const void *p) {
    if (!p || !c->w_dev) return p;
    const uint8_t *q = (const uint8_t *)p;
    assert(q >= c->w_host && q < c->w_host + c->w_size);
    return c->w_dev + (q - c->w_host);
}

/* ---- planning: count, reserve, carve (arena.h), over the two arenas ---- */

struct plan {
    struct arena_cursor dev;    /* c->arena */
    struct arena_cursor host;   /* c->host (unused on the CPU) */
    bool host_memory;
};

/* A buffer the host fills and kernels read: host == dev on the CPU. */
struct staged {
    void *host, *dev;
    size_t n;
};

/* Pass 0 counts, pass 1 carves the blocks jm_ctx_reserve() made. */
static inline struct plan plan_begin(const struct jepa_ctx *c, int pass) {
    struct plan p = {{pass ? c->arena.base : NULL, 0}, {pass ? c->host.base : NULL, 0},
                     c->dev->host_memory};
    return p;
}

/* Device memory (activations, outputs before their download). */
static inline void *plan_dev(struct plan *p, size_t n) { return arena_take(&p->dev, n); }

/* Host memory only the host reads (RoPE positions): in the arena on the CPU. */
static inline void *plan_host(struct plan *p, size_t n) {
    return arena_take(p->host_memory ? &p->dev : &p->host, n);
}

static inline struct staged plan_staged(struct plan *p, size_t n) {
    struct staged s;
    s.dev = arena_take(&p->dev, n);
    s.host = p->host_memory ? s.dev : arena_take(&p->host, n);
    s.n = n;
    return s;
}

/* Host -> device once the host side is filled (nothing on the CPU). */
static inline void stage_upload(const struct jepa_ctx *c, const struct staged *s) {
    c->dev->upload(c->dev, s->dev, s->host, s->n);
}

/* Reserve what pass 0 counted in both arenas; JEPA_ERR_NOMEM on failure. */
jepa_status jm_ctx_reserve(struct jepa_ctx *c, const struct plan *p);

/* ---- building blocks ---- */

/* Scratch of one ViT stack over nb clips of n rows of width d (planned in the arena):
 *   h    [nb*n, d]                 LayerNorm output, then the attention output
 *   wide [nb*n, max(3d, ffn, ...)] fused qkv, then the MLP hidden layer
 *   tmp  [nb*n, d]                 branch output before layer-scale (NULL without it)
 *   cos, sin [n, head_dim]         RoPE tables, the same for every clip (NULL: no RoPE)
 *   ws                             kernel workspace
 * All device memory. */
struct vit_scratch {
    float *h, *wide, *tmp;
    const float *cos, *sin;
    const int32_t *mask_pos;   /* attention mask rule (kernels.h) of one clip, NULL = full */
    void *ws;
};

/* y = act/epi(x . W^T + b) for M rows (strides in floats); W, b translated by dw(). */
void jm_linear_forward(const struct jepa_ctx *c, float *y, size_t ldy, const float *x, size_t ldx,
            const struct jm_linear *L, int M, enum jk_epilogue epi, void *ws);

/* x [nb*n, vit->d] += attn(ln1(x)); x += mlp(ln2(x)) — one pre-LN block over nb clips of
 * n rows each: row-wise ops run once over nb*n rows, RoPE and attention per clip. */
void jm_vit_block(const struct jepa_ctx *c, const struct jm_vit *vit, const struct jm_block *b,
               float *x, int n, int nb, const struct vit_scratch *s);

/* Bytes of kernel workspace for attention over n keys of head_dim and for matmuls with
 * rows of each K in ks[0 .. nk). kernels.h promises that gemm_ws(nt, K) covers every
 * K' <= K (checkasm_gemm tests it since an x86 kernel once broke it: its K block is K
 * split evenly, so K = 320 needed more than K = 588); taking the maximum over every K
 * used keeps the forward safe even against a table that breaks the promise. */
size_t jm_vit_ws_bytes(const struct jepa_ctx *c, int n, int head_dim, const int *ks, int nk);

/* Column count of the `wide` buffer for a stack. */
int jm_vit_wide_cols(const struct jm_vit *vit);

/* Family forwards (models/encoder.c, predictor.c, head.c). They plan their buffers in
 * c's arenas and record failures in c->err. Inputs and outputs are host memory. */
jepa_status jm_encoder_forward(struct jepa_ctx *c, const float *x, int T, int H, int W,
                            const jepa_embed_params *p, jepa_embed_out *out);
jepa_status jm_predictor_forward(struct jepa_ctx *c, const float *tokens,
                              const jepa_predict_params *p, float *pred, float *ctx_out);
jepa_status jm_head_forward(struct jepa_ctx *c, const float *tokens, int n, float *logits);

#endif
