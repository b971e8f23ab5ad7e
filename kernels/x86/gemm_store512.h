/*
 * gemm_store512.h — the epilogue of an AVX-512 matmul tile: accumulators c[mr][GT_NR]
 * (GT_NR = 32: two zmm per row) in memory -> Y, with the bias, GELU and residual add of
 * the microkernel's mode (gemm_tmpl.h's GT_FIRST / GT_LAST / GT_EPI), full 16-column
 * halves in 512 bits, partial ones through 256-bit AVX2 masks. Shared by the register
 * microkernel (gemm_avx512.c) and the tile one (gemm_amx.c), so both tiers' epilogues are
 * the same code. Include after gemm_tmpl.h, gemm_x86.h and a 16-lane vector layer
 * (vec_avx512.h); only intrinsics SIMDe implements (the *_avx512emu and tile model tests).
 */
#ifndef JEPA_KERNELS_X86_GEMM_STORE512_H
#define JEPA_KERNELS_X86_GEMM_STORE512_H

#if GT_NR != 32
#error "gemm_store512.h stores tiles of 32 columns"
#endif

static ALWAYS_INLINE __m256 lo256(__m512 v) { return _mm512_castps512_ps256(v); }
static ALWAYS_INLINE __m256 hi256(__m512 v) {
    return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}

/* 8 columns (nr valid, 1..8) of a partial tile, through AVX2 masks. */
static ALWAYS_INLINE void store8_partial(float *y, __m256 acc, __m256 bv, int nr, int mode) {
    const enum jk_epilogue epi = GT_EPI(mode);
    const int last = mode & GT_LAST, load = !(mode & GT_FIRST) || epi == JK_EPI_ADD;
    if (nr <= 0) return;
    const __m256i m = lane_mask(nr);
    if (last) acc = _mm256_add_ps(acc, bv);
    if (load) acc = _mm256_add_ps(_mm256_maskload_ps(y, m), acc);
    if (last && epi == JK_EPI_GELU) acc = gelu8(acc);
    _mm256_maskstore_ps(y, m, acc);
}

/* acc -> Y for 16 columns (nr of them valid) with the epilogue of `mode`; bv: bias. */
static ALWAYS_INLINE void store16(float *y, __m512 acc, __m512 bv, int nr, int mode) {
    const enum jk_epilogue epi = GT_EPI(mode);
    const int last = mode & GT_LAST, load = !(mode & GT_FIRST) || epi == JK_EPI_ADD;
    if (nr >= 16) {
        if (last) acc = _mm512_add_ps(acc, bv);
        if (load) acc = _mm512_add_ps(_mm512_loadu_ps(y), acc);
        if (last && epi == JK_EPI_GELU) acc = vf_gelu(acc);
        _mm512_storeu_ps(y, acc);
    } else if (nr > 0) {
        store8_partial(y, lo256(acc), lo256(bv), nr, mode);
        if (nr > 8) store8_partial(y + 8, hi256(acc), hi256(bv), nr - 8, mode);
    }
}

/* bias for 16 columns, nr of them valid (the rest 0) */
static ALWAYS_INLINE __m512 load_bias16(const float *b, int nr) {
    if (nr >= 16) return _mm512_loadu_ps(b);
    if (nr <= 0) return _mm512_setzero_ps();
    const __m256 lo = _mm256_maskload_ps(b, lane_mask(nr));
    const __m256 hi = nr > 8 ? _mm256_maskload_ps(b + 8, lane_mask(nr - 8)) : _mm256_setzero_ps();
    return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
}

/* The accumulators c of an mr x nr tile -> Y, with the epilogue of `mode`. */
static void tile_out(float c[GT_MR][GT_NR], float *y, size_t ldy, int mr, int nr,
                     const float *bias, int mode) {
    __m512 bv0 = _mm512_setzero_ps(), bv1 = _mm512_setzero_ps();
    if ((mode & GT_LAST) && bias) {
        bv0 = load_bias16(bias, nr);
        if (nr > 16) bv1 = load_bias16(bias + 16, nr - 16);
    }
    if ((mode & GT_LAST) && GT_EPI(mode) == JK_EPI_GELU && nr == GT_NR) {
        _Alignas(64) float bv[GT_NR];
        _mm512_store_ps(bv, bv0), _mm512_store_ps(bv + 16, bv1);
        gt_store_gelu(y, ldy, &c[0][0], bv, mr, !(mode & GT_FIRST));
        return;
    }
    for (int i = 0; i < mr; i++) {
        store16(y + (size_t)i * ldy, _mm512_load_ps(c[i]), bv0, nr, mode);
        if (nr > 16) store16(y + (size_t)i * ldy + 16, _mm512_load_ps(c[i] + 16), bv1, nr - 16, mode);
    }
}

#endif
