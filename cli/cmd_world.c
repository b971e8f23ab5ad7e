/*
 * cmd_world.c — the world-model commands: `jepa predict` with world-model inputs
 * (--emb / --actions; cmd_run.c hands them over) and `jepa rollout`.
 *
 *   jepa predict -m M --emb E.npy --actions A.npy -o PRED.npy
 *       LeWM: E [T, D] (or [B, T, D]) frame embeddings, A [T, action_dim] (or [B, ...]);
 *       PRED [T, D]: row t predicts the embedding of frame t + 1 from frames 0 .. t.
 *   jepa predict -m M --tokens T.npy --actions A.npy --states S.npy -o PRED.npy
 *       V-JEPA 2-AC: T [F N, D] frame-major encoder tokens, A [F, action_dim], S [F,
 *       state_dim] (or [B, ...] each); PRED [F N, D], row f N + i = token i of frame f + 1.
 *   jepa rollout -m M --emb E.npy --actions A.npy --steps K -o TRAJ.npy
 *       E [T, D] history, A [T + K - 1, action_dim]; TRAJ [K, D], the K predicted steps
 *       (each appended to the history; the window slides past jepa.pred.n_frames).
 *   jepa plan -m M (--start IMG | --start-tokens S.npy [--start-actions P.npy])
 *             (--goal IMG | --goal-tokens G.npy) [CEM options] -o ACTIONS.npy
 *       the CEM planner: ACTIONS [horizon, action_dim]; the best energy of every
 *       iteration and the plan's energy on stderr.
 *
 * Inputs are float32 .npy; shapes are checked against the file before anything runs,
 * and the output is written whole or not at all (runtime/outfile.h via npy_save_f32).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "input/image.h"
#include "input/npy.h"
#include "jepa.h"

enum world_cmd { WORLD_PREDICT, WORLD_ROLLOUT };

struct world_opts {
    const char *model, *emb, *actions, *out, *cpu;
    const char *tokens, *states;   /* V-JEPA 2-AC */
    int threads, gpu, steps, verbose;
};

static void world_usage(enum world_cmd c, FILE *f) {
    if (c == WORLD_PREDICT)
        fprintf(f, "usage: jepa predict -m MODEL --emb E.npy --actions A.npy -o PRED.npy [options]\n"
                   "       jepa predict -m MODEL --tokens T.npy --actions A.npy --states S.npy -o PRED.npy\n"
                   "  LeWM: E float32 [T, D] or [B, T, D] frame embeddings (`jepa embed --pool lewm` of\n"
                   "  each frame), A float32 [T, action_dim] or [B, T, action_dim]; PRED [T, D] or\n"
                   "  [B, T, D], row t = the predicted embedding of frame t + 1.\n"
                   "  V-JEPA 2-AC: T [F N, D] frame-major encoder tokens (N per frame), A [F, action_dim],\n"
                   "  S [F, state_dim] (or [B, ...] each); PRED [F N, D], row f N + i = token i of frame f + 1.\n");
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
        else if (!strcmp(a, "--tokens")) { NEEDV(); o->tokens = v; }
        else if (!strcmp(a, "--states")) { NEEDV(); o->states = v; }
        else return cli_usage_error(name, "unknown option '%s'", a);
#undef NEEDV
    }
    if (!o->model || (!o->emb == !o->tokens) || !o->actions || !o->out || (c == WORLD_ROLLOUT && !o->steps))
        return cli_usage_error(name, c == WORLD_PREDICT ? "needs -m, --emb (LeWM) or --tokens and --states (V-JEPA 2-AC), --actions and -o"
                                                       : "needs -m, --emb, --actions, --steps and -o");
    if (!o->tokens != !o->states) return cli_usage_error(name, "--tokens and --states go together (V-JEPA 2-AC)");
    const char *ins[] = {o->model, o->emb, o->actions, o->tokens, o->states}, *outs[] = {o->out};
    return cli_check_outputs(name, ins, 5, outs, 1);
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

/* V-JEPA 2-AC: tokens [F N, D] (or [B, F N, D]), actions [F, A], states [F, S] (or [B, ...]). */
static int run_ac(const struct world_opts *o, jepa_model *m, const jepa_model_info *info) {
    struct npy Tk = {0}, A = {0}, S = {0};
    struct jerr e = {0};
    jepa_ctx *c = NULL;
    float *out = NULL;
    int rc = CLI_EXIT_FAIL;
    const int N = info->pred_tokens_per_frame, D = info->embed_dim;
    if (npy_load_f32(&Tk, o->tokens, &e) || npy_load_f32(&A, o->actions, &e) || npy_load_f32(&S, o->states, &e)) {
        cli_fail(NULL, "%s", e.msg);
        goto done;
    }
    int64_t B = 0, rows = 0, w = 0, Ba = 0, F = 0, Aw = 0, Bs = 0, Fs = 0, Sw = 0;
    if (shape3(o->tokens, &Tk, &B, &rows, &w) || shape3(o->actions, &A, &Ba, &F, &Aw) || shape3(o->states, &S, &Bs, &Fs, &Sw))
        goto done;
    if (Tk.ndim != A.ndim || A.ndim != S.ndim || Ba != B || Bs != B) {
        cli_fail(o->tokens, "tokens, actions and states must all be 2-D or all [B, ...] with the same B");
        goto done;
    }
    if (w != D) { cli_fail(o->tokens, "tokens of width %lld; this model's encoder gives %d", (long long)w, D); goto done; }
    if (Aw != info->action_dim) {
        cli_fail(o->actions, "actions of width %lld; this model takes %d (jepa.pred.action_dim)", (long long)Aw, info->action_dim);
        goto done;
    }
    if (Sw != info->state_dim) {
        cli_fail(o->states, "states of width %lld; this model takes %d (jepa.pred.state_dim)", (long long)Sw, info->state_dim);
        goto done;
    }
    if (Fs != F) { cli_fail(o->states, "%lld states for %lld actions: one of each per frame", (long long)Fs, (long long)F); goto done; }
    if (rows != F * N) {
        cli_fail(o->tokens, "%lld token rows for %lld frames: expected %lld (%d tokens per frame, frame-major)", (long long)rows,
                 (long long)F, (long long)F * N, N);
        goto done;
    }
    if ((rc = cli_ctx_new("predict", m, o->threads, o->cpu, o->gpu, &c))) goto done;
    rc = CLI_EXIT_FAIL;
    const size_t n_out = (size_t)B * rows * info->pred_out_dim;
    if (!(out = malloc(sizeof(float) * n_out))) { cli_fail(NULL, "out of memory"); goto done; }
    if (jepa_ctx_ac_predict(c, Tk.data, A.data, S.data, (int)B, (int)F, out)) {
        const char *msg = jepa_ctx_error(c);
        cli_fail(strstr(msg, "action") ? o->actions : strstr(msg, "state") ? o->states : o->tokens, "%s", msg);
        goto done;
    }
    if (cli_check_finite_output(o->model, out, n_out)) goto done;
    int64_t shape[3] = {B, rows, info->pred_out_dim};
    const int nd = Tk.ndim == 3 ? 3 : 2;
    if (npy_save_f32(o->out, out, nd, nd == 3 ? shape : shape + 1, &e)) { cli_fail(NULL, "%s", e.msg); goto done; }
    if (o->verbose)
        fprintf(stderr, "predict: %lld x %lld frames x %d tokens -> %s (%s)\n", (long long)B, (long long)F, N, o->out,
                jepa_ctx_isa(c));
    rc = 0;
done:
    free(out);
    npy_free(&Tk), npy_free(&A), npy_free(&S);
    jepa_ctx_free(c);
    return rc;
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
    if (info.predictor && !strcmp(info.predictor, "ac")) {
        if (cmd == WORLD_ROLLOUT) cli_fail(o.model, "V-JEPA 2-AC rollout is not implemented yet (predict is)");
        else if (!o.tokens) rc = cli_usage_error(name, "a V-JEPA 2-AC model takes --tokens, --actions and --states");
        else rc = run_ac(&o, m, &info);
        goto done;
    }
    if (!info.predictor || strcmp(info.predictor, "lewm")) {
        cli_fail(o.model, "no world-model predictor in this file (jepa.pred.kind is %s, not lewm or ac)",
                 info.predictor ? info.predictor : "absent");
        goto done;
    }
    if (o.tokens) { rc = cli_usage_error(name, "a LeWM model takes --emb and --actions (--tokens / --states are V-JEPA 2-AC's)"); goto done; }
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
    if (cli_check_finite_output(o.model, out, n_out)) goto done;
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

/* ---- jepa plan ---- */

static void plan_usage(FILE *f) {
    jepa_plan_params d = jepa_plan_default_params();
    fprintf(f, "usage: jepa plan -m MODEL (--start IMG | --start-tokens S.npy [--start-actions P.npy])\n"
               "                 (--goal IMG | --goal-tokens G.npy) [options] -o ACTIONS.npy\n"
               "  world model (LeWM): the cross-entropy method finds the actions [horizon, action_dim]\n"
               "  whose rollout from the start ends closest (mean |x - goal|) to the goal's embedding.\n"
               "  --start / --goal: images, encoded with the file's encoder (`--pool lewm`);\n"
               "  --start-tokens S [T, D] or [D] (a history of T embeddings, with --start-actions\n"
               "  P [T - 1, action_dim] when T > 1), --goal-tokens G [D].\n"
               "options (defaults: the LeWM authors' planner, docs/world-models.md):\n"
               "  --horizon H      actions planned (%d)\n"
               "  --samples N      candidates per iteration, one batch (%d)\n"
               "  --iters I        iterations (%d)\n"
               "  --elites K       candidates that refit the Gaussian (%d)\n"
               "  --std S          initial std of the Gaussian (%g)\n"
               "  --bounds LO,HI   clip every action component (none)\n"
               "  --seed R         the random stream's seed (%llu)\n"
               "  --energies E.npy write the best energy of every iteration\n"
               "  -t N, --cpu L, -g N, -q   as for `jepa predict`\n",
            d.horizon, d.samples, d.iterations, d.elites, (double)d.init_std, (unsigned long long)d.seed);
}

static void plan_progress(void *user, int it, float e) {
    if (*(const int *)user) fprintf(stderr, "plan: iteration %d: best energy %.6f\n", it + 1, (double)e);
}

/* The LeWM state of an image: decode, preprocess with the file's recipe, emb. */
static int encode_image(jepa_ctx *c, const jepa_model *m, const char *path, float *emb) {
    struct jerr e = {0};
    uint8_t *rgb = NULL;
    int ih = 0, iw = 0, oh = 0, ow = 0;
    char err[JEPA_ERR_LEN];
    if (image_load_rgb(path, &rgb, &ih, &iw, &e)) return cli_fail(NULL, "%s", e.msg);
    int rc = CLI_EXIT_FAIL;
    float *clip = NULL;
    if (jepa_preprocess_size(m, NULL, &oh, &ow) || !(clip = malloc(sizeof(float) * 3 * (size_t)oh * ow))) {
        cli_fail(path, "cannot size the preprocessed image");
    } else if (jepa_preprocess_rgb(m, rgb, ih, iw, NULL, clip, 1, 0, err)) {
        cli_fail(path, "%s", err);
    } else {
        jepa_embed_out out = {.emb = emb};
        if (jepa_ctx_embed(c, clip, 1, oh, ow, NULL, &out)) cli_fail(path, "%s", jepa_ctx_error(c));
        else rc = 0;
    }
    free(clip);
    free(rgb);
    return rc;
}

int cmd_plan(int argc, char **argv) {
    const char *model = NULL, *start = NULL, *start_tok = NULL, *start_act = NULL, *goal = NULL, *goal_tok = NULL;
    const char *out = NULL, *energies_out = NULL, *cpu = NULL;
    int threads = 0, gpu = -1, verbose = 1, rc;
    long long num;
    jepa_plan_params pp = jepa_plan_default_params();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEEDV() do { if (!v) return cli_usage_error("plan", "option %s needs a value", a); i++; } while (0)
#define INTOPT(flag, lo, hi, dst) \
    else if (!strcmp(a, flag)) { NEEDV(); if ((rc = cli_parse_int("plan", a, v, lo, hi, &num))) return rc; dst = (int)num; }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { plan_usage(stdout); return 0; }
        else if (!strcmp(a, "-m") || !strcmp(a, "--model")) { NEEDV(); model = v; }
        else if (!strcmp(a, "--start")) { NEEDV(); start = v; }
        else if (!strcmp(a, "--start-tokens")) { NEEDV(); start_tok = v; }
        else if (!strcmp(a, "--start-actions")) { NEEDV(); start_act = v; }
        else if (!strcmp(a, "--goal")) { NEEDV(); goal = v; }
        else if (!strcmp(a, "--goal-tokens")) { NEEDV(); goal_tok = v; }
        else if (!strcmp(a, "-o") || !strcmp(a, "--out")) { NEEDV(); out = v; }
        else if (!strcmp(a, "--energies")) { NEEDV(); energies_out = v; }
        else if (!strcmp(a, "--cpu")) { NEEDV(); cpu = v; }
        INTOPT("--horizon", 1, 1024, pp.horizon)
        INTOPT("--samples", 1, 65536, pp.samples)
        INTOPT("--iters", 1, 100000, pp.iterations)
        INTOPT("--elites", 1, 65536, pp.elites)
        INTOPT("-t", 1, 4096, threads)
        INTOPT("--threads", 1, 4096, threads)
        INTOPT("-g", 0, 1024, gpu)
        INTOPT("--gpu", 0, 1024, gpu)
        else if (!strcmp(a, "--seed")) {
            NEEDV();
            unsigned long long s;
            if ((rc = cli_parse_u64("plan", a, v, &s))) return rc;
            pp.seed = s;
        } else if (!strcmp(a, "--std") || !strcmp(a, "--bounds")) {
            NEEDV();
            char *end = NULL;
            double x = strtod(v, &end), y = 0;
            int okv = end != v && isfinite(x);
            if (okv && a[2] == 'b') {
                okv = *end == ',';
                const char *w = end + 1;
                y = strtod(w, &end);
                okv = okv && end != w && isfinite(y) && x < y;
            } else {
                okv = okv && x >= 0 && x <= 1e6;
            }
            if (!okv || *end)
                return cli_usage_error("plan", a[2] == 'b' ? "--bounds takes LO,HI with LO < HI, not '%s'"
                                                          : "--std takes a number in [0, 1e6], not '%s'", v);
            if (a[2] == 'b') pp.lo = (float)x, pp.hi = (float)y;
            else pp.init_std = (float)x;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) verbose = 0;
        else return cli_usage_error("plan", "unknown option '%s'", a);
#undef INTOPT
#undef NEEDV
    }
    if (!model || !out || (!start == !start_tok) || (!goal == !goal_tok))
        return cli_usage_error("plan", "needs -m, one of --start / --start-tokens, one of --goal / --goal-tokens, and -o");
    if (pp.elites > pp.samples)
        return cli_usage_error("plan", "--elites %d is more than --samples %d", pp.elites, pp.samples);
    {
        const char *ins[] = {model, start, start_tok, start_act, goal, goal_tok}, *outs[] = {out, energies_out};
        if ((rc = cli_check_outputs("plan", ins, 6, outs, 2))) return rc;
    }
    char err[JEPA_ERR_LEN];
    jepa_model *m = NULL;
    jepa_ctx *c = NULL;
    struct npy S = {0}, P = {0}, G = {0};
    float *hist = NULL, *gl = NULL, *acts = NULL, *en = NULL;
    struct jerr e = {0};
    rc = CLI_EXIT_FAIL;
    if (jepa_model_load(&m, model, err)) { cli_fail(model, "%s", err); goto done; }
    jepa_model_info info;
    jepa_model_get_info(m, &info);
    if (!info.predictor || strcmp(info.predictor, "lewm")) {
        cli_fail(model, "no LeWM predictor in this file (the planner runs jepa.pred.kind = lewm)");
        goto done;
    }
    const int D = info.emb_dim, A = info.action_dim;
    if ((rc = cli_ctx_new("plan", m, threads, cpu, gpu, &c))) goto done;
    rc = CLI_EXIT_FAIL;
    int T = 1;
    if (start_tok) {
        if (npy_load_f32(&S, start_tok, &e)) { cli_fail(NULL, "%s", e.msg); goto done; }
        if (!((S.ndim == 1 && S.shape[0] == D) || (S.ndim == 2 && S.shape[1] == D && S.shape[0] >= 1 && S.shape[0] <= 4096))) {
            cli_fail(start_tok, "expected [T, %d] or [%d] embeddings", D, D);
            goto done;
        }
        T = S.ndim == 2 ? (int)S.shape[0] : 1;
        hist = S.data;
    } else {
        if (!(hist = malloc(sizeof(float) * (size_t)D))) { cli_fail(NULL, "out of memory"); goto done; }
        if (encode_image(c, m, start, hist)) goto done;
    }
    if (T > 1 && !start_act) { cli_fail(start_tok, "a history of %d embeddings needs --start-actions [%d, %d]", T, T - 1, A); goto done; }
    if (start_act) {
        if (npy_load_f32(&P, start_act, &e)) { cli_fail(NULL, "%s", e.msg); goto done; }
        if (P.ndim != 2 || P.shape[0] != T - 1 || P.shape[1] != A) {
            cli_fail(start_act, "expected the %d past actions [%d, %d] of the history", T - 1, T - 1, A);
            goto done;
        }
    }
    if (goal_tok) {
        if (npy_load_f32(&G, goal_tok, &e)) { cli_fail(NULL, "%s", e.msg); goto done; }
        if (G.count != D || G.ndim > 2) { cli_fail(goal_tok, "expected one embedding of %d", D); goto done; }
        gl = G.data;
    } else {
        if (!(gl = malloc(sizeof(float) * (size_t)D))) { cli_fail(NULL, "out of memory"); goto done; }
        if (encode_image(c, m, goal, gl)) goto done;
    }
    acts = malloc(sizeof(float) * (size_t)pp.horizon * A);
    en = malloc(sizeof(float) * (size_t)pp.iterations);
    if (!acts || !en) { cli_fail(NULL, "out of memory"); goto done; }
    pp.on_iteration = plan_progress;
    pp.user = &verbose;
    float fin = 0;
    if (jepa_ctx_lewm_plan(c, hist, T, P.data, gl, &pp, acts, en, &fin)) {
        const char *msg = jepa_ctx_error(c);
        cli_fail(strstr(msg, "goal") ? (goal_tok ? goal_tok : goal) : strstr(msg, "plan") ? "plan" : model, "%s", msg);
        goto done;
    }
    int64_t shape[2] = {pp.horizon, A}, eshape[1] = {pp.iterations};
    if (npy_save_f32(out, acts, 2, shape, &e) || (energies_out && npy_save_f32(energies_out, en, 1, eshape, &e))) {
        cli_fail(NULL, "%s", e.msg);
        goto done;
    }
    if (verbose)
        fprintf(stderr, "plan: %d actions -> %s; energy of the plan %.6f (%d iterations of %d candidates, %s)\n",
                pp.horizon, out, (double)fin, pp.iterations, pp.samples, jepa_ctx_isa(c));
    rc = 0;
done:
    if (!start_tok) free(hist);
    if (!goal_tok) free(gl);
    free(acts), free(en);
    npy_free(&S), npy_free(&P), npy_free(&G);
    jepa_ctx_free(c);
    jepa_model_free(m);
    return rc;
}
int cmd_rollout(int argc, char **argv) { return run(WORLD_ROLLOUT, argc, argv); }
