/*
 * cmd_info.c — `jepa info MODEL [--kv] [--tensors] [--json]`: a readable summary of a schema-v1
 * GGUF (family, encoder / predictor / head dims, positions, preprocessing, weight
 * types and size, licence), optionally every metadata pair and every tensor.
 *
 * The summary is the library's (jepa_model_describe), so `info` refuses exactly what
 * jepa_model_load refuses (one line on stderr, exit 1); the raw listings of --kv and
 * --tensors come from the GGUF reader (jg_open), and are still printed for a file the
 * loader refuses, which is what one wants when looking into why. --json prints one JSON
 * object instead (print_json: the file, jepa_model_get_info's fields, the labels, and the
 * metadata and tensors when asked), for a model the loader takes.
 *
 * Tested by tests/models/test_loader_cli.sh (meson suite 'models').
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "gguf/gguf.h"
#include "jepa.h"

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
            "usage: jepa info MODEL [--kv] [--tensors] [--json]\n"
            "\n"
            "Describe a jepa GGUF file (schema v1): family, dims, positions, predictor, head,\n"
            "preprocessing, weight types and size.\n"
            "\n"
            "MODEL: a .gguf file, or OWNER/NAME[:FILE] from the cache (`jepa pull`)\n"
            CLI_PULL_HELP
            "  --kv        also list every metadata key/value pair\n"
            "  --tensors   also list every tensor: name, type, shape (PyTorch order), size\n"
            "  --json      one JSON object on stdout: \"file\" (path, bytes, gguf_version),\n"
            "              \"model\" (the library's jepa_model_info fields), \"labels\", and with\n"
            "              --kv \"kv\" {key: value as text}, with --tensors \"tensors\" [{name,\n"
            "              type, shape, bytes}]; a file the loader refuses is an error (exit 1)\n"
            "  -h, --help  this help\n");
}

/* The file line: what the GGUF reader says of the container. */
static void print_file(const char *path, const struct gguf_file *g) {
    printf("file        %s (%.2f MiB, GGUF v%u, %lld tensors, %lld keys)\n", esc(path),
           (double)jg_file_size(g) / MIB, jg_version(g), (long long)jg_n_tensors(g),
           (long long)jg_n_kv(g));
}

/* The library's description of the model (jepa_model_describe). */
static int print_summary(const jepa_model *m) {
    const size_t n = jepa_model_describe(m, NULL, 0) + 1;
    char *text = malloc(n);
    if (!text) return cli_fail(NULL, "out of memory");
    jepa_model_describe(m, text, n);
    fputs(text, stdout);
    free(text);
    return 0;
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

static void json_key_str(const char *key, const char *v, bool comma) {
    printf("%s\"%s\": ", comma ? ", " : "", key);
    if (v) cli_json_str(stdout, v);
    else printf("null");
}

/* jepa_model_get_info as a JSON object. */
static void print_json_info(const jepa_model *m) {
    jepa_model_info i;
    jepa_model_get_info(m, &i);
    const struct {
        const char *key;
        int v;
    } ints[] = {
        {"embed_dim", i.embed_dim}, {"n_layer", i.n_layer}, {"n_head", i.n_head}, {"head_dim", i.head_dim},
        {"ffn_dim", i.ffn_dim}, {"patch_size", i.patch_size}, {"tubelet_size", i.tubelet_size},
        {"img_size", i.img_size}, {"n_frames", i.n_frames}, {"in_chans", i.in_chans}, {"has_cls", i.has_cls},
        {"has_predictor", i.has_predictor}, {"pred_out_dim", i.pred_out_dim}, {"has_head", i.has_head},
        {"n_classes", i.n_classes}, {"n_hier", i.n_hier}, {"emb_dim", i.emb_dim}, {"action_dim", i.action_dim},
        {"state_dim", i.state_dim}, {"pred_n_frames", i.pred_n_frames},
        {"pred_tokens_per_frame", i.pred_tokens_per_frame}, {"pred_embed_dim", i.pred_embed_dim},
        {"pred_n_layer", i.pred_n_layer}, {"pred_n_head", i.pred_n_head}, {"pred_ffn_dim", i.pred_ffn_dim},
    };
    printf("{");
    json_key_str("family", i.family, false);
    json_key_str("modality", i.modality, true);
    json_key_str("name", i.name, true);
    json_key_str("predictor", i.predictor, true);
    for (size_t k = 0; k < sizeof ints / sizeof *ints; k++) printf(", \"%s\": %d", ints[k].key, ints[k].v);
    printf("}, \"labels\": ");
    if (!jepa_model_label(m, 0)) {
        printf("null");
        return;
    }
    printf("[");
    for (int c = 0; c < i.n_classes; c++) {
        if (c) printf(", ");
        cli_json_str(stdout, jepa_model_label(m, c));
    }
    printf("]");
}

/* The whole of `jepa info --json`: one object on one line. */
static void print_json(const char *path, const struct gguf_file *g, const jepa_model *m, bool kv, bool tensors) {
    printf("{\"file\": {\"path\": ");
    cli_json_str(stdout, path);
    printf(", \"bytes\": %llu, \"gguf_version\": %u}, \"model\": ", (unsigned long long)jg_file_size(g),
           jg_version(g));
    print_json_info(m);
    if (kv) {
        char buf[4096];
        printf(", \"kv\": {");
        for (int64_t k = 0; k < jg_n_kv(g); k++) {
            const struct gguf_kv *p = jg_kv_at(g, k);
            jg_kv_format(p, buf, sizeof buf, 1 << 20);
            printf("%s", k ? ", " : "");
            cli_json_str(stdout, p->key);
            printf(": ");
            cli_json_str(stdout, buf);
        }
        printf("}");
    }
    if (tensors) {
        printf(", \"tensors\": [");
        for (int64_t k = 0; k < jg_n_tensors(g); k++) {
            const struct gguf_tensor *t = jg_tensor_at(g, k);
            const struct jg_type_info *ti = jg_type_info(t->type);
            printf("%s{\"name\": ", k ? ", " : "");
            cli_json_str(stdout, t->name);
            printf(", \"type\": ");
            cli_json_str(stdout, ti ? ti->name : "?");
            printf(", \"shape\": [");
            for (int d = t->n_dims - 1; d >= 0; d--) printf("%lld%s", (long long)t->ne[d], d ? ", " : "");
            printf("], \"bytes\": %zu}", t->nbytes);
        }
        printf("]");
    }
    printf("}\n");
}

/* The reader's messages may already start with "<path>: "; print the path once. */
static int fail(const char *path, const char *msg) {
    size_t n = strlen(path);
    if (!strncmp(msg, path, n) && msg[n] == ':' && msg[n + 1] == ' ') msg += n + 2;
    return cli_fail(path, "%s", msg);
}

int cmd_info(int argc, char **argv) {
    const char *path = NULL;
    bool kv = false, tensors = false, json = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--kv")) {
            kv = true;
        } else if (!strcmp(argv[i], "--tensors")) {
            tensors = true;
        } else if (!strcmp(argv[i], "--json")) {
            json = true;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            return cli_usage_error("info", "unknown option '%s'", argv[i]);
        } else if (path) {
            return cli_usage_error("info", "one model file only ('%s' and '%s')", path, argv[i]);
        } else {
            path = argv[i];
        }
    }
    if (!path) return cli_usage_error("info", "no model file given");
    const int mrc = cli_resolve_model("info", &path);   /* a repository name: the cached file */
    if (mrc) return mrc;

    struct jerr err = {0};
    struct gguf_file *g = NULL;
    jepa_model *m = NULL;
    char msg[JEPA_ERR_LEN];
    if (jg_open(&g, path, &err)) return fail(path, err.msg);
    if (jepa_model_load(&m, path, msg)) {
        if (kv && !json) print_kv(g);
        if (tensors && !json) print_tensors(g);
        fflush(stdout);
        jg_close(g);
        return fail(path, msg);
    }
    if (json) {
        print_json(path, g, m, kv, tensors);
        jepa_model_free(m);
        jg_close(g);
        return 0;
    }
    print_file(path, g);
    int rc = print_summary(m);
    if (!rc && kv) print_kv(g);
    if (!rc && tensors) print_tensors(g);
    jepa_model_free(m);
    jg_close(g);
    return rc;
}
