/*
 * cmd_tune.c — `jepa tune`: times the matmul blockings of kernels/tuning.h on this machine
 * and writes the fastest to the tuning file the library reads at its next start.
 *
 * The kernels are those of the exact tier at this CPU's level (JEPA_CPU caps it), on the
 * matmul shapes of -m MODEL's encoder (qkv, proj, fc1, fc2 at its token count) or of the
 * standard ViT-S/B/L at 576 tokens. The search: the set in force first, then a coordinate
 * descent over jk_gemm_candidates' grid (K block, X block rows, W panel columns, next-panel
 * prefetch, column split), one axis at a time from the kind's defaults; every candidate is
 * checked against the reference kernel (kernels/ref) on the shapes' widths and depths
 * before it is timed (the bound of tests/checkasm/test_gemm.c), and a failing one is never
 * kept. A candidate's time is the sum over the shapes of each one's best of a few calls;
 * the FMA peak of the same run gives each its fraction. The search stops when the budget
 * would be passed, keeping the best so far.
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
#include "kernels/tuning.h"
#include "runtime/cpu.h"
#include "runtime/dtype.h"
#include "runtime/outfile.h"

#define TUNE_MAX_SHAPES 16
#define TUNE_MAX_CAND 256
#define TUNE_CHECK_M 67   /* rows of the check: above every small-M path (64) */

struct tshape { int M, N, K; const char *what; };

struct tune_run {
    enum jk_dtype dt;
    int nt;
    struct tshape sh[TUNE_MAX_SHAPES];
    int nsh;
    float *x, *y, *bias;
    void *w;
    float *yref;      /* per shape i at off[i]: the reference's TUNE_CHECK_M rows */
    double *bound;    /* and the bound of each of their elements */
    size_t off[TUNE_MAX_SHAPES];
    void *ws;
    size_t ws_size;
    jk_gemm_fn *gemm, *ref;
};

static void usage(FILE *f) {
    fprintf(f,
            "usage: jepa tune [-m MODEL] [-t N] [--budget SECONDS] [--dtype f32|f16|bf16] [-o FILE]\n"
            "  Times the matmul blockings (K block, X block, W panel, prefetch, thread split) on\n"
            "  this CPU and writes the fastest to the tuning file that the library reads when it\n"
            "  starts (on the same CPU): $JEPA_CACHE/tune-<cpu-id>.txt, else\n"
            "  $XDG_CACHE_HOME/jepa/..., else ~/.cache/jepa/... (-o FILE: there instead; use it\n"
            "  with JEPA_TUNE_FILE=FILE).\n"
            "  -m, --model MODEL  the shapes of this model's encoder (default: ViT-S/B/L, 576\n"
            "                 tokens); a .gguf file or OWNER/NAME[:FILE] from the cache\n"
            CLI_PULL_HELP
            "  -t, --threads N  threads (default 2)\n"
            "  --budget S     stop searching after about S seconds (default 90, 1 .. 3600)\n"
            "  --dtype T      the weights' type for the timing (default f16)\n"
            "  -o, --out FILE the tuning file to write\n"
            "  Every candidate is checked against the reference kernel before it is timed.\n"
            "  JEPA_TUNE=off ignores the file; `jepa cpu` shows the blocking in force.\n");
}

/* The encoder's matmuls of a model, at its token count (bounded). */
static int model_shapes(const char *path, struct tshape *sh, int *nsh) {
    jepa_model *m = NULL;
    char err[JEPA_ERR_LEN];
    if (jepa_model_load(&m, path, err)) return cli_fail(NULL, "tune: %s", err);
    jepa_model_info in;
    jepa_model_get_info(m, &in);
    const int p = in.patch_size > 0 ? in.patch_size : 16, t = in.tubelet_size > 0 ? in.tubelet_size : 1;
    long g = in.img_size > 0 ? (long)(in.img_size / p) * (in.img_size / p) : 196;
    long M = g * (in.n_frames > t ? in.n_frames / t : 1) + (in.has_cls ? 1 : 0);
    const long D = in.embed_dim, F = in.ffn_dim > 0 ? in.ffn_dim : 4L * in.embed_dim;
    jepa_model_free(m);
    if (M < 1) M = 1;
    if (M > 8192) M = 8192;   /* the blocking's behaviour is that of a long sequence by then */
    if (D < 1 || D > 16384 || F < 1 || F > 65536)
        return cli_fail(NULL, "tune: %s: widths %ld / %ld out of range", path, D, F);
    const struct tshape s[4] = {{(int)M, (int)(3 * D), (int)D, "qkv"}, {(int)M, (int)D, (int)D, "proj"},
                                {(int)M, (int)F, (int)D, "fc1"}, {(int)M, (int)D, (int)F, "fc2"}};
    memcpy(sh, s, sizeof s);
    *nsh = 4;
    return 0;
}

static void default_shapes(struct tshape *sh, int *nsh) {
    static const int dims[3] = {384, 768, 1024};
    static const char *const names[3][4] = {{"S qkv", "S proj", "S fc1", "S fc2"},
                                            {"B qkv", "B proj", "B fc1", "B fc2"},
                                            {"L qkv", "L proj", "L fc1", "L fc2"}};
    int n = 0;
    for (int i = 0; i < 3; i++) {
        const int D = dims[i];
        sh[n++] = (struct tshape){576, 3 * D, D, names[i][0]};
        sh[n++] = (struct tshape){576, D, D, names[i][1]};
        sh[n++] = (struct tshape){576, 4 * D, D, names[i][2]};
        sh[n++] = (struct tshape){576, D, 4 * D, names[i][3]};
    }
    *nsh = n;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float urand(void) {   /* uniform in [-1, 1) */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 4503599627370496.0 - 1.0);
}

/* W [N, K] of type dt from uniform values, and each weight's value back in f32. */
static float put_weight(enum jk_dtype dt, void *w, size_t i) {
    const float v = urand();
    if (dt == JK_F16) {
        const uint16_t h = f32_to_f16(v);
        ((uint16_t *)w)[i] = h;
        return f16_to_f32(h);
    }
    if (dt == JK_BF16) {
        const uint16_t h = f32_to_bf16(v);
        ((uint16_t *)w)[i] = h;
        return bf16_to_f32(h);
    }
    ((float *)w)[i] = v;
    return v;
}

static float get_weight(enum jk_dtype dt, const void *w, size_t i) {
    if (dt == JK_F16) return f16_to_f32(((const uint16_t *)w)[i]);
    if (dt == JK_BF16) return bf16_to_f32(((const uint16_t *)w)[i]);
    return ((const float *)w)[i];
}

static struct jk_gemm_args args_of(const struct tune_run *r, const struct tshape *s, int M, float *y,
                                   const struct jk_gemm_tuning *tu) {
    return (struct jk_gemm_args){.y = y, .ldy = (size_t)s->N, .x = r->x, .ldx = (size_t)s->K,
                                 .w = r->w, .ldw = jk_row_bytes(r->dt, s->K), .bias = r->bias,
                                 .M = M, .N = s->N, .K = s->K, .epi = JK_EPI_STORE,
                                 .nthreads = r->nt, .ws = r->ws, .tune = tu};
}

static int check_rows(const struct tshape *s) { return s->M < TUNE_CHECK_M ? s->M : TUNE_CHECK_M; }

/* The reference's result on every shape's N and K at TUNE_CHECK_M rows, and the bound of
 * tests/checkasm/test_gemm.c for each element: 1.01 (K + 4) u S, S = sum_k |x_k w_k| + |b|
 * (the same for every candidate: computed once). */
static void reference(struct tune_run *r) {
    for (int i = 0; i < r->nsh; i++) {
        const struct tshape *s = &r->sh[i];
        const int M = check_rows(s);
        float *yr = r->yref + r->off[i];
        double *bd = r->bound + r->off[i];
        struct jk_gemm_args a = args_of(r, s, M, yr, NULL);
        r->ref(&a);
        for (int m = 0; m < M; m++)
            for (int n = 0; n < s->N; n++) {
                double S = fabs(r->bias[n]);
                for (int k = 0; k < s->K; k++)
                    S += fabs((double)r->x[(size_t)m * s->K + k] * get_weight(r->dt, r->w, (size_t)n * s->K + k));
                bd[(size_t)m * s->N + n] = 1.01 * (s->K + 4) * 0x1p-24 * S;
            }
    }
}

/* Candidate tu against the reference: 0, or -1 where an element is outside its bound
 * (+ u |y_ref|, the reference's own rounding). */
static int check(struct tune_run *r, const struct jk_gemm_tuning *tu) {
    for (int i = 0; i < r->nsh; i++) {
        const struct tshape *s = &r->sh[i];
        const int M = check_rows(s);
        const float *yr = r->yref + r->off[i];
        const double *bd = r->bound + r->off[i];
        struct jk_gemm_args a = args_of(r, s, M, r->y, tu);
        r->gemm(&a);
        for (size_t j = 0; j < (size_t)M * s->N; j++) {
            const double d = fabs((double)r->y[j] - yr[j]);
            if (!(d <= bd[j] + 0x1p-24 * fabs(yr[j]))) return -1;
        }
    }
    return 0;
}

/* Seconds of one candidate: the sum over the shapes of the best of at least `reps` calls
 * (more for a small shape: until its calls took 20 ms, at most 1000). */
static double time_of(struct tune_run *r, const struct jk_gemm_tuning *tu, int reps) {
    double total = 0;
    for (int i = 0; i < r->nsh; i++) {
        const struct jk_gemm_args a = args_of(r, &r->sh[i], r->sh[i].M, r->y, tu);
        r->gemm(&a);   /* warm: W's panels and the team */
        double best = 1e30, spent = 0;
        for (int k = 0; k < 1000 && (k < reps || spent < 0.02); k++) {
            const double t0 = bench_now();
            r->gemm(&a);
            const double dt = bench_now() - t0;
            spent += dt;
            if (dt < best) best = dt;
        }
        total += best;
    }
    return total;
}

static int same(const struct jk_gemm_tuning *a, const struct jk_gemm_tuning *b) {
    return a->kc == b->kc && a->mc == b->mc && a->nc == b->nc && a->ahead == b->ahead &&
           a->colp == b->colp && a->rowt == b->rowt;
}

/* The grid point that differs from cur only in axis `axis` taking the value of grid[j]'s. */
static int step(const struct jk_gemm_tuning *grid, int ng, const struct jk_gemm_tuning *cur, int axis, int j) {
    struct jk_gemm_tuning t = *cur;
    const struct jk_gemm_tuning *v = &grid[j];
    switch (axis) {
    case 0: t.kc = v->kc; break;
    case 1: t.mc = v->mc; break;
    case 2: t.nc = v->nc; break;
    case 3: t.ahead = v->ahead; break;
    default: t.colp = v->colp; break;
    }
    for (int i = 0; i < ng; i++)
        if (same(&grid[i], &t)) return i;
    return -1;
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

static int tune_search(struct tune_run *r, enum jk_gemm_kind kind, double budget, double peak,
                       struct jk_gemm_tuning *win) {
    static struct jk_gemm_tuning grid[TUNE_MAX_CAND];
    const int ng = jk_gemm_candidates(kind, grid, TUNE_MAX_CAND);
    double gtime[TUNE_MAX_CAND];
    for (int i = 0; i < ng; i++) gtime[i] = -1;
    double flop = 0;
    for (int i = 0; i < r->nsh; i++) flop += 2.0 * r->sh[i].M * r->sh[i].N * r->sh[i].K;
    const double t0 = bench_now();
    reference(r);
    double last = 0, best_t = 1e30;
    int tried = 0, failed = 0;
    printf("%-44s %9s %9s %7s\n", "candidate (kc mc nc ahead colp)", "ms", "GFLOP/s", "% peak");
    /* -1: the set in force; then the descent over the grid */
    int cur = 0;
    for (int pass = -1, axis = 0, j = 0;;) {
        const struct jk_gemm_tuning *t;
        int gi = -1;
        const int first = pass < 0;
        if (pass < 0) {   /* the set in force (a grid point or not) */
            t = &jk_tune.gemm[kind];
            pass = 0;
            for (int i = 0; i < ng; i++)
                if (same(&grid[i], t)) gi = cur = i;
        } else {
            if (axis == 5) break;
            if (j == ng) {   /* next axis, from the best grid point so far */
                axis++, j = 0;
                continue;
            }
            gi = step(grid, ng, &grid[cur], axis, j++);
            if (gi < 0 || gtime[gi] >= 0) continue;
            t = &grid[gi];
        }
        if (tried > 0 && bench_now() - t0 + last > budget) {
            printf("(budget of %.0f s reached: %d candidates timed)\n", budget, tried);
            break;
        }
        const double c0 = bench_now();
        char name[64];
        snprintf(name, sizeof name, "%d %d %d %d %d%s", t->kc, t->mc, t->nc, t->ahead, t->colp,
                 first ? " (in force)" : "");
        if (check(r, t)) {
            printf("%-44s failed the check against the reference: not used\n", name);
            failed++;
            if (gi >= 0) gtime[gi] = 1e30;
            continue;
        }
        const double s = time_of(r, t, 3);
        tried++;
        printf("%-44s %9.2f %9.1f %6.1f%%\n", name, 1e3 * s, flop / s * 1e-9,
               peak > 0 ? 100 * flop / s * 1e-9 / peak : 0);
        fflush(stdout);
        if (gi >= 0) gtime[gi] = s;
        if (s < best_t) best_t = s, *win = *t;
        if (gi >= 0 && (gtime[cur] < 0 || s < gtime[cur])) cur = gi;
        last = bench_now() - c0;
    }
    if (!tried) return cli_fail(NULL, "tune: no candidate passed the check (%d failed)", failed);
    return 0;
}

int cmd_tune(int argc, char **argv) {
    const char *model = NULL, *out = NULL, *dts = "f16";
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
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            if (cli_parse_int("tune", "-t", v, 1, 256, &threads)) return CLI_EXIT_USAGE;
        } else if (!strcmp(a, "--budget")) {
            if (cli_parse_int("tune", "--budget", v, 1, 3600, &budget)) return CLI_EXIT_USAGE;
        } else return cli_usage_error("tune", "unknown option '%s'", a);
    }
    if (model && cli_resolve_model("tune", &model)) return CLI_EXIT_USAGE;   /* -m REPO: the cached file */
    struct tune_run r = {.nt = (int)threads};
    const int dt = jk_dtype_by_name(dts);
    if (dt != JK_F32 && dt != JK_F16 && dt != JK_BF16)
        return cli_usage_error("tune", "--dtype takes f32, f16 or bf16, not '%s'", dts);
    r.dt = (enum jk_dtype)dt;
    const long cap = jr_cpu_cap(jr_cpu_detect(), getenv("JEPA_CPU"));
    if (cap < 0) return cli_usage_error("tune", "unknown cpu level in JEPA_CPU");
    struct jk_kernels k, ref;
    jk_init(&k, (unsigned)cap);
    jk_init_ref(&ref);
    const int kind = k.gemm_isa ? jk_gemm_kind_by_name(k.gemm_isa) : -1;
    if (kind < 0) return cli_fail(NULL, "tune: no tunable matmul kernels at this CPU level (%s)", k.isa);
    r.gemm = k.gemm[r.dt], r.ref = ref.gemm[r.dt];
    if (model ? model_shapes(model, r.sh, &r.nsh) : (default_shapes(r.sh, &r.nsh), 0)) return CLI_EXIT_FAIL;

    const struct jr_cpu_id *id = jr_cpu_id();
    char path[1024];
    if (out) snprintf(path, sizeof path, "%s", out);
    else if (jk_tune_default_path(id, path, sizeof path))
        return cli_fail(NULL, "tune: none of JEPA_CACHE, XDG_CACHE_HOME and HOME is set: name the file with -o");

    /* buffers for the largest shape, ws for the largest blocking tried */
    size_t mk = 0, nk = 0, mn = 0, nref = 0, ws = jk_gemm_ws_tuned(&jk_tune.gemm[kind], r.nt, 1);
    int nmax = 1, kmax = 1;
    for (int i = 0; i < r.nsh; i++) {
        const struct tshape *s = &r.sh[i];
        if ((size_t)s->M * s->K > mk) mk = (size_t)s->M * s->K;
        if ((size_t)s->N * s->K > nk) nk = (size_t)s->N * s->K;
        if ((size_t)s->M * s->N > mn) mn = (size_t)s->M * s->N;
        r.off[i] = nref;
        nref += (size_t)check_rows(s) * s->N;
        if (s->N > nmax) nmax = s->N;
        if (s->K > kmax) kmax = s->K;
    }
    static struct jk_gemm_tuning grid[TUNE_MAX_CAND];
    const int ng = jk_gemm_candidates((enum jk_gemm_kind)kind, grid, TUNE_MAX_CAND);
    for (int i = -1; i < ng; i++) {
        const size_t w = jk_gemm_ws_tuned(i < 0 ? &jk_tune.gemm[kind] : &grid[i], r.nt, kmax);
        if (w > ws) ws = w;
    }
    r.x = malloc(mk * sizeof(float)), r.y = malloc(mn * sizeof(float));
    r.yref = malloc(nref * sizeof(float)), r.bound = malloc(nref * sizeof(double));
    r.w = malloc(nk * jk_row_bytes(r.dt, 1)), r.bias = malloc((size_t)nmax * sizeof(float));
    r.ws = malloc(ws), r.ws_size = ws;
    int rc = 0;
    if (!r.x || !r.y || !r.yref || !r.bound || !r.w || !r.bias || !r.ws) {
        rc = cli_fail(NULL, "tune: out of memory for the shapes (%zu MiB of weights)", nk * 4 >> 20);
        goto done;
    }
    for (size_t i = 0; i < mk; i++) r.x[i] = urand();
    for (size_t i = 0; i < nk; i++) put_weight(r.dt, r.w, i);
    for (int i = 0; i < nmax; i++) r.bias[i] = urand();

    const char *pisa = "";
    const double peak = bench_fma_peak((unsigned)cap, r.nt, &pisa);
    char cid[96];
    jk_cpu_id_string(id, cid, sizeof cid);
    printf("jepa tune: %s, gemm %s, %s weights, %d threads, %d shapes%s%s; FMA peak %.1f GFLOP/s (%s)\n",
           cid, k.gemm_isa, jk_dtype_name(r.dt), r.nt, r.nsh, model ? " of " : " (ViT-S/B/L, 576 tokens)",
           model ? model : "", peak, pisa);
    struct jk_gemm_tuning win;
    rc = tune_search(&r, (enum jk_gemm_kind)kind, (double)budget, peak, &win);
    if (rc) goto done;
    struct jk_tuning t = jk_tune;
    t.gemm[kind] = win;
    char text[JK_TUNE_FILE_MAX];
    const size_t n = jk_tune_format(text, sizeof text, id, &t, 1u << kind, 0);
    if (!n || (rc = write_file(path, out == NULL, text, n))) goto done;
    printf("kept: gemm %s kc=%d mc=%d nc=%d ahead=%d colp=%d rowt=%d\nwrote %s (read from the next start; "
           "`jepa cpu` shows it)\n", k.gemm_isa, win.kc, win.mc, win.nc, win.ahead, win.colp, win.rowt, path);
done:
    free(r.x), free(r.y), free(r.yref), free(r.bound), free(r.w), free(r.bias), free(r.ws);
    return rc;
}
