/*
 * ac.c — the V-JEPA 2-AC action-conditioned predictor (jepa.pred.kind = ac), after Meta's
 * VisionTransformerPredictorAC (docs/world-models.md). B sequences of F frames, each frame
 * N = grid_size^2 encoder tokens, one action and one state:
 *
 *   x_f  = [action_embed(a_f); state_embed(s_f); embed(tokens_f)]   N + 2 rows per frame
 *   RoPE (Meta's tiled table, theta 10000): patch token (h, w) of frame f at (f, h, w); the
 *        action and state tokens of frame f rotate only their depth segment, at f
 *   n_layer pre-LN blocks, attention frame-causal (a token of frame f sees frames 0 .. f,
 *        all their rows: the kernel's position rule on frame ids, no N x N mask)
 *   pred = proj(norm(x)) on the patch rows only                   [B, F * N, out_dim]
 *
 * Row f N + i of a sequence's output is the predicted token i of frame f + 1. Device-
 * neutral like the other forwards. Tested against a float64 transcription of Meta's module
 * (tests/gen/gen_ac.py) by tests/models/test_world.c.
 */
#include "models/forward.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Meta's predictor is built for num_frames / tubelet_size frames (its attention mask is
 * that size and longer inputs fail there): the encoder's clip length in tubelets. */
int jm_ac_max_frames(const struct jepa_model *m) { return m->enc.n_frames / m->enc.tubelet; }

/* The sizes of a B x F run this predictor can take. */
static jepa_status check_ac_shape(struct jepa_ctx *c, int B, int F) {
    const struct jepa_model *m = c->m;
    const struct jm_predictor *pr = &m->pred;
    const int g = pr->grid_size, N = g * g, NT = N + 2, S = pr->state_dim;
    if (B < 1 || F < 1)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "%d sequences of %d frames: at least one of one", B, F);
    if (F > jm_ac_max_frames(m))
        return jr_err_set(&c->err, JEPA_ERR_ARG,
                          "%d frames: the predictor takes at most %d (jepa.enc.n_frames / jepa.enc.tubelet_size; "
                          "`jepa rollout` slides a window)", F, jm_ac_max_frames(m));
    if (S < 1 || !pr->state_embed.w)
        return jr_err_set(&c->err, JEPA_ERR_UNSUPPORTED, "a V-JEPA 2-AC predictor without state tokens (jepa.pred.state_dim = 0)");
    if ((int64_t)B * F * NT > JM_MAX_CLIP_TOKENS)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "%d sequences of %d frames of %d tokens: more than %d rows", B, F, NT,
                          JM_MAX_CLIP_TOKENS);
    return JEPA_OK;
}

/* The row tables of B sequences of F frames of NT = N + 2 rows (g = sqrt N): gi, the source
 * row of every x row (actions, then states, then tokens in src); go, the x row of every
 * patch row; fp and rp, the frame and the RoPE position of a sequence's rows. */
static void ac_row_tables(int B, int F, int g, int32_t *gi, int32_t *go, int32_t *fp, struct rope_pos *rp) {
    const int N = g * g, NT = N + 2, BF = B * F;
    for (int b = 0; b < B; b++)
        for (int f = 0; f < F; f++) {
            const int bf = b * F + f, r0 = bf * NT;
            gi[r0] = bf;
            gi[r0 + 1] = BF + bf;
            for (int i = 0; i < N; i++) {
                gi[r0 + 2 + i] = 2 * BF + bf * N + i;
                go[bf * N + i] = r0 + 2 + i;
            }
        }
    for (int f = 0; f < F; f++)
        for (int j = 0; j < NT; j++) {
            const int r = f * NT + j, p = j - 2;
            fp[r] = f;   /* frame-causal: key visible iff its frame <= the query's */
            rp[r] = j < 2 ? (struct rope_pos){(float)f, 0, 0, false, true}
                          : (struct rope_pos){(float)f, (float)(p / g), (float)(p % g), false, false};
        }
}

/* The elements of the largest copy of an uploaded input (actions, states, tokens: n_act,
 * n_st, n_tok elements) that an embedding reads on c; 0 where none does. */
static size_t inputs16(const struct jepa_ctx *c, int n_act, int n_st, int n_tok) {
    const struct jm_predictor *pr = &c->m->pred;
    const struct jm_linear *l[] = {&pr->action_embed, &pr->state_embed, &pr->embed};
    const int ne[] = {n_act, n_st, n_tok};
    size_t n = 0;
    for (int i = 0; i < 3; i++)
        if (jm_x16_type(c, l[i]) >= 0 && n < (size_t)ne[i]) n = (size_t)ne[i];
    return n;
}

/* src [actions | states | tokens] = the three embeddings of in = {actions [B F, A], states
 * [B F, S], tokens [B F N, D]}, each reading the copy of its input in in16 (written just
 * before it, where the embedding reads one; inputs16's elements). */
static void embed_inputs(struct jepa_ctx *c, float *src, const float *const in[3], int B, int F,
                         uint16_t *in16, void *ws) {
    const struct jm_predictor *pr = &c->m->pred;
    const int g = pr->grid_size, pd = pr->vit.d;
    const struct jm_linear *l[] = {&pr->action_embed, &pr->state_embed, &pr->embed};
    const int k[] = {pr->action_dim, pr->state_dim, c->m->enc.vit.d};
    const int m[] = {B * F, B * F, B * F * g * g};
    for (int i = 0; i < 3; i++) {
        const struct jm_x16 x16 = jm_x16_for(c, l[i], in16, (size_t)k[i]);
        const bool on = jm_round16(c, &x16, in[i], (size_t)k[i], m[i], k[i]);
        jm_linear16(c, src, (size_t)pd, in[i], (size_t)k[i], on ? &x16 : NULL, l[i], m[i],
                    JK_EPI_STORE, NULL, ws);
        src += (size_t)m[i] * pd;
    }
}

jepa_status jm_ac_predict(struct jepa_ctx *c, const float *tokens, const float *actions, const float *states,
                          int B, int F, float *pred) {
    const struct jepa_model *m = c->m;
    const struct jm_predictor *pr = &m->pred;
    if (!m->has_pred || pr->kind != JM_PRED_AC)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "this model file has no V-JEPA 2-AC predictor (jepa.pred.kind = ac)");
    const struct jm_vit *vit = &pr->vit;
    const int g = pr->grid_size, N = g * g, NT = N + 2, pd = vit->d, hd = vit->head_dim, nt = c->nthreads;
    const int D = m->enc.vit.d, A = pr->action_dim, S = pr->state_dim, OD = pr->out_dim;
    jepa_status st;
    if ((st = check_ac_shape(c, B, F))) return st;
    const int n = F * NT, R = B * n, BF = B * F, BFN = BF * N;
    if ((st = jm_check_finite(c, tokens, (size_t)BFN * D, "token")) ||
        (st = jm_check_finite(c, actions, (size_t)BF * A, "action")) ||
        (st = jm_check_finite(c, states, (size_t)BF * S, "state")))
        return st;

    struct jk_device *dev = c->dev;
    const bool host = dev->host_memory;
    float *tok_d = NULL, *act_d = NULL, *st_d = NULL, *src = NULL, *x = NULL, *h = NULL, *wide = NULL, *tmp = NULL,
          *xo = NULL, *out_d = NULL;
    struct staged cosb, sinb, posb, gin, gout;
    struct rope_pos *rp = NULL;
    void *ws = NULL;
    const int ks[] = {D, A, S, pd, vit->ffn};
    /* 16-bit copies (forward.h): h16 [R, pd] for the blocks and the final norm, wide16
     * [R, ffn] for the blocks and first, one after the other, of the uploaded actions,
     * states and tokens for their embeddings (the largest size); each adds its size rounded
     * up to the arena alignment */
    const bool blk16 = jm_vit_x16(c, vit), proj16 = jm_x16_type(c, &pr->proj) >= 0;
    size_t wide16_n = blk16 ? (size_t)R * vit->ffn : 0;
    const size_t in16_n = inputs16(c, BF * A, BF * S, BFN * D);
    if (wide16_n < in16_n) wide16_n = in16_n;
    uint16_t *h16 = NULL, *wide16 = NULL;
    for (int pass = 0; pass < 2; pass++) {
        struct plan pl = plan_begin(c, pass);
        if (blk16 || proj16) h16 = plan_dev(&pl, jm_x16_bytes(true, (size_t)R * pd));
        if (wide16_n) wide16 = plan_dev(&pl, jm_x16_bytes(true, wide16_n));
        if (!host) {
            tok_d = plan_dev(&pl, sizeof(float) * (size_t)BFN * D);
            act_d = plan_dev(&pl, sizeof(float) * (size_t)BF * A);
            st_d = plan_dev(&pl, sizeof(float) * (size_t)BF * S);
            out_d = plan_dev(&pl, sizeof(float) * (size_t)BFN * OD);
        }
        src = plan_dev(&pl, sizeof(float) * (size_t)R * pd);   /* [actions | states | tokens], embedded */
        x = plan_dev(&pl, sizeof(float) * (size_t)R * pd);
        h = plan_dev(&pl, sizeof(float) * (size_t)R * pd);
        wide = plan_dev(&pl, sizeof(float) * (size_t)R * jm_vit_wide_cols(vit));
        tmp = plan_dev(&pl, sizeof(float) * (size_t)R * pd);
        xo = plan_dev(&pl, sizeof(float) * (size_t)BFN * pd);
        cosb = plan_staged(&pl, sizeof(float) * (size_t)n * hd);
        sinb = plan_staged(&pl, sizeof(float) * (size_t)n * hd);
        posb = plan_staged(&pl, sizeof(int32_t) * (size_t)n);
        gin = plan_staged(&pl, sizeof(int32_t) * (size_t)R);     /* x row r <- src row */
        gout = plan_staged(&pl, sizeof(int32_t) * (size_t)BFN);  /* patch rows of x */
        rp = plan_host(&pl, sizeof(struct rope_pos) * (size_t)n);
        ws = plan_dev(&pl, jm_vit_ws_bytes(c, n, vit->n_head, hd, ks, (int)(sizeof ks / sizeof *ks)));
        if (!pass && (st = jm_ctx_reserve(c, &pl))) return st;
    }
    const float *tok = tokens, *act = actions, *sta = states;
    float *out = pred;
    if (!host) {
        dev->upload(dev, tok_d, tokens, sizeof(float) * (size_t)BFN * D);
        dev->upload(dev, act_d, actions, sizeof(float) * (size_t)BF * A);
        dev->upload(dev, st_d, states, sizeof(float) * (size_t)BF * S);
        tok = tok_d, act = act_d, sta = st_d, out = out_d;
    }
    /* the three embeddings into one source, then x in Meta's order by one gather */
    const float *in[3] = {act, sta, tok};
    embed_inputs(c, src, in, B, F, wide16, ws);
    ac_row_tables(B, F, g, gin.host, gout.host, posb.host, rp);
    jm_rope_tables(cosb.host, sinb.host, rp, n, hd, pr->rope_theta, pr->rope_layout);
    stage_upload(c, &gin), stage_upload(c, &gout), stage_upload(c, &posb);
    stage_upload(c, &cosb), stage_upload(c, &sinb);
    c->k.gather(x, (size_t)pd, src, (size_t)pd, gin.dev, R, pd, nt);

    struct vit_scratch s = {.h = h, .wide = wide, .tmp = tmp, .cos = cosb.dev, .sin = sinb.dev,
                            .mask_pos = pr->frame_causal ? posb.dev : NULL, .ws = ws,
                            .h16 = blk16 ? h16 : NULL, .wide16 = blk16 ? wide16 : NULL};
    for (int l = 0; l <= vit->n_layer; l++) {   /* a cancel point before each block and after the last */
        if ((st = jm_cancel_point(c))) return st;
        if (l < vit->n_layer) jm_vit_block(c, vit, &vit->blk[l], x, n, B, &s);
    }

    /* the patch rows: norm (and its copy), projection back to the encoder's width */
    c->k.gather(xo, (size_t)pd, x, (size_t)pd, gout.dev, BFN, pd, nt);
    const struct jm_x16 xo16 = jm_x16_for(c, &pr->proj, h16, (size_t)pd);
    jm_layernorm16(c, xo, (size_t)pd, &xo16, xo, (size_t)pd, &pr->norm, BFN, pd, vit->ln_eps);
    jm_linear16(c, out, (size_t)OD, xo, (size_t)pd, &xo16, &pr->proj, BFN, JK_EPI_STORE, NULL, ws);
    dev->download(dev, pred, out, sizeof(float) * (size_t)BFN * OD);
    return JEPA_OK;
}

/* ---- rollout ------------------------------------------------------------------ */

/* R = Rz(e2) Ry(e1) Rx(e0): scipy's Rotation.from_euler("xyz", e) (extrinsic x, y, z). */
static void euler_to_matrix(const double e[3], double R[3][3]) {
    const double ca = cos(e[0]), sa = sin(e[0]), cb = cos(e[1]), sb = sin(e[1]), cg = cos(e[2]), sg = sin(e[2]);
    R[0][0] = cg * cb, R[0][1] = cg * sb * sa - sg * ca, R[0][2] = cg * sb * ca + sg * sa;
    R[1][0] = sg * cb, R[1][1] = sg * sb * sa + cg * ca, R[1][2] = sg * sb * ca - cg * sa;
    R[2][0] = -sb, R[2][1] = cb * sa, R[2][2] = cb * ca;
}

/* The inverse, as scipy's as_euler("xyz"): the middle angle in [-pi/2, pi/2]; within
 * about 1e-7 of gimbal lock (cos of it that small) the third angle is 0 and the first
 * takes the whole rotation about the remaining axis, as scipy does. */
static void matrix_to_euler(const double R[3][3], double e[3]) {
    const double cb = hypot(R[0][0], R[1][0]);
    e[1] = atan2(-R[2][0], cb);
    if (cb > 1e-7) {
        e[0] = atan2(R[2][1], R[2][2]);
        e[2] = atan2(R[1][0], R[0][0]);
    } else {
        e[0] = e[1] > 0 ? atan2(R[0][1], R[1][1]) : atan2(-R[0][1], R[1][1]);
        e[2] = 0.0;
    }
}

/* Meta's pose update (compute_new_pose, notebooks/utils/mpc_utils.py of
 * facebookresearch/vjepa2): state = [xyz, Euler xyz angles, gripper], action = [delta
 * xyz, delta angles, delta gripper]. xyz adds; the rotation is R(delta) R(angles), back
 * to angles; the gripper adds and is clipped to [0, 1]. In double, rounded once. */
void jm_ac_next_state(const float *s, const float *a, float *out) {
    double th[3] = {s[3], s[4], s[5]}, dt[3] = {a[3], a[4], a[5]}, Rs[3][3], Ra[3][3], Rn[3][3], e[3];
    euler_to_matrix(th, Rs);
    euler_to_matrix(dt, Ra);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) Rn[i][j] = Ra[i][0] * Rs[0][j] + Ra[i][1] * Rs[1][j] + Ra[i][2] * Rs[2][j];
    matrix_to_euler(Rn, e);
    for (int i = 0; i < 3; i++) out[i] = (float)((double)s[i] + a[i]);
    for (int i = 0; i < 3; i++) out[3 + i] = (float)e[i];
    const double g = (double)s[6] + a[6];
    out[6] = (float)(g < 0 ? 0 : g > 1 ? 1 : g);
}

/* F.layer_norm(x, (d,)) with no weight and eps 1e-5, in double: Meta's normalize_reps. */
static void plain_layer_norm(float *y, const float *x, int d) {
    double mu = 0, var = 0;
    for (int j = 0; j < d; j++) mu += x[j];
    mu /= d;
    for (int j = 0; j < d; j++) var += ((double)x[j] - mu) * ((double)x[j] - mu);
    const double r = 1.0 / sqrt(var / d + 1e-5);
    for (int j = 0; j < d; j++) y[j] = (float)(((double)x[j] - mu) * r);
}

/* Sequences go through the predictor in chunks of about this many rows (those of the
 * widest window), so the arena and the host buffers stay bounded at any batch size. */
#define AC_ROLLOUT_ROWS 16384
#define AC_MAX_STEPS (1 << 16)

/* Rollout of B sequences (jepa_ctx_ac_rollout, jepa.h). Each chunk of sequences keeps its
 * window, [nb, W, N, D] tokens and [nb, W, 7] states, and runs every step before the next
 * chunk starts. Flags (forward.h): JM_AC_NORMALIZE, Meta's normalize_reps;
 * JM_AC_LAST_ONLY, traj gets only the last step [B, N, D]; JM_AC_SHARED_HISTORY, every
 * sequence starts from the one history tokens [T N, D], states [T, 7]. */
jepa_status jm_ac_rollout(struct jepa_ctx *c, const float *tokens, const float *states, int B, int T,
                          const float *actions, int steps, unsigned flags, float *traj, float *traj_states) {
    const bool normalize = flags & JM_AC_NORMALIZE, last_only = flags & JM_AC_LAST_ONLY;
    const size_t hs = flags & JM_AC_SHARED_HISTORY ? 0 : 1;   /* a sequence's history stride, in histories */
    const struct jepa_model *m = c->m;
    const struct jm_predictor *pr = &m->pred;
    if (!m->has_pred || pr->kind != JM_PRED_AC)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "this model file has no V-JEPA 2-AC predictor (jepa.pred.kind = ac)");
    if (B < 1 || T < 1 || steps < 1 || steps > AC_MAX_STEPS)
        return jr_err_set(&c->err, JEPA_ERR_ARG,
                          "rollout of %d steps from %d sequences of %d frames: at least one of each, at most %d steps",
                          steps, B, T, AC_MAX_STEPS);
    if (pr->action_dim != 7 || pr->state_dim != 7)
        return jr_err_set(&c->err, JEPA_ERR_UNSUPPORTED,
                          "rollout derives each new state with Meta's 7-d pose rule (xyz, Euler angles, gripper); "
                          "this predictor takes %d-d actions and %d-d states", pr->action_dim, pr->state_dim);
    const int D = m->enc.vit.d, g = pr->grid_size, N = g * g, A = 7, S = 7, Fmax = jm_ac_max_frames(m);
    if (pr->out_dim != D)
        return jr_err_set(&c->err, JEPA_ERR_UNSUPPORTED,
                          "rollout feeds predictions back as tokens, but jepa.pred.out_dim = %d differs from the encoder width %d",
                          pr->out_dim, D);
    if (T > Fmax)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "a history of %d frames: the predictor takes at most %d", T, Fmax);
    const int L1 = T + steps - 1, W = L1 < Fmax ? L1 : Fmax;   /* actions per sequence; widest window */
    if ((int64_t)W * (N + 2) > JM_MAX_CLIP_TOKENS)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "a window of %d frames of %d tokens: more than %d rows", W, N + 2,
                          JM_MAX_CLIP_TOKENS);
    jepa_status st;
    if ((st = jm_check_finite(c, tokens, (hs ? (size_t)B : 1) * T * N * D, "token")) ||
        (st = jm_check_finite(c, states, (hs ? (size_t)B : 1) * T * S, "state")) ||
        (st = jm_check_finite(c, actions, (size_t)B * L1 * A, "action")))
        return st;
    int Bc = AC_ROLLOUT_ROWS / (W * (N + 2));
    Bc = Bc < 1 ? 1 : Bc > B ? B : Bc;
    const size_t fr = (size_t)N * D;   /* floats of one frame's tokens */
    float *win = malloc(sizeof(float) * (size_t)Bc * W * fr), *pk = malloc(sizeof(float) * (size_t)Bc * W * fr);
    float *out = malloc(sizeof(float) * (size_t)Bc * W * fr), *wst = malloc(sizeof(float) * (size_t)Bc * W * S);
    float *pks = malloc(sizeof(float) * (size_t)Bc * W * S), *pka = malloc(sizeof(float) * (size_t)Bc * W * A);
    if (!win || !pk || !out || !wst || !pks || !pka) {
        st = jr_err_set(&c->err, JEPA_ERR_NOMEM, "out of memory for a rollout of %d sequences of %d frames", Bc, W);
        goto done;
    }
    for (int b0 = 0; b0 < B; b0 += Bc) {
        const int nb = B - b0 < Bc ? B - b0 : Bc;
        for (int j = 0; j < nb; j++) {
            memcpy(win + (size_t)j * W * fr, tokens + hs * (b0 + j) * T * fr, sizeof(float) * T * fr);
            memcpy(wst + (size_t)j * W * S, states + hs * (b0 + j) * T * S, sizeof(float) * T * S);
        }
        int w = T;   /* frames in the windows */
        for (int k = 0; k < steps; k++) {
            const int t0 = T + k - w;   /* the window's first frame in the sequence */
            const float *tk = win, *sv = wst;
            if (w < W && nb > 1) {   /* the predictor reads [nb, w, ...] packed */
                for (int j = 0; j < nb; j++) {
                    memcpy(pk + (size_t)j * w * fr, win + (size_t)j * W * fr, sizeof(float) * w * fr);
                    memcpy(pks + (size_t)j * w * S, wst + (size_t)j * W * S, sizeof(float) * w * S);
                }
                tk = pk, sv = pks;
            }
            for (int j = 0; j < nb; j++)
                memcpy(pka + (size_t)j * w * A, actions + ((size_t)(b0 + j) * L1 + t0) * A, sizeof(float) * w * A);
            if ((st = jm_ac_predict(c, tk, pka, sv, nb, w, out))) goto done;
            const bool append = k + 1 < steps;
            for (int j = 0; j < nb; j++) {
                const int b = b0 + j;
                float *wj = win + (size_t)j * W * fr, *sj = wst + (size_t)j * W * S;
                const float *last = out + ((size_t)j * w + w - 1) * fr;
                float ns[7];
                jm_ac_next_state(sj + (size_t)(w - 1) * S, pka + ((size_t)j * w + w - 1) * A, ns);
                float *dst = !last_only ? traj + ((size_t)b * steps + k) * fr : k + 1 == steps ? traj + (size_t)b * fr : NULL;
                if (append && w == W) {   /* slide: drop the window's first frame */
                    memmove(wj, wj + fr, sizeof(float) * (W - 1) * fr);
                    memmove(sj, sj + S, sizeof(float) * (W - 1) * S);
                }
                float *nf = append ? wj + (size_t)(w < W ? w : W - 1) * fr : dst;
                for (int i = 0; i < N; i++) {
                    if (normalize) plain_layer_norm(nf + (size_t)i * D, last + (size_t)i * D, D);
                    else memcpy(nf + (size_t)i * D, last + (size_t)i * D, sizeof(float) * D);
                }
                if (dst && dst != nf) memcpy(dst, nf, sizeof(float) * fr);
                if (append) memcpy(sj + (size_t)(w < W ? w : W - 1) * S, ns, sizeof ns);
                if (traj_states) memcpy(traj_states + ((size_t)b * steps + k) * S, ns, sizeof ns);
            }
            if (append && w < W) w++;
        }
    }
    st = JEPA_OK;
done:
    free(win), free(pk), free(out), free(wst), free(pks), free(pka);
    return st;
}
