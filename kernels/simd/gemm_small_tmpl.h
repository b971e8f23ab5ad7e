/*
 * gemm_small_tmpl.h — the small-M matmul driver (M <= GT_SMALL_M rows), shared by every
 * SIMD level (x86/gemm_x86.h for AVX2 and AVX-512, arm/gemm_neon.c for NEON).
 *
 * The includer defines, before including it:
 *   small_tile(a, t, MT, NT, m, w, ldw, n, nn)  MT X rows (from m) against nn <= NT W rows
 *                                               of type t at w (stride ldw), columns n..
 *   row_to_f32(t, row, d, K)                    one W row widened to f32
 *   ALWAYS_INLINE, gt_min (gemm_tmpl.h)
 */
#ifndef JEPA_KERNELS_GEMM_SMALL_TMPL_H
#define JEPA_KERNELS_GEMM_SMALL_TMPL_H

/* Columns n0 .. n1 for all M rows. W rows go in blocks of ~64 KiB of f32, which stay in
 * L2 while every chunk of up to 3 X rows passes over them. With more than one chunk
 * (M > 3), f16 / bf16 / q8_0 blocks are first converted into the thread's scratch (each
 * weight converted once, not once per chunk); with one chunk they are converted in
 * registers. 1 X row -> 8 W rows per step (8 accumulators), 2-3 -> 4 (8-12). */
/* Every chunk of up to 3 X rows against W rows nb .. ne of type t at wb (stride ldwb). */
static ALWAYS_INLINE void small_rows(const struct jk_gemm_args *a, enum jk_dtype t,
                                     const uint8_t *wb, size_t ldwb, int nb, int ne) {
    for (int m = 0; m < a->M; m += 3) {
        const int mt = gt_min(3, a->M - m);
        for (int n = nb; n < ne;) {
            const uint8_t *w = wb + (size_t)(n - nb) * ldwb;
            if (mt == 1) {
                small_tile(a, t, 1, 8, m, w, ldwb, n, gt_min(8, ne - n));
                n += 8;
            } else if (mt == 2) {
                small_tile(a, t, 2, 4, m, w, ldwb, n, gt_min(4, ne - n));
                n += 4;
            } else {
                small_tile(a, t, 3, 4, m, w, ldwb, n, gt_min(4, ne - n));
                n += 4;
            }
        }
    }
}

static ALWAYS_INLINE void small_m(const struct jk_gemm_args *a, enum jk_dtype t, int n0, int n1,
                                  float *scratch, size_t nscratch) {
    const int K = a->K;
    int rb = (int)(65536 / ((size_t)K * 4)) & ~7;
    const int rmax = (int)(nscratch / (size_t)K) & ~7; /* >= 8: the slice holds >= 8 K */
    rb = rb < 8 ? 8 : rb > rmax ? rmax : rb;
    for (int nb = n0; nb < n1; nb += rb) {
        const int ne = gt_min(n1, nb + rb);
        /* the 4-6 bit formats are decoded a block at a time into the scratch at any M:
         * decoding 8 weights in registers costs them a sub-block's scale each time */
        if (t != JK_F32 && (a->M > 3 || t > JK_Q8_0)) {
            for (int n = nb; n < ne; n++) {
                const uint8_t *row = (const uint8_t *)a->w + (size_t)n * a->ldw;
                row_to_f32(t, row, scratch + (size_t)(n - nb) * K, K);
            }
            small_rows(a, JK_F32, (const uint8_t *)scratch, (size_t)K * sizeof(float), nb, ne);
        } else {
            small_rows(a, t, (const uint8_t *)a->w + (size_t)nb * a->ldw, a->ldw, nb, ne);
        }
    }
}

#endif
