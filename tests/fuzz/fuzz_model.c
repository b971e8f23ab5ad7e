/*
 * fuzz_model.c — libFuzzer target for the model loader and a small forward.
 *
 * The input is a GGUF file: jepa_model_load_memory. When the loader accepts it and the
 * model is small (width <= 256, depth <= 12, at most 4096 tokens at its training size),
 * a context is made on the reference kernels and the model runs: embed on a clip of its
 * smallest valid shape (one tubelet of the patch grid at half the training size, or the
 * training size), predict with one context and one target id when it has a masked
 * predictor, classify when it has a head. Every refusal must carry a one-line reason;
 * anything else (a crash, an out-of-bounds access, a leak, UB) the sanitizers report.
 *
 * Replayed over tests/fuzz/corpus_model and the fixtures of tests/data by fuzz_model_replay
 * in every build (tests/fuzz/meson.build); a libFuzzer binary with -Dfuzz=true.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jepa.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void need_reason(const char *msg) {
    if (!msg || !msg[0] || strchr(msg, '\n')) __builtin_trap();   /* a refusal without one line */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[JEPA_ERR_LEN] = "";
    jepa_model *m = NULL;
    /* the reader maps nothing here: it reads the caller's buffer, which must stay */
    if (jepa_model_load_memory(&m, data, size, err) != JEPA_OK) {
        if (m) __builtin_trap();
        need_reason(err);
        return 0;
    }
    jepa_model_info info;
    jepa_model_get_info(m, &info);
    const int P = info.patch_size, tub = info.tubelet_size;
    int T = tub, H = info.img_size, W = info.img_size;
    if (H / P > 2) H = W = P * 2;   /* a 2 x 2 grid: the smallest clip that is not trivial */
    int n = 0;
    const int small = info.embed_dim <= 256 && info.n_layer <= 12 && info.ffn_dim <= 1024 &&
                      jepa_model_grid(m, T, H, W, NULL, NULL, NULL, &n) == JEPA_OK && n <= 4096;
    jepa_ctx *c = NULL;
    jepa_ctx_params p = jepa_ctx_default_params();
    p.cpu = "scalar";
    p.n_threads = 1;
    if (small && jepa_ctx_new(&c, m, &p, err) == JEPA_OK) {
        const size_t nx = (size_t)info.in_chans * T * H * W, D = (size_t)info.embed_dim;
        float *x = calloc(nx, sizeof(float)), *tokens = calloc((size_t)n * D, sizeof(float));
        float *pooled = calloc(D, sizeof(float));
        if (x && tokens && pooled) {
            for (size_t i = 0; i < nx; i++) x[i] = (float)((int)(i % 7) - 3) * 0.25f;
            jepa_embed_out out = {.tokens = tokens, .pooled = pooled};
            if (jepa_ctx_embed(c, x, T, H, W, NULL, &out) != JEPA_OK) {
                need_reason(jepa_ctx_error(c));
            } else {
                if (info.predictor && !strcmp(info.predictor, "lewm") && info.pred_n_frames >= 1 &&
                    info.pred_n_frames <= 64 && info.action_dim <= 1024) {
                    /* two frames (or the window), then a rollout of two steps */
                    const int nf = info.pred_n_frames < 2 ? 1 : 2, A = info.action_dim, E = info.embed_dim;
                    float *emb = calloc((size_t)(nf + 2) * E, sizeof(float)), *act = calloc((size_t)(nf + 2) * A + 1, sizeof(float));
                    float *wout = calloc((size_t)(nf + 2) * ((size_t)info.pred_out_dim + E) + 1, sizeof(float));
                    if (emb && act && wout) {
                        for (size_t i = 0; i < (size_t)nf * E; i++) emb[i] = (float)((int)(i % 5) - 2) * 0.5f;
                        for (size_t i = 0; i < (size_t)(nf + 1) * A; i++) act[i] = (float)((int)(i % 3) - 1);
                        if (jepa_ctx_lewm_predict(c, emb, act, 1, nf, wout) != JEPA_OK) need_reason(jepa_ctx_error(c));
                        if (jepa_ctx_lewm_rollout(c, emb, 1, nf, act, 2, wout) != JEPA_OK) need_reason(jepa_ctx_error(c));
                    }
                    free(emb), free(act), free(wout);
                }
                if (info.predictor && !strcmp(info.predictor, "ac") && info.pred_tokens_per_frame <= 4096 &&
                    info.action_dim <= 1024 && info.state_dim <= 1024) {
                    /* one frame of zero tokens, actions and states; a 2-step rollout (it
                     * reads 2 actions and, with 7-d states, writes 2 frames and states) */
                    const size_t nt_ = (size_t)info.pred_tokens_per_frame;
                    float *tk = calloc(nt_ * (size_t)info.embed_dim + 1, sizeof(float));
                    float *av = calloc(2 * (size_t)info.action_dim + 1, sizeof(float)), *sv = calloc((size_t)info.state_dim + 1, sizeof(float));
                    float *po = calloc(2 * nt_ * (size_t)(info.pred_out_dim > info.embed_dim ? info.pred_out_dim : info.embed_dim) + 1,
                                       sizeof(float));
                    float ps[2 * 7];
                    if (tk && av && sv && po && jepa_ctx_ac_predict(c, tk, av, sv, 1, 1, po) != JEPA_OK)
                        need_reason(jepa_ctx_error(c));
                    if (tk && av && sv && po && jepa_ctx_ac_rollout(c, tk, sv, 1, 1, av, 2, 1, po, ps) != JEPA_OK)
                        need_reason(jepa_ctx_error(c));
                    free(tk), free(av), free(sv), free(po);
                }
                if (info.predictor && !strcmp(info.predictor, "masked") && n >= 2) {
                    const int32_t ctx[1] = {0}, tgt[1] = {1};
                    float *pred = calloc((size_t)info.pred_out_dim + 1, sizeof(float));
                    jepa_predict_params pp = {.ctx_ids = ctx, .n_ctx = 1, .tgt_ids = tgt, .n_tgt = 1, .mask_index = 1};
                    if (pred && jepa_ctx_predict(c, tokens, &pp, pred, NULL) != JEPA_OK) need_reason(jepa_ctx_error(c));
                    free(pred);
                }
                if (info.has_head) {
                    float *logits = calloc((size_t)info.n_classes + 1, sizeof(float));
                    if (logits && jepa_ctx_classify(c, tokens, n, logits) != JEPA_OK) need_reason(jepa_ctx_error(c));
                    free(logits);
                }
            }
        }
        free(x), free(tokens), free(pooled);
        jepa_ctx_free(c);
    } else if (small) {
        need_reason(err);
    }
    jepa_model_free(m);
    return 0;
}
