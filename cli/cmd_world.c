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
 *   jepa rollout -m M --tokens T.npy --states S.npy --actions A.npy --steps K -o TRAJ.npy
 *       V-JEPA 2-AC: T [F N, D], S [F, 7], A [F + K - 1, 7]; TRAJ [K N, D], each step's
 *       tokens layer-normed (Meta's planner; --no-normalize keeps them raw), the states
 *       by Meta's pose rule (--traj-states).
 *   jepa plan -m M (--start IMG | --start-tokens S.npy [--start-actions P.npy])
 *             (--goal IMG | --goal-tokens G.npy) [CEM options] -o ACTIONS.npy
 *       the CEM planner: ACTIONS [horizon, action_dim]; the best energy of every
 *       iteration and the plan's energy on stderr.
 *
 * Inputs are float32 .npy; shapes are checked against the file before anything runs,
 * and the outputs are written whole or not at all, all of them or none (runtime/outfile.h via
 * npy_save_f32_all).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/stream.h"
#include "input/image.h"
#include "input/npy.h"
#include "jepa.h"

enum world_cmd { WORLD_PREDICT, WORLD_ROLLOUT };

struct world_opts {
    const char *model, *emb, *actions, *out, *cpu, *precision;
    const char *tokens, *states, *traj_states;   /* V-JEPA 2-AC */
    int threads, gpu, steps, verbose, raw;
    int json;   /* rollout --json: the summary as one JSON object on stdout */
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
                   "       jepa rollout -m MODEL --tokens T.npy --states S.npy --actions A.npy --steps K -o TRAJ.npy\n"
                   "  LeWM: from a history E [T, D] (or [B, T, D]) and the actions A [T + K - 1,\n"
                   "  action_dim] (or [B, ...]), K steps, each predicted from the last jepa.pred.n_frames\n"
                   "  embeddings so far and appended: TRAJ [K, D] (or [B, K, D]).\n"
                   "  V-JEPA 2-AC, as Meta's planner steps it: a history T [F N, D] with its states\n"
                   "  S [F, 7] and the actions A [F + K - 1, 7] (or [B, ...] each); each step predicts\n"
                   "  the next frame's N tokens, layer-normed, and its state by Meta's pose rule:\n"
                   "  TRAJ [K N, D] (or [B, K N, D]).\n"
                   "  --traj-states TS.npy   write the K derived states [K, 7] (V-JEPA 2-AC)\n"
                   "  --no-normalize         keep the predicted tokens as the predictor gives them\n"
                   "  --json                 the summary as one JSON object on stdout (docs/cli.md)\n");
    fprintf(f, "options:\n"
               "  -m, --model MODEL     the world model (.gguf), or OWNER/NAME[:FILE] from the cache\n"
               CLI_PULL_HELP
               "  -o, --out OUT.npy     the output (-o -: stdout)\n"
               "  -t, --threads N       threads (default: all cores)\n"
               "  --cpu LEVEL           cap the kernels: scalar, avx2, avx512, neon\n"
               "  --precision T         the CPU's precision tier: exact (default), high, bf16\n"
               "                        (docs/precision.md; JEPA_PRECISION does the same)\n"
               "  -g, --gpu N           run on CUDA GPU N\n"
               "  -q, --quiet           no summary line on stderr\n");
}

void cli_world_predict_usage(FILE *f) {
    fprintf(f, "\nWith a world model (LeWM, V-JEPA 2-AC):\n");
    world_usage(WORLD_PREDICT, f);
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
        else if (!strcmp(a, "--precision")) { NEEDV(); o->precision = v; }
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
        else if (c == WORLD_ROLLOUT && !strcmp(a, "--traj-states")) { NEEDV(); o->traj_states = v; }
        else if (c == WORLD_ROLLOUT && !strcmp(a, "--no-normalize")) o->raw = 1;
        else if (c == WORLD_ROLLOUT && !strcmp(a, "--json")) o->json = 1;
        else return cli_usage_error(name, "unknown option '%s'", a);
#undef NEEDV
    }
    if (!o->model || (!o->emb == !o->tokens) || !o->actions || !o->out || (c == WORLD_ROLLOUT && !o->steps))
        return cli_usage_error(name, c == WORLD_PREDICT ? "needs -m, --emb (LeWM) or --tokens and --states (V-JEPA 2-AC), --actions and -o"
                                                       : "needs -m, --emb (LeWM) or --tokens and --states (V-JEPA 2-AC), --actions, --steps and -o");
    const int mrc = cli_resolve_model(name, &o->model);   /* -m REPO: the cached file */
    if (mrc) return mrc;
    if (!o->tokens != !o->states) return cli_usage_error(name, "--tokens and --states go together (V-JEPA 2-AC)");
    if (o->emb && (o->traj_states || o->raw))
        return cli_usage_error(name, "--traj-states and --no-normalize are V-JEPA 2-AC's (with --tokens / --states)");
    const char *ins[] = {o->model, o->emb, o->actions, o->tokens, o->states}, *outs[] = {o->out, o->traj_states};
    return cli_check_outputs(name, ins, 5, outs, 2);
}

/* A world model's output rows for cli_check_finite_output: `steps` per sequence (rollout:
 * the K steps; predict: one per frame), `tokens` rows per step (V-JEPA 2-AC's N, LeWM 1). */
struct world_rows {
    int64_t B, steps, tokens;
    const char *unit;   /* "step" or "frame" */
};

static const char *world_row_name(const void *user, size_t row, char *buf, size_t size) {
    const struct world_rows *u = user;
    const int64_t per_seq = u->steps * u->tokens, b = (int64_t)row / per_seq, t = (int64_t)row % per_seq;
    int w = 0;
    if (u->B > 1) w = snprintf(buf, size, "sequence %lld, ", (long long)b);
    w += snprintf(buf + w, size - (size_t)w, "%s %lld", u->unit, (long long)(t / u->tokens));
    if (u->tokens > 1) snprintf(buf + w, size - (size_t)w, ", token %lld", (long long)(t % u->tokens));
    return buf;
}

/* key (with its separator), then the path as a JSON string, or null for none. */
static void json_path(const char *key, const char *path) {
    fputs(key, stdout);
    if (path) cli_json_str(stdout, path);
    else fputs("null", stdout);
}

/* rollout --json: {"cmd": "rollout", "output", "traj_states" (or null), "shape" (the
 * output's), "sequences" (B), "steps" (K), "tokens" (per step: V-JEPA 2-AC's N, LeWM 1),
 * "isa"}: what the text summary says, one object on stdout. */
static void world_summary_json(const struct world_opts *o, int nd, const int64_t *shape, int64_t B, int64_t steps,
                               int tokens, const char *isa) {
    printf("{\"cmd\": \"rollout\"");
    json_path(", \"output\": ", o->out);
    json_path(", \"traj_states\": ", o->traj_states);
    printf(", \"shape\": [");
    for (int k = 0; k < nd; k++) printf("%s%lld", k ? ", " : "", (long long)shape[k]);
    printf("], \"sequences\": %lld, \"steps\": %lld, \"tokens\": %d, \"isa\": ", (long long)B, (long long)steps,
           tokens);
    cli_json_str(stdout, isa);
    printf("}\n");
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

/* V-JEPA 2-AC: tokens [F N, D] (or [B, F N, D]), actions [F, A] (rollout: [F + K - 1, A]),
 * states [F, S] (or [B, ...] each). */
static int run_ac(enum world_cmd cmd, const struct world_opts *o, jepa_model *m, const jepa_model_info *info) {
    const char *name = cmd == WORLD_PREDICT ? "predict" : "rollout";
    struct npy Tk = {0}, A = {0}, S = {0};
    struct jerr e = {0};
    jepa_ctx *c = NULL;
    float *out = NULL, *ost = NULL;
    int rc = CLI_EXIT_FAIL;
    const int N = info->pred_tokens_per_frame, D = info->embed_dim;
    if (npy_load_f32(&Tk, o->tokens, &e) || npy_load_f32(&A, o->actions, &e) || npy_load_f32(&S, o->states, &e)) {
        cli_fail(NULL, "%s", e.msg);
        goto done;
    }
    int64_t B = 0, rows = 0, w = 0, Ba = 0, Fa = 0, Aw = 0, Bs = 0, F = 0, Sw = 0;
    if (shape3(o->tokens, &Tk, &B, &rows, &w) || shape3(o->actions, &A, &Ba, &Fa, &Aw) || shape3(o->states, &S, &Bs, &F, &Sw))
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
    const int64_t want_a = cmd == WORLD_PREDICT ? F : F + o->steps - 1;
    if (Fa != want_a) {
        cli_fail(o->actions, cmd == WORLD_PREDICT ? "%lld actions for %lld states: one of each per frame"
                                                   : "%lld actions for a history of %lld frames and --steps %d: expected %lld (F + K - 1)",
                 (long long)Fa, (long long)F, o->steps, (long long)want_a);
        goto done;
    }
    if (F > info->pred_n_frames) {
        cli_fail(o->states, "%lld frames: the predictor takes at most %d (jepa.enc.n_frames / tubelet_size)%s", (long long)F,
                 info->pred_n_frames, cmd == WORLD_PREDICT ? "; `jepa rollout` slides a window" : "");
        goto done;
    }
    if (rows != F * N) {
        cli_fail(o->tokens, "%lld token rows for %lld frames: expected %lld (%d tokens per frame, frame-major)", (long long)rows,
                 (long long)F, (long long)F * N, N);
        goto done;
    }
    if ((rc = cli_ctx_new(name, m, o->threads, o->cpu, o->precision, o->gpu, &c))) goto done;
    rc = CLI_EXIT_FAIL;
    const int64_t out_frames = cmd == WORLD_PREDICT ? F : o->steps;
    const size_t n_out = (size_t)B * out_frames * N * info->pred_out_dim;
    if (!(out = malloc(sizeof(float) * n_out)) || !(ost = malloc(sizeof(float) * (size_t)B * out_frames * Sw))) {
        cli_fail(NULL, "out of memory for %lld x %lld frames of %d tokens", (long long)B, (long long)out_frames, N);
        goto done;
    }
    jepa_status st = cmd == WORLD_PREDICT
                         ? jepa_ctx_ac_predict(c, Tk.data, A.data, S.data, (int)B, (int)F, out)
                         : jepa_ctx_ac_rollout(c, Tk.data, S.data, (int)B, (int)F, A.data, o->steps, !o->raw, out, ost);
    if (st) {   /* a bad value names its file; anything else, the model */
        const char *msg = jepa_ctx_error(c);
        cli_fail(st != JEPA_ERR_ARG ? o->model : strstr(msg, "action") ? o->actions : strstr(msg, "state") ? o->states : o->tokens,
                 "%s", msg);
        goto done;
    }
    const struct world_rows wr = {B, out_frames, N, cmd == WORLD_PREDICT ? "frame" : "step"};
    const struct cli_out_rows out_rows = {(size_t)info->pred_out_dim, NULL, "dim", world_row_name, &wr};
    if (cli_check_finite_output(o->model, out, n_out, &out_rows)) goto done;
    int64_t shape[3] = {B, out_frames * N, info->pred_out_dim}, sshape[3] = {B, out_frames, Sw};
    const int nd = Tk.ndim == 3 ? 3 : 2;
    if (npy_save_f32_all(2, (const char *[]){o->out, o->traj_states}, (const float *[]){out, ost},
                         (const int[]){nd, nd}, (const int64_t *[]){nd == 3 ? shape : shape + 1, nd == 3 ? sshape : sshape + 1},
                         &e)) {
        cli_fail(NULL, "%s", e.msg);   /* TRAJ and TS both or neither */
        goto done;
    }
    if (o->json) world_summary_json(o, nd, nd == 3 ? shape : shape + 1, B, out_frames, N, jepa_ctx_isa(c));
    else if (o->verbose)
        fprintf(stderr, "%s: %lld x %lld frames x %d tokens -> %s (%s)\n", name, (long long)B, (long long)out_frames, N,
                o->out, jepa_ctx_isa(c));
    rc = 0;
done:
    free(out), free(ost);
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
        if (!o.tokens) rc = cli_usage_error(name, "a V-JEPA 2-AC model takes --tokens, --actions and --states");
        else rc = run_ac(cmd, &o, m, &info);
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
    if ((rc = cli_ctx_new(name, m, o.threads, o.cpu, o.precision, o.gpu, &c))) goto done;
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
    const struct world_rows wr = {B, rows, 1, cmd == WORLD_PREDICT ? "frame" : "step"};
    const struct cli_out_rows out_rows = {(size_t)info.pred_out_dim, NULL, "dim", world_row_name, &wr};
    if (cli_check_finite_output(o.model, out, n_out, &out_rows)) goto done;
    int64_t shape[3] = {B, rows, info.pred_out_dim};
    const int nd = E.ndim == 3 ? 3 : 2;
    if (npy_save_f32(o.out, out, nd, nd == 3 ? shape : shape + 1, &e)) { cli_fail(NULL, "%s", e.msg); goto done; }
    if (o.json) world_summary_json(&o, nd, nd == 3 ? shape : shape + 1, B, rows, 1, jepa_ctx_isa(c));
    else if (o.verbose)
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
    jepa_plan_params d = jepa_plan_default_params(), a = jepa_plan_ac_default_params();
    fprintf(f, "usage: jepa plan -m MODEL (--start IMG | --start-tokens S.npy [--start-actions P.npy])\n"
               "                 (--goal IMG | --goal-tokens G.npy) [options] -o ACTIONS.npy\n"
               "  the cross-entropy method finds the actions [horizon, action_dim] whose rollout from\n"
               "  the start ends closest (mean |x - goal|) to the goal.\n"
               "  LeWM: --start / --goal images, encoded with the file's encoder (`--pool lewm`);\n"
               "  --start-tokens S [T, D] or [D] (a history of T embeddings, with --start-actions\n"
               "  P [T - 1, action_dim] when T > 1), --goal-tokens G [D].\n"
               "  V-JEPA 2-AC: also --start-states ST [T, 7] (or [7]), the robot's pose; --start /\n"
               "  --goal images are encoded as Meta's WorldModel does (the frame twice, tokens\n"
               "  layer-normed); --start-tokens [T N, D], --goal-tokens [N, D] (layer-normed too).\n"
               "options (defaults: LeWM, the LeWM authors' planner; V-JEPA 2-AC, Meta's; docs/world-models.md):\n"
               "  --horizon H      actions planned (%d; %d)\n"
               "  --samples N      candidates per iteration, one batch (%d; %d)\n"
               "  --iters I        iterations (%d; %d)\n"
               "  --elites K       candidates that refit the Gaussian (%d; %d)\n"
               "  --momentum M     keep M of the old mean and std at each refit (%g; %g)\n"
               "  --std S          LeWM: initial std of the Gaussian (%g)\n"
               "  --bounds LO,HI   LeWM: clip every action component (none)\n"
               "  --maxnorm X      V-JEPA 2-AC: the xyz box +-X and its initial std (%g)\n"
               "  --seed R         the random stream's seed (%llu)\n"
               "  --energies E.npy write the best energy of every iteration\n"
               "  --json           the summary as one JSON object on stdout, with the actions\n"
               "                   (docs/cli.md; --stream writes JSON lines already)\n"
               "  -m, --model MODEL, -o, --out ACTIONS.npy (-o -: stdout), -t, --threads N,\n"
               "  --cpu L, --precision T, -g, --gpu N, -q, --quiet   as for `jepa predict`\n"
               CLI_PULL_HELP
               "live video: jepa plan -m MODEL --stream URL|-|PATH (--goal IMG | --goal-tokens G.npy)\n"
               "  each new frame (every --stride K) is the start of a new plan (a history of that one\n"
               "  frame; V-JEPA 2-AC: with the fixed --start-states [7]): one JSON line per plan on stdout,\n"
               "  {\"index\", \"frame\", \"pts\", \"energy\", \"actions\": [[...] x horizon]}\n",
            d.horizon, a.horizon, d.samples, a.samples, d.iterations, a.iterations, d.elites, a.elites,
            (double)d.momentum_mean, (double)a.momentum_mean, (double)d.init_std, (double)a.components[0].hi,
            (unsigned long long)d.seed);
    stream_usage(f, false);
}

static void plan_progress(void *user, int it, float e) {
    if (*(const int *)user) fprintf(stderr, "plan: iteration %d: best energy %.6f\n", it + 1, (double)e);
}

/* F.layer_norm over each row, no weight, eps 1e-5: Meta's WorldModel.encode (normalize_reps). */
static void normalize_rows(float *x, int rows, int d) {
    for (int r = 0; r < rows; r++) {
        float *v = x + (size_t)r * d;
        double mu = 0, var = 0;
        for (int j = 0; j < d; j++) mu += v[j];
        mu /= d;
        for (int j = 0; j < d; j++) var += (v[j] - mu) * (v[j] - mu);
        const double s = 1.0 / sqrt(var / d + 1e-5);
        for (int j = 0; j < d; j++) v[j] = (float)((v[j] - mu) * s);
    }
}

/* The state of a preprocessed frame clip [3, T, oh, ow] (T = 2 for V-JEPA 2-AC: the frame
 * twice): encode, and for V-JEPA 2-AC layer-norm the n_tokens x D tokens. name is for
 * messages. */
static int encode_frames(jepa_ctx *c, const jepa_model *m, const char *name, const float *clip, int T, int oh,
                         int ow, int n_tokens, int D, float *out) {
    int gt = 0, gh = 0, gw = 0, nt = 0;
    if (n_tokens && (jepa_model_grid(m, T, oh, ow, &gt, &gh, &gw, &nt) || nt != n_tokens))
        return cli_fail(name, "the encoder makes %d tokens of a %dx%d frame; the predictor takes %d per frame", nt,
                        oh, ow, n_tokens);
    jepa_embed_out o = {0};
    if (n_tokens) o.tokens = out;
    else o.emb = out;
    if (jepa_ctx_embed(c, clip, T, oh, ow, NULL, &o)) return cli_fail(name, "%s", jepa_ctx_error(c));
    if (n_tokens) normalize_rows(out, n_tokens, D);
    return 0;
}

/* The state of an image: decode, preprocess with the file's recipe, encode. LeWM: emb
 * [emb_dim]. V-JEPA 2-AC (n_tokens > 0): the frame twice (one tubelet, as Meta's
 * WorldModel.encode repeats it), its n_tokens x D tokens layer-normed. */
static int encode_image(jepa_ctx *c, const jepa_model *m, const char *path, int n_tokens, int D, float *out) {
    struct jerr e = {0};
    uint8_t *rgb = NULL;
    int ih = 0, iw = 0, oh = 0, ow = 0;
    char err[JEPA_ERR_LEN];
    if (image_load_rgb(path, &rgb, &ih, &iw, &e)) return cli_fail(NULL, "%s", e.msg);
    int rc = CLI_EXIT_FAIL;
    const int T = n_tokens ? 2 : 1;
    float *clip = NULL;
    if (jepa_preprocess_size(m, NULL, &oh, &ow) || !(clip = malloc(sizeof(float) * 3 * T * (size_t)oh * ow))) {
        cli_fail(path, "cannot size the preprocessed image");
    } else if (jepa_preprocess_rgb(m, rgb, ih, iw, NULL, clip, T, 0, err) ||
               (T == 2 && jepa_preprocess_rgb(m, rgb, ih, iw, NULL, clip, T, 1, err))) {
        cli_fail(path, "%s", err);
    } else {
        rc = encode_frames(c, m, path, clip, T, oh, ow, n_tokens, D, out);
    }
    free(clip);
    free(rgb);
    return rc;
}

/* What `jepa plan`'s command line sets; the rest comes from the model kind's defaults. */
struct plan_args {
    const char *model, *start, *start_tok, *start_act, *start_st, *goal, *goal_tok, *out, *energies_out, *cpu;
    const char *precision;
    int threads, gpu, verbose, json;   /* json: --json, the summary as one JSON object on stdout */
    int horizon, samples, iters, elites, has_seed, has_bounds;   /* 0: not given */
    double std, momentum, maxnorm, lo, hi;                        /* < 0 (lo, hi: !has_bounds): not given */
    unsigned long long seed;
    struct stream_opts stream;   /* --stream: a plan from each new frame (cli/stream.h) */
};

/* --bounds LO,HI into o: 0 or CLI_EXIT_USAGE. */
static int parse_bounds(const char *v, struct plan_args *o) {
    char *end = NULL;
    const char *w = NULL;
    o->lo = strtod(v, &end);
    int okv = end != v && isfinite(o->lo) && *end == ',';
    if (okv) {
        w = end + 1;
        o->hi = strtod(w, &end);
        okv = end != w && !*end && isfinite(o->hi) && o->lo < o->hi;
    }
    if (!okv) return cli_usage_error("plan", "--bounds takes LO,HI with LO < HI, not '%s'", v);
    o->has_bounds = 1;
    return 0;
}

/* The command line into *o: -1 to go on, else the exit status (0 after --help). */
static int parse_plan_args(int argc, char **argv, struct plan_args *o) {
    int rc;
    long long num;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEEDV() do { if (!v) return cli_usage_error("plan", "option %s needs a value", a); i++; } while (0)
#define INTOPT(flag, lo, hi, dst) \
    else if (!strcmp(a, flag)) { NEEDV(); if ((rc = cli_parse_int("plan", a, v, lo, hi, &num))) return rc; dst = (int)num; }
#define REALOPT(flag, lo, hi, dst) \
    else if (!strcmp(a, flag)) {                                                                         \
        NEEDV();                                                                                         \
        char *end = NULL;                                                                                \
        dst = strtod(v, &end);                                                                           \
        if (end == v || *end || !(dst >= lo && dst <= hi))                                               \
            return cli_usage_error("plan", "%s takes a number in [%g, %g], not '%s'", a, (double)lo, (double)hi, v); \
    }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { plan_usage(stdout); return 0; }
        else if (!strcmp(a, "-m") || !strcmp(a, "--model")) { NEEDV(); o->model = v; }
        else if (!strcmp(a, "--start")) { NEEDV(); o->start = v; }
        else if (!strcmp(a, "--start-tokens")) { NEEDV(); o->start_tok = v; }
        else if (!strcmp(a, "--start-actions")) { NEEDV(); o->start_act = v; }
        else if (!strcmp(a, "--start-states")) { NEEDV(); o->start_st = v; }
        else if (!strcmp(a, "--goal")) { NEEDV(); o->goal = v; }
        else if (!strcmp(a, "--goal-tokens")) { NEEDV(); o->goal_tok = v; }
        else if (!strcmp(a, "-o") || !strcmp(a, "--out")) { NEEDV(); o->out = v; }
        else if (!strcmp(a, "--energies")) { NEEDV(); o->energies_out = v; }
        else if (!strcmp(a, "--cpu")) { NEEDV(); o->cpu = v; }
        else if (!strcmp(a, "--precision")) { NEEDV(); o->precision = v; }
        INTOPT("--horizon", 1, 1024, o->horizon)
        INTOPT("--samples", 1, 65536, o->samples)
        INTOPT("--iters", 1, 100000, o->iters)
        INTOPT("--elites", 1, 65536, o->elites)
        INTOPT("-t", 1, 4096, o->threads)
        INTOPT("--threads", 1, 4096, o->threads)
        INTOPT("-g", 0, 1024, o->gpu)
        INTOPT("--gpu", 0, 1024, o->gpu)
        REALOPT("--std", 0, 1e6, o->std)
        REALOPT("--momentum", 0, 1, o->momentum)
        REALOPT("--maxnorm", 0, 1e6, o->maxnorm)
        else if (!strcmp(a, "--seed")) {
            NEEDV();
            if ((rc = cli_parse_u64("plan", a, v, &o->seed))) return rc;
            o->has_seed = 1;
        } else if (!strcmp(a, "--bounds")) {
            NEEDV();
            if ((rc = parse_bounds(v, o))) return rc;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) o->verbose = 0;
        else if (!strcmp(a, "--json")) o->json = 1;
        else if ((rc = stream_parse(&o->stream, "plan", false, argc, argv, &i))) { if (rc != 1) return rc; }
        else return cli_usage_error("plan", "unknown option '%s'", a);
#undef REALOPT
#undef INTOPT
#undef NEEDV
    }
    if (o->stream.url && (o->start || o->start_tok || o->start_act || o->out || o->energies_out))
        return cli_usage_error("plan", "--stream takes the start from each new frame and writes JSON lines on stdout: "
                                       "not with --start, --start-tokens, --start-actions, -o or --energies");
    if (o->stream.url && (!o->model || (!o->goal == !o->goal_tok)))
        return cli_usage_error("plan", "--stream needs -m and one of --goal / --goal-tokens");
    if (o->stream.url) return -1;
    if (!o->model || !o->out || (!o->start == !o->start_tok) || (!o->goal == !o->goal_tok))
        return cli_usage_error("plan", "needs -m, one of --start / --start-tokens, one of --goal / --goal-tokens, and -o");
    if ((rc = cli_resolve_model("plan", &o->model))) return rc;   /* -m REPO: the cached file */
    const char *ins[] = {o->model, o->start, o->start_tok, o->start_act, o->start_st, o->goal, o->goal_tok};
    const char *outs[] = {o->out, o->energies_out};
    if ((rc = cli_check_outputs("plan", ins, 7, outs, 2))) return rc;
    return -1;
}

/* The planner's parameters: the model kind's defaults, then what the command line set, the
 * action box (ac) written into box. 0, or the exit status of the first thing that does not fit. */
static int plan_params(const struct plan_args *o, const jepa_model_info *info, int ac, jepa_plan_component *box,
                       jepa_plan_params *pp) {
    *pp = ac ? jepa_plan_ac_default_params() : jepa_plan_default_params();
    if (ac && (o->std >= 0 || o->has_bounds))
        return cli_usage_error("plan", "V-JEPA 2-AC plans in Meta's action box: --maxnorm sets its xyz range "
                                       "(not --std / --bounds)");
    if (!ac && (o->maxnorm >= 0 || o->start_st))
        return cli_usage_error("plan", "--maxnorm and --start-states are V-JEPA 2-AC's; this is a LeWM model");
    if (ac && !o->start_st)
        return cli_usage_error("plan", "a V-JEPA 2-AC plan needs --start-states (the robot's pose, [T, 7] or [7])");
    if (ac && info->action_dim != 7)
        return cli_fail(o->model, "the V-JEPA 2-AC planner moves Meta's 7-d Franka action; this predictor takes "
                                  "%d-d actions", info->action_dim);
    if (o->horizon) pp->horizon = o->horizon;
    if (o->samples) pp->samples = o->samples;
    if (o->iters) pp->iterations = o->iters;
    if (o->elites) pp->elites = o->elites;
    if (o->has_seed) pp->seed = o->seed;
    if (o->momentum >= 0) pp->momentum_mean = pp->momentum_std = (float)o->momentum;
    if (o->std >= 0) pp->init_std = (float)o->std;
    if (o->has_bounds) pp->lo = (float)o->lo, pp->hi = (float)o->hi;
    if (ac && o->maxnorm >= 0) {
        memcpy(box, pp->components, sizeof(jepa_plan_component) * 7);
        for (int j = 0; j < 3; j++)
            box[j].lo = (float)-o->maxnorm, box[j].hi = (float)o->maxnorm, box[j].init_std = (float)o->maxnorm;
        pp->components = box;
    }
    if (pp->elites > pp->samples)
        return cli_usage_error("plan", "--elites %d is more than --samples %d", pp->elites, pp->samples);
    return 0;
}

/* The start and the goal of a plan: T frames of N x D state (hist), their T states (ac) and
 * T - 1 past actions, and the goal frame (gl). hist and gl point into S and G when those
 * were given as tokens, else they are allocated. */
struct plan_inputs {
    struct npy S, P, G, ST;
    float *hist, *gl;
    int T;
};

static void plan_inputs_free(struct plan_inputs *in) {
    if (!in->S.data) free(in->hist);
    if (!in->G.data) free(in->gl);
    npy_free(&in->S), npy_free(&in->P), npy_free(&in->G), npy_free(&in->ST);
}

/* --start / --start-tokens, --start-states and --start-actions: 0 or CLI_EXIT_FAIL. */
static int load_start(const struct plan_args *o, jepa_ctx *c, const jepa_model *m, int ac, int N, int D, int A,
                      struct plan_inputs *in) {
    struct jerr e = {0};
    if (o->start_tok) {
        if (npy_load_f32(&in->S, o->start_tok, &e)) return cli_fail(NULL, "%s", e.msg);
        const struct npy *S = &in->S;
        if (S->ndim < 1)   /* a scalar: no width to read */
            return cli_fail(o->start_tok, "a 0-d array; expected %s", ac ? "[T N, D] tokens" : "[T, D] or [D] embeddings");
        const int64_t rows = S->ndim == 2 ? S->shape[0] : 1, w = S->shape[S->ndim - 1];
        if (S->ndim > 2 || w != D || rows % N || rows / N < 1 || rows / N > 4096)
            return cli_fail(o->start_tok, ac ? "expected [T %d, %d] tokens (%d per frame)"
                                             : "expected [T, %d] or [%d] embeddings", ac ? N : D, D, N);
        in->T = (int)(rows / N);
        in->hist = S->data;
    } else {
        if (!(in->hist = malloc(sizeof(float) * (size_t)N * D))) return cli_fail(NULL, "out of memory");
        if (encode_image(c, m, o->start, ac ? N : 0, D, in->hist)) return CLI_EXIT_FAIL;
    }
    if (o->start_st) {
        if (npy_load_f32(&in->ST, o->start_st, &e)) return cli_fail(NULL, "%s", e.msg);
        if (in->ST.count != (int64_t)in->T * 7 || in->ST.ndim > 2)
            return cli_fail(o->start_st, "expected the %d states [%d, 7] of the start", in->T, in->T);
    }
    if (in->T > 1 && !o->start_act)
        return cli_fail(o->start_tok, "a history of %d frames needs --start-actions [%d, %d]", in->T, in->T - 1, A);
    if (o->start_act) {
        if (npy_load_f32(&in->P, o->start_act, &e)) return cli_fail(NULL, "%s", e.msg);
        if (in->P.ndim != 2 || in->P.shape[0] != in->T - 1 || in->P.shape[1] != A)
            return cli_fail(o->start_act, "expected the %d past actions [%d, %d] of the history", in->T - 1,
                            in->T - 1, A);
    }
    return 0;
}

/* --goal / --goal-tokens: 0 or CLI_EXIT_FAIL. */
static int load_goal(const struct plan_args *o, jepa_ctx *c, const jepa_model *m, int ac, int N, int D,
                     struct plan_inputs *in) {
    struct jerr e = {0};
    const size_t fr = (size_t)N * D;   /* floats of one frame's state */
    if (o->goal_tok) {
        if (npy_load_f32(&in->G, o->goal_tok, &e)) return cli_fail(NULL, "%s", e.msg);
        if (in->G.count != (int64_t)fr || in->G.ndim > 2)
            return cli_fail(o->goal_tok, ac ? "expected one frame's tokens [%d, %d]" : "expected one embedding of %d",
                            ac ? N : D, D);
        in->gl = in->G.data;
        return 0;
    }
    if (!(in->gl = malloc(sizeof(float) * fr))) return cli_fail(NULL, "out of memory");
    if (encode_image(c, m, o->goal, ac ? N : 0, D, in->gl)) return CLI_EXIT_FAIL;
    return 0;
}

/* `, "actions": [[...] x horizon]}` and the line's end: each value %.9g, the float32 exactly. */
static void print_actions(const float *acts, int horizon, int A) {
    printf(", \"actions\": [");
    for (int h = 0; h < horizon; h++) {
        printf(h ? ", [" : "[");
        for (int j = 0; j < A; j++) printf(j ? ", %.9g" : "%.9g", (double)acts[(size_t)h * A + j]);
        printf("]");
    }
    printf("]}\n");
}

/* plan --json: {"cmd": "plan", "output", "energies" (or null), "horizon", "action_dim",
 * "energy" (the plan's), "iterations", "samples", "isa", "actions": [[...] x horizon]}
 * (values %.9g: the float32 exactly), one object on stdout. */
static void plan_summary_json(const struct plan_args *o, const jepa_plan_params *pp, int A, const float *acts,
                              float energy, const char *isa) {
    printf("{\"cmd\": \"plan\"");
    json_path(", \"output\": ", o->out);
    json_path(", \"energies\": ", o->energies_out);
    printf(", \"horizon\": %d, \"action_dim\": %d, \"energy\": %.9g, \"iterations\": %d, \"samples\": %d, "
           "\"isa\": ", pp->horizon, A, (double)energy, pp->iterations, pp->samples);
    cli_json_str(stdout, isa);
    print_actions(acts, pp->horizon, A);
}

/* Plan from in with pp, write the actions (and the energies) and report: 0 or CLI_EXIT_FAIL. */
static int plan_and_write(const struct plan_args *o, jepa_ctx *c, int ac, int A, const struct plan_inputs *in,
                          jepa_plan_params *pp) {
    float *acts = malloc(sizeof(float) * (size_t)pp->horizon * A);
    float *en = malloc(sizeof(float) * (size_t)pp->iterations);
    struct jerr e = {0};
    int rc = CLI_EXIT_FAIL;
    pp->on_iteration = plan_progress;
    pp->user = (void *)&o->verbose;
    float fin = 0;
    int64_t shape[2] = {pp->horizon, A}, eshape[1] = {pp->iterations};
    if (!acts || !en) {
        cli_fail(NULL, "out of memory");
    } else if (ac ? jepa_ctx_ac_plan(c, in->hist, in->ST.data, in->T, in->P.data, in->gl, pp, acts, en, &fin)
                  : jepa_ctx_lewm_plan(c, in->hist, in->T, in->P.data, in->gl, pp, acts, en, &fin)) {
        const char *msg = jepa_ctx_error(c);
        cli_fail(strstr(msg, "goal") ? (o->goal_tok ? o->goal_tok : o->goal) : strstr(msg, "plan") ? "plan" : o->model,
                 "%s", msg);
    } else if (npy_save_f32_all(2, (const char *[]){o->out, o->energies_out}, (const float *[]){acts, en},
                                (const int[]){2, 1}, (const int64_t *[]){shape, eshape}, &e)) {
        cli_fail(NULL, "%s", e.msg);   /* the actions and the energies both or neither */
    } else {
        if (o->json)
            plan_summary_json(o, pp, A, acts, fin, jepa_ctx_isa(c));
        else if (o->verbose)
            fprintf(stderr, "plan: %d actions -> %s; energy of the plan %.6f (%d iterations of %d candidates, %s)\n",
                    pp->horizon, o->out, (double)fin, pp->iterations, pp->samples, jepa_ctx_isa(c));
        rc = 0;
    }
    free(acts), free(en);
    return rc;
}

/* --stream: each window (one frame) is the start of a new plan, printed as one JSON line. */
struct plan_stream {
    const struct plan_args *o;
    jepa_ctx *c;
    const jepa_model *m;
    int ac, A, N, D;
    struct plan_inputs *in;
    jepa_plan_params *pp;
    float *clip2, *acts, *en;   /* V-JEPA 2-AC: the frame twice [3, 2, H, W]; the plan */
};

static int plan_window(void *user, const struct stream_window *w) {
    struct plan_stream *p = user;
    const float *clip = w->clip;
    const size_t plane = (size_t)w->H * w->W;
    if (p->ac)   /* the frame twice: one tubelet, as encode_image makes it */
        for (int ch = 0; ch < 3; ch++)
            for (int t = 0; t < 2; t++) memcpy(p->clip2 + ((size_t)ch * 2 + t) * plane, w->clip + ch * plane, sizeof(float) * plane);
    if (p->ac) clip = p->clip2;
    if (encode_frames(p->c, p->m, p->o->stream.url, clip, p->ac ? 2 : 1, w->H, w->W, p->ac ? p->N : 0, p->D, p->in->hist))
        return CLI_EXIT_FAIL;
    float fin = 0;
    const jepa_plan_params *pp = p->pp;
    if (p->ac ? jepa_ctx_ac_plan(p->c, p->in->hist, p->in->ST.data, 1, NULL, p->in->gl, pp, p->acts, p->en, &fin)
              : jepa_ctx_lewm_plan(p->c, p->in->hist, 1, NULL, p->in->gl, pp, p->acts, p->en, &fin))
        return cli_fail(p->o->stream.url, "window %lld: %s", (long long)w->index, jepa_ctx_error(p->c));
    printf("{\"index\": %lld, \"frame\": %lld, \"pts\": ", (long long)w->index, (long long)w->last);
    if (isfinite(w->pts_last)) printf("%.6f", w->pts_last);
    else printf("null");
    printf(", \"energy\": %.9g", (double)fin);
    print_actions(p->acts, pp->horizon, p->A);
    return fflush(stdout) ? cli_fail("stdout", "cannot write") : 0;
}

static int plan_stream(const struct plan_args *o, jepa_ctx *c, const jepa_model *m, int ac, int A, int N, int D,
                       struct plan_inputs *in, jepa_plan_params *pp) {
    struct jerr e = {0};
    int H = 0, W = 0;
    if (jepa_preprocess_size(m, NULL, &H, &W)) return cli_fail(o->model, "cannot size the preprocessed frame");
    if (o->start_st) {
        if (npy_load_f32(&in->ST, o->start_st, &e)) return cli_fail(NULL, "%s", e.msg);
        if (in->ST.count != 7 || in->ST.ndim > 2) return cli_fail(o->start_st, "expected the robot's state [7] or [1, 7]");
    }
    struct plan_stream p = {.o = o, .c = c, .m = m, .ac = ac, .A = A, .N = N, .D = D, .in = in, .pp = pp};
    in->hist = malloc(sizeof(float) * (size_t)N * D);
    p.acts = malloc(sizeof(float) * (size_t)pp->horizon * A);
    p.en = malloc(sizeof(float) * (size_t)pp->iterations);
    p.clip2 = ac ? malloc(sizeof(float) * 6 * (size_t)H * W) : NULL;
    int rc = !in->hist || !p.acts || !p.en || (ac && !p.clip2) ? cli_fail(NULL, "out of memory")
           : stream_run(&o->stream, m, 1, plan_window, &p);
    free(p.acts), free(p.en), free(p.clip2);
    return rc;
}

int cmd_plan(int argc, char **argv) {
    struct plan_args o = {.gpu = -1, .verbose = 1, .std = -1, .momentum = -1, .maxnorm = -1};
    stream_opts_init(&o.stream);
    int rc = parse_plan_args(argc, argv, &o);
    if (rc >= 0) return rc;
    char err[JEPA_ERR_LEN];
    jepa_model *m = NULL;
    jepa_ctx *c = NULL;
    struct plan_inputs in = {.T = 1};
    jepa_plan_component box[7];
    jepa_plan_params pp;
    jepa_model_info info;
    rc = CLI_EXIT_FAIL;
    if (jepa_model_load(&m, o.model, err)) { cli_fail(o.model, "%s", err); goto done; }
    jepa_model_get_info(m, &info);
    const int ac = info.predictor && !strcmp(info.predictor, "ac");
    if (!ac && (!info.predictor || strcmp(info.predictor, "lewm"))) {
        cli_fail(o.model, "no world-model predictor in this file (the planner runs jepa.pred.kind = lewm or ac)");
        goto done;
    }
    if ((rc = plan_params(&o, &info, ac, box, &pp))) goto done;
    const int A = info.action_dim, N = ac ? info.pred_tokens_per_frame : 1, D = ac ? info.embed_dim : info.emb_dim;
    if ((rc = cli_ctx_new("plan", m, o.threads, o.cpu, o.precision, o.gpu, &c))) goto done;
    if (o.stream.url) {
        o.stream.quiet = !o.verbose;
        if (!(rc = load_goal(&o, c, m, ac, N, D, &in))) rc = plan_stream(&o, c, m, ac, A, N, D, &in, &pp);
        goto done;
    }
    if ((rc = load_start(&o, c, m, ac, N, D, A, &in)) || (rc = load_goal(&o, c, m, ac, N, D, &in))) goto done;
    rc = plan_and_write(&o, c, ac, A, &in, &pp);
done:
    plan_inputs_free(&in);
    jepa_ctx_free(c);
    jepa_model_free(m);
    return rc;
}
int cmd_rollout(int argc, char **argv) { return run(WORLD_ROLLOUT, argc, argv); }
