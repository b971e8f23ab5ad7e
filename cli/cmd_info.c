/*
 * cmd_info.c — `jepa info MODEL [--kv] [--tensors]`: a readable summary of a schema-v1
 * GGUF (family, encoder / predictor / head dims, positions, preprocessing, weight
 * types and size, licence), optionally every metadata pair and every tensor.
 *
 * The summary is the library's (jepa_model_describe), so `info` refuses exactly what
 * jepa_model_load refuses (one line on stderr, exit 1); the raw listings of --kv and
 * --tensors come from the GGUF reader (jg_open), and are still printed for a file the
 * loader refuses, which is what one wants when looking into why.
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
            "usage: jepa info MODEL [--kv] [--tensors]\n"
            "\n"
            "Describe a jepa GGUF file (schema v1): family, dims, positions, predictor, head,\n"
            "preprocessing, weight types and size.\n"
            "\n"
            "  --kv        also list every metadata key/value pair\n"
            "  --tensors   also list every tensor: name, type, shape (PyTorch order), size\n"
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
    const int mrc = cli_resolve_model("info", &path);   /* a repository name: the cached file */
    if (mrc) return mrc;

    struct jerr err = {0};
    struct gguf_file *g = NULL;
    jepa_model *m = NULL;
    char msg[JEPA_ERR_LEN];
    if (jg_open(&g, path, &err)) return fail(path, err.msg);
    if (jepa_model_load(&m, path, msg)) {
        if (kv) print_kv(g);
        if (tensors) print_tensors(g);
        fflush(stdout);
        jg_close(g);
        return fail(path, msg);
    }
    print_file(path, g);
    int rc = print_summary(m);
    if (!rc && kv) print_kv(g);
    if (!rc && tensors) print_tensors(g);
    jepa_model_free(m);
    jg_close(g);
    return rc;
}
