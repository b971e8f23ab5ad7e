/*
 * test_world.c — the LeWM world-model predictor (models/lewm.c) against the float64
 * reference of tests/gen/gen_lewm.py (written after the structure of the LeWM authors'
 * modules, not after jepa.c's recipe) on two tiny random configurations
 * (tests/data/lewm_wm: several heads of a width other than the model's and a 3-frame
 * window; one wide head and a 5-frame window), at every kernel level this machine has:
 *
 *  - predict: B sequences of T frames, every row cosine >= 0.99999, rel <= 1e-4;
 *  - rollout: the steps of the reference (its window slides past n_frames), same bars;
 *  - structure, with known answers: causality (a non-uniform change of the last frame's
 *    embedding and action leaves every earlier row bit-identical and moves the last),
 *    rollout step 0 = the last row of predict on the history (bits), a batch of
 *    sequences = each sequence alone (bits), the same bits at 1 and 2 threads;
 *  - bad input: wrong model kind, T past the window, zero sequences, NaN actions,
 *    zero steps: JEPA_ERR_ARG with a reason;
 *  - V-JEPA 2-AC (tests/data/ac_wm, tests/gen/gen_ac.py: a float64 transcription of
 *    Meta's VisionTransformerPredictorAC; 2 frames of 4x4 tokens, 7-d actions and states,
 *    2 heads of 32; 3 frames of 3x3, 4-d actions, 3-d states, 1 head of 48): the same bars,
 *    frame-causality with bits, 1 = 2 threads (bits), a batch of 2 = each alone (to 1e-5);
 *  - the CEM planner: its random stream against the generator's pure-Python splitmix64 /
 *    Box-Muller (known answer), and a whole plan (4 iterations of 24 candidates, 6
 *    elites) against the generator's float64 CEM on the same stream: the same elites,
 *    hence the best energy of every iteration and the plan within 1e-4; the same plan
 *    bits at 1 and 2 threads; bad parameters refused;
 *  - V-JEPA 2-AC rollout and planning (config a): Meta's pose rule against scipy on 50
 *    states (two at gimbal lock), a 4-step rollout from 2 frames whose 4-frame window
 *    slides (tokens at the bars above, states to 2e-6), its step 0 unnormalized = the
 *    last frame of predict (bits), and a plan with Meta's action box and momentum
 *    against the generator's CEM on the same stream (within 1e-4, 1 = 2 threads bits);
 *    bad input refused;
 *  - jepa_ctx_cancel from a plan's on_iteration (LeWM after iteration 1, V-JEPA 2-AC after
 *    iteration 0): JEPA_ERR_CANCELLED inside the next iteration's rollout, and the plan
 *    after it gives the bits of the first.
 *
 * usage: test_world DATA_DIR
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "input/npy.h"
#include "jepa.h"
#include "models/plan.h"
#include "runtime/cpu.h"
#include "tests/models/parity.h"

#define COS_BAR 0.99999
#define REL_BAR 1e-4

static const char *data_dir;
static int failures, passes;

#define EXPECT(cond, ...)                                       \
    do {                                                        \
        if (cond) passes++;                                     \
        else { printf("FAIL " __VA_ARGS__); printf("\n"); failures++; } \
    } while (0)

/* DATA_DIR/<dir>/<file> */
static int load_in(struct npy *a, const char *dir, const char *file) {
    char path[1024];
    struct jerr e = {0};
    snprintf(path, sizeof path, "%s/%s/%s", data_dir, dir, file);
    if (npy_load_f32(a, path, &e)) {
        printf("FAIL %s: %s\n", path, e.msg);
        failures++;
        return 1;
    }
    return 0;
}

static int load_plain(struct npy *a, const char *file) { return load_in(a, "lewm_wm", file); }

/* lewm_wm/<name>_<tag>.npy */
static int load(struct npy *a, const char *name, const char *tag) {
    char file[256];
    snprintf(file, sizeof file, "%s_%s.npy", name, tag);
    return load_plain(a, file);
}

static jepa_ctx *open_ctx(const jepa_model *m, const char *cpu, int threads) {
    jepa_ctx *c = parity_ctx(m, cpu, threads);
    failures += !c;
    return c;
}

static int same_bits(const float *a, const float *b, size_t n) { return !memcmp(a, b, n * sizeof(float)); }

/* on_iteration that cancels its plan (jepa_ctx_cancel) after iteration `at`; seen counts
 * the iterations reported. */
struct plan_stop {
    jepa_ctx *c;
    int at, seen;
};
static void stop_plan(void *user, int it, float best) {
    struct plan_stop *s = user;
    (void)best;
    s->seen = it + 1;
    if (it == s->at) jepa_ctx_cancel(s->c);
}

static void world_case(const char *tag, const char *cpu) {
    char path[1024], what[160];
    snprintf(path, sizeof path, "%s/lewm_wm/model_%s.gguf", data_dir, tag);
    jepa_model *m = NULL;
    char err[JEPA_ERR_LEN];
    if (jepa_model_load(&m, path, err)) {
        printf("FAIL %s: %s\n", path, err);
        failures++;
        return;
    }
    jepa_model_info info;
    jepa_model_get_info(m, &info);
    EXPECT(info.predictor && !strcmp(info.predictor, "lewm") && info.pred_n_frames >= 3, "[%s] info: a lewm predictor", tag);
    struct npy emb, act, pred, remb, ract, traj;
    if (load(&emb, "emb", tag) | load(&act, "actions", tag) | load(&pred, "pred", tag) |
        load(&remb, "rollout_emb", tag) | load(&ract, "rollout_actions", tag) | load(&traj, "traj", tag)) {
        jepa_model_free(m);
        return;
    }
    const int B = (int)emb.shape[0], T = (int)emb.shape[1], D = (int)emb.shape[2], A = (int)act.shape[2];
    const int RT = (int)remb.shape[1], K = (int)traj.shape[1];
    EXPECT(D == info.emb_dim && D == info.pred_out_dim && A == info.action_dim, "[%s] fixture widths", tag);
    jepa_ctx *c = open_ctx(m, cpu, 2), *c1 = open_ctx(m, cpu, 1);
    if (!c || !c1) goto done;
    const size_t n = (size_t)B * T * D;
    float *out = malloc(sizeof(float) * n), *out1 = malloc(sizeof(float) * n), *alone = malloc(sizeof(float) * n);
    float *e2 = malloc(sizeof(float) * n), *a2 = malloc(sizeof(float) * (size_t)B * T * A);
    float *tr = malloc(sizeof(float) * (size_t)B * K * D), *p0 = malloc(sizeof(float) * (size_t)B * RT * D);

    /* predict: the reference, 1 vs 2 threads, each sequence alone */
    jepa_status st = jepa_ctx_lewm_predict(c, emb.data, act.data, B, T, out);
    EXPECT(st == JEPA_OK, "[%s %s] predict: %s", tag, cpu, jepa_ctx_error(c));
    snprintf(what, sizeof what, "lewm %s predict [%s] (B %d, T %d)", tag, cpu, B, T);
    failures += parity_check(what, out, pred.data, B * T, D, COS_BAR, REL_BAR);
    EXPECT(jepa_ctx_lewm_predict(c1, emb.data, act.data, B, T, out1) == JEPA_OK && same_bits(out, out1, n),
           "[%s %s] predict: 1 and 2 threads differ", tag, cpu);
    int batch_ok = 1;
    for (int s = 0; s < B; s++) {
        const size_t o = (size_t)s * T * D;
        batch_ok &= jepa_ctx_lewm_predict(c, (const float *)emb.data + o, (const float *)act.data + (size_t)s * T * A,
                                          1, T, alone + o) == JEPA_OK;
    }
    EXPECT(batch_ok && same_bits(out, alone, n), "[%s %s] a batch of %d sequences differs from each alone", tag, cpu, B);

    /* causality: the last frame's embedding and action changed, non-uniformly */
    memcpy(e2, emb.data, sizeof(float) * n);
    memcpy(a2, act.data, sizeof(float) * (size_t)B * T * A);
    for (int s = 0; s < B; s++) {
        for (int j = 0; j < D; j++) e2[((size_t)s * T + T - 1) * D + j] += 0.3f * (float)((j * 7 + s) % 11) - 1.5f;
        for (int j = 0; j < A; j++) a2[((size_t)s * T + T - 1) * A + j] *= -2.0f + 0.25f * (float)j;
    }
    EXPECT(jepa_ctx_lewm_predict(c, e2, a2, B, T, out1) == JEPA_OK, "[%s] predict (changed)", tag);
    int prefix_same = 1;
    double last_moved = 0;
    for (int s = 0; s < B; s++) {
        const size_t o = (size_t)s * T * D;
        prefix_same &= same_bits(out + o, out1 + o, (size_t)(T - 1) * D);
        for (int j = 0; j < D; j++) {   /* (an if, not fmax: gcc 12's aarch64 vectoriser ICEs on that reduction) */
            const double dlt = fabs(out[o + (size_t)(T - 1) * D + j] - out1[o + (size_t)(T - 1) * D + j]);
            if (dlt > last_moved) last_moved = dlt;
        }
    }
    EXPECT(prefix_same, "[%s %s] causality: a change of the last frame moved an earlier row", tag, cpu);
    EXPECT(last_moved > 1e-3, "[%s %s] causality: the last row did not move (%g)", tag, cpu, last_moved);

    /* rollout: the reference; step 0 = the last row of predict on the history */
    st = jepa_ctx_lewm_rollout(c, remb.data, B, RT, ract.data, K, tr);
    EXPECT(st == JEPA_OK, "[%s %s] rollout: %s", tag, cpu, jepa_ctx_error(c));
    snprintf(what, sizeof what, "lewm %s rollout [%s] (B %d, %d + %d steps)", tag, cpu, B, RT, K);
    failures += parity_check(what, tr, traj.data, B * K, D, COS_BAR, REL_BAR);
    float *hist_act = malloc(sizeof(float) * (size_t)B * RT * A);
    for (int s = 0; s < B; s++)
        memcpy(hist_act + (size_t)s * RT * A, (const float *)ract.data + (size_t)s * (RT + K - 1) * A,
               sizeof(float) * (size_t)RT * A);
    EXPECT(jepa_ctx_lewm_predict(c, remb.data, hist_act, B, RT, p0) == JEPA_OK, "[%s] predict on the history", tag);
    int step0 = 1;
    for (int s = 0; s < B; s++)
        step0 &= same_bits(tr + (size_t)s * K * D, p0 + ((size_t)s * RT + RT - 1) * D, (size_t)D);
    EXPECT(step0, "[%s %s] rollout step 0 differs from predict's last row", tag, cpu);
    free(hist_act);

    /* bad input */
    if (!strcmp(cpu, "scalar")) {
        EXPECT(jepa_ctx_lewm_predict(c, emb.data, act.data, B, info.pred_n_frames + 1, out) == JEPA_ERR_ARG &&
                   strstr(jepa_ctx_error(c), "jepa.pred.n_frames"),
               "[%s] T past the window: '%s'", tag, jepa_ctx_error(c));
        EXPECT(jepa_ctx_lewm_predict(c, emb.data, act.data, 0, T, out) == JEPA_ERR_ARG, "[%s] zero sequences", tag);
        memcpy(a2, act.data, sizeof(float) * (size_t)B * T * A);
        a2[A + 1] = NAN;
        EXPECT(jepa_ctx_lewm_predict(c, emb.data, a2, B, T, out) == JEPA_ERR_ARG && strstr(jepa_ctx_error(c), "NaN"),
               "[%s] a NaN action: '%s'", tag, jepa_ctx_error(c));
        EXPECT(jepa_ctx_lewm_rollout(c, remb.data, B, RT, ract.data, 0, tr) == JEPA_ERR_ARG, "[%s] zero steps", tag);
        EXPECT(jepa_ctx_lewm_predict(c, NULL, act.data, B, T, out) == JEPA_ERR_ARG, "[%s] NULL emb", tag);
        EXPECT(jepa_ctx_lewm_predict(NULL, emb.data, act.data, B, T, out) == JEPA_ERR_ARG, "[%s] NULL context", tag);
    }
    free(out), free(out1), free(alone), free(e2), free(a2), free(tr), free(p0);
done:
    jepa_ctx_free(c);
    jepa_ctx_free(c1);
    npy_free(&emb), npy_free(&act), npy_free(&pred), npy_free(&remb), npy_free(&ract), npy_free(&traj);
    jepa_model_free(m);
}

/* The planner's random stream and a whole plan against the generator's CEM. */
static void plan_case(const char *cpu, int functional) {
    const char *lvl = cpu ? cpu : "auto";
    struct npy nr;
    if (!load_plain(&nr, "rng_normals_seed1234.npy")) {   /* float64, read as float32 by npy_load_f32 */
        struct jm_rng r = {1234};
        double worst = 0;
        for (int64_t i = 0; i < nr.count; i++) {
            const double got = jm_rng_normal(&r), want = ((const float *)nr.data)[i];
            const double x = fabs(got - want) / fmax(1.0, fabs(want));
            if (x > worst) worst = x;
        }
        EXPECT(nr.count == 16 && worst < 1e-6, "rng: the stream differs from the reference (%g)", worst);
        npy_free(&nr);
    }
    char path[1024], err[JEPA_ERR_LEN];
    snprintf(path, sizeof path, "%s/lewm_wm/model_a.gguf", data_dir);
    jepa_model *m = NULL;
    if (jepa_model_load(&m, path, err)) {
        printf("FAIL %s: %s\n", path, err);
        failures++;
        return;
    }
    struct npy hist, past, goal, pa, pe, pf;
    if (load_plain(&hist, "plan_hist_a.npy") | load_plain(&past, "plan_past_a.npy") | load_plain(&goal, "plan_goal_a.npy") |
        load_plain(&pa, "plan_actions_a.npy") | load_plain(&pe, "plan_energies_a.npy") | load_plain(&pf, "plan_final_a.npy")) {
        jepa_model_free(m);
        return;
    }
    jepa_plan_params pp = jepa_plan_default_params();
    pp.horizon = 2, pp.samples = 24, pp.iterations = 4, pp.elites = 6, pp.init_std = 1.0f, pp.seed = 77;
    const int A = (int)pa.shape[1], T = (int)hist.shape[0];
    jepa_ctx *c = open_ctx(m, cpu, 2), *c1 = open_ctx(m, cpu, 1);
    float act[64], act1[64], en[4], en1[4], fin = 0, fin1 = 0;
    if (c && c1) {
        jepa_status st = jepa_ctx_lewm_plan(c, hist.data, T, past.data, goal.data, &pp, act, en, &fin);
        EXPECT(st == JEPA_OK, "[plan %s] %s", lvl, jepa_ctx_error(c));
        double de = 0, da = 0;
        for (int i = 0; i < 4; i++) {
            const double x = fabs(en[i] - ((const float *)pe.data)[i]) / ((const float *)pe.data)[i];
            if (x > de) de = x;
        }
        for (int i = 0; i < 2 * A; i++) {
            const double x = fabs(act[i] - ((const float *)pa.data)[i]);
            if (x > da) da = x;
        }
        printf("%-4s plan [%s]: best energies %.5f %.5f %.5f %.5f (reference rel %.1e), plan max |diff| %.1e, final %.5f (reference %.5f)\n",
               de <= 1e-4 && da <= 1e-4 ? "ok" : "FAIL", lvl, en[0], en[1], en[2], en[3], de, da, fin,
               ((const float *)pf.data)[0]);
        EXPECT(de <= 1e-4 && da <= 1e-4, "[plan %s] differs from the reference CEM", lvl);
        EXPECT(fabs(fin - ((const float *)pf.data)[0]) <= 1e-4 * ((const float *)pf.data)[0], "[plan %s] final energy", lvl);
        if (functional) {
            /* functional: the goal is the prediction of known actions (energy 0 is reachable);
             * with the default search (300 x 30, 30 elites) the plan must end within a quarter
             * of the first iteration's best energy (measured: 0.039 against 0.286) */
            jepa_plan_params full = jepa_plan_default_params();
            full.horizon = 2;
            float fact[64], fen[30], ffin = 0;
            st = jepa_ctx_lewm_plan(c, hist.data, T, past.data, goal.data, &full, fact, fen, &ffin);
            printf("%-4s plan [%s] toward a reachable goal: best energy %.4f after 1 iteration, plan %.4f after %d\n",
                   st == JEPA_OK && ffin <= 0.25f * fen[0] ? "ok" : "FAIL", lvl, fen[0], ffin, full.iterations);
            EXPECT(st == JEPA_OK && ffin <= 0.25f * fen[0], "[plan %s] the default search does not approach a reachable goal", lvl);
        }
        st = jepa_ctx_lewm_plan(c1, hist.data, T, past.data, goal.data, &pp, act1, en1, &fin1);
        EXPECT(st == JEPA_OK && same_bits(act, act1, (size_t)2 * A) && same_bits(en, en1, 4) && fin == fin1,
               "[plan %s] 1 and 2 threads give different plans", lvl);
        if (!strcmp(lvl, "scalar")) {
            jepa_plan_params bad = pp;
            bad.horizon = 0;
            EXPECT(jepa_ctx_lewm_plan(c, hist.data, T, past.data, goal.data, &bad, act, NULL, NULL) == JEPA_ERR_ARG,
                   "plan horizon 0");
            bad = pp, bad.elites = pp.samples + 1;
            EXPECT(jepa_ctx_lewm_plan(c, hist.data, T, past.data, goal.data, &bad, act, NULL, NULL) == JEPA_ERR_ARG &&
                       strstr(jepa_ctx_error(c), "elites"), "plan elites > samples");
            bad = pp, bad.samples = 1 << 30;
            EXPECT(jepa_ctx_lewm_plan(c, hist.data, T, past.data, goal.data, &bad, act, NULL, NULL) == JEPA_ERR_ARG,
                   "plan samples 2^30");
            EXPECT(jepa_ctx_lewm_plan(c, hist.data, T, NULL, goal.data, &pp, act, NULL, NULL) == JEPA_ERR_ARG,
                   "plan without the past actions of a 2-frame history");
            float g2[64];
            memcpy(g2, goal.data, sizeof g2);
            g2[3] = NAN;
            EXPECT(jepa_ctx_lewm_plan(c, hist.data, T, past.data, g2, &pp, act, NULL, NULL) == JEPA_ERR_ARG &&
                       strstr(jepa_ctx_error(c), "goal"), "plan with a NaN goal");
            /* cancelled after iteration 1: it stops inside iteration 2's rollout; the plan
             * after it gives the bits of one never cancelled */
            struct plan_stop ps = {.c = c, .at = 1};
            jepa_plan_params pc = pp;
            pc.on_iteration = stop_plan, pc.user = &ps;
            float ca[64], ce[4], cf = 0;
            st = jepa_ctx_lewm_plan(c, hist.data, T, past.data, goal.data, &pc, ca, ce, &cf);
            EXPECT(st == JEPA_ERR_CANCELLED && ps.seen == 2, "plan cancelled after iteration 1: %s after %d iterations",
                   jepa_status_str(st), ps.seen);
            EXPECT(jepa_ctx_lewm_plan(c, hist.data, T, past.data, goal.data, &pp, ca, ce, &cf) == JEPA_OK &&
                       same_bits(ca, act, (size_t)2 * A) && same_bits(ce, en, 4) && cf == fin,
                   "the plan after a cancelled one differs from the first");
        }
    }
    jepa_ctx_free(c), jepa_ctx_free(c1);
    npy_free(&hist), npy_free(&past), npy_free(&goal), npy_free(&pa), npy_free(&pe), npy_free(&pf);
    jepa_model_free(m);
}

/* V-JEPA 2-AC against the float64 transcription of Meta's module (tests/gen/gen_ac.py). */
static void ac_case(const char *tag, const char *cpu) {
    char path[1024], err[JEPA_ERR_LEN], what[160], name[64];
    snprintf(path, sizeof path, "%s/ac_wm/model_%s.gguf", data_dir, tag);
    jepa_model *m = NULL;
    if (jepa_model_load(&m, path, err)) {
        printf("FAIL %s: %s\n", path, err);
        failures++;
        return;
    }
    struct npy tk, ac, stt, ref;
    struct jerr e = {0};
    int bad = 0;
    const char *names[4] = {"tokens", "actions", "states", "pred"};
    struct npy *arrs[4] = {&tk, &ac, &stt, &ref};
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "%s/ac_wm/%s_%s.npy", data_dir, names[i], tag);
        if (npy_load_f32(arrs[i], name, &e)) { printf("FAIL %s: %s\n", name, e.msg); failures++; bad = 1; }
    }
    if (bad) { jepa_model_free(m); return; }
    jepa_model_info info;
    jepa_model_get_info(m, &info);
    const int F = (int)ac.shape[0], rows = (int)tk.shape[0], D = (int)tk.shape[1], A = (int)ac.shape[1], S = (int)stt.shape[1];
    const int N = rows / F;
    EXPECT(info.predictor && !strcmp(info.predictor, "ac") && A == info.action_dim && S == info.state_dim, "[ac %s] info", tag);
    jepa_ctx *c = open_ctx(m, cpu, 2), *c1 = open_ctx(m, cpu, 1);
    float *out = malloc(sizeof(float) * (size_t)rows * D * 2), *out1 = malloc(sizeof(float) * (size_t)rows * D * 2);
    float *t2 = malloc(sizeof(float) * (size_t)rows * D * 2), *a2 = malloc(sizeof(float) * (size_t)F * A * 2);
    float *s2 = malloc(sizeof(float) * (size_t)F * S * 2);
    if (c && c1) {
        jepa_status st = jepa_ctx_ac_predict(c, tk.data, ac.data, stt.data, 1, F, out);
        EXPECT(st == JEPA_OK, "[ac %s %s] predict: %s", tag, cpu, jepa_ctx_error(c));
        snprintf(what, sizeof what, "ac %s predict [%s] (%d frames x %d tokens)", tag, cpu, F, N);
        failures += parity_check(what, out, ref.data, rows, D, COS_BAR, REL_BAR);
        EXPECT(jepa_ctx_ac_predict(c1, tk.data, ac.data, stt.data, 1, F, out1) == JEPA_OK &&
                   same_bits(out, out1, (size_t)rows * D), "[ac %s %s] 1 and 2 threads differ", tag, cpu);
        /* causality: the last frame's tokens, action and state changed */
        memcpy(t2, tk.data, sizeof(float) * (size_t)rows * D);
        memcpy(a2, ac.data, sizeof(float) * (size_t)F * A);
        memcpy(s2, stt.data, sizeof(float) * (size_t)F * S);
        for (int i = (F - 1) * N * D; i < rows * D; i++) t2[i] += 0.25f * (float)(i % 7) - 0.5f;
        for (int j = 0; j < A; j++) a2[(F - 1) * A + j] *= -1.5f;
        for (int j = 0; j < S; j++) s2[(F - 1) * S + j] += 0.5f;
        EXPECT(jepa_ctx_ac_predict(c, t2, a2, s2, 1, F, out1) == JEPA_OK, "[ac %s] predict (changed)", tag);
        EXPECT(same_bits(out, out1, (size_t)(F - 1) * N * D), "[ac %s %s] causality: an earlier frame moved", tag, cpu);
        EXPECT(!same_bits(out + (size_t)(F - 1) * N * D, out1 + (size_t)(F - 1) * N * D, (size_t)N * D),
               "[ac %s %s] causality: the last frame did not move", tag, cpu);
        /* a batch of two sequences (the reference one, the changed one) = each alone */
        memcpy(t2 + (size_t)rows * D, t2, sizeof(float) * (size_t)rows * D);
        memcpy(t2, tk.data, sizeof(float) * (size_t)rows * D);
        memcpy(a2 + (size_t)F * A, a2, sizeof(float) * (size_t)F * A);
        memcpy(a2, ac.data, sizeof(float) * (size_t)F * A);
        memcpy(s2 + (size_t)F * S, s2, sizeof(float) * (size_t)F * S);
        memcpy(s2, stt.data, sizeof(float) * (size_t)F * S);
        float *both = malloc(sizeof(float) * (size_t)rows * D * 2);
        /* (to rounding, not bits: the matmuls see 2x the rows, and a kernel level may block
         * M differently; the bars are 10x tighter than the reference's) */
        EXPECT(jepa_ctx_ac_predict(c, t2, a2, s2, 2, F, both) == JEPA_OK, "[ac %s] batch of 2", tag);
        snprintf(what, sizeof what, "ac %s batch of 2 vs alone [%s]", tag, cpu);
        failures += parity_check(what, both, out, rows, D, 0.9999999, 1e-5);
        failures += parity_check(what, both + (size_t)rows * D, out1, rows, D, 0.9999999, 1e-5);
        free(both);
        if (!strcmp(cpu, "scalar")) {
            s2[1] = NAN;
            EXPECT(jepa_ctx_ac_predict(c, tk.data, ac.data, s2, 1, F, out) == JEPA_ERR_ARG && strstr(jepa_ctx_error(c), "state"),
                   "[ac %s] a NaN state: '%s'", tag, jepa_ctx_error(c));
            EXPECT(jepa_ctx_ac_predict(c, tk.data, ac.data, stt.data, 1, 0, out) == JEPA_ERR_ARG, "[ac %s] zero frames", tag);
            EXPECT(jepa_ctx_lewm_predict(c, tk.data, ac.data, 1, 1, out) == JEPA_ERR_ARG, "[ac %s] lewm call on an ac model", tag);
        }
    }
    free(out), free(out1), free(t2), free(a2), free(s2);
    jepa_ctx_free(c), jepa_ctx_free(c1);
    npy_free(&tk), npy_free(&ac), npy_free(&stt), npy_free(&ref);
    jepa_model_free(m);
}

/* ac_wm/<name>_a.npy */
static int load_ac(struct npy *a, const char *name) {
    char file[256];
    snprintf(file, sizeof file, "%s_a.npy", name);
    return load_in(a, "ac_wm", file);
}

/* (comparisons, not fmax: aarch64 gcc 12 vectorizes an fmax reduction here into an ICE) */
static double max_abs_diff(const float *a, const float *b, size_t n) {
    double d = 0;
    for (size_t i = 0; i < n; i++) {
        const double x = fabs((double)a[i] - b[i]);
        if (x > d) d = x;
    }
    return d;
}

/* V-JEPA 2-AC rollout and planning on config a (7-d actions and states) against the
 * generator: Meta's pose rule through scipy (50 cases, two at gimbal lock), a 4-step
 * rollout whose 4-frame window slides, and a CEM plan on jepa.c's stream. */
static void ac_world_case(const char *cpu) {
    char path[1024], err[JEPA_ERR_LEN], what[160];
    snprintf(path, sizeof path, "%s/ac_wm/model_a.gguf", data_dir);
    jepa_model *m = NULL;
    if (jepa_model_load(&m, path, err)) {
        printf("FAIL %s: %s\n", path, err);
        failures++;
        return;
    }
    struct npy ps = {0}, pa = {0}, pn = {0}, rt = {0}, rs = {0}, ra = {0}, rtr = {0}, rts = {0};
    struct npy qt = {0}, qs = {0}, qg = {0}, qa = {0}, qe = {0}, qf = {0};
    if (load_ac(&ps, "pose_states") | load_ac(&pa, "pose_actions") | load_ac(&pn, "pose_next") |
        load_ac(&rt, "rollout_tokens") | load_ac(&rs, "rollout_states") | load_ac(&ra, "rollout_actions") |
        load_ac(&rtr, "rollout_traj") | load_ac(&rts, "rollout_traj_states") | load_ac(&qt, "plan_tokens") |
        load_ac(&qs, "plan_states") | load_ac(&qg, "plan_goal") | load_ac(&qa, "plan_actions") |
        load_ac(&qe, "plan_energies") | load_ac(&qf, "plan_final"))
        goto done;
    jepa_model_info info;
    jepa_model_get_info(m, &info);
    const int N = info.pred_tokens_per_frame, D = info.embed_dim;
    EXPECT(info.pred_n_frames == 4, "[ac] pred_n_frames %d, expected 4 (jepa.enc.n_frames 8 / tubelet 2)", info.pred_n_frames);
    jepa_ctx *c = open_ctx(m, cpu, 2), *c1 = open_ctx(m, cpu, 1);
    if (!c || !c1) goto free_ctx;

    /* the pose rule: case b is a one-step rollout of sequence b */
    const int P = (int)ps.shape[0], fr = N * D;
    float *z = calloc((size_t)P * fr, sizeof(float)), *zt = malloc(sizeof(float) * (size_t)P * fr);
    float *zs = malloc(sizeof(float) * (size_t)P * 7);
    jepa_status st = jepa_ctx_ac_rollout(c, z, ps.data, P, 1, pa.data, 1, 1, zt, zs);
    EXPECT(st == JEPA_OK, "[ac %s] pose-rule rollout: %s", cpu, jepa_ctx_error(c));
    double dp = 0;
    for (int i = 0; i < P * 7; i++) {   /* angles compared modulo 2 pi */
        double d = fabs((double)zs[i] - ((const float *)pn.data)[i]);
        const double wrapped = fabs(d - 6.283185307179586);
        if (i % 7 >= 3 && i % 7 < 6 && wrapped < d) d = wrapped;
        if (d > dp) dp = d;
    }
    EXPECT(dp <= 2e-6, "[ac %s] the pose rule differs from scipy's by %.2e", cpu, dp);
    free(z), free(zt), free(zs);

    /* the rollout: 2 frames of history, 4 steps */
    const int T = (int)rs.shape[0], K = (int)rts.shape[0];
    float *tr = malloc(sizeof(float) * (size_t)K * fr), *ts = malloc(sizeof(float) * (size_t)K * 7);
    float *tr1 = malloc(sizeof(float) * (size_t)K * fr), *pr = malloc(sizeof(float) * (size_t)T * fr);
    st = jepa_ctx_ac_rollout(c, rt.data, rs.data, 1, T, ra.data, K, 1, tr, ts);
    EXPECT(st == JEPA_OK, "[ac %s] rollout: %s", cpu, jepa_ctx_error(c));
    snprintf(what, sizeof what, "ac a rollout [%s] (%d + %d steps, window 4)", cpu, T, K);
    failures += parity_check(what, tr, rtr.data, K * N, D, COS_BAR, REL_BAR);
    const double ds = max_abs_diff(ts, rts.data, (size_t)K * 7);
    EXPECT(ds <= 2e-6, "[ac %s] rollout states differ from the reference by %.2e", cpu, ds);
    EXPECT(jepa_ctx_ac_rollout(c1, rt.data, rs.data, 1, T, ra.data, K, 1, tr1, NULL) == JEPA_OK &&
               same_bits(tr, tr1, (size_t)K * fr), "[ac %s] rollout: 1 and 2 threads differ", cpu);
    /* step 0 without normalization = the last frame of predict on the history (bits) */
    EXPECT(jepa_ctx_ac_rollout(c, rt.data, rs.data, 1, T, ra.data, 1, 0, tr1, NULL) == JEPA_OK &&
               jepa_ctx_ac_predict(c, rt.data, ra.data, rs.data, 1, T, pr) == JEPA_OK &&
               same_bits(tr1, pr + (size_t)(T - 1) * fr, (size_t)fr), "[ac %s] rollout step 0 != predict's last frame", cpu);

    /* the plan against the generator's CEM (Meta's box, momentum, deadband) */
    jepa_plan_params pp = jepa_plan_ac_default_params();
    pp.samples = 24, pp.iterations = 3, pp.elites = 6;
    float act[14], act1[14], en[3], en1[3], fin = 0, fin1 = 0;
    st = jepa_ctx_ac_plan(c, qt.data, qs.data, 1, NULL, qg.data, &pp, act, en, &fin);
    EXPECT(st == JEPA_OK, "[ac plan %s] %s", cpu, jepa_ctx_error(c));
    if (st == JEPA_OK) {
        const float *re = qe.data;
        double de = 0;
        for (int i = 0; i < 3; i++) de = fmax(de, fabs(en[i] - re[i]) / re[i]);
        const double da = max_abs_diff(act, qa.data, 14);
        printf("%-4s ac plan [%s]: best energies %.5f %.5f %.5f (reference rel %.1e), plan max |diff| %.1e, final %.5f (reference %.5f)\n",
               de <= 1e-4 && da <= 1e-4 ? "ok" : "FAIL", cpu, en[0], en[1], en[2], de, da, fin, ((const float *)qf.data)[0]);
        EXPECT(de <= 1e-4 && da <= 1e-4, "[ac plan %s] differs from the reference CEM", cpu);
        EXPECT(fabs(fin - ((const float *)qf.data)[0]) <= 1e-4 * ((const float *)qf.data)[0], "[ac plan %s] final energy", cpu);
        EXPECT(act[3] == 0 && act[4] == 0 && act[5] == 0, "[ac plan %s] the held rotations moved", cpu);
        st = jepa_ctx_ac_plan(c1, qt.data, qs.data, 1, NULL, qg.data, &pp, act1, en1, &fin1);
        EXPECT(st == JEPA_OK && same_bits(act, act1, 14) && same_bits(en, en1, 3) && fin == fin1,
               "[ac plan %s] 1 and 2 threads give different plans", cpu);
    }
    if (!strcmp(cpu, "scalar")) {   /* bad input */
        EXPECT(jepa_ctx_ac_rollout(c, rt.data, rs.data, 1, 5, ra.data, 1, 1, tr, NULL) == JEPA_ERR_ARG,
               "[ac] a 5-frame history past the 4-frame predictor");
        EXPECT(jepa_ctx_ac_predict(c, tr, ra.data, ra.data, 1, 5, tr) == JEPA_ERR_ARG && strstr(jepa_ctx_error(c), "at most 4"),
               "[ac] predict on 5 frames: '%s'", jepa_ctx_error(c));
        EXPECT(jepa_ctx_ac_rollout(c, rt.data, rs.data, 1, T, ra.data, 0, 1, tr, NULL) == JEPA_ERR_ARG, "[ac] zero steps");
        float badact[7 * 5];
        memcpy(badact, ra.data, sizeof badact);
        badact[9] = NAN;
        EXPECT(jepa_ctx_ac_rollout(c, rt.data, rs.data, 1, T, badact, K, 1, tr, NULL) == JEPA_ERR_ARG &&
                   strstr(jepa_ctx_error(c), "action"), "[ac] a NaN action in a rollout: '%s'", jepa_ctx_error(c));
        struct plan_stop stop = {.c = c, .at = 0};   /* cancelled after iteration 0 (see plan_case) */
        jepa_plan_params pc = pp;
        pc.on_iteration = stop_plan, pc.user = &stop;
        float ca[14], ce[3], cf = 0;
        st = jepa_ctx_ac_plan(c, qt.data, qs.data, 1, NULL, qg.data, &pc, ca, ce, &cf);
        EXPECT(st == JEPA_ERR_CANCELLED && stop.seen == 1, "[ac] plan cancelled after iteration 0: %s after %d iterations",
               jepa_status_str(st), stop.seen);
        EXPECT(jepa_ctx_ac_plan(c, qt.data, qs.data, 1, NULL, qg.data, &pp, ca, ce, &cf) == JEPA_OK &&
                   same_bits(ca, act, 14) && same_bits(ce, en, 3) && cf == fin,
               "[ac] the plan after a cancelled one differs from the first");
        jepa_plan_params bad = pp;
        bad.horizon = 0;
        EXPECT(jepa_ctx_ac_plan(c, qt.data, qs.data, 1, NULL, qg.data, &bad, act, NULL, NULL) == JEPA_ERR_ARG, "[ac] plan horizon 0");
        bad = pp;
        bad.momentum_std = 1.5f;
        EXPECT(jepa_ctx_ac_plan(c, qt.data, qs.data, 1, NULL, qg.data, &bad, act, NULL, NULL) == JEPA_ERR_ARG &&
                   strstr(jepa_ctx_error(c), "momentum"), "[ac] plan momentum 1.5");
        jepa_plan_component box[7];
        memcpy(box, pp.components, sizeof box);
        box[2].lo = 1.0f;   /* lo > hi */
        bad = pp;
        bad.components = box;
        EXPECT(jepa_ctx_ac_plan(c, qt.data, qs.data, 1, NULL, qg.data, &bad, act, NULL, NULL) == JEPA_ERR_ARG &&
                   strstr(jepa_ctx_error(c), "component 2"), "[ac] plan component with lo > hi: '%s'", jepa_ctx_error(c));
        EXPECT(jepa_ctx_ac_plan(c, qt.data, qs.data, 2, NULL, qg.data, &pp, act, NULL, NULL) == JEPA_ERR_ARG,
               "[ac] plan from 2 frames without their past action");
    }
    free(tr), free(ts), free(tr1), free(pr);
free_ctx:
    jepa_ctx_free(c), jepa_ctx_free(c1);
done:
    npy_free(&ps), npy_free(&pa), npy_free(&pn), npy_free(&rt), npy_free(&rs), npy_free(&ra), npy_free(&rtr);
    npy_free(&rts), npy_free(&qt), npy_free(&qs), npy_free(&qg), npy_free(&qa), npy_free(&qe), npy_free(&qf);
    jepa_model_free(m);
}

/* A model without a LeWM predictor refuses the calls by name. */
static void wrong_kind(void) {
    char path[1024], err[JEPA_ERR_LEN];
    snprintf(path, sizeof path, "%s/vjepa2_tiny/model.gguf", data_dir);
    jepa_model *m = NULL;
    if (jepa_model_load(&m, path, err)) {
        printf("FAIL %s: %s\n", path, err);
        failures++;
        return;
    }
    jepa_ctx *c = open_ctx(m, "scalar", 1);
    float x[128 * 4] = {0}, y[128 * 4];
    EXPECT(c && jepa_ctx_lewm_predict(c, x, x, 1, 1, y) == JEPA_ERR_ARG && strstr(jepa_ctx_error(c), "no LeWM predictor"),
           "a masked-predictor model: '%s'", c ? jepa_ctx_error(c) : "");
    EXPECT(c && jepa_ctx_lewm_rollout(c, x, 1, 1, x, 1, y) == JEPA_ERR_ARG, "rollout on a masked-predictor model");
    jepa_ctx_free(c);
    jepa_model_free(m);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_world DATA_DIR\n");
        return 2;
    }
    data_dir = argv[1];
    static const char *const levels[] = {"scalar", "avx2", "avx512", "neon"};
    static const unsigned need[] = {0, JEPA_CPU_AVX2, JEPA_CPU_AVX512, JEPA_CPU_NEON};
    const unsigned have = jr_cpu_detect();
    for (int i = 0; i < 4; i++) {
        if (need[i] && !(have & need[i])) continue;
        printf("-- kernels capped at %s\n", levels[i]);
        world_case("a", levels[i]);
        world_case("b", levels[i]);
        plan_case(levels[i], 0);
        ac_case("a", levels[i]);
        ac_case("b", levels[i]);
        ac_world_case(levels[i]);
    }
    /* The functional plan once, at the best kernel level: the default search (300 x 30)
     * is 90 s of qemu's 145 s, so on a slow runner (JEPA_TEST_SLOW_RUNNER=1, set by
     * tests/models/meson.build under qemu and the sanitizers) it is left to the native
     * release build; the plans above already match the reference CEM bit for bit at every
     * level. */
    const char *em = getenv("JEPA_TEST_SLOW_RUNNER");
    if (em && !strcmp(em, "1"))
        printf("skip the functional plan on a slow runner (the native release build runs it)\n");
    else
        plan_case(NULL, 1);
    wrong_kind();
    printf("world: %d checks passed, %d failed\n", passes, failures);
    return failures ? 1 : 0;
}
