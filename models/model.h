/*
 * model.h — the typed description of a schema-v1 GGUF, as the forward functions see it.
 *
 * models/loader.c turns a gguf_file into a struct jepa_model and checks everything the
 * forward code assumes (every required tensor present with the shape the declared
 * dims imply, norms / biases / tokens / tables in F32, n_head dividing the width, a
 * known activation and RoPE layout, hier ids in range, labels = classes). After
 * jm_load() succeeds the forward code trusts these structs without further checks.
 *
 * Weights are not copied: every pointer points into the read-only mapping.
 */
#ifndef JEPA_MODELS_MODEL_H
#define JEPA_MODELS_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"
#include "input/preprocess.h"
#include "jepa.h"
#include "kernels/kernels.h"
#include "runtime/error.h"

#define JM_MAX_HIER 16

enum jm_family {
    JM_FAMILY_IJEPA,
    JM_FAMILY_VJEPA,
    JM_FAMILY_VJEPA2,
    JM_FAMILY_VJEPA2_1,
    JM_FAMILY_LEVJEPA,
    JM_FAMILY_HFVIT,
    JM_FAMILY_LEWM,
};

enum jm_act { JM_ACT_GELU_ERF, JM_ACT_GELU_TANH, JM_ACT_SILU };
enum jm_pos_type { JM_POS_SINCOS2D, JM_POS_SINCOS3D, JM_POS_LEARNED, JM_POS_ROPE3D };
enum jm_rope_layout { JM_ROPE_TILED, JM_ROPE_INTERLEAVED };
enum jm_attn_mode { JM_ATTN_FULL, JM_ATTN_BLOCK_CAUSAL };
enum jm_pred_kind { JM_PRED_MASKED, JM_PRED_AC, JM_PRED_LEWM };
enum jm_head_kind { JM_HEAD_NONE, JM_HEAD_ATTENTIVE_POOL, JM_HEAD_LINEAR_CLS };

/* y = x . W^T + b: W is n_out rows of n_in weights of dtype dt (row stride ldw bytes). */
struct jm_linear {
    const char *name;      /* the GGUF tensor's own name string (messages; quantize.c) */
    const void *w;
    enum jk_dtype dt;
    int n_out, n_in;
    size_t ldw;
    const float *b;        /* [n_out] or NULL */
};

struct jm_norm {
    const float *w, *b;    /* [d]; NULL when the norm has no affine part */
};

/* One pre-LN transformer block: x += attn(ln1(x)); x += mlp(ln2(x)). */
struct jm_block {
    struct jm_norm ln1, ln2;
    bool qkv_fused;
    struct jm_linear qkv;          /* [3d, d], rows [q; k; v] (qkv_fused) */
    struct jm_linear q, k, v;      /* [d, d] each (!qkv_fused) */
    struct jm_linear out;          /* [d, d] */
    struct jm_linear up, down;     /* [ffn, d], [d, ffn] */
    const float *ls1, *ls2;        /* [d] layer-scale, or NULL */
    struct jm_linear adaln;        /* LeWM predictor: [6d, d], else unused (w NULL) */
};

/* Widths shared by every ViT stack (encoder, predictor, pooler). */
struct jm_vit {
    int d, n_layer, n_head, head_dim, ffn;
    float ln_eps;
    enum jm_act act;
    struct jm_block *blk;          /* [n_layer] */
};

struct jm_encoder {
    struct jm_vit vit;
    int patch, tubelet, img_size, n_frames, in_chans;
    enum jm_pos_type pos_type;
    float rope_theta;
    enum jm_rope_layout rope_layout;
    bool rope_interpolate;
    int rope_ref_grid;             /* 2.1: positions rescaled to this grid */
    bool cls;
    int n_registers;
    bool modality_embed, image_patch_embed, layer_scale;
    enum jm_attn_mode attn_mode;
    int n_hier;
    int hier_layers[JM_MAX_HIER];

    struct jm_linear patch_embed;      /* [d, C*tubelet*p*p] */
    struct jm_linear patch_embed_img;  /* [d, C*p*p] (image_patch_embed) */
    const float *pos_embed;            /* [n_pos, d] or NULL */
    int n_pos;
    const float *cls_token;            /* [d] */
    const float *reg_tokens;           /* [n_registers, d] */
    const float *mod_embed_img, *mod_embed_video; /* [d] */
    struct jm_norm norm;
    struct jm_norm hier_norm[JM_MAX_HIER];
    /* lewm projector: emb = proj2(act(proj0(cls))) */
    bool has_proj;
    enum jm_act proj_act;
    struct jm_linear proj0, proj2;
};

struct jm_predictor {
    enum jm_pred_kind kind;
    struct jm_vit vit;
    int n_mask_tokens, out_dim, grid_size, n_hier_in;
    float rope_theta;
    enum jm_rope_layout rope_layout;
    bool rope_interpolate;
    int rope_ref_grid;
    bool modality_embed, context_proj;
    struct jm_linear embed;            /* n_hier_in == 1 */
    struct jm_linear embed0, embed2;   /* n_hier_in > 1: 2-layer MLP */
    const float *mask_tokens;          /* [n_mask_tokens, pd] */
    const float *pos_embed;            /* [n_pos, pd] (sincos / lewm) or NULL */
    int n_pos;
    struct jm_norm norm;
    struct jm_linear proj, proj_context;
    const float *mod_embed_img, *mod_embed_video;
    /* AC / LeWM */
    int action_dim, state_dim, n_frames;
    bool frame_causal;
    float adaln_eps;
    enum jm_act action_act, proj_act;
    struct jm_linear action_embed, state_embed;   /* AC */
    struct jm_linear action_embed0, action_embed2; /* lewm */
    struct jm_linear proj0, proj2;                /* lewm */
};

struct jm_head {
    enum jm_head_kind kind;
    int n_classes, n_pool_layers, n_head;
    float ln_eps;
    struct jm_vit vit;                 /* head.blk.* self-attention blocks (no RoPE) */
    const float *query;                /* [d] */
    struct jm_norm ln_kv, ln2;
    struct jm_linear q, k, v, up, down;
    struct jm_linear cls;              /* [n_classes, d] */
    const char **labels;               /* [n_classes] or NULL */
};

/* One matmul weight of a model: models/loader.c records every jm_linear it fills, in
 * load order, and everything that asks "which tensors are matmul weights" reads this
 * list (a device's missing-dtype check, `jepa quantize`, `jepa synth`). quantizable: in
 * the schema's quantization set (docs/gguf-schema.md, "Quantization rules"), the
 * weights `jepa quantize` converts; the others (patch embeddings, action and state
 * embeddings, adaLN modulations) are matmul weights that keep the type they have. */
struct jm_weight {
    const struct jm_linear *lin;
    bool quantizable;
};

struct jepa_model {
    struct gguf_file *g;
    enum jm_family family;
    const char *family_name, *modality, *name, *license, *source_url;
    uint32_t file_type;
    struct jm_encoder enc;
    bool has_pred;
    struct jm_predictor pred;
    struct jm_head head;               /* kind JM_HEAD_NONE when absent */
    jepa_preprocess_recipe pre;        /* jepa.pre.*: the preprocessing recipe */
    struct jm_weight *weights;         /* every matmul weight, in load order */
    int n_weights;
    /* bookkeeping for `jepa info` */
    size_t weight_bytes;
    int64_t n_tensors_by_type[GGUF_TYPE_COUNT];
    /* tensors in the file that schema v1 does not name for this family (accepted) */
    int64_t n_unknown_tensors;
    const char *unknown_tensor;        /* the first of them, or NULL */
    /* Device copies of the weights, shared by the contexts on each device (devcache.c).
     * The only mutable part of a loaded model, behind its own lock. */
    struct jm_dev_cache *dev_cache;
};

/* Build and validate the description of an open GGUF. On success the model owns g
 * (jm_free closes it); on failure g stays the caller's. */
jepa_status jm_load(struct jepa_model **out, struct gguf_file *g, struct jerr *err);
void jm_free(struct jepa_model *m);

/* ---- device copies of the weights (models/devcache.c) ----
 * The model's GGUF data section is uploaded whole, once per (model, CUDA ordinal), on
 * the first context that asks, and freed when the last one releases it (or by jm_free).
 * Every weight pointer p of the model then has the device address
 * dev_base + (p - host_base) (forward.h, dw()). Thread-safe. */
struct jm_dev_cache *jm_dev_cache_new(void);
void jm_dev_cache_free(struct jm_dev_cache *dc);
/* The host range that is mirrored: [*host_base, *host_base + *size). */
void jm_weights_range(const struct jepa_model *m, const uint8_t **host_base, size_t *size);
/* Take a reference on the copy on CUDA device `ordinal` (uploading it if needed). split
 * (a context with the GPU's pipelined table): *ws is the copy's f32 matmul weights split
 * in bf16 hi / lo (made on the first acquire that asks; NULL when the model has no f32
 * matmul weight), else *ws = NULL. Failures: JEPA_ERR_NOMEM / JEPA_ERR_DEVICE. */
struct jm_wsplit;
jepa_status jm_dev_weights_acquire(const struct jepa_model *m, int ordinal, bool split,
                                   uint8_t **dev_base, const struct jm_wsplit **ws,
                                   struct jerr *err);
void jm_dev_weights_release(const struct jepa_model *m, int ordinal);
/* The split of the f32 weight at host address w (a jm_linear's w) in the layout of
 * kernels.h's jk_gemm_args wsplit, row stride *ld elements; NULL if ws has none. */
const uint16_t *jm_wsplit_find(const struct jm_wsplit *ws, const void *w, size_t *ld);
/* Device bytes of the split copy (0 for NULL). */
size_t jm_wsplit_bytes(const struct jm_wsplit *ws);

const char *jm_family_name(enum jm_family f);
const char *jm_act_name(enum jm_act a);

#endif
