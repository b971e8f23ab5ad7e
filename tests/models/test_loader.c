/*
 * test_loader.c — tests of the schema-v1 loader (models/loader.c, jm_load / jm_free).
 *
 *  1. Both fixtures load, and every field of struct jepa_model is compared with the
 *     fixture's meta.json (config.encoder / predictor / head, notes) and the schema
 *     (tensor names and shapes, pre-processing rule crop*256/224, ImageNet mean/std);
 *     every weight pointer is compared with the tensor of that name, and the weight
 *     byte count with the parameter count computed from the config.
 *  2. Schema violations: a fixture rewritten through the GGUF writer with one thing
 *     wrong (test_loader_util.h) must be refused with the right status and a message
 *     naming the key or tensor. Legal variants (absent optional keys, other integer
 *     and float key types, f16 / bf16 / q8_0 weights, extra tensors, the ac predictor)
 *     must load with the schema's defaults.
 *  3. Synthetic models for the families without a fixture (lewm, hfvit with separate
 *     q/k/v, registers, layer-scale and a linear head), built from tables of shapes.
 *  4. A sweep: every integer, string and bool key of both fixtures set to awkward
 *     values; each load succeeds or is refused cleanly (the sanitizer build checks
 *     that nothing is read out of bounds).
 *
 * usage: test_loader DATA_DIR   (tests/data; meson passes it). Exit 0 iff every check
 * passed. Also run under the sanitizer build (-Db_sanitize=address,undefined).
 */
#include "test_loader_util.h"

static char v2_path[1024], v21_path[1024];

static jepa_status load_path(const char *path, struct jepa_model **m, struct jerr *err) {
    struct gguf_file *g = NULL;
    jepa_status st = jg_open(&g, path, err);
    if (st) return st;
    if ((st = jm_load(m, g, err))) jg_close(g);
    return st;
}

static jepa_status load_mem(const void *buf, size_t size, struct jepa_model **m, struct jerr *err) {
    struct gguf_file *g = NULL;
    jepa_status st = jg_open_memory(&g, buf, size, err);
    if (st) return st;
    if ((st = jm_load(m, g, err))) jg_close(g);
    return st;
}

/* ---- field-by-field checks ---- */

static void check_linear(const struct gguf_file *g, const struct jm_linear *l, const char *stem,
                         int n_out, int n_in, int has_bias) {
    char name[192];
    snprintf(name, sizeof name, "%s.weight", stem);
    const struct gguf_tensor *t = jg_find_tensor(g, name);
    CHECK(t && l->w == t->data, "%s: weight pointer", name);
    CHECK(l->name && !strcmp(l->name, name), "%s: name %s", name, l->name ? l->name : "(null)");
    CHECK(l->n_out == n_out && l->n_in == n_in, "%s: %d x %d, expected %d x %d", name, l->n_out,
          l->n_in, n_out, n_in);
    CHECK(l->dt == JK_F32 && l->ldw == 4 * (size_t)n_in, "%s: dt %d ldw %zu", name, l->dt, l->ldw);
    snprintf(name, sizeof name, "%s.bias", stem);
    t = jg_find_tensor(g, name);
    if (has_bias) CHECK(t && (const void *)l->b == t->data, "%s: bias pointer", name);
    else CHECK(l->b == NULL, "%s: bias should be NULL", name);
}

static void check_f32(const struct gguf_file *g, const float *p, const char *name) {
    const struct gguf_tensor *t = jg_find_tensor(g, name);
    CHECK(t && (const void *)p == t->data, "%s: pointer", name);
}

static void check_norm(const struct gguf_file *g, const struct jm_norm *n, const char *stem) {
    char name[192];
    snprintf(name, sizeof name, "%s.weight", stem);
    check_f32(g, n->w, name);
    snprintf(name, sizeof name, "%s.bias", stem);
    check_f32(g, n->b, name);
}

/* A fixture block: fused qkv with biases, every linear with a bias, no layer-scale. */
static void check_blocks(const struct gguf_file *g, const struct jm_vit *v, const char *prefix, int d,
                         int ffn) {
    char stem[128];
    for (int i = 0; i < v->n_layer; i++) {
        const struct jm_block *b = &v->blk[i];
        CHECK(b->qkv_fused, "%s.%d fused", prefix, i);
        snprintf(stem, sizeof stem, "%s.%d.ln1", prefix, i);
        check_norm(g, &b->ln1, stem);
        snprintf(stem, sizeof stem, "%s.%d.ln2", prefix, i);
        check_norm(g, &b->ln2, stem);
        snprintf(stem, sizeof stem, "%s.%d.attn_qkv", prefix, i);
        check_linear(g, &b->qkv, stem, 3 * d, d, 1);
        snprintf(stem, sizeof stem, "%s.%d.attn_out", prefix, i);
        check_linear(g, &b->out, stem, d, d, 1);
        snprintf(stem, sizeof stem, "%s.%d.ffn_up", prefix, i);
        check_linear(g, &b->up, stem, ffn, d, 1);
        snprintf(stem, sizeof stem, "%s.%d.ffn_down", prefix, i);
        check_linear(g, &b->down, stem, d, ffn, 1);
        CHECK(!b->ls1 && !b->ls2 && !b->adaln.w, "%s.%d: no layer-scale / adaln", prefix, i);
    }
}

/* Parameters of one pre-LN block with biases everywhere. */
static int64_t blk_params(int64_t d, int64_t ffn) {
    return 2 * 2 * d + (3 * d * d + 3 * d) + (d * d + d) + (ffn * d + ffn) + (d * ffn + d);
}

static void check_pre_vjepa(const jepa_preprocess_recipe *p, int crop) {
    /* schema: V-JEPA resize_short = crop*256/224, ImageNet mean/std, bilinear, 1/255 */
    static const float mean[3] = {0.485f, 0.456f, 0.406f}, std[3] = {0.229f, 0.224f, 0.225f};
    for (int i = 0; i < 3; i++) {
        CHECK_F(p->mean[i], mean[i]);
        CHECK_F(p->std[i], std[i]);
    }
    CHECK_INT(p->resize_short, crop * 256 / 224);
    CHECK_INT(p->crop, crop);
    CHECK_INT(p->resample, JEPA_RESAMPLE_BILINEAR);
    CHECK_INT(p->mode, JEPA_RESIZE_MODE_SHORTEST_EDGE);
    CHECK_F(p->rescale, 1.0 / 255.0);
}

/* Fixture A-D (meta.json config: encoder 128-d depth 2, 2 heads, mlp_ratio 4, patch 16,
 * tubelet 2, 64 px, 4 frames, LN 1e-6; predictor 64-d depth 2, 2 heads, 10 mask tokens;
 * head depth 4 = 3 self-attention blocks + cross-attention, 2 heads, 7 classes,
 * LN eps 1e-5 (notes), labels c0..c6 (run.labels)). */
static void check_vjepa2(const struct jepa_model *m) {
    const struct gguf_file *g = m->g;
    const struct jm_encoder *e = &m->enc;
    CHECK_INT(m->family, JM_FAMILY_VJEPA2);
    CHECK_STR(m->family_name, "vjepa2");
    CHECK_STR(m->modality, "video");
    CHECK(m->name && strstr(m->name, "random"), "general.name %s", m->name ? m->name : "(null)");
    CHECK(m->license && m->source_url, "licence and source url present");
    CHECK_INT(e->vit.d, 128);
    CHECK_INT(e->vit.n_layer, 2);
    CHECK_INT(e->vit.n_head, 2);
    CHECK_INT(e->vit.head_dim, 64);
    CHECK_INT(e->vit.ffn, 4 * 128);
    CHECK_F(e->vit.ln_eps, 1e-6);
    CHECK_INT(e->vit.act, JM_ACT_GELU_ERF);
    CHECK_INT(e->patch, 16);
    CHECK_INT(e->tubelet, 2);
    CHECK_INT(e->img_size, 64);
    CHECK_INT(e->n_frames, 4);
    CHECK_INT(e->in_chans, 3);
    CHECK_INT(e->pos_type, JM_POS_ROPE3D);
    CHECK_F(e->rope_theta, 10000.0);
    CHECK_INT(e->rope_layout, JM_ROPE_TILED);
    CHECK(!e->rope_interpolate, "no interpolation");
    CHECK(!e->cls && e->n_registers == 0 && !e->layer_scale && !e->modality_embed &&
              !e->image_patch_embed && !e->has_proj,
          "no cls / registers / layer-scale / modality / image patch embed / projector");
    CHECK_INT(e->attn_mode, JM_ATTN_FULL);
    CHECK_INT(e->n_hier, 0);
    CHECK(e->pos_embed == NULL && e->n_pos == 0 && !e->cls_token && !e->reg_tokens, "no tables");
    check_linear(g, &e->patch_embed, "enc.patch_embed", 128, 3 * 2 * 16 * 16, 1);
    CHECK(e->patch_embed_img.w == NULL, "no image patch embed");
    check_blocks(g, &e->vit, "enc.blk", 128, 512);
    check_norm(g, &e->norm, "enc.norm");

    const struct jm_predictor *p = &m->pred;
    CHECK(m->has_pred, "predictor present");
    CHECK_INT(p->kind, JM_PRED_MASKED);
    CHECK_INT(p->vit.d, 64);
    CHECK_INT(p->vit.n_layer, 2);
    CHECK_INT(p->vit.n_head, 2);
    CHECK_INT(p->vit.head_dim, 32);
    CHECK_INT(p->vit.ffn, 4 * 64);
    CHECK_F(p->vit.ln_eps, 1e-6);
    CHECK_INT(p->n_mask_tokens, 10);
    CHECK_INT(p->out_dim, 128);
    CHECK_INT(p->grid_size, 64 / 16);
    CHECK_INT(p->n_hier_in, 1);
    CHECK_INT(p->rope_layout, JM_ROPE_TILED);
    CHECK(!p->rope_interpolate && !p->modality_embed && !p->context_proj, "pred flags");
    CHECK_F(p->rope_theta, 10000.0);
    check_linear(g, &p->embed, "pred.embed", 64, 128, 1);
    check_f32(g, p->mask_tokens, "pred.mask_tokens");
    CHECK(p->pos_embed == NULL, "no pred pos table");
    check_blocks(g, &p->vit, "pred.blk", 64, 256);
    check_norm(g, &p->norm, "pred.norm");
    check_linear(g, &p->proj, "pred.proj", 128, 64, 1);
    CHECK(p->proj_context.w == NULL && !p->mod_embed_img, "no context proj / modality");

    const struct jm_head *h = &m->head;
    CHECK_INT(h->kind, JM_HEAD_ATTENTIVE_POOL);
    CHECK_INT(h->n_classes, 7);
    CHECK_INT(h->n_pool_layers, 4 - 1);
    CHECK_INT(h->n_head, 2);
    CHECK_F(h->ln_eps, 1e-5);
    CHECK_INT(h->vit.d, 128);
    CHECK_INT(h->vit.n_layer, 3);
    CHECK_INT(h->vit.n_head, 2);
    CHECK_INT(h->vit.head_dim, 64);
    CHECK_INT(h->vit.ffn, 4 * 128);
    CHECK_F(h->vit.ln_eps, 1e-5);
    CHECK(h->labels != NULL, "labels");
    for (int i = 0; h->labels && i < 7; i++) {
        char want[8];
        snprintf(want, sizeof want, "c%d", i);
        CHECK_STR(h->labels[i], want);
    }
    check_blocks(g, &h->vit, "head.blk", 128, 512);
    check_f32(g, h->query, "head.query");
    check_norm(g, &h->ln_kv, "head.xattn.ln_kv");
    check_norm(g, &h->ln2, "head.xattn.ln2");
    check_linear(g, &h->q, "head.xattn.q", 128, 128, 1);
    check_linear(g, &h->k, "head.xattn.k", 128, 128, 1);
    check_linear(g, &h->v, "head.xattn.v", 128, 128, 1);
    check_linear(g, &h->up, "head.xattn.ffn_up", 512, 128, 1);
    check_linear(g, &h->down, "head.xattn.ffn_down", 128, 512, 1);
    check_linear(g, &h->cls, "head.cls", 7, 128, 1);

    check_pre_vjepa(&m->pre, 64);

    /* meta.json model.n_tensors = 112, all F32 (README) */
    CHECK_INT(m->n_tensors_by_type[GGUF_TYPE_F32], 112);
    int64_t others = 0;
    for (int t = 1; t < GGUF_TYPE_COUNT; t++) others += m->n_tensors_by_type[t];
    CHECK_INT(others, 0);
    CHECK_INT(m->n_unknown_tensors, 0);
    int64_t n_enc = 128 * 1536 + 128 + 2 * blk_params(128, 512) + 2 * 128;
    int64_t n_pred = 64 * 128 + 64 + 10 * 64 + 2 * blk_params(64, 256) + 2 * 64 + 128 * 64 + 128;
    int64_t n_head = 128 + 3 * blk_params(128, 512) + 2 * 128 + 3 * (128 * 128 + 128) + 2 * 128 +
                     (512 * 128 + 512) + (128 * 512 + 128) + 7 * 128 + 7;
    CHECK_INT(m->weight_bytes, 4 * (n_enc + n_pred + n_head));
}

/* Fixture E/F/H (meta.json config: encoder 64-d depth 12, 1 head, mlp_ratio 4, patch 16,
 * tubelet 2, 64 px, 4 frames, interpolate_rope, modality embedding, image patch embed;
 * notes: hier_layers [2,5,8,11], interleaved RoPE, ref grid int(256/16) = 16; predictor
 * 64-d depth 4, 2 heads, 8 mask tokens, teacher dim 96 -> out_dim 96, return_all_tokens
 * (context projection), modality embeds, n_output_distillation 1 -> n_hier_in 1). */
static void check_vjepa2_1(const struct jepa_model *m) {
    const struct gguf_file *g = m->g;
    const struct jm_encoder *e = &m->enc;
    CHECK_INT(m->family, JM_FAMILY_VJEPA2_1);
    CHECK_STR(m->family_name, "vjepa2_1");
    CHECK_STR(m->modality, "image+video");
    CHECK_INT(e->vit.d, 64);
    CHECK_INT(e->vit.n_layer, 12);
    CHECK_INT(e->vit.n_head, 1);
    CHECK_INT(e->vit.head_dim, 64);
    CHECK_INT(e->vit.ffn, 4 * 64);
    CHECK_F(e->vit.ln_eps, 1e-6);
    CHECK_INT(e->patch, 16);
    CHECK_INT(e->tubelet, 2);
    CHECK_INT(e->img_size, 64);
    CHECK_INT(e->n_frames, 4);
    CHECK_INT(e->pos_type, JM_POS_ROPE3D);
    CHECK_INT(e->rope_layout, JM_ROPE_INTERLEAVED);
    CHECK(e->rope_interpolate, "interpolate_rope");
    CHECK_INT(e->rope_ref_grid, 256 / 16);
    CHECK(e->modality_embed && e->image_patch_embed && !e->cls && !e->layer_scale, "2.1 flags");
    static const int hier[4] = {2, 5, 8, 11};
    CHECK_INT(e->n_hier, 4);
    char stem[64];
    for (int k = 0; k < 4; k++) {
        CHECK_INT(e->hier_layers[k], hier[k]);
        snprintf(stem, sizeof stem, "enc.hier_norm.%d", k);
        check_norm(g, &e->hier_norm[k], stem);
    }
    check_linear(g, &e->patch_embed, "enc.patch_embed", 64, 3 * 2 * 16 * 16, 1);
    check_linear(g, &e->patch_embed_img, "enc.patch_embed_img", 64, 3 * 1 * 16 * 16, 1);
    check_f32(g, e->mod_embed_img, "enc.mod_embed_img");
    check_f32(g, e->mod_embed_video, "enc.mod_embed_video");
    check_blocks(g, &e->vit, "enc.blk", 64, 256);
    check_norm(g, &e->norm, "enc.norm");

    const struct jm_predictor *p = &m->pred;
    CHECK(m->has_pred, "predictor present");
    CHECK_INT(p->kind, JM_PRED_MASKED);
    CHECK_INT(p->vit.d, 64);
    CHECK_INT(p->vit.n_layer, 4);
    CHECK_INT(p->vit.n_head, 2);
    CHECK_INT(p->vit.head_dim, 32);
    CHECK_INT(p->vit.ffn, 4 * 64);
    CHECK_INT(p->n_mask_tokens, 8);
    CHECK_INT(p->out_dim, 96);
    CHECK_INT(p->grid_size, 4);
    CHECK_INT(p->n_hier_in, 1);
    CHECK_INT(p->rope_layout, JM_ROPE_INTERLEAVED);
    CHECK(!p->rope_interpolate, "predictor not interpolated");
    CHECK(p->modality_embed && p->context_proj, "context proj + modality embeds");
    check_linear(g, &p->embed, "pred.embed", 64, 64, 1);
    check_f32(g, p->mask_tokens, "pred.mask_tokens");
    check_f32(g, p->mod_embed_img, "pred.mod_embed_img");
    check_f32(g, p->mod_embed_video, "pred.mod_embed_video");
    check_blocks(g, &p->vit, "pred.blk", 64, 256);
    check_norm(g, &p->norm, "pred.norm");
    check_linear(g, &p->proj, "pred.proj", 96, 64, 1);
    check_linear(g, &p->proj_context, "pred.proj_context", 96, 64, 1);

    CHECK_INT(m->head.kind, JM_HEAD_NONE);
    check_pre_vjepa(&m->pre, 64);
    CHECK_INT(m->n_tensors_by_type[GGUF_TYPE_F32], 219);   /* meta.json model.n_tensors */
    CHECK_INT(m->n_unknown_tensors, 0);
    int64_t n_enc = (64 * 1536 + 64) + (64 * 768 + 64) + 2 * 64 + 12 * blk_params(64, 256) +
                    4 * 2 * 64 + 2 * 64;
    int64_t n_pred = (64 * 64 + 64) + 8 * 64 + 2 * 64 + 4 * blk_params(64, 256) + 2 * 64 +
                     2 * (96 * 64 + 96);
    CHECK_INT(m->weight_bytes, 4 * (n_enc + n_pred));
}

/* ---- checks of the legal variants ---- */

static void chk_identity(const struct jepa_model *m) { check_vjepa2(m); }
static void chk_identity21(const struct jepa_model *m) { check_vjepa2_1(m); }

static void chk_no_qkv_bias(const struct jepa_model *m) {
    CHECK(m->pred.vit.blk[0].qkv.b == NULL && m->pred.vit.blk[1].qkv.b == NULL, "pred qkv without bias");
    CHECK(m->pred.vit.blk[0].out.b != NULL, "other biases kept");
    CHECK_INT(m->n_unknown_tensors, 2);   /* the two pred.blk.*.attn_qkv.bias now unnamed */
}

static void chk_opt_bias(const struct jepa_model *m) {
    CHECK(m->enc.vit.blk[1].down.b == NULL && m->enc.vit.blk[0].down.b != NULL, "optional bias");
}

static void chk_extra(const struct jepa_model *m) {
    CHECK_INT(m->n_unknown_tensors, 1);
    CHECK_STR(m->unknown_tensor, "enc.extra.weight");
}

static void chk_int_types(const struct jepa_model *m) {
    CHECK_INT(m->enc.vit.n_layer, 2);
    CHECK_INT(m->enc.vit.n_head, 2);
    CHECK_INT(m->enc.vit.ffn, 512);
    CHECK_INT(m->enc.patch, 16);
    CHECK_F(m->enc.vit.ln_eps, 1e-6);
    CHECK_F(m->pred.vit.ln_eps, 2e-6);
}

static void chk_defaults_v2(const struct jepa_model *m) {
    CHECK_F(m->head.ln_eps, 1e-6);        /* README: default 1e-6 when absent */
    CHECK_INT(m->head.n_head, 2);         /* default: the encoder's n_head */
    CHECK_INT(m->head.vit.head_dim, 64);
    CHECK_INT(m->enc.rope_layout, JM_ROPE_TILED);
    CHECK_INT(m->pred.rope_layout, JM_ROPE_TILED);
    CHECK_INT(m->pred.grid_size, 4);
    CHECK_INT(m->pre.mode, JEPA_RESIZE_MODE_SHORTEST_EDGE);
}

static void chk_defaults_v21(const struct jepa_model *m) {
    CHECK_INT(m->enc.rope_layout, JM_ROPE_INTERLEAVED);   /* family default */
    CHECK_INT(m->enc.rope_ref_grid, 16);                  /* 256 / patch */
    CHECK_INT(m->pred.rope_layout, JM_ROPE_INTERLEAVED);  /* = the encoder's */
    CHECK_INT(m->pred.grid_size, 4);                      /* img / patch */
    CHECK_F(m->pred.vit.ln_eps, 1e-6);                    /* = the encoder's */
    CHECK_F(m->enc.rope_theta, 10000.0);
}

static void chk_defaults_v21b(const struct jepa_model *m) {
    CHECK_F(m->pre.rescale, 1.0 / 255.0);
    CHECK(m->enc.vit.blk[0].qkv_fused, "qkv_fused default");
    CHECK(!m->enc.cls && m->enc.n_registers == 0 && !m->enc.layer_scale, "token defaults");
    CHECK_INT(m->enc.attn_mode, JM_ATTN_FULL);
    CHECK(!m->pred.modality_embed && !m->pred.context_proj, "pred flag defaults");
    CHECK_INT(m->n_unknown_tensors, 4);   /* pred.mod_embed_{img,video}, pred.proj_context.* */
}

static void chk_no_pred(const struct jepa_model *m) {
    CHECK(!m->has_pred, "no predictor");
    CHECK_INT(m->n_unknown_tensors, 2 + 1 + 2 * 12 + 2 + 2);
}

static void chk_no_head(const struct jepa_model *m) {
    CHECK_INT(m->head.kind, JM_HEAD_NONE);
    CHECK_INT(m->n_unknown_tensors, 1 + 3 * 12 + 2 + 6 + 2 + 4 + 2);
}

static void chk_linear_head(const struct jepa_model *m) {
    CHECK_INT(m->head.kind, JM_HEAD_LINEAR_CLS);
    CHECK_INT(m->head.cls.n_out, 7);
    CHECK_INT(m->head.cls.n_in, 128);
    CHECK_INT(m->head.vit.n_layer, 0);
    CHECK_INT(m->n_unknown_tensors, 1 + 3 * 12 + 2 + 6 + 2 + 4);
}

static void chk_dtypes(const struct jepa_model *m) {
    const struct jm_block *b = &m->enc.vit.blk[0];
    CHECK(b->qkv.dt == JK_F16 && b->qkv.ldw == 2 * 128, "f16 qkv: dt %d ldw %zu", b->qkv.dt, b->qkv.ldw);
    CHECK(b->out.dt == JK_BF16 && b->out.ldw == 2 * 128, "bf16 out: dt %d ldw %zu", b->out.dt, b->out.ldw);
    CHECK(b->up.dt == JK_Q8_0 && b->up.ldw == 34 * 128 / 32, "q8_0 up: dt %d ldw %zu", b->up.dt, b->up.ldw);
    CHECK_INT(m->n_tensors_by_type[GGUF_TYPE_F16], 1);
    CHECK_INT(m->n_tensors_by_type[GGUF_TYPE_BF16], 1);
    CHECK_INT(m->n_tensors_by_type[GGUF_TYPE_Q8_0], 1);
    CHECK_INT(m->n_tensors_by_type[GGUF_TYPE_F32], 109);
}

static void chk_qtypes(const struct jepa_model *m) {
    const struct jm_block *b0 = &m->enc.vit.blk[0], *b1 = &m->enc.vit.blk[1];
    CHECK(b0->qkv.dt == JK_Q4_0 && b0->qkv.ldw == 18 * 128 / 32, "q4_0 qkv: dt %d ldw %zu", b0->qkv.dt, b0->qkv.ldw);
    CHECK(b0->out.dt == JK_Q5_1 && b0->out.ldw == 24 * 128 / 32, "q5_1 out: dt %d ldw %zu", b0->out.dt, b0->out.ldw);
    CHECK(b0->down.dt == JK_Q4_K && b0->down.ldw == 144 * 512 / 256, "q4_K down: dt %d ldw %zu", b0->down.dt, b0->down.ldw);
    CHECK(b1->down.dt == JK_Q6_K && b1->down.ldw == 210 * 512 / 256, "q6_K down: dt %d ldw %zu", b1->down.dt, b1->down.ldw);
    CHECK_INT(m->n_tensors_by_type[GGUF_TYPE_Q4_K], 1);
}

static void chk_ac(const struct jepa_model *m) {
    const struct jm_predictor *p = &m->pred;
    CHECK_INT(p->kind, JM_PRED_AC);
    CHECK_INT(p->action_dim, 7);
    CHECK_INT(p->state_dim, 7);
    CHECK(p->frame_causal, "frame_causal");
    CHECK(p->action_embed.w && p->action_embed.n_out == 64 && p->action_embed.n_in == 7, "action embed");
    CHECK(p->state_embed.w && p->state_embed.n_out == 64 && p->state_embed.n_in == 7, "state embed");
    CHECK(p->mask_tokens == NULL && p->n_mask_tokens == 0, "no mask tokens for ac");
    CHECK_INT(m->n_unknown_tensors, 1);   /* pred.mask_tokens, without a count now */
}

/* A masked predictor whose positions come from a table (pred.pos_embed, an encoder with
 * sincos positions): the loader reads it, predict refuses it by name (the forward applies
 * RoPE only) instead of ignoring the table. */
static void chk_pred_table(const struct jepa_model *m) {
    CHECK(m->pred.pos_embed != NULL && m->enc.pos_type != JM_POS_ROPE3D, "a predictor position table");
    jepa_ctx *c = NULL;
    jepa_ctx_params cp = jepa_ctx_default_params();
    cp.n_threads = 1;
    char err[JEPA_ERR_LEN] = "";
    if (jepa_ctx_new(&c, m, &cp, err) != JEPA_OK) {
        CHECK(0, "context: %s", err);
        return;
    }
    static const float tok[128];
    float pred[128];
    const int32_t ids[1] = {0};
    jepa_predict_params pp = {.ctx_ids = ids, .n_ctx = 1, .tgt_ids = ids, .n_tgt = 1, .mask_index = 1};
    jepa_status st = jepa_ctx_predict(c, tok, &pp, pred, NULL);
    CHECK(st == JEPA_ERR_UNSUPPORTED && strstr(jepa_ctx_error(c), "position table (pred.pos_embed"),
          "predict with a table: status %d, '%s'", st, jepa_ctx_error(c));
    jepa_ctx_free(c);
}

/* ---- the table of rewritten fixtures ---- */

#define KSTR(k, v) {.op = K_STR, .key = k, .s = v}
#define KU32(k, v) {.op = K_U32, .key = k, .num = v}
#define KNUM(o, k, v) {.op = o, .key = k, .num = v}
#define KBOOL(k, v) {.op = K_BOOL, .key = k, .num = v}
#define KDEL(k) {.op = K_DEL, .key = k}
#define KARRI(k, ...) {.op = K_ARR_I32, .key = k, .arr = (const double[]){__VA_ARGS__}, \
                       .n = (int)(sizeof((const double[]){__VA_ARGS__}) / sizeof(double))}
#define KARRF(k, ...) {.op = K_ARR_F32, .key = k, .arr = (const double[]){__VA_ARGS__}, \
                       .n = (int)(sizeof((const double[]){__VA_ARGS__}) / sizeof(double))}
#define TDROP(n) {.name = n, .drop = 1}
#define TTYPE(n, ty) {.name = n, .retype = 1, .type = ty}
#define TSHAPE(n, a, b) {.name = n, .n_dims = 2, .ne = {a, b}}
#define TADD(n, a, b) {.name = n, .add = 1, .n_dims = 2, .ne = {a, b}}

enum { V2, V21 };

static const struct vcase {
    int fixture;
    const char *what;
    struct kedit k[TL_MAX_EDITS];
    struct tedit t[TL_MAX_EDITS];
    jepa_status want;
    const char *msg;                          /* substring of the error message */
    void (*check)(const struct jepa_model *); /* for the legal variants */
} cases[] = {
    /* violations */
    {V2, "unknown family", {KSTR("jepa.family", "vjepa9")}, {{0}}, JEPA_ERR_SCHEMA, "jepa.family", NULL},
    {V2, "wrong architecture", {KSTR("general.architecture", "llama")}, {{0}}, JEPA_ERR_SCHEMA, "general.architecture", NULL},
    {V2, "schema_version 2", {KU32("jepa.schema_version", 2)}, {{0}}, JEPA_ERR_UNSUPPORTED, "jepa.schema_version", NULL},
    {V2, "missing schema_version", {KDEL("jepa.schema_version")}, {{0}}, JEPA_ERR_SCHEMA, "jepa.schema_version", NULL},
    {V2, "unknown modality", {KSTR("jepa.modality", "audio")}, {{0}}, JEPA_ERR_SCHEMA, "jepa.modality", NULL},
    {V2, "missing required tensor", {{0}}, {TDROP("enc.blk.1.ffn_down.weight")}, JEPA_ERR_SCHEMA, "enc.blk.1.ffn_down.weight", NULL},
    {V2, "norm stored as f16", {{0}}, {TTYPE("enc.blk.0.ln1.weight", GGUF_TYPE_F16)}, JEPA_ERR_SCHEMA, "enc.blk.0.ln1.weight", NULL},
    {V2, "bias stored as f16", {{0}}, {TTYPE("enc.blk.1.attn_qkv.bias", GGUF_TYPE_F16)}, JEPA_ERR_SCHEMA, "enc.blk.1.attn_qkv.bias", NULL},
    {V2, "mask tokens stored as f16", {{0}}, {TTYPE("pred.mask_tokens", GGUF_TYPE_F16)}, JEPA_ERR_SCHEMA, "pred.mask_tokens", NULL},
    {V2, "embed_dim 0", {KU32("jepa.enc.embed_dim", 0)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.enc.embed_dim", NULL},
    {V2, "embed_dim not matching the tensors", {KU32("jepa.enc.embed_dim", 256)}, {{0}}, JEPA_ERR_SCHEMA, "enc.patch_embed.weight", NULL},
    {V2, "n_head not dividing embed_dim", {KU32("jepa.enc.n_head", 3)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.enc.n_head", NULL},
    {V2, "odd head_dim with RoPE", {KU32("jepa.enc.n_head", 128)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.enc.n_head", NULL},
    {V2, "wrong tensor shape", {{0}}, {TSHAPE("enc.blk.0.ffn_up.weight", 128, 511)}, JEPA_ERR_SCHEMA, "enc.blk.0.ffn_up.weight", NULL},
    {V2, "transposed weight", {{0}}, {TSHAPE("enc.blk.1.ffn_down.weight", 128, 512)}, JEPA_ERR_SCHEMA, "enc.blk.1.ffn_down.weight", NULL},
    {V2, "unknown activation", {KSTR("jepa.enc.act", "relu")}, {{0}}, JEPA_ERR_SCHEMA, "jepa.enc.act", NULL},
    {V2, "unknown rope layout", {KSTR("jepa.enc.rope_freq_layout", "spiral")}, {{0}}, JEPA_ERR_SCHEMA, "jepa.enc.rope_freq_layout", NULL},
    {V2, "unknown pos_type", {KSTR("jepa.enc.pos_type", "alibi")}, {{0}}, JEPA_ERR_SCHEMA, "jepa.enc.pos_type", NULL},
    {V2, "unknown attn_mode", {KSTR("jepa.enc.attn_mode", "sparse")}, {{0}}, JEPA_ERR_SCHEMA, "jepa.enc.attn_mode", NULL},
    {V2, "labels count != n_classes", {{.op = K_ARR_STR, .key = "jepa.head.labels", .sarr = (const char *const[]){"c0", "c1", "c2", "c3", "c4", "c5"}, .n = 6}}, {{0}}, JEPA_ERR_SCHEMA, "jepa.head.labels", NULL},
    {V2, "n_classes != labels", {KU32("jepa.head.n_classes", 8)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.head.labels", NULL},
    {V2, "q4_K on a bias (f32 only)", {{0}}, {TTYPE("enc.blk.0.ffn_up.bias", GGUF_TYPE_Q4_K)}, JEPA_ERR_SCHEMA, "enc.blk.0.ffn_up.bias: type q4_K, expected f32", NULL},
    {V2, "q2_K matmul weight (not a schema type)", {{0}}, {TTYPE("enc.blk.0.ffn_down.weight", GGUF_TYPE_Q2_K)}, JEPA_ERR_SCHEMA, "enc.blk.0.ffn_down.weight: type q2_K (10) is not allowed by schema v1", NULL},
    {V2, "q8_1 norm (not a schema type)", {{0}}, {TTYPE("enc.norm.weight", GGUF_TYPE_Q8_1)}, JEPA_ERR_SCHEMA, "enc.norm.weight: type q8_1 (9) is not allowed by schema v1", NULL},
    {V2, "pre.crop larger than pre.resize_short", {KU32("jepa.pre.crop", 300)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.pre.crop = 300 is larger than jepa.pre.resize_short", NULL},
    {V2, "pre.resize_short 8192", {KU32("jepa.pre.resize_short", 8192)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.pre.resize_short", NULL},
    {V2, "pre.rescale denormal", {KNUM(K_F32, "jepa.pre.rescale", 1e-40)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.pre.rescale", NULL},
    {V2, "pre.rescale 1000", {KNUM(K_F32, "jepa.pre.rescale", 1000)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.pre.rescale", NULL},
    {V2, "pre.std denormal", {KARRF("jepa.pre.std", 0.2, 1e-40, 0.2)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.pre.std", NULL},
    {V2, "ln_eps denormal", {KNUM(K_F32, "jepa.enc.ln_eps", 1e-40)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.enc.ln_eps", NULL},
    {V2, "pred.head_dim on a masked predictor", {KU32("jepa.pred.head_dim", 64)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.pred.head_dim", NULL},
    {V2, "pred.grid_size 65535", {KU32("jepa.pred.grid_size", 65535)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.pred.grid_size", NULL},
    {V2, "q4_0 patch embedding (outside the quantization set)", {{0}}, {TTYPE("enc.patch_embed.weight", GGUF_TYPE_Q4_0)}, JEPA_ERR_SCHEMA, "enc.patch_embed.weight: type q4_0, but schema v1 quantizes only", NULL},
    {V2, "integer key stored as string", {KSTR("jepa.enc.embed_dim", "128")}, {{0}}, JEPA_ERR_SCHEMA, "jepa.enc.embed_dim", NULL},
    {V2, "float key stored as string", {KSTR("jepa.enc.ln_eps", "1e-6")}, {{0}}, JEPA_ERR_SCHEMA, "jepa.enc.ln_eps", NULL},
    {V2, "float key stored as integer", {KU32("jepa.head.ln_eps", 1)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.head.ln_eps", NULL},
    {V2, "bool key stored as integer", {KU32("jepa.enc.qkv_fused", 1)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.enc.qkv_fused", NULL},
    {V2, "string key stored as integer", {KU32("jepa.enc.act", 0)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.enc.act", NULL},
    {V2, "missing required key", {KDEL("jepa.enc.ffn_dim")}, {{0}}, JEPA_ERR_SCHEMA, "jepa.enc.ffn_dim", NULL},
    {V2, "n_layer larger than the tensors", {KU32("jepa.enc.n_layer", 3)}, {{0}}, JEPA_ERR_SCHEMA, "enc.blk.2.ln1.weight", NULL},
    {V2, "n_layer 4000", {KU32("jepa.enc.n_layer", 4000)}, {{0}}, JEPA_ERR_SCHEMA, "enc.blk.2.ln1.weight", NULL},
    {V2, "n_layer out of range", {KU32("jepa.enc.n_layer", 100000)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.enc.n_layer", NULL},
    {V2, "negative n_layer", {KNUM(K_I64, "jepa.enc.n_layer", -2)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.enc.n_layer", NULL},
    {V2, "huge u64 embed_dim", {KNUM(K_U64, "jepa.enc.embed_dim", 1.8e19)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.enc.embed_dim", NULL},
    {V2, "img_size not a multiple of patch", {KU32("jepa.enc.img_size", 72)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.enc.img_size", NULL},
    {V2, "n_frames not a multiple of tubelet", {KU32("jepa.enc.n_frames", 5)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.enc.n_frames", NULL},
    {V2, "in_chans 4", {KU32("jepa.enc.in_chans", 4)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.enc.in_chans", NULL},
    {V2, "ln_eps 0", {KNUM(K_F32, "jepa.enc.ln_eps", 0)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.enc.ln_eps", NULL},
    {V2, "hier ids without hier norms", {KARRI("jepa.enc.hier_layers", 0, 1)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.enc.hier_layers", NULL},
    {V2, "sincos without pos_embed", {KSTR("jepa.enc.pos_type", "sincos3d")}, {{0}}, JEPA_ERR_SCHEMA, "enc.pos_embed", NULL},
    {V2, "cls_token without the tensor", {KBOOL("jepa.enc.cls_token", 1)}, {{0}}, JEPA_ERR_SCHEMA, "enc.cls_token", NULL},
    {V2, "layer_scale without ls1", {KBOOL("jepa.enc.layer_scale", 1)}, {{0}}, JEPA_ERR_SCHEMA, "enc.blk.0.ls1", NULL},
    {V2, "separate q/k/v missing", {KBOOL("jepa.enc.qkv_fused", 0)}, {{0}}, JEPA_ERR_SCHEMA, "enc.blk.0.attn_q.weight", NULL},
    {V2, "unknown predictor kind", {KSTR("jepa.pred.kind", "diffusion")}, {{0}}, JEPA_ERR_SCHEMA, "jepa.pred.kind", NULL},
    {V2, "0 mask tokens", {KU32("jepa.pred.n_mask_tokens", 0)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.pred.n_mask_tokens", NULL},
    {V2, "mask token count != rows", {KU32("jepa.pred.n_mask_tokens", 9)}, {{0}}, JEPA_ERR_SCHEMA, "pred.mask_tokens", NULL},
    {V2, "pred.proj rows != out_dim", {KU32("jepa.pred.out_dim", 100)}, {{0}}, JEPA_ERR_SCHEMA, "pred.proj.weight", NULL},
    {V2, "pred qkv_bias true without bias", {{0}}, {TDROP("pred.blk.1.attn_qkv.bias")}, JEPA_ERR_SCHEMA, "pred.blk.1.attn_qkv.bias", NULL},
    {V2, "ac without action_dim", {KSTR("jepa.pred.kind", "ac")}, {{0}}, JEPA_ERR_SCHEMA, "jepa.pred.action_dim", NULL},
    {V2, "ac without action_embed", {KSTR("jepa.pred.kind", "ac"), KU32("jepa.pred.action_dim", 7), KU32("jepa.pred.state_dim", 7)}, {{0}}, JEPA_ERR_SCHEMA, "pred.action_embed.weight", NULL},
    {V2, "unknown head kind", {KSTR("jepa.head.kind", "mlp")}, {{0}}, JEPA_ERR_SCHEMA, "jepa.head.kind", NULL},
    {V2, "head n_head not dividing", {KU32("jepa.head.n_head", 3)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.head.n_head", NULL},
    {V2, "missing head.query", {{0}}, {TDROP("head.query")}, JEPA_ERR_SCHEMA, "head.query", NULL},
    {V2, "head block ffn disagrees", {{0}}, {TSHAPE("head.blk.2.ffn_up.weight", 128, 256)}, JEPA_ERR_SCHEMA, "head.blk.2.ffn_up.weight", NULL},
    {V2, "labels not strings", {KARRI("jepa.head.labels", 0, 1, 2, 3, 4, 5, 6)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.head.labels", NULL},
    {V2, "file_type as string", {KSTR("general.file_type", "f32")}, {{0}}, JEPA_ERR_SCHEMA, "general.file_type", NULL},
    {V2, "mean of 2 values", {KARRF("jepa.pre.mean", 0.5, 0.5)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.pre.mean", NULL},
    {V2, "std 0", {KARRF("jepa.pre.std", 0.2, 0, 0.2)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.pre.std", NULL},
    {V2, "unknown resample", {KSTR("jepa.pre.resample", "nearest")}, {{0}}, JEPA_ERR_SCHEMA, "jepa.pre.resample", NULL},
    {V2, "unknown resize_mode", {KSTR("jepa.pre.resize_mode", "pad")}, {{0}}, JEPA_ERR_SCHEMA, "jepa.pre.resize_mode", NULL},
    {V2, "missing crop", {KDEL("jepa.pre.crop")}, {{0}}, JEPA_ERR_SCHEMA, "jepa.pre.crop", NULL},
    {V21, "hier id out of range", {KARRI("jepa.enc.hier_layers", 2, 5, 8, 12)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.enc.hier_layers", NULL},
    {V21, "hier ids not increasing", {KARRI("jepa.enc.hier_layers", 2, 5, 5, 11)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.enc.hier_layers", NULL},
    {V21, "hier count != norms", {KARRI("jepa.enc.hier_layers", 2, 5, 8)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.enc.hier_layers", NULL},
    {V21, "too many hier ids", {KARRI("jepa.enc.hier_layers", 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.enc.hier_layers", NULL},
    {V21, "hier_layers as a scalar", {KU32("jepa.enc.hier_layers", 2)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.enc.hier_layers", NULL},
    {V21, "missing hier norm bias", {{0}}, {TDROP("enc.hier_norm.3.bias")}, JEPA_ERR_SCHEMA, "enc.hier_norm.3.bias", NULL},
    {V21, "missing image patch embed", {{0}}, {TDROP("enc.patch_embed_img.weight")}, JEPA_ERR_SCHEMA, "enc.patch_embed_img.weight", NULL},
    {V21, "modality embed as f16", {{0}}, {TTYPE("enc.mod_embed_video", GGUF_TYPE_F16)}, JEPA_ERR_SCHEMA, "enc.mod_embed_video", NULL},
    {V21, "missing context projection", {{0}}, {TDROP("pred.proj_context.weight")}, JEPA_ERR_SCHEMA, "pred.proj_context.weight", NULL},
    {V21, "n_hier_in 2 without pred.embed.0", {KU32("jepa.pred.n_hier_in", 2)}, {{0}}, JEPA_ERR_SCHEMA, "pred.embed.0.weight", NULL},
    {V21, "n_hier_in above the encoder's", {KU32("jepa.pred.n_hier_in", 5)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.pred.n_hier_in", NULL},
    {V21, "rope ref grid 1", {KU32("jepa.enc.rope_ref_grid", 1)}, {{0}}, JEPA_ERR_SCHEMA, "jepa.enc.rope_ref_grid", NULL},
    {V21, "ac with modality embeds", {KSTR("jepa.pred.kind", "ac"), KU32("jepa.pred.action_dim", 7), KU32("jepa.pred.state_dim", 7)}, {{0}}, JEPA_ERR_UNSUPPORTED, "jepa.pred.modality_embed", NULL},
    {V21, "predictor layout unknown", {KSTR("jepa.pred.rope_freq_layout", "tiled2")}, {{0}}, JEPA_ERR_SCHEMA, "jepa.pred.rope_freq_layout", NULL},

    /* legal variants */
    {V2, "identity rewrite (jg_writer_copy_kv)", {{0}}, {{0}}, JEPA_OK, NULL, chk_identity},
    {V2, "identity rewrite (key by key)", {KDEL("no.such.key")}, {{0}}, JEPA_OK, NULL, chk_identity},
    {V21, "identity rewrite", {{0}}, {{0}}, JEPA_OK, NULL, chk_identity21},
    {V2, "pred qkv_bias false", {KBOOL("jepa.pred.qkv_bias", 0)}, {{0}}, JEPA_OK, NULL, chk_no_qkv_bias},
    {V21, "optional bias absent", {{0}}, {TDROP("enc.blk.1.ffn_down.bias")}, JEPA_OK, NULL, chk_opt_bias},
    {V2, "extra tensor", {{0}}, {TADD("enc.extra.weight", 4, 4)}, JEPA_OK, NULL, chk_extra},
    {V2, "other integer and float key types", {KNUM(K_U64, "jepa.enc.n_layer", 2), KNUM(K_U8, "jepa.enc.n_head", 2), KNUM(K_I64, "jepa.enc.ffn_dim", 512), KNUM(K_I32, "jepa.enc.patch_size", 16), KNUM(K_F64, "jepa.enc.ln_eps", 1e-6), KNUM(K_F64, "jepa.pred.ln_eps", 2e-6)}, {{0}}, JEPA_OK, NULL, chk_int_types},
    {V2, "defaults (head eps / heads, layouts, grid)", {KDEL("jepa.head.ln_eps"), KDEL("jepa.head.n_head"), KDEL("jepa.enc.rope_freq_layout"), KDEL("jepa.pred.rope_freq_layout"), KDEL("jepa.pred.grid_size")}, {{0}}, JEPA_OK, NULL, chk_defaults_v2},
    {V21, "defaults (layouts, ref grid, grid, eps, theta)", {KDEL("jepa.enc.rope_freq_layout"), KDEL("jepa.enc.rope_ref_grid"), KDEL("jepa.pred.rope_freq_layout"), KDEL("jepa.pred.grid_size"), KDEL("jepa.pred.ln_eps"), KDEL("jepa.enc.rope_theta")}, {{0}}, JEPA_OK, NULL, chk_defaults_v21},
    {V21, "defaults (rescale, flags)", {KDEL("jepa.pre.rescale"), KDEL("jepa.enc.qkv_fused"), KDEL("jepa.enc.cls_token"), KDEL("jepa.enc.n_registers"), KDEL("jepa.pred.modality_embed"), KDEL("jepa.pred.context_proj")}, {{0}}, JEPA_OK, NULL, chk_defaults_v21b},
    {V2, "no predictor (kind absent)", {KDEL("jepa.pred.kind")}, {{0}}, JEPA_OK, NULL, chk_no_pred},
    {V2, "no predictor (kind none)", {KSTR("jepa.pred.kind", "none")}, {{0}}, JEPA_OK, NULL, chk_no_pred},
    {V2, "no head (kind none)", {KSTR("jepa.head.kind", "none")}, {{0}}, JEPA_OK, NULL, chk_no_head},
    {V2, "linear_cls head", {KSTR("jepa.head.kind", "linear_cls")}, {{0}}, JEPA_OK, NULL, chk_linear_head},
    {V2, "f16 / bf16 / q8_0 weights", {{0}}, {TTYPE("enc.blk.0.attn_qkv.weight", GGUF_TYPE_F16), TTYPE("enc.blk.0.attn_out.weight", GGUF_TYPE_BF16), TTYPE("enc.blk.0.ffn_up.weight", GGUF_TYPE_Q8_0)}, JEPA_OK, NULL, chk_dtypes},
    /* (a K-quant on rows of 128 never reaches the loader: the GGUF reader refuses a row
     * that is not a whole number of blocks, tests/gguf) */
    {V2, "4-6 bit weights", {{0}}, {TTYPE("enc.blk.0.attn_qkv.weight", GGUF_TYPE_Q4_0), TTYPE("enc.blk.0.attn_out.weight", GGUF_TYPE_Q5_1), TTYPE("enc.blk.0.ffn_down.weight", GGUF_TYPE_Q4_K), TTYPE("enc.blk.1.ffn_down.weight", GGUF_TYPE_Q6_K)}, JEPA_OK, NULL, chk_qtypes},
    {V2, "ac predictor", {KSTR("jepa.pred.kind", "ac"), KU32("jepa.pred.action_dim", 7), KU32("jepa.pred.state_dim", 7), KBOOL("jepa.pred.frame_causal", 1), KDEL("jepa.pred.n_mask_tokens")}, {TADD("pred.action_embed.weight", 7, 64), TADD("pred.state_embed.weight", 7, 64)}, JEPA_OK, NULL, chk_ac},
    {V2, "masked predictor with a position table", {KSTR("jepa.enc.pos_type", "sincos3d")}, {TADD("enc.pos_embed", 128, 32), TADD("pred.pos_embed", 64, 32)}, JEPA_OK, NULL, chk_pred_table},
};

static void run_case(const struct vcase *c) {
    void *buf = NULL;
    size_t size = 0;
    struct jerr err = {0};
    struct jepa_model *m = NULL;
    const char *src = c->fixture == V2 ? v2_path : v21_path;
    jepa_status st = tl_rewrite(src, c->k, c->t, &buf, &size, &err);
    CHECK(st == JEPA_OK, "[%s] rewrite failed: %s", c->what, err.msg);
    if (st) return;
    jr_err_clear(&err);
    st = load_mem(buf, size, &m, &err);
    CHECK(st == c->want, "[%s] status %d (%s), expected %d; message: %s", c->what, st,
          jepa_status_str(st), c->want, err.msg);
    if (c->want == JEPA_OK) {
        if (m && c->check) c->check(m);
    } else {
        CHECK(m == NULL, "[%s] model must be NULL on failure", c->what);
        CHECK(strstr(err.msg, c->msg) != NULL, "[%s] message \"%s\" does not name \"%s\"", c->what,
              err.msg, c->msg);
        if (getenv("TEST_LOADER_VERBOSE")) printf("  %-40s -> %s\n", c->what, err.msg);
    }
    jm_free(m);
    free(buf);
}

/* ---- synthetic models ---- */

#define KCOMMON(fam, mod)                                                                  \
    KSTR("general.architecture", "jepa"), KU32("jepa.schema_version", 1),                \
    KSTR("jepa.family", fam), KSTR("jepa.modality", mod),                                 \
    KSTR("general.name", "synthetic-random"), KARRF("jepa.pre.mean", 0.5, 0.5, 0.5),      \
    KARRF("jepa.pre.std", 0.5, 0.5, 0.5), KU32("jepa.pre.resize_short", 16),              \
    KU32("jepa.pre.crop", 16), KSTR("jepa.pre.resample", "bicubic"),                       \
    KSTR("jepa.pre.resize_mode", "squash")

/* LeWM: hfvit-layout encoder (CLS, learned pos table, projector) and the lewm predictor
 * (adaLN blocks, 2 heads x 8 in a 32-d model, no qkv bias, action MLP, MLP projector). */
static const struct kedit lewm_keys[] = {
    KCOMMON("lewm", "image"),
    KU32("jepa.enc.embed_dim", 32), KU32("jepa.enc.n_layer", 1), KU32("jepa.enc.n_head", 2),
    KU32("jepa.enc.ffn_dim", 64), KU32("jepa.enc.patch_size", 8), KU32("jepa.enc.tubelet_size", 1),
    KU32("jepa.enc.img_size", 16), KU32("jepa.enc.n_frames", 1), KU32("jepa.enc.in_chans", 3),
    KNUM(K_F32, "jepa.enc.ln_eps", 1e-12), KSTR("jepa.enc.act", "gelu_erf"),
    KSTR("jepa.enc.pos_type", "learned"), KBOOL("jepa.enc.cls_token", 1),
    KSTR("jepa.enc.proj_act", "gelu_erf"),
    KSTR("jepa.pred.kind", "lewm"), KU32("jepa.pred.embed_dim", 32), KU32("jepa.pred.n_layer", 1),
    KU32("jepa.pred.n_head", 2), KU32("jepa.pred.head_dim", 8), KU32("jepa.pred.ffn_dim", 64),
    KU32("jepa.pred.n_frames", 3), KU32("jepa.pred.action_dim", 4), KU32("jepa.pred.state_dim", 0),
    KNUM(K_F32, "jepa.pred.ln_eps", 1e-5), KNUM(K_F32, "jepa.pred.adaln_eps", 1e-6),
    KBOOL("jepa.pred.qkv_bias", 0), KSTR("jepa.pred.action_act", "silu"),
    KSTR("jepa.pred.proj_act", "gelu_erf"),
};

#define BLOCK_F32(p, d, inner, ffn)                                                        \
    {p ".ln1.weight", d, 0, 0}, {p ".ln1.bias", d, 0, 0}, {p ".attn_out.weight", inner, d, 0}, \
    {p ".attn_out.bias", d, 0, 0}, {p ".ln2.weight", d, 0, 0}, {p ".ln2.bias", d, 0, 0},       \
    {p ".ffn_up.weight", d, ffn, 0}, {p ".ffn_up.bias", ffn, 0, 0},                            \
    {p ".ffn_down.weight", ffn, d, 0}, {p ".ffn_down.bias", d, 0, 0}

static struct syn_tensor lewm_tensors[] = {
    {"enc.patch_embed.weight", 192, 32, 0}, {"enc.patch_embed.bias", 32, 0, 0},
    {"enc.pos_embed", 32, 5, 0}, {"enc.cls_token", 32, 0, 0},
    BLOCK_F32("enc.blk.0", 32, 32, 64),
    {"enc.blk.0.attn_qkv.weight", 32, 96, 0}, {"enc.blk.0.attn_qkv.bias", 96, 0, 0},
    {"enc.norm.weight", 32, 0, 0}, {"enc.norm.bias", 32, 0, 0},
    {"enc.proj.0.weight", 32, 48, 0}, {"enc.proj.0.bias", 48, 0, 0},
    {"enc.proj.2.weight", 48, 32, 0}, {"enc.proj.2.bias", 32, 0, 0},
    {"pred.pos_embed", 32, 3, 0},
    BLOCK_F32("pred.blk.0", 32, 16, 64),
    {"pred.blk.0.attn_qkv.weight", 32, 48, 0},
    {"pred.blk.0.adaln.weight", 32, 192, 0}, {"pred.blk.0.adaln.bias", 192, 0, 0},
    {"pred.norm.weight", 32, 0, 0}, {"pred.norm.bias", 32, 0, 0},
    {"pred.action_embed.0.weight", 4, 128, 0}, {"pred.action_embed.0.bias", 128, 0, 0},
    {"pred.action_embed.2.weight", 128, 32, 0}, {"pred.action_embed.2.bias", 32, 0, 0},
    {"pred.proj.0.weight", 32, 64, 0}, {"pred.proj.0.bias", 64, 0, 0},
    {"pred.proj.2.weight", 64, 32, 0}, {"pred.proj.2.bias", 32, 0, 0},
};

/* hfvit: separate q/k/v in f16 / bf16 / q8_0, registers, layer-scale, linear head. */
static const struct kedit hfvit_keys[] = {
    KCOMMON("hfvit", "image"),
    KU32("jepa.enc.embed_dim", 32), KU32("jepa.enc.n_layer", 2), KU32("jepa.enc.n_head", 4),
    KU32("jepa.enc.ffn_dim", 64), KU32("jepa.enc.patch_size", 8), KU32("jepa.enc.tubelet_size", 1),
    KU32("jepa.enc.img_size", 16), KU32("jepa.enc.n_frames", 1), KU32("jepa.enc.in_chans", 3),
    KNUM(K_F32, "jepa.enc.ln_eps", 1e-6), KSTR("jepa.enc.act", "gelu_tanh"),
    KSTR("jepa.enc.pos_type", "learned"), KBOOL("jepa.enc.cls_token", 1),
    KU32("jepa.enc.n_registers", 2), KBOOL("jepa.enc.qkv_fused", 0), KBOOL("jepa.enc.layer_scale", 1),
    KSTR("jepa.head.kind", "linear_cls"), KU32("jepa.head.n_classes", 3),
};

#define HF_BLOCK(p)                                                                          \
    BLOCK_F32(p, 32, 32, 64), {p ".attn_q.weight", 32, 32, GGUF_TYPE_F16},                   \
    {p ".attn_q.bias", 32, 0, 0}, {p ".attn_k.weight", 32, 32, GGUF_TYPE_BF16},              \
    {p ".attn_k.bias", 32, 0, 0}, {p ".attn_v.weight", 32, 32, GGUF_TYPE_Q8_0},              \
    {p ".attn_v.bias", 32, 0, 0}, {p ".ls1", 32, 0, 0}, {p ".ls2", 32, 0, 0}

static struct syn_tensor hfvit_tensors[] = {
    {"enc.patch_embed.weight", 192, 32, 0}, {"enc.patch_embed.bias", 32, 0, 0},
    {"enc.pos_embed", 32, 5, 0}, {"enc.cls_token", 32, 0, 0}, {"enc.reg_tokens", 32, 2, 0},
    HF_BLOCK("enc.blk.0"), HF_BLOCK("enc.blk.1"),
    {"enc.norm.weight", 32, 0, 0}, {"enc.norm.bias", 32, 0, 0},
    {"head.cls.weight", 32, 3, 0}, {"head.cls.bias", 3, 0, 0},
};

#define NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))

static jepa_status load_synthetic(const struct kedit *keys, int nk, const struct syn_tensor *ts,
                                  int nt, struct jepa_model **m, struct jerr *err, void **buf) {
    size_t size = 0;
    jepa_status st = tl_build(keys, nk, ts, nt, buf, &size, err);
    CHECK(st == JEPA_OK, "synthetic build: %s", err->msg);
    if (st) return st;
    return load_mem(*buf, size, m, err);
}

static void test_lewm(void) {
    struct jerr err = {0};
    struct jepa_model *m = NULL;
    void *buf = NULL;
    jepa_status st = load_synthetic(lewm_keys, NELEM(lewm_keys), lewm_tensors, NELEM(lewm_tensors), &m, &err, &buf);
    CHECK(st == JEPA_OK, "lewm synthetic: %s", err.msg);
    if (m) {
        const struct jm_encoder *e = &m->enc;
        const struct jm_predictor *p = &m->pred;
        CHECK_INT(m->family, JM_FAMILY_LEWM);
        CHECK(e->cls && e->cls_token && e->pos_type == JM_POS_LEARNED, "cls + learned pos");
        CHECK_INT(e->n_pos, 1 + 2 * 2);
        CHECK(e->has_proj && e->proj0.n_in == 32 && e->proj0.n_out == 48 && e->proj2.n_out == 32,
              "projector 32 -> 48 -> 32");
        CHECK_INT(e->proj_act, JM_ACT_GELU_ERF);
        CHECK_INT(p->kind, JM_PRED_LEWM);
        CHECK_INT(p->vit.head_dim, 8);
        CHECK_INT(p->vit.blk[0].qkv.n_out, 3 * 16);
        CHECK_INT(p->vit.blk[0].out.n_in, 16);
        CHECK(p->vit.blk[0].qkv.b == NULL, "no qkv bias");
        CHECK(p->vit.blk[0].adaln.w && p->vit.blk[0].adaln.n_out == 6 * 32 && p->vit.blk[0].adaln.b,
              "adaln [6d, d] with bias");
        CHECK_INT(p->n_pos, 3);
        CHECK_INT(p->n_frames, 3);
        CHECK(p->action_embed0.n_in == 4 && p->action_embed0.n_out == 128 && p->action_embed2.n_out == 32,
              "action MLP");
        CHECK(p->proj0.n_out == 64 && p->proj2.n_in == 64 && p->proj2.n_out == 32, "proj MLP");
        CHECK_INT(p->out_dim, 32);   /* default: the encoder width */
        CHECK_F(p->vit.ln_eps, 1e-5);
        CHECK_F(p->adaln_eps, 1e-6);
        CHECK_INT(p->action_act, JM_ACT_SILU);
        CHECK_INT(m->pre.mode, JEPA_RESIZE_MODE_SQUASH);
        CHECK_INT(m->pre.resample, JEPA_RESAMPLE_BICUBIC);
        CHECK_INT(m->n_unknown_tensors, 0);
    }
    jm_free(m);
    free(buf);

    /* violations on the synthetic model: an adaLN bias in f16; projector widths that disagree */
    struct { const char *name; int64_t ne0, ne1; int type; const char *msg; } bad[] = {
        {"pred.blk.0.adaln.bias", 192, 0, GGUF_TYPE_F16, "pred.blk.0.adaln.bias"},
        {"enc.proj.2.weight", 40, 32, 0, "enc.proj.2.weight"},
        {"pred.pos_embed", 32, 2, 0, "pred.pos_embed"},
        {"enc.pos_embed", 32, 4, 0, "enc.pos_embed"},
    };
    for (int b = 0; b < NELEM(bad); b++) {
        struct syn_tensor ts[NELEM(lewm_tensors)];
        memcpy(ts, lewm_tensors, sizeof ts);
        for (int i = 0; i < NELEM(ts); i++)
            if (!strcmp(ts[i].name, bad[b].name)) {
                ts[i].ne0 = bad[b].ne0;
                ts[i].ne1 = bad[b].ne1;
                ts[i].type = bad[b].type;
            }
        jr_err_clear(&err);
        m = NULL;
        buf = NULL;
        st = load_synthetic(lewm_keys, NELEM(lewm_keys), ts, NELEM(ts), &m, &err, &buf);
        CHECK(st == JEPA_ERR_SCHEMA && strstr(err.msg, bad[b].msg), "lewm %s: status %d, %s",
              bad[b].name, st, err.msg);
        jm_free(m);
        free(buf);
    }
}

static void test_hfvit(void) {
    struct jerr err = {0};
    struct jepa_model *m = NULL;
    void *buf = NULL;
    jepa_status st = load_synthetic(hfvit_keys, NELEM(hfvit_keys), hfvit_tensors, NELEM(hfvit_tensors), &m, &err, &buf);
    CHECK(st == JEPA_OK, "hfvit synthetic: %s", err.msg);
    if (m) {
        const struct jm_encoder *e = &m->enc;
        CHECK_INT(m->family, JM_FAMILY_HFVIT);
        CHECK_INT(e->vit.act, JM_ACT_GELU_TANH);
        CHECK_INT(e->vit.head_dim, 8);
        CHECK(e->reg_tokens && e->n_registers == 2, "registers");
        for (int i = 0; i < 2; i++) {
            const struct jm_block *b = &e->vit.blk[i];
            CHECK(!b->qkv_fused && b->qkv.w == NULL, "separate q/k/v");
            CHECK(b->q.dt == JK_F16 && b->q.ldw == 64 && b->q.n_out == 32, "q f16");
            CHECK(b->k.dt == JK_BF16 && b->k.ldw == 64, "k bf16");
            CHECK(b->v.dt == JK_Q8_0 && b->v.ldw == 34, "v q8_0");
            CHECK(b->q.b && b->k.b && b->v.b && b->ls1 && b->ls2, "biases and layer scales");
        }
        CHECK(!m->has_pred, "no predictor");
        CHECK_INT(m->head.kind, JM_HEAD_LINEAR_CLS);
        CHECK_INT(m->head.cls.n_out, 3);
        CHECK(m->head.labels == NULL, "no labels");
        CHECK_INT(m->n_tensors_by_type[GGUF_TYPE_F16], 2);
        CHECK_INT(m->n_tensors_by_type[GGUF_TYPE_BF16], 2);
        CHECK_INT(m->n_tensors_by_type[GGUF_TYPE_Q8_0], 2);
        CHECK_INT(m->n_unknown_tensors, 0);
    }
    jm_free(m);
    free(buf);

    /* drop a layer scale of the last block: refused, naming it */
    struct syn_tensor ts[NELEM(hfvit_tensors)];
    int n = 0;
    for (int i = 0; i < NELEM(hfvit_tensors); i++)
        if (strcmp(hfvit_tensors[i].name, "enc.blk.1.ls2")) ts[n++] = hfvit_tensors[i];
    jr_err_clear(&err);
    m = NULL;
    buf = NULL;
    st = load_synthetic(hfvit_keys, NELEM(hfvit_keys), ts, n, &m, &err, &buf);
    CHECK(st == JEPA_ERR_SCHEMA && strstr(err.msg, "enc.blk.1.ls2"), "missing ls2: %d %s", st, err.msg);
    jm_free(m);
    free(buf);
}


/* ---- sweep: every integer key of both fixtures set to awkward values, every string
 * key to every name the schema knows. Each load must either succeed or fail with a
 * schema / unsupported status and a message (never crash or read out of bounds: this
 * is the part the sanitizer build is for). ---- */

static const char *const all_names[] = {
    "ijepa", "vjepa", "vjepa2", "vjepa2_1", "levjepa", "hfvit", "lewm", "image", "video",
    "image+video", "gelu_tanh", "silu", "sincos2d", "sincos3d", "learned", "rope3d", "tiled",
    "interleaved", "block_causal", "masked", "ac", "none", "attentive_pool", "linear_cls",
    "squash", "bicubic", "",
};

static void sweep_one(const char *src, const struct kedit *k, int *n_ok, int *n_refused) {
    struct kedit ke[TL_MAX_EDITS] = {*k};
    void *buf = NULL;
    size_t size = 0;
    struct jerr err = {0};
    struct jepa_model *m = NULL;
    if (tl_rewrite(src, ke, NULL, &buf, &size, &err)) {
        CHECK(0, "sweep rewrite %s: %s", k->key, err.msg);
        return;
    }
    jr_err_clear(&err);
    jepa_status st = load_mem(buf, size, &m, &err);
    if (st == JEPA_OK) {
        (*n_ok)++;
        CHECK(m != NULL, "sweep %s: OK without a model", k->key);
    } else {
        (*n_refused)++;
        CHECK((st == JEPA_ERR_SCHEMA || st == JEPA_ERR_UNSUPPORTED) && m == NULL && err.msg[0],
              "sweep %s: status %d, message \"%s\"", k->key, st, err.msg);
    }
    jm_free(m);
    free(buf);
}

static void test_sweep(void) {
    static const double values[] = {0, 1, 2, 3, 5, 16, 33, 1000, 65537, 4294967295.0};
    const char *srcs[2] = {v2_path, v21_path};
    int n_ok = 0, n_refused = 0;
    for (int f = 0; f < 2; f++) {
        struct gguf_file *g = NULL;
        struct jerr err = {0};
        if (jg_open(&g, srcs[f], &err)) {
            CHECK(0, "open %s: %s", srcs[f], err.msg);
            continue;
        }
        for (int64_t i = 0; i < jg_n_kv(g); i++) {
            const struct gguf_kv *kv = jg_kv_at(g, i);
            struct kedit k = {.key = kv->key};
            if (kv->type == GGUF_V_U32) {
                for (size_t v = 0; v < sizeof values / sizeof values[0]; v++) {
                    k.op = K_U32;
                    k.num = values[v];
                    sweep_one(srcs[f], &k, &n_ok, &n_refused);
                }
            } else if (kv->type == GGUF_V_STRING && strncmp(kv->key, "general.", 8)) {
                for (size_t v = 0; v < sizeof all_names / sizeof all_names[0]; v++) {
                    k.op = K_STR;
                    k.s = all_names[v];
                    sweep_one(srcs[f], &k, &n_ok, &n_refused);
                }
            } else if (kv->type == GGUF_V_BOOL) {
                k.op = K_BOOL;
                k.num = !kv->v.u;
                sweep_one(srcs[f], &k, &n_ok, &n_refused);
            }
        }
        jg_close(g);
    }
    printf("sweep: %d variants loaded, %d refused\n", n_ok, n_refused);
    CHECK(n_ok > 0 && n_refused > 0, "sweep exercised both outcomes");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_loader DATA_DIR\n");
        return 2;
    }
    snprintf(v2_path, sizeof v2_path, "%s/vjepa2_tiny/model.gguf", argv[1]);
    snprintf(v21_path, sizeof v21_path, "%s/vjepa2_1_tiny/model.gguf", argv[1]);

    struct jerr err = {0};
    struct jepa_model *m = NULL;
    jepa_status st = load_path(v2_path, &m, &err);
    CHECK(st == JEPA_OK, "load %s: %s", v2_path, err.msg);
    if (m) check_vjepa2(m);
    jm_free(m);

    m = NULL;
    jr_err_clear(&err);
    st = load_path(v21_path, &m, &err);
    CHECK(st == JEPA_OK, "load %s: %s", v21_path, err.msg);
    if (m) check_vjepa2_1(m);
    jm_free(m);

    int before = check_failed;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
    printf("%zu rewritten fixtures, %d failed checks\n", sizeof cases / sizeof cases[0], check_failed - before);

    test_lewm();
    test_hfvit();
    test_sweep();

    jm_free(NULL);   /* must be a no-op */
    printf("%d checks passed, %d failed\n", check_passed, check_failed);
    return check_failed ? 1 : 0;
}
