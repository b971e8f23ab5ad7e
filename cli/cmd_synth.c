/*
 * cmd_synth.c — `jepa synth`: write a schema-v1 GGUF with RANDOM weights in the shape of
 * a real published architecture, so the runtime can be run and benchmarked at real size
 * without downloading anything. The file says what it is: general.name starts with
 * "random-", general.source_url names this generator, and `jepa info` flags it.
 *
 *   jepa synth --arch NAME [--dtype f32|f16|bf16|q8_0] [--seed S] -o OUT.gguf
 *
 * Weights: matmul matrices N(0, 0.02²) (the init scale of these models), biases
 * N(0, 0.02²), LayerNorm weights 1 + N(0, 0.1²), tokens / embeddings N(0, 0.5²).
 *
 * The model is built in F32 in memory, loaded (so synth writes only what the loader
 * accepts), and written through `jepa quantize`'s conversion (models/quantize.h): --dtype
 * applies to the weights the loader records as the schema's quantization set, and
 * everything else stays F32, as the schema requires. The F32 image costs memory twice
 * its size at the peak (the writer and its serialised copy). Loaded and run by the CLI
 * tests (tests/models).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "gguf/gguf.h"
#include "jepa.h"

struct arch {
    const char *name, *family, *modality, *about;
    int d, layers, heads, ffn, patch, tubelet, img, frames;
    const char *pos;           /* rope3d | sincos2d | learned */
    const char *layout;        /* rope layout (rope3d) */
    int interpolate;           /* 2.1 */
    int hier[4], n_hier;
    int image_embed;           /* 2.1: patch_embed_img + modality embeddings */
    int cls, block_causal;     /* CLS token (hfvit, lewm, levjepa); LeVJEPA's mask */
    float ln_eps;
    int proj_hidden;           /* lewm projector width (0: none) */
    /* masked predictor (pd = 0: none) */
    int pd, p_layers, p_heads, p_ffn, p_mask, p_out, p_ctx_proj;
    /* attentive-pool head (n_classes = 0: none) */
    int n_classes, pool_layers;
    const char *resize_mode, *resample;
    int resize_short, crop;
    float mean, std;           /* 0: ImageNet statistics */
    /* LeWM world-model predictor (w_frames = 0: none): pd / p_layers / p_heads / p_ffn
     * above, plus the head width, window, action width and output projector width */
    int w_head_dim, w_frames, w_action_dim, w_proj_hidden;
    /* V-JEPA 2-AC predictor (ac_state_dim = 0: none): pd / p_layers / p_heads / p_ffn /
     * p_out above, w_action_dim, and the state width */
    int ac_state_dim;
};

/* Shapes of the published checkpoints (docs/gguf-schema.md; the models' cards). A field left
 * out is 0: no such part (predictor, head, hierarchy), or the default it names above. */
static const struct arch archs[] = {
    {.name = "vjepa2-vitl-256", .family = "vjepa2", .modality = "video",
     .about = "V-JEPA 2 ViT-L/16 256px (vjepa2-vitl-fpc64-256 shape)",
     .d = 1024, .layers = 24, .heads = 16, .ffn = 4096, .patch = 16, .tubelet = 2, .img = 256,
     .frames = 64, .pos = "rope3d", .layout = "tiled", .ln_eps = 1e-6f,
     .pd = 384, .p_layers = 12, .p_heads = 12, .p_ffn = 1536, .p_mask = 10, .p_out = 1024,
     .resize_mode = "shortest_edge", .resample = "bilinear", .resize_short = 292, .crop = 256},
    {.name = "vjepa2-vitl-256-ssv2", .family = "vjepa2", .modality = "video",
     .about = "V-JEPA 2 ViT-L/16 256px + the SSv2 attentive-pool classifier shape (174 classes)",
     .d = 1024, .layers = 24, .heads = 16, .ffn = 4096, .patch = 16, .tubelet = 2, .img = 256,
     .frames = 16, .pos = "rope3d", .layout = "tiled", .ln_eps = 1e-6f,
     .pd = 384, .p_layers = 12, .p_heads = 12, .p_ffn = 1536, .p_mask = 10, .p_out = 1024,
     .n_classes = 174, .pool_layers = 3,
     .resize_mode = "shortest_edge", .resample = "bilinear", .resize_short = 292, .crop = 256},
    {.name = "vjepa2_1-vitb-384", .family = "vjepa2_1", .modality = "image+video",
     .about = "V-JEPA 2.1 ViT-B/16 384px (vjepa2_1_vitb_dist_vitG_384 shape)",
     .d = 768, .layers = 12, .heads = 12, .ffn = 3072, .patch = 16, .tubelet = 2, .img = 384,
     .frames = 64, .pos = "rope3d", .layout = "interleaved", .interpolate = 1,
     .hier = {2, 5, 8, 11}, .n_hier = 4, .image_embed = 1, .ln_eps = 1e-6f,
     .pd = 384, .p_layers = 12, .p_heads = 12, .p_ffn = 1536, .p_mask = 8, .p_out = 1664,
     .p_ctx_proj = 1,
     .resize_mode = "shortest_edge", .resample = "bilinear", .resize_short = 438, .crop = 384},
    {.name = "ijepa-vith14-224", .family = "ijepa", .modality = "image",
     .about = "I-JEPA ViT-H/14 224px (ijepa_vith14_1k shape)",
     .d = 1280, .layers = 32, .heads = 16, .ffn = 5120, .patch = 14, .tubelet = 1, .img = 224,
     .frames = 1, .pos = "sincos2d", .layout = "tiled", .ln_eps = 1e-6f,
     .resize_mode = "squash", .resample = "bicubic", .resize_short = 224, .crop = 224, .mean = 0.5f,
     .std = 0.5f},
    {.name = "lejepa-vits16-224", .family = "hfvit", .modality = "image",
     .about = "LeJEPA ViT-S/16 224px (lejepa-vits16-pretrain-in1k shape)",
     .d = 384, .layers = 12, .heads = 6, .ffn = 1536, .patch = 16, .tubelet = 1, .img = 224,
     .frames = 1, .pos = "learned", .layout = "tiled", .cls = 1, .ln_eps = 1e-6f,
     .resize_mode = "shortest_edge", .resample = "bicubic", .resize_short = 256, .crop = 224},
    {.name = "levjepa-vitl16-224", .family = "levjepa", .modality = "video",
     .about = "LeVJEPA ViT-L/16 224px, 16 frames, block-causal (LeVJEPA-VideoMix-Large shape)",
     .d = 1024, .layers = 24, .heads = 16, .ffn = 4096, .patch = 16, .tubelet = 1, .img = 224,
     .frames = 16, .pos = "rope3d", .layout = "tiled", .cls = 1, .block_causal = 1, .ln_eps = 1e-6f,
     .resize_mode = "shortest_edge", .resample = "bicubic", .resize_short = 224, .crop = 224},
    {.name = "lewm-tiny-224", .family = "lewm", .modality = "image",
     .about = "LeWM encoder: ViT-tiny/14 224px + projector (lewm-pusht shape, no predictor)",
     .d = 192, .layers = 12, .heads = 3, .ffn = 768, .patch = 14, .tubelet = 1, .img = 224,
     .frames = 1, .pos = "learned", .layout = "tiled", .cls = 1, .ln_eps = 1e-12f,
     .proj_hidden = 2048,
     .resize_mode = "shortest_edge", .resample = "bilinear", .resize_short = 224, .crop = 224},
    {.name = "lewm-pusht", .family = "lewm", .modality = "image",
     .about = "LeWM world model: the lewm-tiny-224 encoder + the predictor (6 adaLN blocks of 16 x 64, 3 frames, 10-d actions)",
     .d = 192, .layers = 12, .heads = 3, .ffn = 768, .patch = 14, .tubelet = 1, .img = 224,
     .frames = 1, .pos = "learned", .layout = "tiled", .cls = 1, .ln_eps = 1e-12f,
     .proj_hidden = 2048,
     .pd = 192, .p_layers = 6, .p_heads = 16, .p_ffn = 2048, .p_out = 192, .w_head_dim = 64,
     .w_frames = 3, .w_action_dim = 10, .w_proj_hidden = 2048,
     .resize_mode = "shortest_edge", .resample = "bilinear", .resize_short = 224, .crop = 224},
    {.name = "vjepa2-ac-vitg-256", .family = "vjepa2", .modality = "video",
     .about = "V-JEPA 2-AC: ViT-g/16 256px encoder + the action-conditioned predictor (1024-d, 24 layers, 7-d actions and states; Meta's hub vjepa2_ac_vit_giant shape)",
     .d = 1408, .layers = 40, .heads = 22, .ffn = 6144, .patch = 16, .tubelet = 2, .img = 256,
     .frames = 64, .pos = "rope3d", .layout = "tiled", .ln_eps = 1e-6f,
     .pd = 1024, .p_layers = 24, .p_heads = 16, .p_ffn = 4096, .p_out = 1408, .w_action_dim = 7,
     .ac_state_dim = 7,
     .resize_mode = "shortest_edge", .resample = "bilinear", .resize_short = 292, .crop = 256},
    {.name = "vjepa2-tiny", .family = "vjepa2", .modality = "video",
     .about = "a tiny V-JEPA 2 (128-d, 2 layers) for tests",
     .d = 128, .layers = 2, .heads = 2, .ffn = 512, .patch = 16, .tubelet = 2, .img = 64,
     .frames = 4, .pos = "rope3d", .layout = "tiled", .ln_eps = 1e-6f,
     .pd = 64, .p_layers = 2, .p_heads = 2, .p_ffn = 256, .p_mask = 10, .p_out = 128,
     .n_classes = 7, .pool_layers = 3,
     .resize_mode = "shortest_edge", .resample = "bilinear", .resize_short = 73, .crop = 64},
    {.name = "vjepa2_1-tiny", .family = "vjepa2_1", .modality = "image+video",
     .about = "a tiny V-JEPA 2.1 (64-d, 12 layers) for tests",
     .d = 64, .layers = 12, .heads = 1, .ffn = 256, .patch = 16, .tubelet = 2, .img = 64,
     .frames = 4, .pos = "rope3d", .layout = "interleaved", .interpolate = 1, .hier = {2, 5, 8, 11},
     .n_hier = 4, .image_embed = 1, .ln_eps = 1e-6f,
     .pd = 64, .p_layers = 4, .p_heads = 2, .p_ffn = 256, .p_mask = 8, .p_out = 96, .p_ctx_proj = 1,
     .resize_mode = "shortest_edge", .resample = "bilinear", .resize_short = 73, .crop = 64},
};

#define IS_LEWM_PRED(A) ((A)->w_frames > 0)
#define IS_AC_PRED(A) ((A)->ac_state_dim > 0)

/* ---- deterministic random numbers (splitmix64 + Box-Muller) ---- */
static uint64_t rng;
static double uniform01(void) {
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return ((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
}
static float normal(void) {
    double u = uniform01(), v = uniform01();
    if (u < 1e-300) u = 1e-300;
    return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

struct synth {
    struct gguf_writer *w;
    struct jerr err;
    float *buf;                /* scratch of the largest tensor */
};

enum fill { FILL_WEIGHT, FILL_BIAS, FILL_NORM, FILL_TOKEN };

/* Add an F32 tensor of PyTorch shape [rows, cols] (cols = 0: a vector of rows). */
static int add(struct synth *s, const char *name, int rows, int cols, enum fill f) {
    const int64_t n = (int64_t)rows * (cols ? cols : 1);
    for (int64_t i = 0; i < n; i++) {
        float r = normal();
        s->buf[i] = f == FILL_WEIGHT ? 0.02f * r : f == FILL_BIAS ? 0.02f * r
                  : f == FILL_NORM ? 1.0f + 0.1f * r : 0.5f * r;
    }
    int64_t ne[2] = {cols ? cols : rows, cols ? rows : 1};
    return jg_writer_add_tensor(s->w, name, GGUF_TYPE_F32, cols ? 2 : 1, ne, s->buf, (size_t)n * 4,
                                &s->err) != JEPA_OK;
}

/* The tensors of one pre-LN block under prefix ("enc.blk.3"): attention of inner width
 * (d, or LeWM's n_head x head_dim), a qkv bias or none, and LeWM's adaLN modulation. */
static int add_block_of(struct synth *s, const char *pfx, int d, int inner, int ffn, int qkv_bias, int adaln) {
    char n[192];
    int bad = 0;
#define T(suffix, rows, cols, fill) \
    (snprintf(n, sizeof n, "%s.%s", pfx, suffix), bad |= add(s, n, rows, cols, fill))
    if (adaln) {
        T("adaln.weight", 6 * d, d, FILL_WEIGHT);
        T("adaln.bias", 6 * d, 0, FILL_BIAS);
    }
    T("ln1.weight", d, 0, FILL_NORM);
    T("ln1.bias", d, 0, FILL_BIAS);
    T("attn_qkv.weight", 3 * inner, d, FILL_WEIGHT);
    if (qkv_bias) T("attn_qkv.bias", 3 * inner, 0, FILL_BIAS);
    T("attn_out.weight", d, inner, FILL_WEIGHT);
    T("attn_out.bias", d, 0, FILL_BIAS);
    T("ln2.weight", d, 0, FILL_NORM);
    T("ln2.bias", d, 0, FILL_BIAS);
    T("ffn_up.weight", ffn, d, FILL_WEIGHT);
    T("ffn_up.bias", ffn, 0, FILL_BIAS);
    T("ffn_down.weight", d, ffn, FILL_WEIGHT);
    T("ffn_down.bias", d, 0, FILL_BIAS);
#undef T
    return bad;
}

static int add_block(struct synth *s, const char *pfx, int d, int ffn) {
    return add_block_of(s, pfx, d, d, ffn, 1, 0);
}

static int add_linear(struct synth *s, const char *pfx, int rows, int cols) {
    char n[192];
    snprintf(n, sizeof n, "%s.weight", pfx);
    int bad = add(s, n, rows, cols, FILL_WEIGHT);
    snprintf(n, sizeof n, "%s.bias", pfx);
    return bad | add(s, n, rows, 0, FILL_BIAS);
}

static int add_norm(struct synth *s, const char *pfx, int d) {
    char n[192];
    snprintf(n, sizeof n, "%s.weight", pfx);
    int bad = add(s, n, d, 0, FILL_NORM);
    snprintf(n, sizeof n, "%s.bias", pfx);
    return bad | add(s, n, d, 0, FILL_BIAS);
}

static void synth_usage(FILE *f) {
    fprintf(f, "usage: jepa synth --arch NAME [--dtype f32|f16|bf16|q8_0] [--seed S] -o OUT.gguf\n"
               "Writes a model of a real architecture with RANDOM weights (for runs and benchmarks).\n"
               "architectures:\n");
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        fprintf(f, "  %-22s %s\n", archs[i].name, archs[i].about);
}

/* Floats in the largest tensor synth writes for A: its scratch buffer. */
static int64_t scratch_floats(const struct arch *A) {
    const int64_t grid = A->img / A->patch;
    const int64_t sizes[] = {
        (int64_t)A->ffn * A->d,
        (int64_t)3 * A->d * A->d,
        (int64_t)A->d * 3 * A->tubelet * A->patch * A->patch,
        (int64_t)A->p_out * A->pd,
        (int64_t)A->n_classes * A->d,
        (int64_t)(1 + grid * grid) * A->d,
        (int64_t)A->proj_hidden * A->d,
        (int64_t)3 * A->p_heads * A->w_head_dim * A->pd,
        (int64_t)6 * A->pd * A->pd,
        (int64_t)A->p_ffn * A->pd,
        (int64_t)A->w_proj_hidden * A->pd,
        (int64_t)16 * A->pd * A->pd,   /* the action MLP */
    };
    int64_t big = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (sizes[i] > big) big = sizes[i];
    return big;
}

static void set_encoder_kv(struct gguf_writer *w, const struct arch *A) {
    jg_writer_set_u32(w, "jepa.enc.embed_dim", (uint32_t)A->d);
    jg_writer_set_u32(w, "jepa.enc.n_layer", (uint32_t)A->layers);
    jg_writer_set_u32(w, "jepa.enc.n_head", (uint32_t)A->heads);
    jg_writer_set_u32(w, "jepa.enc.ffn_dim", (uint32_t)A->ffn);
    jg_writer_set_u32(w, "jepa.enc.patch_size", (uint32_t)A->patch);
    jg_writer_set_u32(w, "jepa.enc.tubelet_size", (uint32_t)A->tubelet);
    jg_writer_set_u32(w, "jepa.enc.img_size", (uint32_t)A->img);
    jg_writer_set_u32(w, "jepa.enc.n_frames", (uint32_t)A->frames);
    jg_writer_set_u32(w, "jepa.enc.in_chans", 3);
    jg_writer_set_f32(w, "jepa.enc.ln_eps", A->ln_eps);
    jg_writer_set_str(w, "jepa.enc.act", "gelu_erf");
    jg_writer_set_str(w, "jepa.enc.pos_type", A->pos);
    if (!strcmp(A->pos, "rope3d")) {
        jg_writer_set_f32(w, "jepa.enc.rope_theta", 10000.0f);
        jg_writer_set_bool(w, "jepa.enc.rope_interpolate", A->interpolate);
        jg_writer_set_str(w, "jepa.enc.rope_freq_layout", A->layout);
        if (A->interpolate) jg_writer_set_u32(w, "jepa.enc.rope_ref_grid", (uint32_t)(256 / A->patch));
    }
    if (A->block_causal) jg_writer_set_str(w, "jepa.enc.attn_mode", "block_causal");
    if (A->proj_hidden) jg_writer_set_str(w, "jepa.enc.proj_act", "gelu_erf");
    jg_writer_set_bool(w, "jepa.enc.cls_token", (bool)A->cls);
    jg_writer_set_u32(w, "jepa.enc.n_registers", 0);
    jg_writer_set_bool(w, "jepa.enc.qkv_fused", 1);
    jg_writer_set_bool(w, "jepa.enc.modality_embed", A->image_embed);
    jg_writer_set_bool(w, "jepa.enc.image_patch_embed", A->image_embed);
    if (A->n_hier) {
        uint32_t h[4];
        for (int i = 0; i < A->n_hier; i++) h[i] = (uint32_t)A->hier[i];
        jg_writer_set_arr(w, "jepa.enc.hier_layers", GGUF_V_U32, h, (uint64_t)A->n_hier);
    }
    jg_writer_set_bool(w, "jepa.enc.layer_scale", 0);
}

static void set_lewm_predictor_kv(struct gguf_writer *w, const struct arch *A) {
    jg_writer_set_str(w, "jepa.pred.kind", "lewm");
    jg_writer_set_u32(w, "jepa.pred.embed_dim", (uint32_t)A->pd);
    jg_writer_set_u32(w, "jepa.pred.n_layer", (uint32_t)A->p_layers);
    jg_writer_set_u32(w, "jepa.pred.n_head", (uint32_t)A->p_heads);
    jg_writer_set_u32(w, "jepa.pred.head_dim", (uint32_t)A->w_head_dim);
    jg_writer_set_u32(w, "jepa.pred.ffn_dim", (uint32_t)A->p_ffn);
    jg_writer_set_u32(w, "jepa.pred.out_dim", (uint32_t)A->p_out);
    jg_writer_set_u32(w, "jepa.pred.n_frames", (uint32_t)A->w_frames);
    jg_writer_set_u32(w, "jepa.pred.action_dim", (uint32_t)A->w_action_dim);
    jg_writer_set_u32(w, "jepa.pred.state_dim", 0);
    jg_writer_set_f32(w, "jepa.pred.ln_eps", 1e-5f);
    jg_writer_set_f32(w, "jepa.pred.adaln_eps", 1e-6f);
    jg_writer_set_str(w, "jepa.pred.act", "gelu_erf");
    jg_writer_set_bool(w, "jepa.pred.qkv_bias", 0);
    jg_writer_set_str(w, "jepa.pred.action_act", "silu");
    jg_writer_set_str(w, "jepa.pred.proj_act", "gelu_erf");
}

static void set_ac_predictor_kv(struct gguf_writer *w, const struct arch *A) {
    jg_writer_set_str(w, "jepa.pred.kind", "ac");
    jg_writer_set_u32(w, "jepa.pred.embed_dim", (uint32_t)A->pd);
    jg_writer_set_u32(w, "jepa.pred.n_layer", (uint32_t)A->p_layers);
    jg_writer_set_u32(w, "jepa.pred.n_head", (uint32_t)A->p_heads);
    jg_writer_set_u32(w, "jepa.pred.ffn_dim", (uint32_t)A->p_ffn);
    jg_writer_set_u32(w, "jepa.pred.out_dim", (uint32_t)A->p_out);
    jg_writer_set_str(w, "jepa.pred.rope_freq_layout", A->layout);
    jg_writer_set_bool(w, "jepa.pred.rope_interpolate", 0);
    jg_writer_set_u32(w, "jepa.pred.grid_size", (uint32_t)(A->img / A->patch));
    jg_writer_set_u32(w, "jepa.pred.action_dim", (uint32_t)A->w_action_dim);
    jg_writer_set_u32(w, "jepa.pred.state_dim", (uint32_t)A->ac_state_dim);
    jg_writer_set_bool(w, "jepa.pred.frame_causal", 1);
    jg_writer_set_f32(w, "jepa.pred.ln_eps", 1e-6f);
    jg_writer_set_str(w, "jepa.pred.act", "gelu_erf");
    jg_writer_set_bool(w, "jepa.pred.qkv_bias", 1);
}

static void set_masked_predictor_kv(struct gguf_writer *w, const struct arch *A) {
    jg_writer_set_str(w, "jepa.pred.kind", "masked");
    jg_writer_set_u32(w, "jepa.pred.embed_dim", (uint32_t)A->pd);
    jg_writer_set_u32(w, "jepa.pred.n_layer", (uint32_t)A->p_layers);
    jg_writer_set_u32(w, "jepa.pred.n_head", (uint32_t)A->p_heads);
    jg_writer_set_u32(w, "jepa.pred.ffn_dim", (uint32_t)A->p_ffn);
    jg_writer_set_u32(w, "jepa.pred.n_mask_tokens", (uint32_t)A->p_mask);
    jg_writer_set_u32(w, "jepa.pred.out_dim", (uint32_t)A->p_out);
    jg_writer_set_str(w, "jepa.pred.rope_freq_layout", A->layout);
    jg_writer_set_bool(w, "jepa.pred.rope_interpolate", 0);
    jg_writer_set_u32(w, "jepa.pred.grid_size", (uint32_t)(A->img / A->patch));
    if (A->image_embed) {
        jg_writer_set_u32(w, "jepa.pred.n_hier_in", 1);
        jg_writer_set_bool(w, "jepa.pred.modality_embed", 1);
        jg_writer_set_bool(w, "jepa.pred.context_proj", (bool)A->p_ctx_proj);
    }
    jg_writer_set_f32(w, "jepa.pred.ln_eps", 1e-6f);
    jg_writer_set_str(w, "jepa.pred.act", "gelu_erf");
    jg_writer_set_bool(w, "jepa.pred.qkv_bias", 1);
}

static void set_head_kv(struct gguf_writer *w, const struct arch *A) {
    if (!A->n_classes) {
        jg_writer_set_str(w, "jepa.head.kind", "none");
        return;
    }
    jg_writer_set_str(w, "jepa.head.kind", "attentive_pool");
    jg_writer_set_u32(w, "jepa.head.n_classes", (uint32_t)A->n_classes);
    jg_writer_set_u32(w, "jepa.head.n_pool_layers", (uint32_t)A->pool_layers);
    char **labels = malloc(sizeof(char *) * (size_t)A->n_classes);
    char *store = malloc((size_t)A->n_classes * 24);
    if (labels && store) {
        for (int i = 0; i < A->n_classes; i++) {
            labels[i] = store + (size_t)i * 24;
            snprintf(labels[i], 24, "class_%d", i);
        }
        jg_writer_set_arr_str(w, "jepa.head.labels", (const char *const *)labels, (uint64_t)A->n_classes);
    }
    free(labels);
    free(store);
}

static void set_preprocessing_kv(struct gguf_writer *w, const struct arch *A) {
    float mean[3] = {0.485f, 0.456f, 0.406f}, std[3] = {0.229f, 0.224f, 0.225f};
    if (A->mean) mean[0] = mean[1] = mean[2] = A->mean, std[0] = std[1] = std[2] = A->std;
    jg_writer_set_arr(w, "jepa.pre.mean", GGUF_V_F32, mean, 3);
    jg_writer_set_arr(w, "jepa.pre.std", GGUF_V_F32, std, 3);
    jg_writer_set_u32(w, "jepa.pre.resize_short", (uint32_t)A->resize_short);
    jg_writer_set_u32(w, "jepa.pre.crop", (uint32_t)A->crop);
    jg_writer_set_str(w, "jepa.pre.resample", A->resample);
    jg_writer_set_str(w, "jepa.pre.resize_mode", A->resize_mode);
    jg_writer_set_f32(w, "jepa.pre.rescale", 1.0f / 255.0f);
}

/* The metadata of the schema-v1 file: general.*, then jepa.enc/pred/head/pre.*. */
static void set_metadata(struct gguf_writer *w, const struct arch *A, const char *dtype) {
    char name[160];
    snprintf(name, sizeof name, "random-%s-%s", A->name, dtype);
    jg_writer_set_str(w, "general.architecture", "jepa");
    jg_writer_set_str(w, "general.name", name);
    jg_writer_set_str(w, "general.license", "mit");
    jg_writer_set_str(w, "general.source_url", "jepa synth (random weights, not a trained model)");
    jg_writer_set_u32(w, "general.file_type", 0);   /* quantize sets the target's */
    jg_writer_set_u32(w, "jepa.schema_version", 1);
    jg_writer_set_str(w, "jepa.family", A->family);
    jg_writer_set_str(w, "jepa.modality", A->modality);
    set_encoder_kv(w, A);
    if (IS_LEWM_PRED(A)) set_lewm_predictor_kv(w, A);
    else if (IS_AC_PRED(A)) set_ac_predictor_kv(w, A);
    else if (A->pd) set_masked_predictor_kv(w, A);
    set_head_kv(w, A);
    set_preprocessing_kv(w, A);
}

/* `count` blocks named PREFIX.blk.L of width d; stops at the first failure. */
static int add_blocks(struct synth *s, const char *prefix, int count, int d, int ffn) {
    char name[160];
    int bad = 0;
    for (int l = 0; l < count && !bad; l++) {
        snprintf(name, sizeof name, "%s.blk.%d", prefix, l);
        bad |= add_block(s, name, d, ffn);
    }
    return bad;
}

/* The parts below add their tensors after those of `bad`, the failures so far, and return it
 * with theirs: nonzero when a tensor could not be added (the reason in s->err, if any). A
 * failure stops the stacks of blocks, not the tensors around them. */
static int add_encoder(struct synth *s, const struct arch *A) {
    const int d = A->d, P = A->patch;
    int bad = add_linear(s, "enc.patch_embed", d, 3 * A->tubelet * P * P);
    if (A->image_embed) {
        bad |= add_linear(s, "enc.patch_embed_img", d, 3 * P * P);
        bad |= add(s, "enc.mod_embed_img", d, 0, FILL_TOKEN);
        bad |= add(s, "enc.mod_embed_video", d, 0, FILL_TOKEN);
    }
    if (strcmp(A->pos, "rope3d")) {   /* position table [CLS?; training grid] */
        const int g = A->img / P;
        bad |= add(s, "enc.pos_embed", A->cls + g * g, d, FILL_TOKEN);
    }
    if (A->cls) bad |= add(s, "enc.cls_token", d, 0, FILL_TOKEN);
    if (!bad) bad |= add_blocks(s, "enc", A->layers, d, A->ffn);
    char name[160];
    for (int k = 0; k < A->n_hier; k++) {
        snprintf(name, sizeof name, "enc.hier_norm.%d", k);
        bad |= add_norm(s, name, d);
    }
    bad |= add_norm(s, "enc.norm", d);
    if (A->proj_hidden) {
        bad |= add_linear(s, "enc.proj.0", A->proj_hidden, d);
        bad |= add_linear(s, "enc.proj.2", d, A->proj_hidden);
    }
    return bad;
}

static int add_lewm_predictor(struct synth *s, const struct arch *A, int bad) {
    const int pd = A->pd;
    bad |= add(s, "pred.pos_embed", A->w_frames, pd, FILL_TOKEN);
    bad |= add_linear(s, "pred.action_embed.0", 4 * pd, A->w_action_dim);
    bad |= add_linear(s, "pred.action_embed.2", pd, 4 * pd);
    char name[160];
    for (int l = 0; l < A->p_layers && !bad; l++) {
        snprintf(name, sizeof name, "pred.blk.%d", l);
        bad |= add_block_of(s, name, pd, A->p_heads * A->w_head_dim, A->p_ffn, 0, 1);
    }
    bad |= add_norm(s, "pred.norm", pd);
    bad |= add_linear(s, "pred.proj.0", A->w_proj_hidden, pd);
    bad |= add_linear(s, "pred.proj.2", A->p_out, A->w_proj_hidden);
    return bad;
}

static int add_ac_predictor(struct synth *s, const struct arch *A, int bad) {
    bad |= add_linear(s, "pred.embed", A->pd, A->d);
    bad |= add_linear(s, "pred.action_embed", A->pd, A->w_action_dim);
    bad |= add_linear(s, "pred.state_embed", A->pd, A->ac_state_dim);
    if (!bad) bad |= add_blocks(s, "pred", A->p_layers, A->pd, A->p_ffn);
    bad |= add_norm(s, "pred.norm", A->pd);
    bad |= add_linear(s, "pred.proj", A->p_out, A->pd);
    return bad;
}

static int add_masked_predictor(struct synth *s, const struct arch *A, int bad) {
    bad |= add_linear(s, "pred.embed", A->pd, A->d);
    bad |= add(s, "pred.mask_tokens", A->p_mask, A->pd, FILL_TOKEN);
    if (A->image_embed) {
        bad |= add(s, "pred.mod_embed_img", A->pd, 0, FILL_TOKEN);
        bad |= add(s, "pred.mod_embed_video", A->pd, 0, FILL_TOKEN);
    }
    if (!bad) bad |= add_blocks(s, "pred", A->p_layers, A->pd, A->p_ffn);
    bad |= add_norm(s, "pred.norm", A->pd);
    bad |= add_linear(s, "pred.proj", A->p_out, A->pd);
    if (A->p_ctx_proj) bad |= add_linear(s, "pred.proj_context", A->p_out, A->pd);
    return bad;
}

static int add_head(struct synth *s, const struct arch *A, int bad) {
    const int d = A->d;
    bad |= add(s, "head.query", 1, d, FILL_TOKEN);
    if (!bad) bad |= add_blocks(s, "head", A->pool_layers, d, A->ffn);
    bad |= add_norm(s, "head.xattn.ln_kv", d);
    bad |= add_linear(s, "head.xattn.q", d, d);
    bad |= add_linear(s, "head.xattn.k", d, d);
    bad |= add_linear(s, "head.xattn.v", d, d);
    bad |= add_norm(s, "head.xattn.ln2", d);
    bad |= add_linear(s, "head.xattn.ffn_up", A->ffn, d);
    bad |= add_linear(s, "head.xattn.ffn_down", d, A->ffn);
    bad |= add_linear(s, "head.cls", A->n_classes, d);
    return bad;
}

/* Every tensor of A, in the order the loader reads them. */
static int add_tensors(struct synth *s, const struct arch *A) {
    int bad = add_encoder(s, A);
    if (IS_LEWM_PRED(A)) bad = add_lewm_predictor(s, A, bad);
    else if (IS_AC_PRED(A)) bad = add_ac_predictor(s, A, bad);
    else if (A->pd) bad = add_masked_predictor(s, A, bad);
    if (A->n_classes) bad = add_head(s, A, bad);
    return bad;
}

/* The F32 model in w through the loader, then through quantize's conversion to OUT. Frees w. */
static int write_converted(struct synth *s, const struct arch *A, uint32_t wtype, const char *dtype,
                           const char *out) {
    void *f32 = NULL;
    size_t size = 0;
    jepa_status st = jg_writer_write_mem(s->w, &f32, &size, &s->err);
    jg_writer_free(s->w);
    if (st) return cli_fail(out, "%s", s->err.msg);
    char err[JEPA_ERR_LEN];
    jepa_model *m = NULL;
    int rc = CLI_EXIT_FAIL;
    if (jepa_model_load_memory(&m, f32, size, err)) cli_fail(out, "synth built a model the loader refuses: %s", err);
    else if (jepa_model_quantize(m, out, wtype, err)) cli_fail(out, "%s", err);
    else {
        printf("wrote %s: %s, RANDOM weights, matmul weights %s\n", out, A->about, dtype);
        rc = 0;
    }
    jepa_model_free(m);
    free(f32);
    return rc;
}

struct synth_args {
    const char *arch_name, *dtype, *out;
    uint64_t seed;
};

/* The options into *o; -1 to go on, else the exit status (0 after --help). */
static int parse_args(int argc, char **argv, struct synth_args *o) {
    for (int i = 1; i < argc; i += 2) {   /* options come in pairs: --name value */
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { synth_usage(stdout); return 0; }
        if (!v) return cli_usage_error("synth", "option %s needs a value", a);
        if (!strcmp(a, "--arch")) o->arch_name = v;
        else if (!strcmp(a, "--dtype")) o->dtype = v;
        else if (!strcmp(a, "--seed")) {
            unsigned long long s;
            int rc = cli_parse_u64("synth", a, v, &s);
            if (rc) return rc;
            o->seed = s;
        }
        else if (!strcmp(a, "-o")) o->out = v;
        else return cli_usage_error("synth", "unknown option '%s'", a);
    }
    if (!o->arch_name || !o->out) return cli_usage_error("synth", "needs --arch NAME and -o OUT.gguf");
    return -1;
}

int cmd_synth(int argc, char **argv) {
    struct synth_args o = {.dtype = "f16", .seed = 42};
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0) return rc;
    const struct arch *A = NULL;
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (!strcmp(archs[i].name, o.arch_name)) A = &archs[i];
    if (!A) {
        synth_usage(stderr);
        return cli_usage_error("synth", "unknown architecture '%s'", o.arch_name);
    }
    struct synth s = {0};
    uint32_t wtype;            /* the type of the quantization set's weights */
    if (!strcmp(o.dtype, "f32")) wtype = GGUF_TYPE_F32;
    else if (!strcmp(o.dtype, "f16")) wtype = GGUF_TYPE_F16;
    else if (!strcmp(o.dtype, "q8_0")) wtype = GGUF_TYPE_Q8_0;
    else if (!strcmp(o.dtype, "bf16")) wtype = GGUF_TYPE_BF16;
    else return cli_usage_error("synth", "--dtype takes f32, f16, bf16 or q8_0, not '%s'", o.dtype);
    rng = o.seed;

    s.buf = malloc(sizeof(float) * (size_t)scratch_floats(A));
    s.w = jg_writer_new();
    if (!s.buf || !s.w) { free(s.buf); jg_writer_free(s.w); return cli_fail(NULL, "out of memory"); }
    set_metadata(s.w, A, o.dtype);
    int bad = add_tensors(&s, A);
    free(s.buf);
    if (bad) {
        jg_writer_free(s.w);
        return cli_fail(o.out, "%s", s.err.msg[0] ? s.err.msg : "cannot build the model (out of memory?)");
    }
    return write_converted(&s, A, wtype, o.dtype, o.out);
}
