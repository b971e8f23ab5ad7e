/*
 * cmd_world.c — the world-model commands: `jepa predict` with world-model inputs
 * (--emb / --actions; cmd_run.c hands them over) and `jepa rollout`.
 *
 *   jepa predict -m M --emb E.npy --actions A.npy -o PRED.npy
 *       LeWM: E [T, D] (or [B, T, D]) frame embeddings, A [T, action_dim] (or [B, ...]);
 *       PRED [T, D]: row t predicts the embedding of frame t + 1 from frames 0 .. t.
 *   jepa rollout -m M --emb E.npy --actions A.npy --steps K -o TRAJ.npy
 *       E [T, D] history, A [T + K - 1, action_dim]; TRAJ [K, D], the K predicted steps
 *       (each appended to the history; the window slides past jepa.pred.n_frames).
 *
 * Inputs are float32 .npy; shapes are checked against the file before anything runs,
 * and the output is written whole or not at all (runtime/outfile.h via npy_save_f32).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "input/npy.h"
#include "jepa.h"

enum world_cmd { WORLD_PREDICT, WORLD_ROLLOUT };

struct world_opts {
    const char *model, *emb, *actions, *out, *cpu;
    int threads, gpu, steps, verbose;
};

static void world_usage(enum world_cmd c, FILE *f) {
    if (c == WORLD_PREDICT)
        fprintf(f, "usage: jepa predict -m MODEL --emb E.npy --actions A.npy -o PRED.npy [options]\n"
                   "  world model (LeWM): E float32 [T, D] or [B, T, D] frame embeddings (`jepa embed\n"
                   "  --pool lewm` of each frame), A float32 [T, action_dim] or [B, T, action_dim];\n"
                   "  PRED [T, D] or [B, T, D], row t = the predicted embedding of frame t + 1.\n");
    else
        fprintf(f, "usage: jepa rollout -m MODEL --emb E.npy --actions A.npy --steps K -o TRAJ.npy [options]\n"
                   "  world model (LeWM): from a history E [T, D] (or [B, T, D]) and the actions\n"
                   "  A [T + K - 1, action_dim] (or [B, ...]), K steps, each predicted from the last\n"
                   "  jepa.pred.n_frames embeddings so far and appended: TRAJ [K, D] (or [B, K, D]).\n");
    fprintf(f, "options:\n"
               "  -t N                  threads (default: all cores)\n"
               "  --cpu LEVEL           cap the kernels: scalar, avx2, avx512, neon\n"
               "  -g, --gpu N           run on CUDA GPU N\n"
               "  -q                    no summary line on stderr\n");
}

static int parse(enum world_cmd c, int argc, char **argv, struct world_opts *o) {
    const char *name = c == WORLD_PREDICT ? "predict" : "rollout";
    memset(o, 0, sizeof *o);
    o->gpu = -1;
    o->verbose = 1;
    long long num;
    int rc;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEEDV() do { if (!v) return cli_usage_error(name, "option %s needs a value", a); i++; } while (0)
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { world_usage(c, stdout); return -1; }
        else if (!strcmp(a, "-m") || !strcmp(a, "--model")) { NEEDV(); o->model = v; }
        else if (!strcmp(a, "--emb")) { NEEDV(); o->emb = v; }
        else if (!strcmp(a, "--actions")) { NEEDV(); o->actions = v; }
        else if (!strcmp(a, "-o") || !strcmp(a, "--out")) { NEEDV(); o->out = v; }
        else if (!strcmp(a, "--cpu")) { NEEDV(); o->cpu = v; }
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            NEEDV();
            if ((rc = cli_parse_int(name, a, v, 1, 4096, &num))) return rc;
            o->threads = (int)num;
        } else if (!strcmp(a, "-g") || !strcmp(a, "--gpu")) {
            NEEDV();
            if ((rc = cli_parse_int(name, a, v, 0, 1024, &num))) return rc;
            o->gpu = (int)num;
        } else if (c == WORLD_ROLLOUT && !strcmp(a, "--steps")) {
            NEEDV();
            if ((rc = cli_parse_int(name, a, v, 1, 1 << 20, &num))) return rc;
            o->steps = (int)num;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) o->verbose = 0;
        else if (!strcmp(a, "--tokens") || !strcmp(a, "--states"))
            return cli_fail(NULL, "%s: V-JEPA 2-AC prediction is not implemented yet (LeWM takes --emb and --actions)", a);
        else return cli_usage_error(name, "unknown option '%s'", a);
#undef NEEDV
    }
    if (!o->model || !o->emb || !o->actions || !o->out || (c == WORLD_ROLLOUT && !o->steps))
        return cli_usage_error(name, c == WORLD_PREDICT ? "needs -m, --emb, --actions and -o"
                                                       : "needs -m, --emb, --actions, --steps and -o");
    const char *ins[] = {o->model, o->emb, o->actions}, *outs[] = {o->out};
    return cli_check_outputs(name, ins, 3, outs, 1);
}

/* a [.., rows, cols] float32 array of 2 or 3 dimensions: B (1 for 2-D), rows, cols */
static int shape3(const char *path, const struct npy *a, int64_t *B, int64_t *rows, int64_t *cols) {
    if (a->ndim != 2 && a->ndim != 3)
        return cli_fail(path, "a %d-D array; expected [T, width] or [B, T, width]", a->ndim);
    *B = a->ndim == 3 ? a->shape[0] : 1;
    *rows = a->shape[a->ndim - 2];
    *cols = a->shape[a->ndim - 1];
    if (*B < 1 || *rows < 1 || *cols < 1 || *B > (1 << 20) || *rows > (1 << 20))
        return cli_fail(path, "shape with an empty or too large dimension");
    return 0;
}

static int run(enum world_cmd cmd, int argc, char **argv) {
    struct world_opts o;
    int rc = parse(cmd, argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    const char *name = cmd == WORLD_PREDICT ? "predict" : "rollout";
    char err[JEPA_ERR_LEN];
    jepa_model *m = NULL;
    jepa_ctx *c = NULL;
    struct npy E = {0}, A = {0};
    float *out = NULL;
    struct jerr e = {0};
    rc = CLI_EXIT_FAIL;
    if (jepa_model_load(&m, o.model, err)) { cli_fail(o.model, "%s", err); goto done; }
    jepa_model_info info;
    jepa_model_get_info(m, &info);
    if (!info.predictor || strcmp(info.predictor, "lewm")) {
        if (info.predictor && !strcmp(info.predictor, "ac"))
            cli_fail(o.model, "V-JEPA 2-AC prediction is not implemented yet");
        else
            cli_fail(o.model, "no world-model predictor in this file (jepa.pred.kind is %s, not lewm)",
                     info.predictor ? info.predictor : "absent");
        goto done;
    }
    if (npy_load_f32(&E, o.emb, &e)) { cli_fail(NULL, "%s", e.msg); goto done; }
    if (npy_load_f32(&A, o.actions, &e)) { cli_fail(NULL, "%s", e.msg); goto done; }
    int64_t B = 0, T = 0, D = 0, Ba = 0, Ta = 0, Aw = 0;
    if (shape3(o.emb, &E, &B, &T, &D) || shape3(o.actions, &A, &Ba, &Ta, &Aw)) goto done;
    if (E.ndim != A.ndim || B != Ba) {
        cli_fail(o.actions, "%lld sequences of actions for %lld sequences of embeddings (both 2-D, or both [B, ...])",
                 (long long)Ba, (long long)B);
        goto done;
    }
    if (D != info.emb_dim) {
        cli_fail(o.emb, "embeddings of width %lld; this model's are %d wide", (long long)D, info.emb_dim);
        goto done;
    }
    if (Aw != info.action_dim) {
        cli_fail(o.actions, "actions of width %lld; this model takes %d (jepa.pred.action_dim)", (long long)Aw,
                 info.action_dim);
        goto done;
    }
    const int64_t want_a = cmd == WORLD_PREDICT ? T : T + o.steps - 1;
    if (Ta != want_a) {
        cli_fail(o.actions, cmd == WORLD_PREDICT ? "%lld actions for %lld frames: one per frame"
                                                  : "%lld actions for a history of %lld and --steps %d: expected %lld (T + K - 1)",
                 (long long)Ta, (long long)T, o.steps, (long long)want_a);
        goto done;
    }
    if (cmd == WORLD_PREDICT && T > info.pred_n_frames) {
        cli_fail(o.emb, "%lld frames: the predictor takes at most %d (jepa.pred.n_frames; `jepa rollout` slides a window)",
                 (long long)T, info.pred_n_frames);
        goto done;
    }
    if ((rc = cli_ctx_new(name, m, o.threads, o.cpu, o.gpu, &c))) goto done;
    rc = CLI_EXIT_FAIL;
    jepa_status st;
    const int64_t rows = cmd == WORLD_PREDICT ? T : o.steps;
    const size_t n_out = (size_t)B * rows * info.pred_out_dim;
    out = malloc(sizeof(float) * n_out);
    if (!out) { cli_fail(NULL, "out of memory"); goto done; }
    st = cmd == WORLD_PREDICT ? jepa_ctx_lewm_predict(c, E.data, A.data, (int)B, (int)T, out)
                              : jepa_ctx_lewm_rollout(c, E.data, (int)B, (int)T, A.data, o.steps, out);
    if (st) {   /* a bad value names its file; anything else, the model */
        const char *msg = jepa_ctx_error(c);
        cli_fail(st != JEPA_ERR_ARG ? o.model : strstr(msg, "action") ? o.actions : o.emb, "%s", msg);
        goto done;
    }
    for (size_t i = 0; i < n_out; i++)
        if (!isfinite(out[i])) {
            cli_fail(o.model, "output element %zu is %s (non-finite weights in the model?); nothing written", i,
                     isnan(out[i]) ? "NaN" : "infinite");
            goto done;
        }
    int64_t shape[3] = {B, rows, info.pred_out_dim};
    const int nd = E.ndim == 3 ? 3 : 2;
    if (npy_save_f32(o.out, out, nd, nd == 3 ? shape : shape + 1, &e)) { cli_fail(NULL, "%s", e.msg); goto done; }
    if (o.verbose)
        fprintf(stderr, "%s: %lld x %lld x %d -> %s (%s)\n", name, (long long)B, (long long)rows, info.pred_out_dim,
                o.out, jepa_ctx_isa(c));
    rc = 0;
done:
    free(out);
    npy_free(&E);
    npy_free(&A);
    jepa_ctx_free(c);
    jepa_model_free(m);
    return rc;
}

/* `jepa predict` with world-model inputs: the first option that only a world model takes. */
int cli_is_world_predict(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--emb") || !strcmp(argv[i], "--actions") || !strcmp(argv[i], "--states") ||
            !strcmp(argv[i], "--tokens"))
            return 1;
    return 0;
}

int cmd_world_predict(int argc, char **argv) { return run(WORLD_PREDICT, argc, argv); }
int cmd_rollout(int argc, char **argv) { return run(WORLD_ROLLOUT, argc, argv); }
