/*
 * bench_world.c — `jepa bench world -m MODEL [-t N] [--json] [--quick]`: the LeWM
 * predictor's per-call cost and what batching buys, through the public API.
 *
 *   call      one predict of B = 1 sequence of the full window (jepa.pred.n_frames rows):
 *             microseconds per call at 1 thread and at N threads (the per-call overhead:
 *             planning, the OpenMP team, the tiny matmuls);
 *   batch     the same work for `samples` sequences (the planner's candidates, 300 by
 *             default) as one batched call and as `samples` single calls: ms and the gain;
 *   rollout   a rollout of `horizon` steps (5) for the `samples` sequences in one batched
 *             call: one CEM iteration's predictor work, ms and candidates/s.
 * Inputs are fixed pseudo-random values (the weights are what they are; timing does not
 * depend on the values). Each figure is the median of repeated timings (>= 0.3 s each,
 * 0.05 s with --quick), and the FMA peak of the same threads is measured in the same run
 * for reference (bench_fma_peak).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "jepa.h"

static double median3(double a, double b, double c) {
    return a > b ? (b > c ? b : (a > c ? c : a)) : (a > c ? a : (b > c ? c : b));
}

struct world_job {
    jepa_ctx *c;
    const float *emb, *act;
    float *out;
    int B, T, steps, single;   /* single: B calls of one sequence */
    size_t emb_row, act_row;   /* floats per frame */
};

static int run_job(const struct world_job *j) {
    if (j->steps) return jepa_ctx_lewm_rollout(j->c, j->emb, j->B, j->T, j->act, j->steps, j->out) != JEPA_OK;
    if (!j->single) return jepa_ctx_lewm_predict(j->c, j->emb, j->act, j->B, j->T, j->out) != JEPA_OK;
    for (int s = 0; s < j->B; s++)
        if (jepa_ctx_lewm_predict(j->c, j->emb + (size_t)s * j->T * j->emb_row, j->act + (size_t)s * j->T * j->act_row,
                                  1, j->T, j->out + (size_t)s * j->T * j->emb_row))
            return 1;
    return 0;
}

/* Seconds per run of the job: the median of three timings of >= min_s each. */
static double time_job(const struct world_job *j, double min_s, int *fail) {
    double t[3];
    if (run_job(j)) { *fail = 1; return 0; }   /* warm-up: the arena grows once */
    for (int r = 0; r < 3; r++) {
        int n = 0;
        const double t0 = bench_now();
        double el;
        do {
            if (run_job(j)) { *fail = 1; return 0; }
            n++;
            el = bench_now() - t0;
        } while (el < min_s);
        t[r] = el / n;
    }
    return median3(t[0], t[1], t[2]);
}

int bench_world(const struct bench_opts *o, const char *model_path, int samples, int horizon) {
    char err[JEPA_ERR_LEN];
    jepa_model *m = NULL;
    if (jepa_model_load(&m, model_path, err)) {
        fprintf(stderr, "jepa: %s: %s\n", model_path, err);
        return 1;
    }
    jepa_model_info info;
    jepa_model_get_info(m, &info);
    if (!info.predictor || strcmp(info.predictor, "lewm")) {
        fprintf(stderr, "jepa: %s: no LeWM predictor (bench world times jepa_ctx_lewm_*)\n", model_path);
        jepa_model_free(m);
        return 1;
    }
    const int T = info.pred_n_frames, D = info.emb_dim, A = info.action_dim;
    const int L = T + horizon;   /* rollout: a full-window history, then horizon steps */
    const size_t n_emb = (size_t)samples * L * D, n_act = (size_t)samples * L * A;
    float *emb = malloc(sizeof(float) * n_emb), *act = malloc(sizeof(float) * n_act);
    float *out = malloc(sizeof(float) * (size_t)samples * L * (D > info.pred_out_dim ? D : info.pred_out_dim));
    if (!emb || !act || !out) {
        fprintf(stderr, "jepa: out of memory\n");
        free(emb), free(act), free(out), jepa_model_free(m);
        return 1;
    }
    uint32_t r = 12345;
    for (size_t i = 0; i < n_emb; i++) emb[i] = (float)((r = r * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
    for (size_t i = 0; i < n_act; i++) act[i] = (float)((r = r * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
    const double min_s = o->quick ? 0.05 : 0.3;
    const int nt[2] = {1, o->threads};
    int fail = 0;
    const char *isa = NULL;
    const double peak = bench_fma_peak(o->cpu, o->threads, &isa);
    if (!o->json)
        printf("bench world: %s (%s), window %d, %d-d, actions %d; %d threads; FMA peak %.1f GFLOP/s (%s)\n",
               info.name ? info.name : "?", model_path, T, D, A, o->threads, peak, isa);
    for (int k = 0; k < 2 && !fail; k++) {
        if (k == 1 && nt[1] == 1) break;
        jepa_ctx_params p = jepa_ctx_default_params();
        p.n_threads = nt[k];
        jepa_ctx *c = NULL;
        if (jepa_ctx_new(&c, m, &p, err)) {
            fprintf(stderr, "jepa: %s\n", err);
            fail = 1;
            break;
        }
        struct world_job one = {c, emb, act, out, 1, T, 0, 0, (size_t)D, (size_t)A};
        struct world_job batch = {c, emb, act, out, samples, T, 0, 0, (size_t)D, (size_t)A};
        struct world_job singles = batch;
        singles.single = 1;
        struct world_job roll = {c, emb, act, out, samples, T, horizon, 0, (size_t)D, (size_t)A};
        const double t1 = time_job(&one, min_s, &fail), tb = time_job(&batch, min_s, &fail);
        const double ts = time_job(&singles, min_s, &fail), tr = time_job(&roll, min_s, &fail);
        if (!fail) {
            if (o->json) {
                printf("{\"bench\": \"world\", \"threads\": %d, \"window\": %d, \"call_us\": %.2f, \"samples\": %d, "
                       "\"batch_ms\": %.3f, \"singles_ms\": %.3f, \"batch_gain\": %.2f, \"horizon\": %d, "
                       "\"rollout_ms\": %.3f, \"candidates_per_s\": %.1f, \"isa\": \"%s\"}\n",
                       nt[k], T, t1 * 1e6, samples, tb * 1e3, ts * 1e3, ts / tb, horizon, tr * 1e3, samples / tr,
                       jepa_ctx_isa(c));
            } else {
                printf("  %d thread%s (%s): one call (1 x %d rows) %8.1f us | %d sequences: batched %7.2f ms, "
                       "%d single calls %7.2f ms, gain %.2fx | rollout of %d steps x %d: %7.2f ms, %.0f candidates/s\n",
                       nt[k], nt[k] > 1 ? "s" : "", jepa_ctx_isa(c), T, t1 * 1e6, samples, tb * 1e3, samples, ts * 1e3,
                       ts / tb, horizon, samples, tr * 1e3, samples / tr);
            }
        } else {
            fprintf(stderr, "jepa: %s\n", jepa_ctx_error(c));
        }
        jepa_ctx_free(c);
    }
    free(emb), free(act), free(out);
    jepa_model_free(m);
    return fail;
}
