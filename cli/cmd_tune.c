/*
 * cmd_tune.c — `jepa tune`: times the blockings of kernels/tuning.h on this machine and
 * writes the fastest, one record per kernel build, to the tuning file the library reads at
 * its next start.
 *
 * The builds: the matmul of each precision tier this CPU has kernels for (--precision;
 * by default every tier: the exact tier's at this CPU's level, JEPA_CPU capping it, the
 * bf16 tier's avx512_bf16 / amx_bf16 / neon_bf16, the high tier's amx_high), each build
 * once, and the attention build of those tiers' tables (jk_attn_kind_of), once each.
 * The shapes: -m MODEL's encoder (the matmuls qkv, proj, fc1, fc2 and the attention at
 * its token count, heads and head_dim) or the standard ViT-S/B/L at 576 tokens (6, 12 and
 * 16 heads of 64).
 *
 * The search per build: the set in force first, then a coordinate descent over the
 * kind's grid (jk_gemm_candidates: K block, X block rows, W panel columns, next-panel
 * prefetch, column split; jk_attn_candidates: key tile, K/V copy threshold), one axis at
 * a time from the best so far. Every candidate is checked against the tier's reference
 * before it is timed, and a failing one is never kept: the matmul on the shapes' widths
 * and depths at TUNE_CHECK_M rows against kernels/ref's gemm (exact and high tiers) or
 * jk_gemm_bf16x_ref (bf16 tier), with the bounds of tests/checkasm/test_gemm.c and
 * test_gemm_tier.c; the attention on TUNE_CHECK_M queries over every key of each shape
 * against jk_attn_ref, with the bound of tests/checkasm/test_ops.c. A candidate's time
 * is the sum over the shapes of each one's best of a few calls; the FMA peak of the same
 * run gives each its fraction. The fastest is kept where it beats the set in force by 2 %
 * (TUNE_MARGIN), else the set in force stays. The budget is shared among the builds, each getting an
 * even split of what the earlier ones left; a search stops when its next candidate would
 * pass its share, keeping the best so far.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench/bench.h"
#include "cli/cli.h"
#include "include/jepa.h"
#include "kernels/kernels.h"
#include "kernels/ref/ref.h"
#include "kernels/tuning.h"
#include "runtime/cpu.h"
#include "runtime/dtype.h"
#include "runtime/outfile.h"

#define TUNE_MAX_SHAPES 16
#define TUNE_MAX_CAND 256
#define TUNE_CHECK_M 67            /* rows / queries of the check: above every small-M path (64) */
#define TUNE_ATTN_TOKENS_MAX 4608  /* attention's token count, at most (its cost grows as n^2) */
#define TUNE_NAX 6                 /* the axes of a candidate (a gemm set has 6, attention 2) */
#define TUNE_MARGIN 0.02           /* how much faster than the set in force a winner must be */
#define TUNE_MAX_JOBS (JK_NGK + JK_NAK)

struct tshape { int M, N, K; const char *what; };
struct ashape { int n, heads, hd; };

/* One kernel build to tune. */
struct job {
    int attn;                 /* 0: a matmul build (enum jk_gemm_kind), 1: attention (jk_attn_kind) */
    int kind;
    enum jk_precision tier;   /* the matmul's tier: which reference checks it */
    jk_gemm_fn *gemm;
    jk_attn_fn *afn;
    jk_attn_ws_fn *attn_ws;
    char tiers[32];           /* the tiers it serves, for the printout */
};

struct tune_run {
    enum jk_dtype dt;
    int nt;
    /* the matmul */
    struct tshape sh[TUNE_MAX_SHAPES];
    int nsh;
    float *x, *y, *bias;
    void *w;
    float *xabs, *wabs;   /* the bound's |x| (TUNE_CHECK_M rows) and |w| (one row) */
    float *yref;      /* per shape i at off[i]: the reference's TUNE_CHECK_M rows */
    double *bound;    /* and the bound of each of their elements */
    size_t off[TUNE_MAX_SHAPES];
    void *ws;
    jk_gemm_fn *ref;  /* the exact reference of dt */
    /* attention: q, k, v of the largest shape interleaved as the forward's [n, 3 D] */
    struct ashape ash[TUNE_MAX_SHAPES];
    int nash;
    float *qkv, *o, *oref;
    double *tol;
    size_t aoff[TUNE_MAX_SHAPES];
    void *aws;
    /* the job under way */
    const struct job *jb;
};

/* One candidate: a gemm set's kc mc nc ahead colp rowt, or attention's bk pack (0 after). */
struct cand { int v[TUNE_NAX]; };

static void usage(FILE *f) {
    fprintf(f,
            "usage: jepa tune [-m MODEL] [-t N] [--budget SECONDS] [--precision exact|high|bf16|all]\n"
            "                 [--dtype f32|f16|bf16] [-o FILE]\n"
            "  Times the blockings of the matmul (K block, X block, W panel, prefetch, thread\n"
            "  split) and of attention (key tile, K/V copy threshold) on this CPU and writes the\n"
            "  fastest, one record per kernel build, to the tuning file that the library reads\n"
            "  when it starts (on the same CPU): $JEPA_CACHE/tune-<cpu-id>.txt, else\n"
            "  $XDG_CACHE_HOME/jepa/..., else ~/.cache/jepa/... (-o FILE: there instead; use it\n"
            "  with JEPA_TUNE_FILE=FILE).\n"
            "  -m, --model MODEL  the shapes of this model's encoder: its matmuls and its\n"
            "                 attention (default: ViT-S/B/L, 576 tokens, heads of 64); a .gguf\n"
            "                 file or OWNER/NAME[:FILE] from the cache\n"
            CLI_PULL_HELP
            "  -t, --threads N  threads (default 2)\n"
            "  --budget S     stop searching after about S seconds in all (default 90, 1 .. 3600;\n"
            "                 the default run takes about 25 s on 2 Zen 4 cores, at most ~2 min)\n"
            "  --precision P  the matmul tiers whose kernels to tune: exact, high, bf16, or all\n"
            "                 (default: all, each tier this CPU has kernels for: the exact tier's\n"
            "                 build, avx512_bf16 / amx_bf16 / neon_bf16, amx_high); attention is\n"
            "                 tuned with them\n"
            "  --dtype T      the weights' type for the timing (default f16)\n"
            "  -o, --out FILE the tuning file to write (the records of builds this run does not\n"
            "                 tune are kept from the file in force when it is the same file)\n"
            "  Every candidate is checked against the reference kernel before it is timed; one\n"
            "  replaces the set in force where it is 2 %% faster or more.\n"
            "  JEPA_TUNE=off ignores the file; `jepa cpu` shows the blocking in force per build.\n");
}

/* The encoder's matmuls and attention of a model, at its token count (bounded). */
static int model_shapes(const char *path, struct tune_run *r) {
    jepa_model *m = NULL;
    char err[JEPA_ERR_LEN];
    if (jepa_model_load(&m, path, err)) return cli_fail(NULL, "tune: %s", err);
    jepa_model_info in;
    jepa_model_get_info(m, &in);
    const int p = in.patch_size > 0 ? in.patch_size : 16, t = in.tubelet_size > 0 ? in.tubelet_size : 1;
    long g = in.img_size > 0 ? (long)(in.img_size / p) * (in.img_size / p) : 196;
    long M = g * (in.n_frames > t ? in.n_frames / t : 1) + (in.has_cls ? 1 : 0);
    const long D = in.embed_dim, F = in.ffn_dim > 0 ? in.ffn_dim : 4L * in.embed_dim;
    const long H = in.n_head, hd = in.head_dim > 0 ? in.head_dim : (H > 0 ? D / H : 0);
    jepa_model_free(m);
    if (M < 1) M = 1;
    if (M > 8192) M = 8192;   /* the blocking's behaviour is that of a long sequence by then */
    if (D < 1 || D > 16384 || F < 1 || F > 65536)
        return cli_fail(NULL, "tune: %s: widths %ld / %ld out of range", path, D, F);
    if (H < 1 || H > 256 || hd < 1 || hd > 512)
        return cli_fail(NULL, "tune: %s: %ld heads of %ld out of range", path, H, hd);
    const struct tshape s[4] = {{(int)M, (int)(3 * D), (int)D, "qkv"}, {(int)M, (int)D, (int)D, "proj"},
                                {(int)M, (int)F, (int)D, "fc1"}, {(int)M, (int)D, (int)F, "fc2"}};
    memcpy(r->sh, s, sizeof s);
    r->nsh = 4;
    r->ash[0] = (struct ashape){(int)(M < TUNE_ATTN_TOKENS_MAX ? M : TUNE_ATTN_TOKENS_MAX), (int)H, (int)hd};
    r->nash = 1;
    return 0;
}

static void default_shapes(struct tune_run *r) {
    static const int dims[3] = {384, 768, 1024}, heads[3] = {6, 12, 16};
    static const char *const names[3][4] = {{"S qkv", "S proj", "S fc1", "S fc2"},
                                            {"B qkv", "B proj", "B fc1", "B fc2"},
                                            {"L qkv", "L proj", "L fc1", "L fc2"}};
    int n = 0;
    for (int i = 0; i < 3; i++) {
        const int D = dims[i];
        r->sh[n++] = (struct tshape){576, 3 * D, D, names[i][0]};
        r->sh[n++] = (struct tshape){576, D, D, names[i][1]};
        r->sh[n++] = (struct tshape){576, 4 * D, D, names[i][2]};
        r->sh[n++] = (struct tshape){576, D, 4 * D, names[i][3]};
        r->ash[i] = (struct ashape){576, heads[i], 64};
    }
    r->nsh = n, r->nash = 3;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float urand(void) {   /* uniform in [-1, 1) */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 4503599627370496.0 - 1.0);
}

/* W [N, K] of type dt from uniform values. */
static void put_weight(enum jk_dtype dt, void *w, size_t i) {
    const float v = urand();
    if (dt == JK_F16) ((uint16_t *)w)[i] = f32_to_f16(v);
    else if (dt == JK_BF16) ((uint16_t *)w)[i] = f32_to_bf16(v);
    else ((float *)w)[i] = v;
}

static float get_weight(enum jk_dtype dt, const void *w, size_t i) {
    if (dt == JK_F16) return f16_to_f32(((const uint16_t *)w)[i]);
    if (dt == JK_BF16) return bf16_to_f32(((const uint16_t *)w)[i]);
    return ((const float *)w)[i];
}

static float to_bf16(float v) { return bf16_to_f32(f32_to_bf16(v)); }

/* ---- the matmul ----------------------------------------------------------------------- */

static struct jk_gemm_args gemm_args(const struct tune_run *r, const struct tshape *s, int M, float *y,
                                     const struct jk_gemm_tuning *tu) {
    return (struct jk_gemm_args){.y = y, .ldy = (size_t)s->N, .x = r->x, .ldx = (size_t)s->K,
                                 .w = r->w, .ldw = jk_row_bytes(r->dt, s->K), .bias = r->bias,
                                 .M = M, .N = s->N, .K = s->K, .epi = JK_EPI_STORE,
                                 .nthreads = r->nt, .ws = r->ws, .tune = tu};
}

static int check_rows(int M) { return M < TUNE_CHECK_M ? M : TUNE_CHECK_M; }

/* The tier's reference on every shape's N and K at TUNE_CHECK_M rows, and the bound of
 * each element (the same for every candidate of the build: computed once per build):
 *   exact: 1.01 (K + 4) u S, S = sum_k |x_k w_k| + |b| (tests/checkasm/test_gemm.c);
 *   bf16:  1.01 (K + 4) 2u S over the bf16-rounded operands (test_gemm_tier.c; 2u covers
 *          the round-to-odd BFDOT of aarch64);
 *   high:  1.01 (3K + 4) u S + 3.1 2^-16 S_xw (test_gemm_tier.c, the split terms' lo lo
 *          left out). */
static void gemm_reference(struct tune_run *r, enum jk_precision tier) {
    for (int i = 0; i < r->nsh; i++) {
        const struct tshape *s = &r->sh[i];
        const int M = check_rows(s->M);
        float *yr = r->yref + r->off[i];
        double *bd = r->bound + r->off[i];
        struct jk_gemm_args a = gemm_args(r, s, M, yr, NULL);
        if (tier == JK_PREC_BF16) jk_gemm_bf16x_ref(&a, r->dt);
        else r->ref(&a);
        /* |x| and |w| as the tier's kernels see them, then S row by row (four partial sums:
         * the order of a bound's sum does not matter) */
        const int K = s->K;
        for (size_t j = 0; j < (size_t)M * K; j++)
            r->xabs[j] = fabsf(tier == JK_PREC_BF16 ? to_bf16(r->x[j]) : r->x[j]);
        for (int n = 0; n < s->N; n++) {
            for (int k = 0; k < K; k++) {
                const float wv = get_weight(r->dt, r->w, (size_t)n * K + k);
                r->wabs[k] = fabsf(tier == JK_PREC_BF16 ? to_bf16(wv) : wv);
            }
            for (int m = 0; m < M; m++) {
                const float *xa = r->xabs + (size_t)m * K;
                double p[4] = {0, 0, 0, 0};
                int k = 0;
                for (; k + 4 <= K; k += 4)
                    for (int u = 0; u < 4; u++) p[u] += (double)xa[k + u] * r->wabs[k + u];
                for (; k < K; k++) p[0] += (double)xa[k] * r->wabs[k];
                const double S = p[0] + p[1] + p[2] + p[3], b = fabs(r->bias[n]);
                bd[(size_t)m * s->N + n] =
                    tier == JK_PREC_BF16 ? 1.01 * (s->K + 4) * 0x1p-23 * (S + b)
                    : tier == JK_PREC_HIGH ? 1.01 * (3.0 * s->K + 4) * 0x1p-24 * (S + b) + 3.1 * 0x1p-16 * S
                                           : 1.01 * (s->K + 4) * 0x1p-24 * (S + b);
            }
        }
    }
}

/* Candidate tu against the reference: 0, or -1 where an element is outside its bound
 * (+ u |y_ref|, the reference's own rounding). */
static int gemm_check(struct tune_run *r, const struct jk_gemm_tuning *tu) {
    for (int i = 0; i < r->nsh; i++) {
        const struct tshape *s = &r->sh[i];
        const int M = check_rows(s->M);
        const float *yr = r->yref + r->off[i];
        const double *bd = r->bound + r->off[i];
        struct jk_gemm_args a = gemm_args(r, s, M, r->y, tu);
        r->jb->gemm(&a);
        for (size_t j = 0; j < (size_t)M * s->N; j++) {
            const double d = fabs((double)r->y[j] - yr[j]);
            if (!(d <= bd[j] + 0x1p-24 * fabs(yr[j]))) return -1;
        }
    }
    return 0;
}

/* ---- attention ------------------------------------------------------------------------ */

static struct jk_attn_args attn_args(const struct tune_run *r, const struct ashape *s, int nq, float *o,
                                     const struct jk_attn_tuning *tu) {
    const size_t D = (size_t)s->heads * s->hd;
    return (struct jk_attn_args){.o = o, .ldo = D, .q = r->qkv, .ldq = 3 * D, .k = r->qkv + D,
                                 .ldk = 3 * D, .v = r->qkv + 2 * D, .ldv = 3 * D, .nq = nq,
                                 .nkv = s->n, .n_head = s->heads, .head_dim = s->hd,
                                 .scale = 1.0f / sqrtf((float)s->hd), .nthreads = r->nt, .ws = r->aws,
                                 .tune = tu};
}

/* jk_attn_ref on TUNE_CHECK_M queries of each shape over all its keys, and the bound of
 * tests/checkasm/test_ops.c per element: vmax (2 (hd + 3) u emax + 2 (smax - smin + 4) u
 * + (2 nkv + 8) u), emax the largest scaled sum of |q k|, smin / smax the range of the
 * scaled logits, vmax the largest |v| of the column (computed once per build). */
static void attn_reference(struct tune_run *r) {
    for (int i = 0; i < r->nash; i++) {
        const struct ashape *s = &r->ash[i];
        const int nq = check_rows(s->n), hd = s->hd;
        const size_t D = (size_t)s->heads * hd, ld = 3 * D;
        float *orf = r->oref + r->aoff[i];
        double *tol = r->tol + r->aoff[i];
        struct jk_attn_args a = attn_args(r, s, nq, orf, NULL);
        a.ws = NULL;
        jk_attn_ref(&a);
        const double sc = a.scale;
        for (int h = 0; h < s->heads; h++) {
            const float *kh = r->qkv + D + (size_t)h * hd, *vh = r->qkv + 2 * D + (size_t)h * hd;
            for (int q = 0; q < nq; q++) {
                const float *qr = r->qkv + (size_t)q * ld + (size_t)h * hd;
                double emax = 0, smin = INFINITY, smax = -INFINITY;
                for (int j = 0; j < s->n; j++) {
                    double e = 0, dot = 0;
                    for (int d = 0; d < hd; d++) {
                        const double p = (double)qr[d] * kh[(size_t)j * ld + d];
                        e += fabs(p), dot += p;
                    }
                    emax = fmax(emax, sc * e), smin = fmin(smin, sc * dot), smax = fmax(smax, sc * dot);
                }
                for (int e = 0; e < hd; e++) {
                    double vmax = 0;
                    /* a compare, not fmax: gcc 12's aarch64 vectorizer fails on this fmax reduction
                     * (internal compiler error in vect_transform_reduction); NaN is skipped alike */
                    for (int j = 0; j < s->n; j++) {
                        const double x = fabs(vh[(size_t)j * ld + e]);
                        vmax = x > vmax ? x : vmax;
                    }
                    tol[(size_t)q * D + (size_t)h * hd + e] =
                        vmax * (2.0 * (hd + 3) * 0x1p-24 * emax + 2.0 * (smax - smin + 4) * 0x1p-24 +
                                (2.0 * s->n + 8) * 0x1p-24) + 1e-30;
                }
            }
        }
    }
}

static int attn_check(struct tune_run *r, const struct jk_attn_tuning *tu) {
    for (int i = 0; i < r->nash; i++) {
        const struct ashape *s = &r->ash[i];
        const int nq = check_rows(s->n);
        const size_t D = (size_t)s->heads * s->hd;
        const float *orf = r->oref + r->aoff[i];
        const double *tol = r->tol + r->aoff[i];
        const struct jk_attn_args a = attn_args(r, s, nq, r->o, tu);
        r->jb->afn(&a);
        for (size_t j = 0; j < (size_t)nq * D; j++)
            if (!(fabs((double)r->o[j] - orf[j]) <= tol[j])) return -1;
    }
    return 0;
}

/* ---- the search ----------------------------------------------------------------------- */

static struct jk_gemm_tuning as_gemm(const struct cand *c) {
    return (struct jk_gemm_tuning){c->v[0], c->v[1], c->v[2], c->v[3], c->v[4], c->v[5]};
}
static struct jk_attn_tuning as_attn(const struct cand *c) { return (struct jk_attn_tuning){c->v[0], c->v[1]}; }

static int cand_check(struct tune_run *r, const struct cand *c) {
    if (r->jb->attn) {
        const struct jk_attn_tuning t = as_attn(c);
        return attn_check(r, &t);
    }
    const struct jk_gemm_tuning t = as_gemm(c);
    return gemm_check(r, &t);
}

/* One call of shape i at candidate c. */
static void cand_call(struct tune_run *r, const struct cand *c, int i) {
    if (r->jb->attn) {
        const struct jk_attn_tuning t = as_attn(c);
        const struct jk_attn_args a = attn_args(r, &r->ash[i], r->ash[i].n, r->o, &t);
        r->jb->afn(&a);
    } else {
        const struct jk_gemm_tuning t = as_gemm(c);
        const struct jk_gemm_args a = gemm_args(r, &r->sh[i], r->sh[i].M, r->y, &t);
        r->jb->gemm(&a);
    }
}

/* Seconds of one candidate: the sum over the shapes of the best of at least 3 calls (more
 * for a small shape: until its calls took 20 ms, at most 1000), after a warm-up call. */
static double cand_time(struct tune_run *r, const struct cand *c) {
    double total = 0;
    const int n = r->jb->attn ? r->nash : r->nsh;
    for (int i = 0; i < n; i++) {
        cand_call(r, c, i);   /* warm: the operands and the team */
        double best = 1e30, spent = 0;
        for (int k = 0; k < 1000 && (k < 3 || spent < 0.02); k++) {
            const double t0 = bench_now();
            cand_call(r, c, i);
            const double dt = bench_now() - t0;
            spent += dt;
            if (dt < best) best = dt;
        }
        total += best;
    }
    return total;
}

static int same(const struct cand *a, const struct cand *b) { return !memcmp(a, b, sizeof *a); }

/* Attention sets that compute the same on every shape: the same key tile, and the K/V copy
 * threshold on the same side of each shape's key count (timing them twice measures noise;
 * the search times one of each such class). */
static int equivalent(const struct tune_run *r, const struct cand *a, const struct cand *b) {
    if (!r->jb->attn || a->v[0] != b->v[0]) return same(a, b);
    for (int i = 0; i < r->nash; i++)
        if ((r->ash[i].n >= a->v[1]) != (r->ash[i].n >= b->v[1])) return 0;
    return 1;
}

/* The grid index (1 .. n - 1) that differs from c[cur] only in `axis`, taking c[j]'s value. */
static int step(const struct cand *c, int n, int cur, int axis, int j) {
    struct cand t = c[cur];
    t.v[axis] = c[j].v[axis];
    for (int i = 1; i < n; i++)
        if (same(&c[i], &t)) return i;
    return -1;
}

static void cand_name(const struct tune_run *r, const struct cand *c, char *buf, size_t n) {
    if (r->jb->attn) snprintf(buf, n, "%d %d", c->v[0], c->v[1]);
    else snprintf(buf, n, "%d %d %d %d %d", c->v[0], c->v[1], c->v[2], c->v[3], c->v[4]);
}

/* The search of one build (r->jb): the set in force (c[0]) and the descent over the grid
 * (c[1..]); the fastest that passed into *win. */
static int search(struct tune_run *r, const struct cand *inforce, double budget, double peak,
                  double flop, struct cand *win) {
    static struct cand c[TUNE_MAX_CAND + 1];
    static double tm[TUNE_MAX_CAND + 1];
    int n = 1, nax;
    c[0] = *inforce;
    if (r->jb->attn) {
        struct jk_attn_tuning g[TUNE_MAX_CAND];
        const int ng = jk_attn_candidates(g, TUNE_MAX_CAND);
        for (int i = 0; i < ng && n <= TUNE_MAX_CAND; i++) c[n++] = (struct cand){{g[i].bk, g[i].pack}};
        nax = 2;
    } else {
        static struct jk_gemm_tuning g[TUNE_MAX_CAND];
        const int ng = jk_gemm_candidates((enum jk_gemm_kind)r->jb->kind, g, TUNE_MAX_CAND);
        for (int i = 0; i < ng && n <= TUNE_MAX_CAND; i++)
            c[n++] = (struct cand){{g[i].kc, g[i].mc, g[i].nc, g[i].ahead, g[i].colp, g[i].rowt}};
        nax = 5;   /* rowt is not searched: it acts only on pre-packed weights */
    }
    int cur = 1, alias = -1;   /* the descent starts from the set in force where it is a grid point */
    for (int i = 1; i < n; i++) {
        tm[i] = -1;
        if (alias < 0 && same(&c[i], &c[0])) alias = cur = i;
    }
    const double t0 = bench_now();
    double last = 0, best = 1e30, t_inforce = 0;
    int tried = 0, failed = 0;
    printf("%-44s %9s %9s %7s\n", r->jb->attn ? "candidate (bk pack)" : "candidate (kc mc nc ahead colp)", "ms",
           "GFLOP/s", "% peak");
    for (int axis = -1, j = 1; axis < nax;) {
        int gi;
        if (axis < 0) {
            gi = 0, axis = 0;
        } else {
            if (j == n) {   /* the next axis, from the best grid point so far */
                axis++, j = 1;
                continue;
            }
            gi = step(c, n, cur, axis, j++);
            if (gi < 0 || tm[gi] >= 0) continue;
            int seen = 0;   /* one like it timed (or failed) already */
            for (int i = 0; i < n && !seen; i++)
                seen = i != gi && (i == 0 || tm[i] >= 0) && equivalent(r, &c[gi], &c[i]);
            if (seen) continue;
        }
        if (tried > 0 && bench_now() - t0 + last > budget) {
            printf("(its share of the budget reached: %d candidates timed)\n", tried);
            break;
        }
        const double c0 = bench_now();
        char name[64];
        cand_name(r, &c[gi], name, sizeof name);
        if (gi == 0) strcat(name, " (in force)");
        if (cand_check(r, &c[gi])) {
            printf("%-44s failed the check against the reference: not used\n", name);
            failed++;
            if (gi > 0) tm[gi] = 1e30;
            continue;
        }
        const double s = cand_time(r, &c[gi]);
        tried++;
        printf("%-44s %9.2f %9.1f %6.1f%%\n", name, 1e3 * s, flop / s * 1e-9,
               peak > 0 ? 100 * flop / s * 1e-9 / peak : 0);
        fflush(stdout);
        if (gi > 0) tm[gi] = s;
        else {
            t_inforce = s;
            if (alias > 0) tm[alias] = s;
        }
        if (s < best) best = s, *win = c[gi];
        if (gi > 0 && (tm[cur] < 0 || s < tm[cur])) cur = gi;
        last = bench_now() - c0;
    }
    if (!tried) return cli_fail(NULL, "tune: no candidate passed the check (%d failed)", failed);
    /* the set in force stays unless beaten by TUNE_MARGIN: closer than that is the noise
     * of one timing, and another set may move the last bits of the outputs */
    if (t_inforce > 0 && best > t_inforce * (1 - TUNE_MARGIN)) *win = c[0];
    return 0;
}

static int write_file(const char *path, int make_dir, const char *text, size_t n) {
    if (make_dir) {   /* $XDG_CACHE_HOME/jepa: the last two components may be missing */
        char dir[1024];
        snprintf(dir, sizeof dir, "%s", path);
        char *sl = strrchr(dir, '/');
        if (sl) {
            *sl = '\0';
            char *up = strrchr(dir, '/');
            if (up && up != dir) {
                *up = '\0';
                if (mkdir(dir, 0755) && errno != EEXIST)
                    return cli_fail(NULL, "tune: cannot create %s: %s", dir, strerror(errno));
                *up = '/';
            }
            if (mkdir(dir, 0755) && errno != EEXIST)
                return cli_fail(NULL, "tune: cannot create %s: %s", dir, strerror(errno));
        }
    }
    struct jr_outfile o;
    struct jerr e = {0};
    if (jr_outfile_open(&o, path, false, &e)) return cli_fail(NULL, "tune: %s", e.msg);
    if (fwrite(text, 1, n, o.f) != n) {
        jr_outfile_abort(&o);
        return cli_fail(NULL, "tune: cannot write %s", path);
    }
    if (jr_outfile_commit(&o, &e)) return cli_fail(NULL, "tune: %s", e.msg);
    return 0;
}

/* The builds of the tiers asked for (prec < 0: every tier), each once. */
static int find_jobs(unsigned cap, int prec, struct job *jobs) {
    int nj = 0;
    for (int p = 0; p < JK_NPREC; p++) {
        if (prec >= 0 && p != prec) continue;
        struct jk_kernels k;
        jk_init_precision(&k, cap, (enum jk_precision)p);
        const int gk = k.gemm_isa ? jk_gemm_kind_by_name(k.gemm_isa) : -1;
        const int ak = jk_attn_kind_of(k.attn);
        for (int a = 0; a < 2; a++) {
            const int kind = a ? ak : gk;
            if (kind < 0) continue;
            int j = 0;
            while (j < nj && !(jobs[j].attn == a && jobs[j].kind == kind)) j++;
            if (j == nj) {
                if (nj == TUNE_MAX_JOBS) continue;
                jobs[nj++] = (struct job){.attn = a, .kind = kind, .tier = (enum jk_precision)p,
                                          .gemm = k.gemm[JK_F32], .afn = k.attn, .attn_ws = k.attn_ws};
            }
            const size_t l = strlen(jobs[j].tiers);
            snprintf(jobs[j].tiers + l, sizeof jobs[j].tiers - l, "%s%s", l ? ", " : "",
                     jk_precision_name((enum jk_precision)p));
        }
    }
    /* the matmuls first, attention after (in the order found) */
    struct job sorted[TUNE_MAX_JOBS];
    int n = 0;
    for (int a = 0; a < 2; a++)
        for (int j = 0; j < nj; j++)
            if (jobs[j].attn == a) sorted[n++] = jobs[j];
    memcpy(jobs, sorted, sizeof(struct job) * (size_t)nj);
    return nj;
}

/* The buffers of the shapes: the matmul's for the largest shape, its ws for the largest
 * blocking of any build; attention's qkv for the largest shape, the check's outputs, its ws
 * for any copy threshold. Filled with random operands. 0, or -1 (out of memory). */
static int tune_alloc(struct tune_run *rr, const struct job *jobs, int nj) {
    struct tune_run r = *rr;
    /* the matmul's buffers for the largest shape, ws for the largest blocking of any build */
    size_t mk = 0, nk = 0, mn = 0, nref = 0, ws = 64;
    int nmax = 1, kmax = 1;
    for (int i = 0; i < r.nsh; i++) {
        const struct tshape *s = &r.sh[i];
        if ((size_t)s->M * s->K > mk) mk = (size_t)s->M * s->K;
        if ((size_t)s->N * s->K > nk) nk = (size_t)s->N * s->K;
        if ((size_t)s->M * s->N > mn) mn = (size_t)s->M * s->N;
        r.off[i] = nref;
        nref += (size_t)check_rows(s->M) * s->N;
        if (s->N > nmax) nmax = s->N;
        if (s->K > kmax) kmax = s->K;
    }
    for (int j = 0; j < nj; j++) {
        if (jobs[j].attn) continue;
        static struct jk_gemm_tuning grid[TUNE_MAX_CAND];
        const enum jk_gemm_kind kind = (enum jk_gemm_kind)jobs[j].kind;
        const int ng = jk_gemm_candidates(kind, grid, TUNE_MAX_CAND);
        for (int i = -1; i < ng; i++) {
            const size_t w = jk_gemm_ws_tuned(i < 0 ? &jk_tune.gemm[kind] : &grid[i], r.nt, kmax);
            if (w > ws) ws = w;
        }
    }
    /* attention's: qkv of the largest shape, the check's outputs, ws for any copy threshold */
    size_t nqkv = 0, no = 0, naref = 0, aws = 64;
    for (int i = 0; i < r.nash; i++) {
        const struct ashape *s = &r.ash[i];
        const size_t D = (size_t)s->heads * s->hd;
        if ((size_t)s->n * 3 * D > nqkv) nqkv = (size_t)s->n * 3 * D;
        if ((size_t)s->n * D > no) no = (size_t)s->n * D;
        r.aoff[i] = naref;
        naref += (size_t)check_rows(s->n) * D;
        for (int j = 0; j < nj; j++) {
            if (!jobs[j].attn) continue;
            const size_t w = jk_attn_ws_tuned(jobs[j].attn_ws(r.nt, s->heads, s->hd, s->n), s->hd, s->n);
            if (w > aws) aws = w;
        }
    }
    r.x = malloc(mk * sizeof(float)), r.y = malloc(mn * sizeof(float));
    r.yref = malloc(nref * sizeof(float)), r.bound = malloc(nref * sizeof(double));
    r.xabs = malloc((size_t)TUNE_CHECK_M * kmax * sizeof(float)), r.wabs = malloc((size_t)kmax * sizeof(float));
    r.w = malloc(nk * jk_row_bytes(r.dt, 1)), r.bias = malloc((size_t)nmax * sizeof(float));
    r.ws = malloc(ws);
    r.qkv = malloc(nqkv * sizeof(float)), r.o = malloc(no * sizeof(float));
    r.oref = malloc(naref * sizeof(float)), r.tol = malloc(naref * sizeof(double));
    r.aws = malloc(aws);
    if (!r.x || !r.y || !r.xabs || !r.wabs || !r.yref || !r.bound || !r.w || !r.bias || !r.ws || !r.qkv || !r.o || !r.oref ||
        !r.tol || !r.aws) {
        *rr = r;
        return cli_fail(NULL, "tune: out of memory for the shapes (%zu MiB of weights)", nk * 4 >> 20);
    }
    for (size_t i = 0; i < mk; i++) r.x[i] = urand();
    for (size_t i = 0; i < nk; i++) put_weight(r.dt, r.w, i);
    for (int i = 0; i < nmax; i++) r.bias[i] = urand();
    for (size_t i = 0; i < nqkv; i++) r.qkv[i] = 2.0f * urand();
    *rr = r;
    return 0;
}

/* Every job's search in turn, the winners into *t and their kinds into the masks. */
static int tune_jobs(struct tune_run *rp, const struct job *jobs, int nj, double budget, double peak,
                     struct jk_tuning *t, unsigned *gmask, unsigned *amask) {
    double gflop = 0, aflop = 0;
    for (int i = 0; i < rp->nsh; i++) gflop += 2.0 * rp->sh[i].M * rp->sh[i].N * rp->sh[i].K;
    for (int i = 0; i < rp->nash; i++)
        aflop += 4.0 * rp->ash[i].n * rp->ash[i].n * rp->ash[i].hd * rp->ash[i].heads;

    const double start = bench_now();
    int rc = 0;
    for (int j = 0; j < nj && !rc; j++) {
        const struct job *jb = rp->jb = &jobs[j];
        const double job0 = bench_now(), share = (budget - (job0 - start)) / (nj - j);
        struct cand cur = {{0}}, win = {{0}};
        if (jb->attn) {
            const struct jk_attn_tuning *a = &jk_tune.attn[jb->kind];
            cur.v[0] = a->bk, cur.v[1] = a->pack;
            printf("\nattn %s (tiers %s):", jk_attn_kind_names[jb->kind], jb->tiers);
            for (int i = 0; i < rp->nash; i++)
                printf("%s %d tokens x %d heads of %d", i ? "," : "", rp->ash[i].n, rp->ash[i].heads, rp->ash[i].hd);
            printf("\n");
            attn_reference(rp);
        } else {
            const struct jk_gemm_tuning *g = &jk_tune.gemm[jb->kind];
            cur = (struct cand){{g->kc, g->mc, g->nc, g->ahead, g->colp, g->rowt}};
            printf("\ngemm %s (tiers %s): %d shapes\n", jk_gemm_kind((enum jk_gemm_kind)jb->kind)->name, jb->tiers,
                   rp->nsh);
            gemm_reference(rp, jb->tier);
        }
        win = cur;
        const double left = share - (bench_now() - job0);   /* the reference's time counts */
        rc = search(rp, &cur, left > 1 ? left : 1, peak, jb->attn ? aflop : gflop, &win);
        if (rc) break;
        if (jb->attn) {
            t->attn[jb->kind] = as_attn(&win), *amask |= 1u << jb->kind;
            printf("kept: attn %s bk=%d pack=%d%s\n", jk_attn_kind_names[jb->kind], win.v[0], win.v[1],
                   same(&win, &cur) ? " (the set in force)" : "");
        } else {
            t->gemm[jb->kind] = as_gemm(&win), *gmask |= 1u << jb->kind;
            printf("kept: gemm %s kc=%d mc=%d nc=%d ahead=%d colp=%d rowt=%d%s\n",
                   jk_gemm_kind((enum jk_gemm_kind)jb->kind)->name, win.v[0], win.v[1], win.v[2], win.v[3],
                   win.v[4], win.v[5], same(&win, &cur) ? " (the set in force)" : "");
        }
    }
    return rc;
}

int cmd_tune(int argc, char **argv) {
    const char *model = NULL, *out = NULL, *dts = "f16", *precs = "all";
    long long threads = 2, budget = 90;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (i + 1 >= argc) return cli_usage_error("tune", "unknown option or missing value: '%s'", a);
        const char *v = argv[++i];
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) model = v;
        else if (!strcmp(a, "-o") || !strcmp(a, "--out")) out = v;
        else if (!strcmp(a, "--dtype")) dts = v;
        else if (!strcmp(a, "--precision")) precs = v;
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            if (cli_parse_int("tune", "-t", v, 1, 256, &threads)) return CLI_EXIT_USAGE;
        } else if (!strcmp(a, "--budget")) {
            if (cli_parse_int("tune", "--budget", v, 1, 3600, &budget)) return CLI_EXIT_USAGE;
        } else return cli_usage_error("tune", "unknown option '%s'", a);
    }
    const int prec = strcmp(precs, "all") ? jk_precision_parse(precs) : -1;
    if (prec < 0 && strcmp(precs, "all"))
        return cli_usage_error("tune", "--precision takes exact, high, bf16 or all, not '%s'", precs);
    if (model && cli_resolve_model("tune", &model)) return CLI_EXIT_USAGE;   /* -m REPO: the cached file */
    struct tune_run r = {.nt = (int)threads};
    const int dt = jk_dtype_by_name(dts);
    if (dt != JK_F32 && dt != JK_F16 && dt != JK_BF16)
        return cli_usage_error("tune", "--dtype takes f32, f16 or bf16, not '%s'", dts);
    r.dt = (enum jk_dtype)dt;
    const long cap = jr_cpu_cap(jr_cpu_detect(), getenv("JEPA_CPU"));
    if (cap < 0) return cli_usage_error("tune", "unknown cpu level in JEPA_CPU");
    struct jk_kernels ref;
    jk_init_ref(&ref);
    r.ref = ref.gemm[r.dt];
    struct job jobs[TUNE_MAX_JOBS];
    const int nj = find_jobs((unsigned)cap, prec, jobs);
    if (!nj) return cli_fail(NULL, "tune: no tunable kernels at this CPU level");
    for (int j = 0; j < nj; j++)   /* each matmul job at the weight type timed */
        if (!jobs[j].attn) {
            struct jk_kernels k;
            jk_init_precision(&k, (unsigned)cap, jobs[j].tier);
            jobs[j].gemm = k.gemm[r.dt];
        }
    if (model ? model_shapes(model, &r) : (default_shapes(&r), 0)) return CLI_EXIT_FAIL;

    const struct jr_cpu_id *id = jr_cpu_id();
    char path[1024];
    if (out) snprintf(path, sizeof path, "%s", out);
    else if (jk_tune_default_path(id, path, sizeof path))
        return cli_fail(NULL, "tune: none of JEPA_CACHE, XDG_CACHE_HOME and HOME is set: name the file with -o");

    int rc = tune_alloc(&r, jobs, nj);
    if (rc) goto done;
    const char *pisa = "";
    const double peak = bench_fma_peak((unsigned)cap, r.nt, &pisa);
    char cid[96];
    jk_cpu_id_string(id, cid, sizeof cid);
    printf("jepa tune: %s, %d threads, %s weights, %d kernel builds, shapes %s%s; FMA peak %.1f GFLOP/s (%s)\n",
           cid, r.nt, jk_dtype_name(r.dt), nj, model ? "of " : "of ViT-S/B/L at 576 tokens",
           model ? model : "", peak, pisa);
    struct jk_tuning t = jk_tune;
    unsigned gmask = 0, amask = 0;
    const double start = bench_now();
    rc = tune_jobs(&r, jobs, nj, (double)budget, peak, &t, &gmask, &amask);
    if (rc) goto done;
    /* the records this run did not tune, where the file in force is the one written */
    for (int k = 0; k < JK_NGK; k++)
        if (!strcmp(jk_tune_gemm_source((enum jk_gemm_kind)k), path)) gmask |= 1u << k;
    for (int k = 0; k < JK_NAK; k++)
        if (!strcmp(jk_tune_attn_source((enum jk_attn_kind)k), path)) amask |= 1u << k;
    char text[JK_TUNE_FILE_MAX];
    const size_t n = jk_tune_format(text, sizeof text, id, &t, gmask, amask);
    if (!n || (rc = write_file(path, out == NULL, text, n))) goto done;
    printf("\nwrote %s in %.0f s (read from the next start; `jepa cpu` shows it)\n", path, bench_now() - start);
done:
    free(r.x), free(r.y), free(r.xabs), free(r.wabs), free(r.yref), free(r.bound), free(r.w), free(r.bias), free(r.ws);
    free(r.qkv), free(r.o), free(r.oref), free(r.tol), free(r.aws);
    return rc;
}
