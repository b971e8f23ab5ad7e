/*
 * forward.h — what the per-family forward functions share: the building blocks (linear
 * layers, the pre-LN ViT block, workspace sizing) and the family forwards themselves,
 * run in a context (models/context.h: device, kernel table, arenas, planning). Internal
 * to the library.
 */
#ifndef JEPA_MODELS_FORWARD_H
#define JEPA_MODELS_FORWARD_H

#include "models/context.h"
#include "models/rope.h"

/* ---- building blocks ---- */

/* ---- 16-bit operand copies (a table with the x16 flag: kernels.h, jk_gemm_args x16) ----
 * On such a table the op that produces a matmul's input (LayerNorm, patchify, a matmul's
 * erf-GELU epilogue, attention) also writes the copy that matmul reads, rounded to the
 * weight's type; the f32 result is written as always, so a matmul without a copy reads
 * it. Only matmuls with f16 / bf16 weights read copies (f32 and block-format weights read
 * f32 X). Every other table plans and passes none. */
struct jm_x16 {
    uint16_t *p;          /* NULL: no copy */
    size_t ld;            /* row stride, elements */
    enum jk_dtype t;      /* JK_F16 or JK_BF16 */
};

/* The type of the copy L's matmul reads on c: JK_F16 / JK_BF16 where c's table has the
 * x16 flag and L's weights are of that type, JK_F16 for block-format weights (the
 * pipelined kernel runs their integer codes on f16 tensor cores); -1 where L reads f32 X. */
int jm_x16_type(const struct jepa_ctx *c, const struct jm_linear *L);
/* buf (row stride ld) as the copy L reads: p = NULL where L reads none (or buf is NULL). */
struct jm_x16 jm_x16_for(const struct jepa_ctx *c, const struct jm_linear *L, uint16_t *buf,
                         size_t ld);
/* Whether some matmul of the stack's blocks reads a copy on c (its scratch then plans h16
 * and wide16). */
bool jm_vit_x16(const struct jepa_ctx *c, const struct jm_vit *vit);
/* Bytes of an arena buffer of n 16-bit values: 0 when `need` is false. */
static inline size_t jm_x16_bytes(bool need, size_t n) { return need ? n * sizeof(uint16_t) : 0; }

/* LayerNorm into y (and, where out->p, its copy out: layernorm16); out may be NULL. */
void jm_layernorm16(const struct jepa_ctx *c, float *y, size_t ldy, const struct jm_x16 *out,
                    const float *x, size_t ldx, const struct jm_norm *nm, int n, int d, float eps);

/* Scratch of one ViT stack over nb clips of n rows of width d (planned in the arena):
 *   h    [nb*n, d]                 LayerNorm output, then the attention output
 *   wide [nb*n, max(3d, ffn, ...)] fused qkv, then the MLP hidden layer
 *   tmp  [nb*n, d]                 branch output before layer-scale (NULL without it)
 *   cos, sin [n, head_dim]         RoPE tables, the same for every clip (NULL: no RoPE)
 *   ws                             kernel workspace
 *   h16  [nb*n, d], wide16 [nb*n, >= ffn]   the 16-bit copies of h and of the MLP hidden
 *                                  layer (jm_vit_x16; NULL on every other table)
 * All device memory. */
struct vit_scratch {
    float *h, *wide, *tmp;
    const float *cos, *sin;
    const int32_t *mask_pos;   /* attention mask rule (kernels.h) of one clip, NULL = full */
    void *ws;
    uint16_t *h16, *wide16;
};

/* y = act/epi(x . W^T + b) for M rows (strides in floats); W, b translated by dw(). */
void jm_linear_forward(const struct jepa_ctx *c, float *y, size_t ldy, const float *x, size_t ldx,
            const struct jm_linear *L, int M, enum jk_epilogue epi, void *ws);
/* The same reading xin (the copy of x, where xin->p and its type is L's) and also writing
 * yout (where yout->p: the next matmul's copy; never with JK_EPI_ADD). Either may be NULL. */
void jm_linear16(const struct jepa_ctx *c, float *y, size_t ldy, const float *x, size_t ldx,
                 const struct jm_x16 *xin, const struct jm_linear *L, int M, enum jk_epilogue epi,
                 const struct jm_x16 *yout, void *ws);

/* y = act(x . W^T + b): the erf-GELU as the matmul's epilogue (it has no slot of its
 * own), the tanh-GELU and SiLU by their slots on y after the matmul. */
void jm_linear_act(const struct jepa_ctx *c, float *y, size_t ldy, const float *x, size_t ldx,
                   const struct jm_linear *L, int M, enum jm_act act, void *ws);
/* jm_linear_act with jm_linear16's copies: yout is written by the erf-GELU epilogue, or
 * after the matmul by the tanh-GELU / SiLU (jm_unary16) where the table has their x16
 * variants. Returns whether it was: the next matmul reads yout only then. */
bool jm_linear_act16(const struct jepa_ctx *c, float *y, size_t ldy, const float *x, size_t ldx,
                     const struct jm_x16 *xin, const struct jm_linear *L, int M, enum jm_act act,
                     const struct jm_x16 *yout, void *ws);

/* act (JM_ACT_GELU_TANH or JM_ACT_SILU) in place on n rows of d at row stride ldx, and
 * where out->p its copy out (the table's gelu_tanh16 / silu16: the slot's f32 bits). out
 * may be NULL. Returns whether the copy was written. */
bool jm_unary16(const struct jepa_ctx *c, enum jm_act act, float *x, size_t ldx, int n, int d,
                const struct jm_x16 *out);
/* The copy out of x (n rows of d, stride ldx) where out->p, for a matmul input no op of the
 * forward produced (an uploaded input): the table's round16. Returns whether it was
 * written. */
bool jm_round16(const struct jepa_ctx *c, const struct jm_x16 *out, const float *x, size_t ldx,
                int n, int d);

/* x [nb*n, vit->d] += attn(ln1(x)); x += mlp(ln2(x)) — one pre-LN block over nb clips of
 * n rows each: row-wise ops run once over nb*n rows, RoPE and attention per clip. */
void jm_vit_block(const struct jepa_ctx *c, const struct jm_vit *vit, const struct jm_block *b,
               float *x, int n, int nb, const struct vit_scratch *s);

/* Bytes of kernel workspace for attention of n_head heads over n keys of head_dim and
 * for matmuls with rows of each K in ks[0 .. nk). kernels.h promises that gemm_ws(nt, K)
 * covers every K' <= K (checkasm_gemm tests it since an x86 kernel once broke it: its K
 * block is K split evenly, so K = 320 needed more than K = 588); taking the maximum over
 * every K used keeps the forward safe even against a table that breaks the promise. */
size_t jm_vit_ws_bytes(const struct jepa_ctx *c, int n, int n_head, int head_dim, const int *ks,
                       int nk);

/* Column count of the `wide` buffer for a stack. */
int jm_vit_wide_cols(const struct jm_vit *vit);

/* How an input of T frames of H x W pixels enters the encoder: the tokenizer, the frames
 * patchify reads (a still image repeated where the family or the tubelet wants it) and
 * the token grid. The one place this is decided: the forward and jepa_model_grid() read
 * it. JEPA_ERR_ARG (with the reason in err) when the size does not fit the model. */
/* Tokens one clip may have (2^20: 16 frames of 4096 x 4096 pixels at patch 16; the largest
 * published inputs have under 20 000). Bounds every size the forward computes from an
 * input's shape before anything is allocated. */
#define JM_MAX_CLIP_TOKENS (1 << 20)

struct jm_input {
    const struct jm_linear *pe;   /* patch embedding */
    int tubelet;
    const float *modality;        /* [d] added to every token, or NULL */
    int repeat;                   /* a still (T = 1) is repeated to this many frames (0: not) */
    int frames;                   /* frames patchify reads: repeat, or T */
    int gt, gh, gw, n_patch;      /* token grid and its size */
};
jepa_status jm_encoder_input(const struct jepa_model *m, int T, int H, int W, jepa_input_kind kind,
                             struct jm_input *in, struct jerr *err);

/* Inputs must be finite: JEPA_ERR_ARG naming the first NaN / Inf of x[0 .. n) (what:
 * "input", "tokens"), else JEPA_OK. Outputs are not checked: a model with non-finite
 * weights gives non-finite outputs (the CLI refuses to write those). */
jepa_status jm_check_finite(struct jepa_ctx *c, const float *x, size_t n, const char *what);

/* Family forwards (models/encoder.c, predictor.c, head.c). They plan their buffers in
 * c's arenas and record failures in c->err. Inputs and outputs are host memory. */
jepa_status jm_encoder_forward(struct jepa_ctx *c, const float *x, int T, int H, int W,
                            const jepa_embed_params *p, jepa_embed_out *out);
/* jepa_ctx_embed_input (jepa.h): the call planned and its arena reserved without an input. */
jepa_status jm_encoder_input_buffer(struct jepa_ctx *c, int T, int H, int W, const jepa_embed_params *p,
                                    const jepa_embed_out *out, float **x);
jepa_status jm_predictor_forward(struct jepa_ctx *c, const float *tokens,
                              const jepa_predict_params *p, float *pred, float *ctx_out);
/* LeWM (models/lewm.c): emb [B*T, pd], actions [B*T, action_dim] -> pred [B*T, out_dim];
 * the rollout of jepa_ctx_lewm_rollout (jepa.h). */
jepa_status jm_lewm_predict(struct jepa_ctx *c, const float *emb, const float *actions, int B, int T,
                            float *pred);
jepa_status jm_lewm_rollout(struct jepa_ctx *c, const float *emb, int B, int T, const float *actions,
                            int steps, float *traj);
/* V-JEPA 2-AC (models/ac.c): jepa_ctx_ac_predict (jepa.h). */
jepa_status jm_ac_predict(struct jepa_ctx *c, const float *tokens, const float *actions, const float *states,
                          int B, int F, float *pred);
int jm_ac_max_frames(const struct jepa_model *m);
/* Meta's pose update of a 7-d state by a 7-d action (models/ac.c). */
void jm_ac_next_state(const float *state, const float *action, float *out);
/* jepa_ctx_ac_rollout (jepa.h); flags: */
#define JM_AC_NORMALIZE 1u        /* predicted tokens layer-normed (Meta's normalize_reps) */
#define JM_AC_LAST_ONLY 2u        /* traj = the last step only, [B, N, D] */
#define JM_AC_SHARED_HISTORY 4u   /* one history for every sequence */
jepa_status jm_ac_rollout(struct jepa_ctx *c, const float *tokens, const float *states, int B, int T,
                          const float *actions, int steps, unsigned flags, float *traj, float *traj_states);
/* The CEM planner (models/plan.c) of jepa_ctx_lewm_plan and jepa_ctx_ac_plan. */
jepa_status jm_ac_plan(struct jepa_ctx *c, const float *tokens, const float *states, int T, const float *past_actions,
                       const float *goal, const jepa_plan_params *p, float *actions, float *energies,
                       float *final_energy);
jepa_status jm_lewm_plan(struct jepa_ctx *c, const float *emb, int T, const float *past_actions,
                         const float *goal, const jepa_plan_params *p, float *actions, float *energies,
                         float *final_energy);
jepa_status jm_head_forward(struct jepa_ctx *c, const float *tokens, int n, float *logits);

#endif
