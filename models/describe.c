/*
 * describe.c — jepa_model_describe (include/jepa.h): the model as `jepa info` shows it,
 * one labelled line per part (name, family, encoder, predictor, head, preprocessing,
 * weights, licence, source), read from the loaded description (model.h) and its file.
 * Text that came from the file (names, labels, licence) is escaped (jr_escape), so the
 * description is printable whatever the file holds.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/model.h"

#define MIB (1024.0 * 1024.0)

/* The text so far: up to size - 1 bytes kept in buf, len counts all of it (snprintf's
 * contract). esc: four rotating buffers, so one line may escape several strings. */
struct text {
    char *buf;
    size_t size, len;
    char esc[4][4 * 1024 + 1];
    int next;
};

static void out(struct text *o, const char *fmt, ...) JEPA_PRINTF(2, 3);
static void out(struct text *o, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const size_t room = o->len < o->size ? o->size - o->len : 0;
    const int n = vsnprintf(room ? o->buf + o->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0) o->len += (size_t)n;
}

static const char *esc(struct text *o, const char *s) {
    char *b = o->esc[o->next++ & 3];
    return jr_escape(s, b, sizeof o->esc[0]);
}

static const char *yesno(bool b) { return b ? "yes" : "no"; }

static const char *layout_name(enum jm_rope_layout l) {
    return l == JM_ROPE_INTERLEAVED ? "interleaved" : "tiled";
}

static const char *pos_name(enum jm_pos_type p) {
    switch (p) {
    case JM_POS_SINCOS2D: return "sincos2d";
    case JM_POS_SINCOS3D: return "sincos3d";
    case JM_POS_LEARNED: return "learned";
    case JM_POS_ROPE3D: return "rope3d";
    }
    return "?";
}

static void print_vit(struct text *o, const char *label, const struct jm_vit *v) {
    out(o, "%-11s %d-d, %d layers, %d head%s x %d, ffn %d, %s, ln eps %g\n", label, v->d,
           v->n_layer, v->n_head, v->n_head == 1 ? "" : "s", v->head_dim, v->ffn,
           jm_act_name(v->act), (double)v->ln_eps);
}

static void print_rope(struct text *o, float theta, enum jm_rope_layout layout, bool interp, int ref_grid) {
    out(o, "rope3d, theta %g, %s layout, ", (double)theta, layout_name(layout));
    if (interp) out(o, "interpolated to a %dx%d reference grid\n", ref_grid, ref_grid);
    else out(o, "no interpolation\n");
}

static void print_encoder(struct text *o, const struct jepa_model *m) {
    const struct jm_encoder *e = &m->enc;
    int g = e->img_size / e->patch, gt = e->n_frames / e->tubelet;
    print_vit(o, "encoder", &e->vit);
    out(o, "  input     patch %d, tubelet %d, %dx%d px, %d frames, %d channels -> %dx%dx%d grid, "
           "%d tokens\n", e->patch, e->tubelet, e->img_size, e->img_size, e->n_frames, e->in_chans,
           gt, g, g, gt * g * g + (e->cls ? 1 : 0));
    out(o, "  position  ");
    if (e->pos_type == JM_POS_ROPE3D) print_rope(o, e->rope_theta, e->rope_layout, e->rope_interpolate, e->rope_ref_grid);
    else out(o, "%s table, %d rows\n", pos_name(e->pos_type), e->n_pos);
    out(o, "  tokens    cls %s, registers %d, layer-scale %s, attention %s, qkv %s\n", yesno(e->cls),
           e->n_registers, yesno(e->layer_scale),
           e->attn_mode == JM_ATTN_BLOCK_CAUSAL ? "block_causal" : "full",
           e->vit.n_layer > 0 && !e->vit.blk[0].qkv_fused ? "separate" : "fused");
    if (e->image_patch_embed || e->modality_embed)
        out(o, "  extras    %s%s%s\n", e->image_patch_embed ? "image patch embedding" : "",
               e->image_patch_embed && e->modality_embed ? ", " : "",
               e->modality_embed ? "modality embeddings (image, video)" : "");
    if (e->n_hier > 0) {
        out(o, "  hier      [");
        for (int k = 0; k < e->n_hier; k++) out(o, "%s%d", k ? ", " : "", e->hier_layers[k]);
        out(o, "] (one norm each)\n");
    }
    if (e->has_proj)
        out(o, "  projector %d -> %d -> %d, %s\n", e->proj0.n_in, e->proj0.n_out, e->proj2.n_out,
               jm_act_name(e->proj_act));
}

static void print_predictor(struct text *o, const struct jepa_model *m) {
    const struct jm_predictor *p = &m->pred;
    static const char *const kinds[] = {"masked", "ac", "lewm"};
    if (!m->has_pred) {
        out(o, "predictor   none\n");
        return;
    }
    print_vit(o, "predictor", &p->vit);
    out(o, "  kind      %s, out dim %d", kinds[p->kind], p->out_dim);
    if (p->kind == JM_PRED_MASKED) out(o, ", %d mask tokens", p->n_mask_tokens);
    if (p->n_hier_in > 1) out(o, ", %d hier inputs", p->n_hier_in);
    out(o, "\n");
    if (p->kind == JM_PRED_LEWM || m->enc.pos_type != JM_POS_ROPE3D) {
        out(o, "  position  pos table, %d rows\n", p->n_pos);
    } else {
        out(o, "  position  grid %d, ", p->grid_size);
        print_rope(o, p->rope_theta, p->rope_layout, p->rope_interpolate, p->rope_ref_grid);
    }
    if (p->modality_embed || p->context_proj)
        out(o, "  extras    %s%s%s\n", p->context_proj ? "context projection" : "",
               p->context_proj && p->modality_embed ? ", " : "",
               p->modality_embed ? "modality embeddings (image, video)" : "");
    if (p->kind == JM_PRED_LEWM)
        out(o, "  actions   action dim %d, state dim %d, window of %d frames\n", p->action_dim, p->state_dim,
               p->n_frames);
    else if (p->kind == JM_PRED_AC)
        out(o, "  actions   action dim %d, state dim %d, %d tokens per frame, up to %d frames%s%s\n", p->action_dim,
               p->state_dim, p->grid_size * p->grid_size, m->enc.n_frames / m->enc.tubelet,
               p->frame_causal ? ", frame-causal" : "",
               p->action_dim == 7 && p->state_dim == 7 ? "; rollout and planning (Meta's 7-d pose rule)" : "; predict only (rollout needs 7-d actions and states)");
}

static void print_head(struct text *o, const struct jepa_model *m) {
    const struct jm_head *h = &m->head;
    if (h->kind == JM_HEAD_NONE) {
        out(o, "head        none\n");
        return;
    }
    out(o, "head        %s, %d classes", h->kind == JM_HEAD_ATTENTIVE_POOL ? "attentive_pool" : "linear_cls",
           h->n_classes);
    if (h->kind == JM_HEAD_ATTENTIVE_POOL)
        out(o, ", %d pool layers, %d heads x %d, ffn %d, ln eps %g", h->n_pool_layers, h->vit.n_head,
               h->vit.head_dim, h->vit.ffn, (double)h->ln_eps);
    out(o, "\n");
    if (h->labels) {
        int n = h->n_classes < 5 ? h->n_classes : 5;
        out(o, "  labels    ");
        for (int i = 0; i < n; i++) out(o, "%s\"%s\"", i ? ", " : "", esc(o, h->labels[i]));
        out(o, "%s\n", h->n_classes > n ? ", ..." : "");
    } else {
        out(o, "  labels    (none in the file)\n");
    }
}

static void print_pre(struct text *o, const jepa_preprocess_recipe *p) {
    out(o, "preprocess  %s", p->mode == JEPA_RESIZE_MODE_SQUASH ? "squash" : "shortest_edge");
    if (p->mode == JEPA_RESIZE_MODE_SQUASH) out(o, " to %d", p->resize_short);
    else out(o, " to %d, centre crop %d", p->resize_short, p->crop);
    out(o, ", %s, rescale %g%s\n", p->resample == JEPA_RESAMPLE_BICUBIC ? "bicubic" : "bilinear",
           (double)p->rescale, fabs(p->rescale * 255.0 - 1.0) < 1e-6 ? " (1/255)" : "");
    out(o, "  mean      [%g, %g, %g]  std [%g, %g, %g]\n", (double)p->mean[0], (double)p->mean[1],
           (double)p->mean[2], (double)p->std[0], (double)p->std[1], (double)p->std[2]);
}

static void print_weights(struct text *o, const struct jepa_model *m) {
    out(o, "weights     ");
    int n = 0;
    for (uint32_t t = 0; t < GGUF_TYPE_COUNT; t++) {
        if (!m->n_tensors_by_type[t]) continue;
        const struct jg_type_info *ti = jg_type_info(t);
        out(o, "%s%lld %s", n++ ? ", " : "", (long long)m->n_tensors_by_type[t], ti ? ti->name : "?");
    }
    out(o, "; %.2f MiB", (double)m->weight_bytes / MIB);
    if (jg_find_kv(m->g, "general.file_type")) out(o, " (general.file_type %u)", m->file_type);
    out(o, "\n");
    /* bits per weight: every tensor, and the matmul weights alone (where the type is chosen) */
    double all_bytes = 0, all_n = 0, mm_bytes = 0, mm_n = 0;
    for (int64_t i = 0; i < jg_n_tensors(m->g); i++) {
        const struct gguf_tensor *t = jg_tensor_at(m->g, i);
        all_bytes += (double)t->nbytes, all_n += (double)t->n_elements;
    }
    for (int i = 0; i < m->n_weights; i++) {
        const struct jm_linear *l = m->weights[i].lin;
        mm_bytes += (double)l->ldw * l->n_out, mm_n += (double)l->n_in * l->n_out;
    }
    if (all_n > 0)
        out(o, "  bits      %.2f per weight over the file, %.2f over its %d matmul weights\n", 8 * all_bytes / all_n,
               mm_n > 0 ? 8 * mm_bytes / mm_n : 0.0, m->n_weights);
    if (m->n_unknown_tensors)
        out(o, "  unknown   %lld tensor%s not named by schema v1 for this family (first: %s), ignored\n",
               (long long)m->n_unknown_tensors, m->n_unknown_tensors == 1 ? "" : "s", esc(o, m->unknown_tensor));
}

size_t jepa_model_describe(const jepa_model *m, char *buf, size_t size) {
    struct text *o = calloc(1, sizeof *o);
    if (!o) {
        if (buf && size) buf[0] = '\0';
        return 0;
    }
    o->buf = buf;
    o->size = buf ? size : 0;
    if (o->size) buf[0] = '\0';
    if (m) {
        const char *name = m->name ? m->name : "(no general.name)";
        out(o, "name        %s%s\n", esc(o, name), strstr(name, "random") ? "   *** RANDOM WEIGHTS ***" : "");
        out(o, "family      %s, modality %s\n", m->family_name, m->modality);
        print_encoder(o, m);
        print_predictor(o, m);
        print_head(o, m);
        print_pre(o, &m->pre);
        print_weights(o, m);
        out(o, "licence     %s\n", m->license ? esc(o, m->license) : "(not given)");
        out(o, "source      %s\n", m->source_url ? esc(o, m->source_url) : "(not given)");
    }
    const size_t len = o->len;
    free(o);
    return len;
}
