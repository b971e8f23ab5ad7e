/*
 * test_cuda_attn.c — the CUDA table's attention slot (kernels/cuda/attn.cu) against the
 * reference jk_attn_ref (kernels/ref, exact softmax in double) on the host.
 *
 * Cases: random ragged nq, nkv in 1..200 (nq != nkv from separate q and k/v buffers,
 * nq == nkv from one fused [n, 3D] qkv buffer with or without row padding), 1 to 4
 * heads; head_dim 32, 64, 80, 96, 128 with nq >= 16 (the tensor-core kernel), the same
 * with nq < 16 and nq = 1 (the attentive pooler: one query over every key, up to 3137
 * keys, which fills 32 warps) and odd sizes 24, 40, 200, 300 (the f32 kernel); masks:
 * none, block-causal frame ids with a CLS row and column at INT32_MAX (frames of 1, 8,
 * 16, 47 and 256 tokens: frame edges on and off the 64-key tiles, whole key tiles hidden
 * from a query tile), causal (pos = index), and random positions with hidden rows,
 * among them a run of 70 rows that see nothing (a whole 64-query block whose every key
 * tile is skipped): those must be exactly 0. The output has padded rows and 16 floats
 * either side, NaN before the call, that must stay NaN; a second call must give the
 * same bits.
 *
 * Tolerance per element o[i, e], from the arithmetic (u = 2^-24, h = 2^-11 the unit
 * roundoff of f16), with E = max over visible keys of scale sum_d |q_d k_d|, V = max
 * |v_e| over visible keys, R = the spread of visible logits, n = nkv:
 *  - tensor-core kernel: q scale log2(e) (an f32 product) and k are rounded to f16
 *    (relative h each, absolute 2^-25 below 2^-14), products summed in f32 with
 *    tensor-core rounding, so each logit is off by
 *    D <= E (2h + h^2 + (2 hd + 10) u) + scale 2^-25 sum_d (|q_d| + |k_d|).
 *    Logit errors bounded by D move every softmax weight by a factor within e^(+-2D),
 *    so o by at most V (e^(2D) - 1). P is rounded to f16 (relative h; absolute 2^-25
 *    below 2^-14, over n keys, against a sum >= 1: the largest weight is exp2(0) = 1)
 *    and so is V (relative h, absolute 2^-25): V (2h + n 2^-25) + 2^-25. The f32 parts
 *    (exp2 of the rounded argument, the sums of P and of P V over n keys with one
 *    rescale per tile, the final division) add V u (2 (1.45 R + 4) + 4 n + 2 n/64 + 16).
 *    That bound is dominated by the 2h E of the rounded operands (about 1-5 % of V at
 *    logits ~4), loose enough to hide a dropped key among 200; so the kernel is also
 *    held to the reference run on q, k, v rounded to f16 beforehand as the kernel
 *    rounds them, where only the f32 logit sums (D <= 1.001 E (2 hd + 10) u), P in f16
 *    (h V) and the f32 parts remain (about 0.1 % of V).
 *  - f32 kernel: D <= E (hd + 8) u (a length-hd dot product split over lanes and a
 *    butterfly, the scale * log2 e folded into q), plus the same f32 parts.
 * An error of indexing, masking or a lost rescale costs O(V) and shows at once. Each
 * case prints its worst element and the fraction of the tolerance it used.
 *
 * The routing (which kernel a case takes) is mirrored from attn.cu: nq >= 16 and
 * head_dim in {32, 64, 80, 96, 128} take the tensor cores. Those cases run four times:
 * blocks of 4 and of 8 warps, with no workspace (each block converts K and V) and with
 * attn_ws's, NaN-filled before, staging forced (jkc_attn_force; the kernel decides both
 * by the grid). They run twice more with JEPA_CUDA_KERNELS=pipe (jkc_kernels_force_pipe):
 * with the workspace (the pipelined kernel, attn_pipe) and without (the default kernels
 * again); the f32 kernel's cases and the NaN checks run with it too. Every run also asks
 * for the o16 copy (f16 or bf16), which must be the f32 output rounded to nearest even,
 * bit for bit, with its row padding untouched.
 *
 * Exit 0: passed, 1: failed, 77: no CUDA device (skipped). JEPA_SEED=... replays.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/device.h"
#include "kernels/kernels.h"
#include "runtime/dtype.h"
#include "tests/checkasm/checkasm.h"
#include "tests/cuda/cuda_test.h"

#define U (1.0 / 16777216.0)   /* 2^-24 */
#define H (1.0 / 2048.0)       /* 2^-11 */
#define SUB (1.0 / 33554432.0) /* 2^-25: the absolute error of f16 below 2^-14 */

enum { MASK_NONE, MASK_FRAMES, MASK_CAUSAL, MASK_RANDOM };
static const char *mask_name[] = {"full", "block-causal+cls", "causal", "random+hidden-rows"};

struct tcase {
    int nq, nkv, n_head, hd, mask;
    int fused;    /* 1: one [n, 3D + 5] qkv buffer; 2: [n, 3D] (the model's); needs nq == nkv */
    int fr;       /* MASK_FRAMES: tokens per frame */
    float logit;  /* target largest |scale q.k| */
};

static struct jk_kernels kt, kref;
static int g_staged;   /* pass the workspace attn_ws asks for (K and V staged once) */
static int g_o16_bf16; /* the type of the o16 copy of this run: bf16, else f16 */

void jkc_attn_force(int warps, int staging);   /* kernels/cuda/attn.cu: a test hook */

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) { fprintf(stderr, "out of memory\n"); exit(1); }
    return p;
}
static double dmax(double a, double b) { return b > a ? b : a; }

/* x rounded to the nearest f16 (ties to even; |x| < 65504 here): 11 significant bits,
 * or multiples of 2^-24 below 2^-14 (the subnormals). */
static float round_f16(float x) {
    if (fabsf(x) < 0x1p-14f) return (float)(nearbyint((double)x * 0x1p24) * 0x1p-24);
    int ex;
    const double m = frexp((double)x, &ex);   /* x = m 2^ex, 0.5 <= |m| < 1 */
    return (float)ldexp(nearbyint(ldexp(m, 11)), ex - 11);
}

/* The worst element of one comparison (err / tol largest) and the count outside tol. */
struct worst {
    double r, err, tol, got, ref;
    int i, e;
    size_t bad;
};
static void note(struct worst *w, double got, double ref, double tol, int i, int e) {
    const double err = fabs(got - ref), r = err / (tol > 0 ? tol : 1e-300);
    if (!(err <= tol)) w->bad++;
    if (!(r <= w->r)) {
        w->r = r, w->err = err, w->tol = tol, w->got = got, w->ref = ref;
        w->i = i, w->e = e;
    }
}

static int mma_path(const struct tcase *c) {
    const int hd = c->hd;
    return c->nq >= 16 && (hd == 32 || hd == 64 || hd == 80 || hd == 96 || hd == 128);
}

static int run_case(const struct tcase *c) {
    const int D = c->n_head * c->hd, hd = c->hd;
    float *qbuf = NULL, *kvbuf, *q, *k, *v;
    size_t ldq, ldk, ldv, nqb = 0, nkvb;
    if (c->fused) {
        ldq = ldk = ldv = 3 * (size_t)D + (c->fused == 1 ? 5 : 0);
        nkvb = (size_t)c->nkv * ldk;
        kvbuf = (float *)xmalloc(nkvb * sizeof(float));
        ca_fill(kvbuf, nkvb, 1.0f);
        q = kvbuf, k = kvbuf + D, v = kvbuf + 2 * D;
    } else {
        ldq = (size_t)D + 3, ldk = ldv = 2 * (size_t)D + 1;
        nqb = (size_t)c->nq * ldq, nkvb = (size_t)c->nkv * ldk;
        qbuf = (float *)xmalloc(nqb * sizeof(float));
        kvbuf = (float *)xmalloc(nkvb * sizeof(float));
        ca_fill(qbuf, nqb, 1.0f);
        ca_fill(kvbuf, nkvb, 1.0f);
        q = qbuf, k = kvbuf, v = kvbuf + D;
    }
    /* q.k of unit normals over hd dims has std sqrt(hd) */
    const float scale = c->logit / (3.5f * sqrtf((float)hd));

    int32_t *qpos = NULL, *kpos = NULL;
    if (c->mask != MASK_NONE) {
        qpos = (int32_t *)xmalloc((size_t)c->nq * sizeof(int32_t));
        kpos = (int32_t *)xmalloc((size_t)c->nkv * sizeof(int32_t));
        for (int j = 0; j < c->nkv; j++) {
            if (c->mask == MASK_FRAMES) kpos[j] = j == 0 ? INT32_MAX : (j - 1) / c->fr;
            else if (c->mask == MASK_CAUSAL) kpos[j] = j;
            else kpos[j] = ca_int(0, 9);
        }
        for (int i = 0; i < c->nq; i++) {
            if (c->mask == MASK_RANDOM) qpos[i] = ca_int(0, 9);
            else qpos[i] = c->nq == c->nkv ? kpos[i] : kpos[ca_int(0, c->nkv - 1)];
        }
        if (c->mask == MASK_FRAMES && c->nq != c->nkv) qpos[0] = INT32_MAX;   /* a CLS query */
        if (c->mask == MASK_RANDOM) {
            qpos[c->nq / 2] = -1;                                   /* sees no key */
            if (c->nq >= 140)
                for (int i = 64; i < 134; i++) qpos[i] = -1;        /* a whole block of them */
        }
    }

    /* device copies; o (twice: the same call must give the same bits) with a NaN
     * guard band and NaN padding */
    const size_t ldo = (size_t)D + 7, no = (size_t)c->nq * ldo;
    float *o = ca_alloc_guarded(no), *o2 = ca_alloc_guarded(no);
    float *od = ct_upload_guarded(o, no), *od2 = ct_upload_guarded(o2, no);
    float *kvd = ct_upload_f(kvbuf, nkvb);
    float *qd = qbuf ? ct_upload_f(qbuf, nqb) : kvd;
    int32_t *qpd = qpos ? (int32_t *)ct_upload(qpos, (size_t)c->nq * sizeof(int32_t)) : NULL;
    int32_t *kpd = kpos ? (int32_t *)ct_upload(kpos, (size_t)c->nkv * sizeof(int32_t)) : NULL;

    /* the workspace, all bytes 0xff (f16 NaN pairs): a tile read before it is staged, or
     * staged short, turns the rows that see it into NaN */
    void *wsd = NULL;
    if (g_staged) {
        const size_t wsb = kt.attn_ws(1, c->n_head, hd, c->nkv);
        unsigned char *fill = (unsigned char *)xmalloc(wsb);
        memset(fill, 0xff, wsb);
        wsd = ct_upload(fill, wsb);
        free(fill);
    }
    /* the 16-bit copy of the output: padded rows, 0xfffe before the call (kept in the
     * padding) */
    const size_t ldo16 = (size_t)D + 3, no16 = (size_t)c->nq * ldo16;
    uint16_t *o16 = (uint16_t *)xmalloc(no16 * sizeof(uint16_t));
    for (size_t x = 0; x < no16; x++) o16[x] = 0xfffe;
    uint16_t *o16d = (uint16_t *)ct_upload(o16, no16 * sizeof(uint16_t));
    struct jk_attn_args a = {od, ldo, qd + (q - (qbuf ? qbuf : kvbuf)), ldq,
                             kvd + (k - kvbuf), ldk, kvd + (v - kvbuf), ldv,
                             c->nq, c->nkv, c->n_head, hd, scale, qpd, kpd, 1, wsd,
                             NULL, 0, JK_F16, NULL};
    kt.attn(&a);
    a.o = od2;
    a.o16 = o16d, a.ldo16 = ldo16, a.o16_type = g_o16_bf16 ? JK_BF16 : JK_F16;
    kt.attn(&a);
    ct_download_guarded(o, od, no);
    ct_download_guarded(o2, od2, no);
    ct_download(o16, o16d, no16 * sizeof(uint16_t));
    ct_free(o16d);

    /* the reference on the inputs as given; for the tensor cores also on copies of the
     * inputs rounded to f16 */
    const int mma = mma_path(c);
    float *orf = ca_alloc_guarded(no), *orf16 = mma ? ca_alloc_guarded(no) : NULL;
    struct jk_attn_args ar = {orf, ldo, q, ldq, k, ldk, v, ldv, c->nq, c->nkv, c->n_head, hd,
                              scale, qpos, kpos, 1, NULL, NULL, 0, JK_F16, NULL};
    kref.attn(&ar);
    float *q16 = NULL, *k16 = NULL, *v16 = NULL, *kv16 = NULL, *qb16 = NULL;
    if (mma) {
        kv16 = (float *)xmalloc(nkvb * sizeof(float));
        for (size_t x = 0; x < nkvb; x++) kv16[x] = round_f16(kvbuf[x]);
        /* the kernel rounds q * (scale log2 e) (f32 product, as attn.cu forms it): the
         * reference gets that f16 value divided back (one more f32 rounding, u) */
        const float s2 = scale * 1.4426950408889634f;
        float *qs = qbuf ? qbuf : kvbuf;
        const size_t nqs = qbuf ? nqb : nkvb;
        qb16 = (float *)xmalloc(nqs * sizeof(float));
        for (size_t x = 0; x < nqs; x++) qb16[x] = (float)((double)round_f16(qs[x] * s2) / s2);
        q16 = qb16 + (q - qs);
        k16 = kv16 + (k - kvbuf), v16 = kv16 + (v - kvbuf);
        ar.o = orf16, ar.q = q16, ar.k = k16, ar.v = v16;
        kref.attn(&ar);
    }

    struct worst w1 = {-1.0, 0, 0, 0, 0, 0, 0, 0}, w2 = w1;
    for (int h = 0; h < c->n_head; h++)
        for (int i = 0; i < c->nq; i++) {
            /* E, the spread R and the subnormal term over the visible keys of row i */
            double E = 0.0, smin = INFINITY, smax = -INFINITY, sub = 0.0, qa = 0.0;
            int nvis = 0;
            for (int d = 0; d < hd; d++) qa += fabs(q[(size_t)i * ldq + h * hd + d]);
            for (int j = 0; j < c->nkv; j++) {
                if (qpos && qpos[i] < kpos[j]) continue;
                double e = 0.0, s = 0.0, ka = 0.0;
                for (int d = 0; d < hd; d++) {
                    const double kd = k[(size_t)j * ldk + h * hd + d];
                    const double pr = (double)q[(size_t)i * ldq + h * hd + d] * kd;
                    e += fabs(pr), s += pr, ka += fabs(kd);
                }
                E = dmax(E, scale * e);
                sub = dmax(sub, scale * SUB * (qa + ka));
                smin = s * scale < smin ? s * scale : smin;
                smax = dmax(smax, s * scale);
                nvis++;
            }
            const double R = nvis ? smax - smin : 0.0, n = c->nkv;
            const double f32part =
                U * (2.0 * (1.45 * R + 4.0) + 4.0 * n + 2.0 * (n / 64.0 + 1.0) + 16.0);
            /* rel1: against the exact result (the header's bound); rel2 (tensor cores):
             * against the result for the f16-rounded inputs, where only the f32 logit
             * sums (E' <= E (1 + h)^2), P in f16 and the f32 parts remain */
            double rel1, rel2 = 0.0, abs0 = 1e-30;
            if (mma) {
                rel1 = expm1(2.0 * (E * (2.0 * H + H * H + (2.0 * hd + 10.0) * U) + sub)) +
                       2.0 * H + n * SUB + f32part;
                rel2 = expm1(2.0 * E * 1.001 * (2.0 * hd + 10.0) * U) + H + n * SUB + f32part;
                abs0 = SUB;
            } else {
                rel1 = expm1(2.0 * E * (hd + 8.0) * U) + f32part;
            }
            for (int e = 0; e < hd; e++) {
                double V = 0.0, V16 = 0.0;
                for (int j = 0; j < c->nkv; j++)
                    if (!qpos || qpos[i] >= kpos[j]) {
                        V = dmax(V, fabs(v[(size_t)j * ldv + h * hd + e]));
                        if (mma) V16 = dmax(V16, fabs(v16[(size_t)j * ldv + h * hd + e]));
                    }
                /* no visible key: exactly 0 */
                const size_t x = (size_t)i * ldo + h * hd + e;
                note(&w1, o[x], orf[x], nvis ? V * rel1 + abs0 : 0.0, i, h * hd + e);
                if (mma) note(&w2, o[x], orf16[x], nvis ? V16 * rel2 + abs0 : 0.0, i, h * hd + e);
            }
        }
    printf("  %-3s nq %3d nkv %3d heads %d hd %3d %-18s%s logit %4.1f: worst [%d,%d] err %.3g "
           "tol %.3g (%.3f of it)",
           mma ? "mma" : "f32", c->nq, c->nkv, c->n_head, hd, mask_name[c->mask],
           c->fused ? " fused" : "      ", (double)c->logit, w1.i, w1.e, w1.err, w1.tol, w1.r);
    if (mma)
        printf("; f16 inputs: worst [%d,%d] err %.3g tol %.3g (%.3f)", w2.i, w2.e, w2.err,
               w2.tol, w2.r);
    printf("%s\n", w1.bad || w2.bad ? "  FAIL" : "");
    if (w1.bad || w2.bad) {
        check_failed++;
        struct worst *w = w1.bad ? &w1 : &w2;
        printf("FAIL %zu of %zu outside tolerance%s; worst got %.9g ref %.9g\n", w->bad,
               (size_t)c->nq * D, w1.bad ? "" : " (against the f16-rounded inputs)", w->got,
               w->ref);
    }
    /* padding and guard bands stay NaN */
    int gaps = ca_guard_ok(o, no);
    for (int i = 0; i < c->nq; i++)
        for (size_t x = (size_t)D; x < ldo; x++) gaps &= isnan(o[(size_t)i * ldo + x]) != 0;

    CHECK(gaps, "attn wrote outside o (row padding or guard bands)");
    CHECK(!memcmp(o - CA_GUARD, o2 - CA_GUARD, (no + 2 * CA_GUARD) * sizeof(float)),
             "two identical attn calls gave different bits");
    /* o16: the f32 output rounded (runtime/dtype.h, nearest even), bit for bit; the
     * padding untouched */
    size_t bad16 = 0;
    for (int i = 0; i < c->nq; i++)
        for (size_t x = 0; x < ldo16; x++) {
            const uint16_t got = o16[(size_t)i * ldo16 + x];
            const float f = o[(size_t)i * ldo + x];
            if (x >= (size_t)D) bad16 += got != 0xfffe;
            else if (isnan(f))   /* any NaN of the type (CUDA's is 0x7fff) */
                bad16 += g_o16_bf16 ? (got & 0x7f80) != 0x7f80 || !(got & 0x7f)
                                    : (got & 0x7c00) != 0x7c00 || !(got & 0x3ff);
            else bad16 += got != (g_o16_bf16 ? f32_to_bf16(f) : f32_to_f16(f));
        }
    CHECK(bad16 == 0, "o16 (%s): %zu elements differ from the rounded f32 output",
          g_o16_bf16 ? "bf16" : "f16", bad16);
    free(o16);

    ct_free_guarded(od), ct_free_guarded(od2), ct_free(kvd);
    if (wsd) ct_free(wsd);
    if (qbuf) ct_free(qd);
    if (qpd) ct_free(qpd), ct_free(kpd);
    free(qbuf), free(kvbuf), free(qpos), free(kpos);
    ca_free_guarded(o), ca_free_guarded(o2), ca_free_guarded(orf);
    if (orf16) ca_free_guarded(orf16);
    free(kv16), free(qb16);
    return (int)(w1.bad + w2.bad);
}

/* NaN in one q element (query i0, head 0) and, in a second call, in one k element (key j0,
 * head 0, seen by every query: no mask): the row i0 of head 0, then every row of head 0,
 * must come out NaN and everything else finite, as the C reference and every CPU level give
 * (tests/checkasm/test_ops.c); a kernel that turns a NaN l into a zero row fails. nq 64 takes
 * the tensor cores (hd 64), nq 1 and 2 the f32 kernel, over one warp's keys or many. */
static void check_nonfinite(int nq, int nkv, int hd) {
    const int NH = 2, D = NH * hd;
    const size_t ldo = (size_t)D, nqb = (size_t)nq * D, nkb = (size_t)nkv * D;
    float *q = (float *)xmalloc(nqb * sizeof(float)), *k = (float *)xmalloc(nkb * sizeof(float));
    float *v = (float *)xmalloc(nkb * sizeof(float)), *o = (float *)xmalloc(nqb * sizeof(float));
    ca_fill(q, nqb, 1.0f), ca_fill(k, nkb, 1.0f), ca_fill(v, nkb, 1.0f);
    const int i0 = nq - 1, j0 = nkv / 2;
    void *ws = NULL;   /* the pipelined kernel runs only with its workspace */
    if (g_staged) {
        const size_t wsb = kt.attn_ws(1, NH, hd, nkv);
        void *fill = xmalloc(wsb);
        memset(fill, 0xff, wsb);
        ws = ct_upload(fill, wsb);
        free(fill);
    }
    for (int which = 0; which < 2; which++) {
        if (which == 0) q[(size_t)i0 * D + 3] = NAN;
        else q[(size_t)i0 * D + 3] = 0.5f, k[(size_t)j0 * D + 3] = NAN;
        float *qd = ct_upload_f(q, nqb), *kd = ct_upload_f(k, nkb), *vd = ct_upload_f(v, nkb);
        float *od = ct_upload_f(o, nqb);
        struct jk_attn_args a = {od, ldo, qd, (size_t)D, kd, (size_t)D, vd, (size_t)D, nq, nkv, NH, hd,
                                 1.0f / sqrtf((float)hd), NULL, NULL, 1, ws, NULL, 0, JK_F16, NULL};
        kt.attn(&a);
        ct_download(o, od, nqb * sizeof(float));
        int bad = 0;
        for (int i = 0; i < nq; i++)
            for (int e = 0; e < D; e++) {
                const int nan = e < hd && (which == 1 || i == i0);
                bad += nan ? !isnan(o[(size_t)i * D + e]) : !isfinite(o[(size_t)i * D + e]);
            }
        CHECK(!bad, "attn nq %d nkv %d hd %d, NaN in %s: %d outputs not as the formula gives", nq, nkv, hd,
              which ? "k" : "q", bad);
        ct_free(qd), ct_free(kd), ct_free(vd), ct_free(od);
    }
    if (ws) ct_free(ws);
    free(q), free(k), free(v), free(o);
}

/* A random case of the given kind: nq, nkv ragged in their range. */
static struct tcase rnd(int nq_lo, int nq_hi, int hd, int mask, int fused) {
    struct tcase c;
    memset(&c, 0, sizeof c);
    c.nq = ca_int(nq_lo, nq_hi);
    c.nkv = fused ? c.nq : ca_int(1, 200);
    c.n_head = ca_int(1, 4);
    c.hd = hd;
    c.mask = mask;
    c.fused = fused;
    static const int frs[] = {1, 8, 16, 47};
    c.fr = frs[ca_int(0, 3)];
    c.logit = ca_int(0, 3) == 0 ? 12.0f : 4.0f;
    return c;
}

int main(void) {
    struct jk_device *dev = ct_open("test_cuda_attn");
    ca_seed("test_cuda_attn");
    dev->init_kernels(dev, &kt, 0);
    jk_init_ref(&kref);
    CHECK(kt.attn != NULL, "the CUDA table has no attn slot");
    /* the staged tiles: f16 K and V of every head, keys rounded up to 64; none for
     * the head sizes the tensor cores do not take */
    CHECK(kt.attn_ws != NULL && kt.attn_ws(4, 3, 64, 1000) == (size_t)3 * 1024 * 64 * 4 &&
              kt.attn_ws(4, 2, 80, 64) == (size_t)2 * 64 * 80 * 4 && kt.attn_ws(4, 4, 24, 100) == 0,
          "attn_ws of the CUDA table: %zu %zu %zu", kt.attn_ws(4, 3, 64, 1000), kt.attn_ws(4, 2, 80, 64),
          kt.attn_ws(4, 4, 24, 100));
    if (!kt.attn) return ca_finish("test_cuda_attn");

    static const int mma_hd[] = {32, 64, 80, 96, 128};
    struct tcase cases[48];
    int n = 0;
    /* fixed shapes first: tile edges, the model layouts */
    cases[n++] = (struct tcase){64, 64, 2, 64, MASK_NONE, 2, 0, 4.0f};
    cases[n++] = (struct tcase){65, 65, 1, 32, MASK_FRAMES, 2, 16, 4.0f};
    cases[n++] = (struct tcase){200, 200, 2, 64, MASK_FRAMES, 2, 8, 4.0f};   /* skipped key tiles */
    cases[n++] = (struct tcase){150, 150, 1, 64, MASK_FRAMES, 2, 47, 4.0f};  /* edges mid-tile */
    cases[n++] = (struct tcase){130, 130, 2, 32, MASK_FRAMES, 1, 1, 4.0f};   /* a frame a token */
    cases[n++] = (struct tcase){193, 193, 1, 64, MASK_CAUSAL, 1, 0, 4.0f};
    cases[n++] = (struct tcase){150, 150, 2, 32, MASK_RANDOM, 0, 0, 4.0f};   /* a hidden block */
    cases[n++] = (struct tcase){16, 129, 1, 80, MASK_NONE, 0, 0, 24.0f};     /* rescales */
    cases[n++] = (struct tcase){1, 200, 4, 64, MASK_NONE, 0, 0, 4.0f};       /* pooler */
    cases[n++] = (struct tcase){1, 200, 2, 32, MASK_FRAMES, 0, 16, 12.0f};
    cases[n++] = (struct tcase){1, 2100, 2, 64, MASK_NONE, 0, 0, 4.0f};      /* 32 warps */
    cases[n++] = (struct tcase){2, 3137, 1, 128, MASK_FRAMES, 0, 256, 12.0f};
    cases[n++] = (struct tcase){1, 1, 1, 64, MASK_NONE, 0, 0, 4.0f};
    cases[n++] = (struct tcase){3, 3, 4, 64, MASK_CAUSAL, 1, 0, 4.0f};       /* LeWM: causal */
    cases[n++] = (struct tcase){15, 70, 2, 96, MASK_RANDOM, 0, 0, 4.0f};
    cases[n++] = (struct tcase){5, 40, 1, 200, MASK_NONE, 0, 0, 4.0f};      /* NPL 8 */
    cases[n++] = (struct tcase){2, 17, 1, 300, MASK_NONE, 0, 0, 4.0f};      /* NPL 16 */
    /* random shapes per head size and mask */
    for (int x = 0; x < 5; x++) {
        /* one draw per statement: argument order is unspecified, replays must not be */
        const int m1 = ca_int(0, 3), m2 = ca_int(0, 3), m3 = ca_int(0, 3);
        const int fused = ca_int(1, 2);
        cases[n++] = rnd(16, 200, mma_hd[x], m1, 0);
        cases[n++] = rnd(16, 200, mma_hd[x], m2, fused);
        cases[n++] = rnd(1, 15, mma_hd[x], m3, 0);
    }
    cases[n++] = rnd(1, 200, 24, MASK_FRAMES, 1);
    cases[n++] = rnd(1, 200, 40, MASK_RANDOM, 0);
    cases[n++] = rnd(1, 200, 24, MASK_NONE, 0);
    cases[n++] = rnd(1, 1, 64, MASK_FRAMES, 0);
    cases[n++] = rnd(1, 1, 80, MASK_NONE, 0);

    for (int x = 0; x < n; x++) {
        /* the random fill of a fused case needs nkv == nq; a frame case needs fr >= 1 */
        if (cases[x].fused) cases[x].nkv = cases[x].nq;
        if (cases[x].mask == MASK_FRAMES && cases[x].fr < 1) cases[x].fr = 16;
        if (mma_path(&cases[x])) {
            for (int v = 0; v < 6; v++) {
                const int w = v & 1 ? 8 : 4;
                g_staged = v == 2 || v == 3 || v == 4;
                g_o16_bf16 = (v + (v >= 4 ? x : 0)) % 2;   /* the pipelined kernel: both by x */
                if (v < 4) {
                    jkc_attn_force(w, g_staged);
                    printf("  (%d warps a block, %s)\n", w, g_staged ? "K and V staged once" : "no workspace");
                } else {
                    /* the pipelined kernel; without its workspace, the default kernels */
                    jkc_attn_force(0, 0);
                    jkc_kernels_force_pipe(1);
                    printf("  (JEPA_CUDA_KERNELS=pipe, %s)\n",
                           g_staged ? "the pipelined kernel" : "no workspace: the default kernels");
                }
                run_case(&cases[x]);
                jkc_kernels_force_pipe(-1);
            }
            jkc_attn_force(0, 0);
            g_staged = 0;
        } else {
            g_staged = x % 2;   /* the f32 kernel ignores the workspace */
            g_o16_bf16 = x % 2;
            run_case(&cases[x]);
            jkc_kernels_force_pipe(1);   /* the pipelined choice falls back to the f32 kernel */
            run_case(&cases[x]);
            jkc_kernels_force_pipe(-1);
            g_staged = 0;
        }
    }
    for (int pipe = 0; pipe < 2; pipe++) {
        jkc_kernels_force_pipe(pipe);
        g_staged = pipe;
        check_nonfinite(64, 64, 64);
        check_nonfinite(130, 70, 32);
        check_nonfinite(1, 200, 64);
        check_nonfinite(2, 2100, 64);
    }
    jkc_kernels_force_pipe(-1);
    g_staged = 0;
    printf("  NaN in q and in k: 4 shapes, default and pipelined kernels\n");
    ct_close();
    return ca_finish("test_cuda_attn");
}
