/*
 * cmd_info.c — `jepa info MODEL [--kv] [--tensors]`: a readable summary of a schema-v1
 * GGUF (family, encoder / predictor / head dims, positions, preprocessing, weight
 * types and size, licence), optionally every metadata pair and every tensor.
 *
 * The file is opened with jg_open and described with jm_load, so `info` refuses
 * exactly what the runtime refuses (one line on stderr, exit 1); with --kv or
 * --tensors the raw listing is still printed for a file the loader refuses, which is
 * what one wants when looking into why.
 *
 * Tested by tests/models/test_loader_cli.sh (meson suite 'models').
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "models/model.h"

#define MIB (1024.0 * 1024.0)

/* Text from the file, printable: control characters escaped (cli_escape). Four
 * rotating buffers, so one printf may take several. */
static const char *esc(const char *s) {
    static char bufs[4][4 * 1024 + 1];
    static int next;
    char *b = bufs[next++ & 3];
    return cli_escape(s, b, sizeof bufs[0]);
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: jepa info MODEL [--kv] [--tensors]\n"
            "\n"
            "Describe a jepa GGUF file (schema v1): family, dims, positions, predictor, head,\n"
            "preprocessing, weight types and size.\n"
            "\n"
            "  --kv        also list every metadata key/value pair\n"
            "  --tensors   also list every tensor: name, type, shape (PyTorch order), size\n"
            "  -h, --help  this help\n");
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

static void print_vit(const char *label, const struct jm_vit *v) {
    printf("%-11s %d-d, %d layers, %d head%s x %d, ffn %d, %s, ln eps %g\n", label, v->d,
           v->n_layer, v->n_head, v->n_head == 1 ? "" : "s", v->head_dim, v->ffn,
           jm_act_name(v->act), (double)v->ln_eps);
}

static void print_rope(float theta, enum jm_rope_layout layout, bool interp, int ref_grid) {
    printf("rope3d, theta %g, %s layout, ", (double)theta, layout_name(layout));
    if (interp) printf("interpolated to a %dx%d reference grid\n", ref_grid, ref_grid);
    else printf("no interpolation\n");
}

static void print_encoder(const struct jepa_model *m) {
    const struct jm_encoder *e = &m->enc;
    int g = e->img_size / e->patch, gt = e->n_frames / e->tubelet;
    print_vit("encoder", &e->vit);
    printf("  input     patch %d, tubelet %d, %dx%d px, %d frames, %d channels -> %dx%dx%d grid, "
           "%d tokens\n", e->patch, e->tubelet, e->img_size, e->img_size, e->n_frames, e->in_chans,
           gt, g, g, gt * g * g + (e->cls ? 1 : 0));
    printf("  position  ");
    if (e->pos_type == JM_POS_ROPE3D) print_rope(e->rope_theta, e->rope_layout, e->rope_interpolate, e->rope_ref_grid);
    else printf("%s table, %d rows\n", pos_name(e->pos_type), e->n_pos);
    printf("  tokens    cls %s, registers %d, layer-scale %s, attention %s, qkv %s\n", yesno(e->cls),
           e->n_registers, yesno(e->layer_scale),
           e->attn_mode == JM_ATTN_BLOCK_CAUSAL ? "block_causal" : "full",
           e->vit.n_layer > 0 && !e->vit.blk[0].qkv_fused ? "separate" : "fused");
    if (e->image_patch_embed || e->modality_embed)
        printf("  extras    %s%s%s\n", e->image_patch_embed ? "image patch embedding" : "",
               e->image_patch_embed && e->modality_embed ? ", " : "",
               e->modality_embed ? "modality embeddings (image, video)" : "");
    if (e->n_hier > 0) {
        printf("  hier      [");
        for (int k = 0; k < e->n_hier; k++) printf("%s%d", k ? ", " : "", e->hier_layers[k]);
        printf("] (one norm each)\n");
    }
    if (e->has_proj)
        printf("  projector %d -> %d -> %d, %s\n", e->proj0.n_in, e->proj0.n_out, e->proj2.n_out,
               jm_act_name(e->proj_act));
}

static void print_predictor(const struct jepa_model *m) {
    const struct jm_predictor *p = &m->pred;
    static const char *const kinds[] = {"masked", "ac", "lewm"};
    if (!m->has_pred) {
        printf("predictor   none\n");
        return;
    }
    print_vit("predictor", &p->vit);
    printf("  kind      %s, out dim %d", kinds[p->kind], p->out_dim);
    if (p->kind == JM_PRED_MASKED) printf(", %d mask tokens", p->n_mask_tokens);
    if (p->n_hier_in > 1) printf(", %d hier inputs", p->n_hier_in);
    printf("\n");
    if (p->kind == JM_PRED_LEWM || m->enc.pos_type != JM_POS_ROPE3D) {
        printf("  position  pos table, %d rows\n", p->n_pos);
    } else {
        printf("  position  grid %d, ", p->grid_size);
        print_rope(p->rope_theta, p->rope_layout, p->rope_interpolate, p->rope_ref_grid);
    }
    if (p->modality_embed || p->context_proj)
        printf("  extras    %s%s%s\n", p->context_proj ? "context projection" : "",
               p->context_proj && p->modality_embed ? ", " : "",
               p->modality_embed ? "modality embeddings (image, video)" : "");
    if (p->kind == JM_PRED_LEWM)
        printf("  actions   action dim %d, state dim %d, window of %d frames\n", p->action_dim, p->state_dim,
               p->n_frames);
    else if (p->kind == JM_PRED_AC)
        printf("  actions   action dim %d, state dim %d, %d tokens per frame, up to %d frames%s%s\n", p->action_dim,
               p->state_dim, p->grid_size * p->grid_size, m->enc.n_frames / m->enc.tubelet,
               p->frame_causal ? ", frame-causal" : "",
               p->action_dim == 7 && p->state_dim == 7 ? "; rollout and planning (Meta's 7-d pose rule)" : "; predict only (rollout needs 7-d actions and states)");
}

static void print_head(const struct jepa_model *m) {
    const struct jm_head *h = &m->head;
    if (h->kind == JM_HEAD_NONE) {
        printf("head        none\n");
        return;
    }
    printf("head        %s, %d classes", h->kind == JM_HEAD_ATTENTIVE_POOL ? "attentive_pool" : "linear_cls",
           h->n_classes);
    if (h->kind == JM_HEAD_ATTENTIVE_POOL)
        printf(", %d pool layers, %d heads x %d, ffn %d, ln eps %g", h->n_pool_layers, h->vit.n_head,
               h->vit.head_dim, h->vit.ffn, (double)h->ln_eps);
    printf("\n");
    if (h->labels) {
        int n = h->n_classes < 5 ? h->n_classes : 5;
        printf("  labels    ");
        for (int i = 0; i < n; i++) printf("%s\"%s\"", i ? ", " : "", esc(h->labels[i]));
        printf("%s\n", h->n_classes > n ? ", ..." : "");
    } else {
        printf("  labels    (none in the file)\n");
    }
}

static void print_pre(const struct ji_recipe *p) {
    printf("preprocess  %s", p->mode == PRE_SQUASH ? "squash" : "shortest_edge");
    if (p->mode == PRE_SQUASH) printf(" to %d", p->resize_short);
    else printf(" to %d, centre crop %d", p->resize_short, p->crop);
    printf(", %s, rescale %g%s\n", p->resample == JI_RESAMPLE_BICUBIC ? "bicubic" : "bilinear",
           (double)p->rescale, fabs(p->rescale * 255.0 - 1.0) < 1e-6 ? " (1/255)" : "");
    printf("  mean      [%g, %g, %g]  std [%g, %g, %g]\n", (double)p->mean[0], (double)p->mean[1],
           (double)p->mean[2], (double)p->std[0], (double)p->std[1], (double)p->std[2]);
}

static void print_weights(const struct jepa_model *m) {
    printf("weights     ");
    int n = 0;
    for (uint32_t t = 0; t < GGUF_TYPE_COUNT; t++) {
        if (!m->n_tensors_by_type[t]) continue;
        const struct jg_type_info *ti = jg_type_info(t);
        printf("%s%lld %s", n++ ? ", " : "", (long long)m->n_tensors_by_type[t], ti ? ti->name : "?");
    }
    printf("; %.2f MiB", (double)m->weight_bytes / MIB);
    if (jg_find_kv(m->g, "general.file_type")) printf(" (general.file_type %u)", m->file_type);
    printf("\n");
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
        printf("  bits      %.2f per weight over the file, %.2f over its %d matmul weights\n", 8 * all_bytes / all_n,
               mm_n > 0 ? 8 * mm_bytes / mm_n : 0.0, m->n_weights);
    if (m->n_unknown_tensors)
        printf("  unknown   %lld tensor%s not named by schema v1 for this family (first: %s), ignored\n",
               (long long)m->n_unknown_tensors, m->n_unknown_tensors == 1 ? "" : "s", esc(m->unknown_tensor));
}

static void print_summary(const char *path, const struct jepa_model *m) {
    const struct gguf_file *g = m->g;
    printf("file        %s (%.2f MiB, GGUF v%u, %lld tensors, %lld keys)\n", esc(path),
           (double)jg_file_size(g) / MIB, jg_version(g), (long long)jg_n_tensors(g),
           (long long)jg_n_kv(g));
    const char *name = m->name ? m->name : "(no general.name)";
    printf("name        %s%s\n", esc(name), strstr(name, "random") ? "   *** RANDOM WEIGHTS ***" : "");
    printf("family      %s, modality %s\n", m->family_name, m->modality);
    print_encoder(m);
    print_predictor(m);
    print_head(m);
    print_pre(&m->pre);
    print_weights(m);
    printf("licence     %s\n", m->license ? esc(m->license) : "(not given)");
    printf("source      %s\n", m->source_url ? esc(m->source_url) : "(not given)");
}

static void print_kv(const struct gguf_file *g) {
    char buf[512], type[48];
    printf("\nmetadata (%lld keys):\n", (long long)jg_n_kv(g));
    for (int64_t i = 0; i < jg_n_kv(g); i++) {
        const struct gguf_kv *kv = jg_kv_at(g, i);
        if (kv->type == GGUF_V_ARRAY)
            snprintf(type, sizeof type, "%s[%llu]", jg_vtype_name(kv->arr_type),
                     (unsigned long long)kv->arr_n);
        else
            snprintf(type, sizeof type, "%s", jg_vtype_name(kv->type));
        jg_kv_format(kv, buf, sizeof buf, 16);
        printf("  %-32s %-12s %s\n", esc(kv->key), type, esc(buf));
    }
}

static void print_tensors(const struct gguf_file *g) {
    int w = 4;
    for (int64_t i = 0; i < jg_n_tensors(g); i++) {
        int len = (int)strlen(jg_tensor_at(g, i)->name);
        if (len > w) w = len;
    }
    printf("\ntensors (%lld; shape in PyTorch order, i.e. ggml ne reversed):\n",
           (long long)jg_n_tensors(g));
    for (int64_t i = 0; i < jg_n_tensors(g); i++) {
        const struct gguf_tensor *t = jg_tensor_at(g, i);
        const struct jg_type_info *ti = jg_type_info(t->type);
        char shape[96];
        size_t len = (size_t)snprintf(shape, sizeof shape, "[");
        for (int d = t->n_dims - 1; d >= 0 && len < sizeof shape; d--)
            len += (size_t)snprintf(shape + len, sizeof shape - len, "%lld%s", (long long)t->ne[d],
                                    d ? ", " : "]");
        if (t->nbytes >= 1024 * 1024)
            printf("  %-*s %-5s %-20s %10.2f MiB\n", w, esc(t->name), ti ? ti->name : "?", shape,
                   (double)t->nbytes / MIB);
        else
            printf("  %-*s %-5s %-20s %10zu B\n", w, esc(t->name), ti ? ti->name : "?", shape, t->nbytes);
    }
}

/* The reader's messages may already start with "<path>: "; print the path once. */
static int fail(const char *path, const char *msg) {
    size_t n = strlen(path);
    if (!strncmp(msg, path, n) && msg[n] == ':' && msg[n + 1] == ' ') msg += n + 2;
    return cli_fail(path, "%s", msg);
}

int cmd_info(int argc, char **argv) {
    const char *path = NULL;
    bool kv = false, tensors = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--kv")) {
            kv = true;
        } else if (!strcmp(argv[i], "--tensors")) {
            tensors = true;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            return cli_usage_error("info", "unknown option '%s'", argv[i]);
        } else if (path) {
            return cli_usage_error("info", "one model file only ('%s' and '%s')", path, argv[i]);
        } else {
            path = argv[i];
        }
    }
    if (!path) return cli_usage_error("info", "no model file given");

    struct jerr err = {0};
    struct gguf_file *g = NULL;
    struct jepa_model *m = NULL;
    if (jg_open(&g, path, &err)) return fail(path, err.msg);
    if (jm_load(&m, g, &err)) {
        if (kv) print_kv(g);
        if (tensors) print_tensors(g);
        fflush(stdout);
        jg_close(g);
        return fail(path, err.msg);
    }
    print_summary(path, m);
    if (kv) print_kv(m->g);
    if (tensors) print_tensors(m->g);
    jm_free(m);
    return 0;
}
