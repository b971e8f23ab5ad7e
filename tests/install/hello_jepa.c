/*
 * hello_jepa.c — a program that uses jepa.c only as an installed library: include
 * <jepa.h>, link through `pkg-config --libs jepa` (shared) or `--static --libs` (libjepa.a).
 * Built and run by tests/check_install.sh.
 *
 * usage: hello_jepa MODEL.gguf   prints the library's version, then the clip it encodes
 * ("C T H W": zeros at the model's native size), then the mean-pooled embedding, one
 * %.9g per line
 */
#include <jepa.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: hello_jepa MODEL.gguf\n");
        return 2;
    }
    char err[JEPA_ERR_LEN];
    jepa_model *m = NULL;
    jepa_ctx *c = NULL;
    if (jepa_model_load(&m, argv[1], err)) {
        fprintf(stderr, "hello_jepa: %s: %s\n", argv[1], err);
        return 1;
    }
    jepa_model_info in;
    jepa_model_get_info(m, &in);
    if (jepa_ctx_new(&c, m, NULL, err)) {
        fprintf(stderr, "hello_jepa: %s\n", err);
        jepa_model_free(m);
        return 1;
    }
    const int T = in.n_frames > 0 ? in.n_frames : 1, S = in.img_size;
    float *x = calloc((size_t)in.in_chans * T * S * S, sizeof *x);
    float *pooled = malloc(sizeof *pooled * (size_t)in.embed_dim);
    int rc = 1;
    jepa_embed_out out = {.pooled = pooled};
    if (x && pooled && !jepa_ctx_embed(c, x, T, S, S, NULL, &out)) {
        printf("%s\n%d %d %d %d\n", jepa_version(), in.in_chans, T, S, S);
        for (int i = 0; i < in.embed_dim; i++) printf("%.9g\n", pooled[i]);
        rc = 0;
    } else {
        fprintf(stderr, "hello_jepa: %s\n", x && pooled ? jepa_ctx_error(c) : "out of memory");
    }
    free(x);
    free(pooled);
    jepa_ctx_free(c);
    jepa_model_free(m);
    return rc;
}
