/*
 * gemm_tmpl.h — the ISA-independent half of the fast matmul slots
 * Y = epi(X . W^T + b) (kernels/kernels.h, struct jk_gemm_args): cache blocking, the
 * thread split, the workspace layout and the shared constants of the GELU epilogue.
 * It is a template, #included once by each ISA file (kernels/x86/gemm_avx2.c,
 * kernels/x86/gemm_avx512.c, kernels/arm/gemm_neon.c), which first defines
 *
 *   GT_MR, GT_NR          the register tile of its microkernel (rows of Y x columns of Y)
 *   GT_KC, GT_MC, GT_NC   the default cache blocks: at most KC of K, MC rows, NC columns
 *   GT_SMALL_M            M at or below which the weight-streaming (GEMV-like) path runs
 *   GEMM_ISA, GT_KIND     the build's name (avx512, ...) and its enum jk_gemm_kind
 * The blocks in force are data (kernels/tuning.h, struct jk_gemm_tuning): a tuning file's,
 * the built-in table's for this CPU, or these defaults; with these defaults the kernels
 * compute what they computed when the blocks were constants.
 * and after the #include defines
 *   gt_ukernel()          the MR x NR microkernel over packed panels, edges and the
 *                         epilogue inside (prototype below)
 *   gt_pack_a()           packs X rows into MR-row panels
 * and per weight dtype a pack_b (W rows -> f32 NR-column panels, converting on the way)
 * and a small_m kernel, which it hands to gt_run(). Everything here is static: each ISA
 * file gets its own copy compiled with its own flags.
 *
 * The algorithm (BLIS, flame/blis docs/KernelsHowTo.md; how-to-optimize-gemm), run by
 * each thread on its own rectangle of Y (rows m0..m1, columns n0..n1):
 *   for jc in n0..n1 by NC:             W panel of NC rows
 *     for pc in K by KC:                one K block
 *       pack W[jc.., pc..] -> Bp         KC x NC f32 in NR-column micro-panels (dtype -> f32
 *                                        here, so each weight is read and converted once
 *                                        per thread that needs it, not once per use; the
 *                                        next panel's bytes are prefetched meanwhile)
 *       for ic in m0..m1 by MC:
 *         pack X[ic.., pc..] -> Ap       MC x KC, MR-row micro-panels (where the ISA reads
 *                                        full tiles of X in place, only the last partial
 *                                        tile: GT_UKERNEL_X below)
 *         for jr in NC by NR: for ir in MC by MR:
 *           ukernel: Y[ir, jr] (+)= Ap[ir] . Bp[jr]   (MR x NR accumulators in registers)
 * Y itself holds the partial sums between K blocks; bias and the activation are applied
 * when the last K block is stored (mode GT_LAST), the residual add (JK_EPI_ADD) reads Y
 * from the first block on. M <= GT_SMALL_M skips all of this (small_m: W streamed once,
 * threads split the columns).
 *
 * Determinism: the K blocks depend on K alone (never on the thread count), every output
 * element is owned by one thread and summed in k order within a block, then block after
 * block. So the bits are the same for any nthreads (tests/checkasm/test_gemm.c checks
 * 1 vs 2 vs 3 threads).
 *
 * Threads: one OpenMP team per call; Y is split into tn x tm = nthreads rectangles, by
 * columns as far as each thread keeps >= 4 NR-panels (colp of the blocking) (then W is read once in all and
 * each thread packs all of X), by rows beyond that. Each thread has its own slice of ws
 * (Bp then Ap): nothing is shared, there are no barriers. (A BLIS-style shared Bp with
 * dynamically scheduled row blocks was measured against this:
 * docs/notes/kernel-tuning.md#gemm-threads.)
 */
#ifndef JEPA_KERNELS_GEMM_TMPL_H
#define JEPA_KERNELS_GEMM_TMPL_H

#include <stddef.h>
#include <stdint.h>
#ifdef JEPA_HAVE_OPENMP
#include <omp.h>
#endif

#include <string.h>

#include "kernels/kernels.h"
#include "kernels/ref/ref.h"
#include "kernels/tuning.h"
#include "runtime/dtype.h"

/* The GELU epilogue (JK_EPI_GELU) is vf_gelu of kernels/simd/math.h, over the
 * including file's vector layer; a full-width tile takes gt_store_gelu below. */

/* Weight k of a row, widened to f32: the scalar tail of every ISA's weight packing and
 * small-M kernel (their vector loads widen 8 at a time). */
static inline __attribute__((always_inline)) float gt_weight1(enum jk_dtype t, const uint8_t *row, int k) {
    uint16_t h;
    float f;
    switch (t) {
    case JK_F16: memcpy(&h, row + 2 * (size_t)k, 2); return f16_to_f32(h);
    case JK_BF16: memcpy(&h, row + 2 * (size_t)k, 2); return bf16_to_f32(h);
    case JK_Q8_0: {
        const uint8_t *blk = row + (size_t)(k / QK8_0) * sizeof(struct block_q8_0);
        memcpy(&h, blk, 2);
        return f16_to_f32(h) * (float)(int8_t)blk[2 + k % QK8_0];
    }
    case JK_F32: memcpy(&f, row + 4 * (size_t)k, 4); return f;
    default: jk_dequant_ref(t, row, k, 1, &f); return f;   /* q4_0 .. q6_K */
    }
}

/* The bf16 precision tier's operand (kernels/x86/gemm_pairs.h, kernels/arm/gemm_pairs.h):
 * two values rounded to bf16 as runtime/dtype.h's f32_to_bf16 does, lo in the low half of
 * the uint32, hi in the high half. The scalar tail of the vector packings. */
static inline __attribute__((always_inline)) uint32_t gt_pair1(float lo, float hi) {
    return (uint32_t)f32_to_bf16(lo) | (uint32_t)f32_to_bf16(hi) << 16;
}

/* Weights k and k + 1 of a row as one pair (k + 1 == kend: 0 in the high half). */
static inline __attribute__((always_inline)) uint32_t gt_weight_pair(enum jk_dtype t,
                                                                     const uint8_t *row, int k,
                                                                     int kend) {
    return gt_pair1(gt_weight1(t, row, k), k + 1 < kend ? gt_weight1(t, row, k + 1) : 0.0f);
}

#endif /* JEPA_KERNELS_GEMM_TMPL_H */

/* ---- the template proper (needs the GT_* parameters of the including file) ---------- */
#if !defined(GT_MR) || !defined(GT_NR) || !defined(GT_KC) || !defined(GT_MC) || !defined(GT_NC) || \
    !defined(GT_SMALL_M) || !defined(GEMM_ISA) || !defined(GT_KIND)
#error "define GT_MR, GT_NR, GT_KC, GT_MC, GT_NC, GT_SMALL_M, GEMM_ISA and GT_KIND before including gemm_tmpl.h"
#endif
#if GT_KC % 8 || GT_MC % GT_MR || GT_NC % GT_NR || GT_KC > JK_TUNE_KC_MAX || GT_MC > JK_TUNE_MC_MAX || \
    GT_NC > JK_TUNE_NC_MAX
#error "GT_KC must be a multiple of 8, GT_MC of GT_MR and GT_NC of GT_NR, each within kernels/tuning.h's limits"
#endif

/* This build's register tile and default blocking, for kernels/tuning.c (jk_gemm_kind_<isa>):
 * the generic fallback, and what a tuning set is validated against. */
#define GT_CAT_(a, b) a##b
#define GT_CAT(a, b) GT_CAT_(a, b)
#define GT_STR_(a) #a
#define GT_STR(a) GT_STR_(a)
#define GT_DEFAULT_TUNING {GT_KC, GT_MC, GT_NC, 1, 4, 4}
const struct jk_gemm_kind_info GT_CAT(jk_gemm_kind_, GEMM_ISA) = {GT_STR(GEMM_ISA), GT_MR, GT_NR,
                                                                  GT_DEFAULT_TUNING};

/* t inside the limits for this build (kernels/tuning.h; the same test as
 * jk_gemm_tuning_valid, inline for the per-call check). */
static inline int gt_tuning_ok(const struct jk_gemm_tuning *t) {
    return t->kc >= 8 && t->kc <= JK_TUNE_KC_MAX && t->kc % 8 == 0 && t->mc >= GT_MR &&
           t->mc <= JK_TUNE_MC_MAX && t->mc % GT_MR == 0 && t->nc >= GT_NR && t->nc <= JK_TUNE_NC_MAX &&
           t->nc % GT_NR == 0 && (t->ahead == 0 || t->ahead == 1) && t->colp >= 1 &&
           t->colp <= JK_TUNE_SPLIT_MAX && t->rowt >= 1 && t->rowt <= JK_TUNE_SPLIT_MAX;
}

/* The blocking of a call: a->tune where given and valid (not with pre-packed W, whose
 * K blocks are those of the blocking in force), else the one in force, else (never set or
 * invalid) the defaults. */
static inline const struct jk_gemm_tuning *gt_tuning(const struct jk_gemm_args *a) {
    static const struct jk_gemm_tuning def = GT_DEFAULT_TUNING;
    if (a && a->tune && !a->w_packed && gt_tuning_ok(a->tune)) return a->tune;
    return gt_tuning_ok(&jk_tune.gemm[GT_KIND]) ? &jk_tune.gemm[GT_KIND] : &def;
}

/* Microkernel mode: which K block this is, and the epilogue. */
#define GT_FIRST 1     /* first K block: Y holds nothing of ours yet (unless JK_EPI_ADD) */
#define GT_LAST 2      /* last K block: add the bias, apply the activation */
#define GT_MODE(first, last, epi) ((first) | ((last) << 1) | ((int)(epi) << 2))
#define GT_EPI(mode) ((enum jk_epilogue)((mode) >> 2))

/* The JK_EPI_GELU epilogue of a full-width tile (GT_NR columns) at its last K block:
 * Y[i] = gelu(Y[i] + (c[i] + bias)) (Y[i] + only if `load`, i.e. after an earlier K block),
 * for mr rows of accumulators c [mr][GT_NR] in memory and bias: GT_NR floats (zeros
 * without a bias). Four vectors at a time through vf_gelu_n, whose interleaved chains
 * keep the FMA ports busier than one GELU after another, each waiting on the latency of
 * the last (docs/notes/kernel-tuning.md#gemm-gelu-epilogue); each lane gets the same
 * operations in the same order as the one-vector epilogue, so the bits do not change. */
static inline __attribute__((always_inline)) void gt_store_gelu(float *y, size_t ldy, const float *c,
                                                                const float *bias, int mr, int load) {
    enum { PER_ROW = GT_NR / VW };
    const int nv = mr * PER_ROW;
    for (int v0 = 0; v0 < nv; v0 += 4) {
        const int n = nv - v0 < 4 ? nv - v0 : 4;
        vf v[4];
        for (int j = 0; j < n; j++) {
            const int i = (v0 + j) / PER_ROW, col = (v0 + j) % PER_ROW * VW;
            v[j] = vf_add(vf_load(c + (size_t)i * GT_NR + col), vf_load(bias + col));
            if (load) v[j] = vf_add(vf_load(y + (size_t)i * ldy + col), v[j]);
        }
        switch (n) {
        case 4: vf_gelu_n(v, 4); break;
        case 3: vf_gelu_n(v, 3); break;
        case 2: vf_gelu_n(v, 2); break;
        default: vf_gelu_n(v, 1); break;
        }
        for (int j = 0; j < n; j++) {
            const int i = (v0 + j) / PER_ROW, col = (v0 + j) % PER_ROW * VW;
            vf_store(y + (size_t)i * ldy + col, v[j]);
        }
    }
}
#if GT_NR % VW
#error "GT_NR must be a multiple of the vector width"
#endif

/* Defined by the including file (after the #include):
 * gt_ukernel: Y[0..mr, 0..nr] (+)= A . B over kc, A: kc x MR (MR floats per k), B: kc x NR
 * (NR floats per k), then the epilogue of `mode`; bias: the entries for these columns, or
 * NULL. Rows >= mr and columns >= nr are computed from padding and never stored.
 * gt_pack_a: mc rows of X (row stride ldx) over kc into p[panel][k][MR]; rows past mc
 * in the last panel may hold anything. */
static void gt_ukernel(int kc, const float *a, const float *b, float *y, size_t ldy, int mr,
                       int nr, const float *bias, int mode);
static void gt_pack_a(float *p, const float *x, size_t ldx, int mc, int kc);

/* Optionally (the including file defines GT_UKERNEL_X to 1): gt_ukernel_x, the same as
 * gt_ukernel for a full tile (GT_MR rows) but reading its rows of X where they are, x the
 * tile's first row at k = 0 of the K block and ldx the row stride, instead of from a packed
 * panel. The same products are summed in the same order, so the bits are the same.
 * gt_block then leaves the full tiles of X unpacked (only a last partial tile is packed)
 * when gt_x_in_place(ldx) says the rows' addresses spread over the L1 sets. Packing X costs
 * a store per element, which a narrow matmul (LeWM's N = 192 to 768) amortises over few
 * FMAs; a tile's GT_MR rows read in place are GT_MR streams a row stride apart instead,
 * and at a stride that is a multiple of 4 KiB (K = 1024, 3072, 4096, 5120) all of them
 * fall into one set of a 4 KiB-aliased L1 (32 KiB, 8 ways, 64 sets of 64 B) and evict
 * each other; gt_x_in_place leaves those strides packed
 * (docs/notes/kernel-tuning.md#gemm-x-in-place). */
#ifndef GT_UKERNEL_X
#define GT_UKERNEL_X 0
#endif
#if GT_UKERNEL_X
static void gt_ukernel_x(int kc, const float *x, size_t ldx, const float *b, float *y, size_t ldy,
                         int nr, const float *bias, int mode);
#endif
static inline int gt_x_in_place(size_t ldx) {
    return GT_UKERNEL_X && (ldx * sizeof(float)) % 4096 != 0;
}

/* Pack nc weight rows (w = row 0, ldw bytes apart) over k0 .. k0+kc into f32 micro-panels
 * p[panel][k][NR]; rows past nc may hold anything (their columns are never stored). */
typedef void (*gt_pack_b_fn)(float *p, const uint8_t *w, size_t ldw, int nc, int k0, int kc);
/* The M <= GT_SMALL_M path for output columns n0 .. n1; scratch: this thread's slice of
 * ws, nscratch floats (at least 8 K). */
typedef void (*gt_small_fn)(const struct jk_gemm_args *a, int n0, int n1, float *scratch,
                            size_t nscratch);

static inline int gt_min(int a, int b) { return a < b ? a : b; }

/* Optionally (the including file defines them): what each thread of the packed path does
 * before its first microkernel call and after its last, e.g. load and release the tile
 * configuration of a tile microkernel (gemm_amx.c), which is per thread. */
#ifndef GT_THREAD_START
#define GT_THREAD_START() ((void)0)
#define GT_THREAD_END() ((void)0)
#endif

/* Floats a packed panel holds per k of its K block, for kc of K: kc (one f32 per k), or,
 * where the including file packs bf16 pairs (the bf16 tier, gemm_pairs.h), one float's
 * bytes per two k. Every K block but the last is even, so the blocks before k = pc take
 * GT_PACKED_K(pc). */
#ifndef GT_PACKED_K
#define GT_PACKED_K(kc) (kc)
#endif

/* The K block length for this K: K split into equal blocks of at most kc_max (the
 * blocking's kc), rounded up to a multiple of 8 (so a block of 32 or 256 never straddles an
 * 8-wide load). Depends on K and the blocking only, never on the thread count: this fixes
 * the order of every sum. */
static inline int gt_kc_step(int K, int kc_max) {
    int nb = (K + kc_max - 1) / kc_max;
    int kc = (K + nb - 1) / nb;
    return (kc + 7) & ~7;
}

/* Workspace: per thread a W panel (KC x NC) and an X block (MC x KC), at the blocking in
 * force (kernels/tuning.h, jk_gemm_thread_bytes, which jk_gemm_ws_tuned shares). */
static size_t gt_ws(int nthreads, int K) {
    return jk_gemm_ws_tuned(gt_tuning(NULL), nthreads, K);
}

/* Pre-packed W (kernels.h, gemm_prepack): per K block of gt_kc_step(K), the panels of all
 * N columns in order, [K block][panel][kc][NR]; the block at pc starts at float pc * Np
 * (Np: N rounded up to NR), and panel j of it at + j * NR * kc. A thread's block of
 * columns starting at jc (a multiple of NR) is then at pc * Np + jc * kc: the panels that
 * pack_b would have written, the same floats in the same order. */
static inline size_t gt_np(int N) { return (size_t)(N + GT_NR - 1) / GT_NR * GT_NR; }
static size_t gt_prepack_floats(int N, int K) {
    return N > 0 && K > 0 ? (size_t)GT_PACKED_K(K) * gt_np(N) : 0;
}
static void gt_prepack(gt_pack_b_fn pack_b, float *dst, const void *w, size_t ldw, int N, int K) {
    const int kstep = gt_kc_step(K, gt_tuning(NULL)->kc);
    for (int pc = 0; pc < K; pc += kstep)
        pack_b(dst + (size_t)GT_PACKED_K(pc) * gt_np(N), (const uint8_t *)w, ldw, N, pc,
               gt_min(kstep, K - pc));
}

/* The including file's pack_b_<dtype> functions by weight type, for its gemm_prepack. */
#define GT_PACK_B_ONE(a, name, NAME, ...) [JK_##NAME] = pack_b_##name,
#define GT_PACK_B_BY_TYPE {JR_WEIGHT_TYPES(GT_PACK_B_ONE, )}

/* ---- the next W panel, fetched while this one is used ----------------------------------
 * pack_b reads each weight once per call, from memory or L3 (a forward's weights do not
 * stay in the caches between calls): an f16 K block is 768 bytes of a row, at a row
 * stride of K, which the hardware prefetcher does not run far enough ahead on. So while
 * the microkernel works on one panel, gt_block asks for the bytes of the next one, a few
 * lines per microkernel call (prefetcht2 on x86; PLDL3KEEP on aarch64), and pack_b then
 * reads them from L2 / L3. Spread over the calls rather than in one burst per panel, and
 * at t2 rather than t0 or nta (tuned: docs/notes/kernel-tuning.md#gemm-panel-prefetch).
 * The first panel of a matmul is not fetched ahead (during the previous matmul it gained
 * nothing); within a call, the x86 pack_b fetches each next NR-row panel while it packs
 * one (gemm_x86.h). A prefetch changes no value: the bits are those of the kernel
 * without it. */

/* Bytes [*lo, *hi) of a row of weights of type t that hold weights k0 .. k0 + kc - 1
 * (whole blocks for the block formats). */
static inline void gt_row_span(enum jk_dtype t, int k0, int kc, size_t *lo, size_t *hi) {
    const int qk = jk_dtype_block(t);
    *lo = jk_row_bytes(t, k0 / qk * qk);
    *hi = jk_row_bytes(t, (k0 + kc + qk - 1) / qk * qk);
}

struct gt_ahead {
    const uint8_t *row;    /* the row being fetched */
    const uint8_t *at;     /* its next line, NULL when the panel is done */
    const uint8_t *end;    /* the end of its bytes */
    size_t ldw, lo, hi;    /* row stride; bytes [lo, hi) of every row */
    int rows_left;         /* rows after this one */
    int per_step;          /* lines per gt_ahead_step */
};

static inline void gt_ahead_row(struct gt_ahead *f) {
    f->at = (const uint8_t *)((uintptr_t)(f->row + f->lo) & ~(uintptr_t)63);
    f->end = f->row + f->hi;
}

/* The panel of `rows` weight rows from w (ldw bytes apart) over k0 .. k0 + kc, spread
 * over `steps` calls of gt_ahead_step. */
static inline void gt_ahead_start(struct gt_ahead *f, const uint8_t *w, size_t ldw, int rows,
                                  enum jk_dtype t, int k0, int kc, int steps) {
    gt_row_span(t, k0, kc, &f->lo, &f->hi);
    f->row = w;
    f->ldw = ldw;
    f->rows_left = rows - 1;
    const size_t lines = (size_t)rows * ((f->hi - f->lo + 63) / 64 + 1);
    const size_t st = (size_t)(steps > 0 ? steps : 1);
    f->per_step = (int)((lines + st - 1) / st);
    gt_ahead_row(f);
}

static inline void gt_ahead_step(struct gt_ahead *f) {
    for (int n = f->per_step; n > 0; n--) {
        __builtin_prefetch(f->at, 0, 1);
        f->at += 64;
        if (f->at >= f->end) {
            if (f->rows_left-- <= 0) {
                f->at = NULL;
                return;
            }
            f->row += f->ldw;
            gt_ahead_row(f);
        }
    }
}

/* One thread's rectangle Y[m0..m1, n0..n1], BLIS loops at blocking tu; ws: its slice. */
static void gt_block(const struct jk_gemm_args *a, const struct jk_gemm_tuning *tu, enum jk_dtype t,
                     gt_pack_b_fn pack_b, float *ws, int m0, int m1, int n0, int n1) {
    const int K = a->K, kstep = gt_kc_step(K, tu->kc), NC = tu->nc, MC = tu->mc;
    float *bp = ws;                                       /* [NC/NR][kc][NR] */
    float *ap = ws + (size_t)gt_min(kstep, tu->kc) * NC;  /* [MC/MR][kc][MR] */
    const uint8_t *w = (const uint8_t *)a->w;
    const int x_in_place = gt_x_in_place(a->ldx);
    for (int jc = n0; jc < n1; jc += NC) {
        const int nc = gt_min(NC, n1 - jc);
        for (int pc = 0; pc < K; pc += kstep) {
            const int kc = gt_min(kstep, K - pc), pk = GT_PACKED_K(kc);
            const int mode = GT_MODE(pc == 0, pc + kc == K, a->epi);
            const float *b = bp;
            struct gt_ahead ahead = {.at = NULL};
            if (a->w_packed) {
                b = a->w_packed + (size_t)GT_PACKED_K(pc) * gt_np(a->N) + (size_t)jc * pk;
            } else {
                pack_b(bp, w + (size_t)jc * a->ldw, a->ldw, nc, pc, kc);
                /* the next panel: this column block's next K block, or the next block's first */
                const int njc = pc + kc < K ? jc : jc + NC, npc = pc + kc < K ? pc + kc : 0;
                const int calls = (m1 - m0 + GT_MR - 1) / GT_MR * ((nc + GT_NR - 1) / GT_NR);
                if (njc < n1 && tu->ahead)
                    gt_ahead_start(&ahead, w + (size_t)njc * a->ldw, a->ldw, gt_min(NC, n1 - njc), t,
                                   npc, gt_min(kstep, K - npc), calls);
            }
            for (int ic = m0; ic < m1; ic += MC) {
                const int mc = gt_min(MC, m1 - ic);
                const float *x = a->x + (size_t)ic * a->ldx + pc;
                /* rows 0 .. in_place - 1 are read from X itself (gt_ukernel_x), the rest packed */
                const int in_place = x_in_place ? mc / GT_MR * GT_MR : 0;
                if (in_place < mc)
                    gt_pack_a(ap + (size_t)in_place * pk, x + (size_t)in_place * a->ldx, a->ldx,
                              mc - in_place, kc);
                for (int jr = 0; jr < nc; jr += GT_NR) {
                    const float *bias = a->bias ? a->bias + jc + jr : NULL;
                    float *y = a->y + (size_t)ic * a->ldy + (size_t)(jc + jr);
                    for (int ir = 0; ir < mc; ir += GT_MR) {
                        if (ahead.at) gt_ahead_step(&ahead);
#if GT_UKERNEL_X
                        if (ir < in_place) {
                            gt_ukernel_x(kc, x + (size_t)ir * a->ldx, a->ldx, b + (size_t)jr * pk,
                                         y + (size_t)ir * a->ldy, a->ldy, gt_min(GT_NR, nc - jr), bias,
                                         mode);
                            continue;
                        }
#endif
                        gt_ukernel(kc, ap + (size_t)ir * pk, b + (size_t)jr * pk,
                                   y + (size_t)ir * a->ldy, a->ldy, gt_min(GT_MR, mc - ir),
                                   gt_min(GT_NR, nc - jr), bias, mode);
                    }
                }
            }
        }
    }
}

/* [lo, hi) of n items split evenly in `parts`, part i, in units of `unit`. */
static inline void gt_split(int n, int unit, int parts, int i, int *lo, int *hi) {
    int units = (n + unit - 1) / unit;
    int u0 = (int)((long)units * i / parts), u1 = (int)((long)units * (i + 1) / parts);
    *lo = gt_min(n, u0 * unit);
    *hi = gt_min(n, u1 * unit);
}

/* Column parts: the largest divisor of nth that leaves every part >= colp NR-panels (4 by
 * default; 1 if none does); the rest of the team splits the rows. */
static inline int gt_col_parts(int N, int nth, int colp) {
    const int most = (N + colp * GT_NR - 1) / (colp * GT_NR);
    int tn = 1;
    for (int d = 1; d <= nth; d++)
        if (nth % d == 0 && d <= most) tn = d;
    return tn;
}

static void gt_run(const struct jk_gemm_args *a, enum jk_dtype t, gt_pack_b_fn pack_b, gt_small_fn small) {
    const int M = a->M, N = a->N;
    const int nt = a->nthreads > 0 ? a->nthreads : 1;
    if (M <= 0 || N <= 0 || a->K <= 0) return;
    (void)nt;
    uint8_t *base = (uint8_t *)(((uintptr_t)a->ws + 63) & ~(uintptr_t)63);
    const struct jk_gemm_tuning *tu = gt_tuning(a);
    const size_t slice = jk_gemm_thread_bytes(tu, a->K);
    if (M <= GT_SMALL_M) {
        /* Weight streaming: threads take contiguous column ranges (multiples of 8). */
#pragma omp parallel num_threads(nt)
        {
            int tid = 0, nth = 1;
#ifdef JEPA_HAVE_OPENMP
            tid = omp_get_thread_num();
            nth = omp_get_num_threads();
#endif
            int n0, n1;
            gt_split(N, 8, nth, tid, &n0, &n1);
            if (n0 < n1)
                small(a, n0, n1, (float *)(base + (size_t)tid * slice), slice / sizeof(float));
        }
        return;
    }
#pragma omp parallel num_threads(nt)
    {
        int tid = 0, nth = 1;
#ifdef JEPA_HAVE_OPENMP
        tid = omp_get_thread_num();
        nth = omp_get_num_threads();
#endif
        /* Pre-packed weights leave no packing for a column split to share, and a row split
         * keeps each thread's rows in its core's caches from one matmul (and LayerNorm) to
         * the next: rows, when every thread gets 4 row tiles or more. Without pre-packing
         * the column split stays: with rows each thread would pack every weight
         * (docs/notes/kernel-tuning.md#gemm-threads). */
        const int rows = a->w_packed && M >= tu->rowt * GT_MR * nth;
        const int tn = rows ? 1 : gt_col_parts(N, nth, tu->colp), tm = nth / tn;
        int m0, m1, n0, n1;
        gt_split(N, GT_NR, tn, tid % tn, &n0, &n1);
        gt_split(M, GT_MR, tm, tid / tn, &m0, &m1);
        if (m0 < m1 && n0 < n1) {
            GT_THREAD_START();
            gt_block(a, tu, t, pack_b, (float *)(base + (size_t)tid * slice), m0, m1, n0, n1);
            GT_THREAD_END();
        }
    }
}
