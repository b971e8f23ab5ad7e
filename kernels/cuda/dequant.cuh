/*
 * dequant.cuh — ggml's block formats decoded on the device, four weights at a time, to
 * the f32 values kernels/ref/dequant_ref.c defines (gguf-py's dequantize, bit for bit).
 *
 * jkc_decode4<DT>(row, k, v): weights k .. k + 3 of a weight row in format DT, k a
 * multiple of 4 (so the four never straddle a block: blocks are 32 or 256 weights, the
 * q6_K sub-blocks 16). Block layouts: runtime/dtype.h. Every field is read byte by byte:
 * blocks are 18 to 210 bytes long, so nothing in them is aligned.
 *
 * The formulas are the reference's. Each product of a scale and a code is exact in f32
 * (at most 24 significant bits, dequant_ref.c), so the one rounding is the final add or
 * subtract, and nvcc contracting `d * q + m` into an fma gives the same bits.
 */
#ifndef JEPA_KERNELS_CUDA_DEQUANT_CUH
#define JEPA_KERNELS_CUDA_DEQUANT_CUH

#include "kernels/cuda/compat.cuh"

extern "C" {
#include "kernels/kernels.h"
#include "runtime/dtype.h"   /* the block sizes Q*_BYTES, QK8_0, QK_K */
}

namespace jkc_dq {

__device__ __forceinline__ float h16(const unsigned char *p) {
    return jkc_f16_to_f32((uint16_t)(p[0] | p[1] << 8));
}

__device__ __forceinline__ uint32_t u32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Nibble i (0 .. 31) of a 32-weight block's 16 code bytes: low nibbles first. */
__device__ __forceinline__ int nib32(const unsigned char *qs, int j) {
    return j < 16 ? qs[j] & 15 : qs[j - 16] >> 4;
}

/* ggml's get_scale_min_k4 (runtime/dtype.h, jr_scale_min_k4) */
__device__ __forceinline__ void scale_min_k4(const unsigned char *sc, int s, int &scale, int &mn) {
    if (s < 4) {
        scale = sc[s] & 63;
        mn = sc[s + 4] & 63;
    } else {
        scale = (sc[s + 4] & 0x0f) | ((sc[s - 4] >> 6) << 4);
        mn = (sc[s + 4] >> 4) | ((sc[s] >> 6) << 4);
    }
}

} // namespace jkc_dq

template <int DT>
__device__ __forceinline__ void jkc_decode4(const unsigned char *__restrict__ row, int k, float v[4]) {
    using namespace jkc_dq;
    if constexpr (DT == JK_Q8_0) {
        const unsigned char *b = row + (size_t)(k / 32) * 34;
        const float d = h16(b);
        const int j = k % 32;
        JKC_UNROLL
        for (int e = 0; e < 4; e++) v[e] = d * (float)(int8_t)b[2 + j + e];
    } else if constexpr (DT == JK_Q4_0 || DT == JK_Q4_1) {
        constexpr int BYTES = DT == JK_Q4_0 ? Q4_0_BYTES : Q4_1_BYTES, QS = DT == JK_Q4_0 ? 2 : 4;
        const unsigned char *b = row + (size_t)(k / 32) * BYTES;
        const float d = h16(b);
        const int j = k % 32;
        JKC_UNROLL
        for (int e = 0; e < 4; e++) {
            const int q = nib32(b + QS, j + e);
            if constexpr (DT == JK_Q4_0) v[e] = d * (float)(q - 8);
            else v[e] = d * (float)q + h16(b + 2);
        }
    } else if constexpr (DT == JK_Q5_0 || DT == JK_Q5_1) {
        constexpr int BYTES = DT == JK_Q5_0 ? Q5_0_BYTES : Q5_1_BYTES, QH = DT == JK_Q5_0 ? 2 : 4;
        const unsigned char *b = row + (size_t)(k / 32) * BYTES;
        const float d = h16(b);
        const uint32_t qh = u32(b + QH);
        const int j = k % 32;
        JKC_UNROLL
        for (int e = 0; e < 4; e++) {
            const int q = nib32(b + QH + 4, j + e) | (int)((qh >> (j + e)) & 1) << 4;
            if constexpr (DT == JK_Q5_0) v[e] = d * (float)(q - 16);
            else v[e] = d * (float)q + h16(b + 2);
        }
    } else if constexpr (DT == JK_Q4_K || DT == JK_Q5_K) {
        constexpr int BYTES = DT == JK_Q4_K ? Q4_K_BYTES : Q5_K_BYTES;
        const unsigned char *b = row + (size_t)(k / QK_K) * BYTES;
        const unsigned char *qs = b + (DT == JK_Q5_K ? 48 : 16);
        const int j = k % QK_K, s = j / 32, l = j % 32;
        int sc, mn;
        scale_min_k4(b + 4, s, sc, mn);
        const float d1 = h16(b) * (float)sc, m1 = h16(b + 2) * (float)mn;
        JKC_UNROLL
        for (int e = 0; e < 4; e++) {
            const int byte = qs[32 * (s / 2) + l + e];
            int q = s % 2 ? byte >> 4 : byte & 15;
            if constexpr (DT == JK_Q5_K) q |= ((b[16 + l + e] >> s) & 1) << 4;
            v[e] = d1 * (float)q - m1;
        }
    } else if constexpr (DT == JK_Q6_K) {
        const unsigned char *b = row + (size_t)(k / QK_K) * Q6_K_BYTES;
        const int j = k % QK_K, h = j / 128, g = (j % 128) / 32, l = j % 32;
        const float ds = h16(b + 208) * (float)(int8_t)b[192 + j / 16];
        const unsigned char *ql = b + 64 * h + 32 * (g & 1) + l, *qh = b + 128 + 32 * h + l;
        JKC_UNROLL
        for (int e = 0; e < 4; e++) {
            const int nib = g < 2 ? ql[e] & 15 : ql[e] >> 4;
            const int q = (nib | ((qh[e] >> (2 * g)) & 3) << 4) - 32;
            v[e] = ds * (float)q;
        }
    } else {
        static_assert(DT >= JK_Q8_0 && DT < JK_NDTYPES, "jkc_decode4: not a block format");
    }
}

/* jkc_codes8<DT>(row, k, q): the integer codes q[0..7] of weights k .. k + 7 of a weight
 * row in block format DT (k a multiple of 8: the eight share one block and, for q6_K, one
 * 16-weight sub-block); jkc_scale_offset<DT>(row, k, d, m): the scale d and offset m of
 * the block (K-quants: sub-block) holding weight k, with which each weight is d * q + m
 * in exact arithmetic: m = 0 where the format has none (q8_0, q4_0, q5_0, q6_K, whose
 * codes are centred: |q| <= 128), the min of q4_1 / q5_1, and for q4_K / q5_K d = d * sc
 * and m = -(dmin * mn), products exact in f32 (dequant_ref.c). jkc_decode4 gives the same
 * weights rounded once to f32; gemm_pipe.cu's block kernel keeps d, m and q apart (the
 * codes are exact in f16). */
template <int DT>
__device__ __forceinline__ void jkc_codes8(const unsigned char *__restrict__ row, int k, int q[8]) {
    using namespace jkc_dq;
    if constexpr (DT == JK_Q8_0) {
        const unsigned char *b = row + (size_t)(k / 32) * Q8_0_BYTES + 2 + k % 32;
        JKC_UNROLL
        for (int e = 0; e < 8; e++) q[e] = (int8_t)b[e];
    } else if constexpr (DT == JK_Q4_0 || DT == JK_Q4_1) {
        constexpr int BYTES = DT == JK_Q4_0 ? Q4_0_BYTES : Q4_1_BYTES, QS = DT == JK_Q4_0 ? 2 : 4;
        const unsigned char *b = row + (size_t)(k / 32) * BYTES;
        JKC_UNROLL
        for (int e = 0; e < 8; e++) q[e] = nib32(b + QS, k % 32 + e) - (DT == JK_Q4_0 ? 8 : 0);
    } else if constexpr (DT == JK_Q5_0 || DT == JK_Q5_1) {
        constexpr int BYTES = DT == JK_Q5_0 ? Q5_0_BYTES : Q5_1_BYTES, QH = DT == JK_Q5_0 ? 2 : 4;
        const unsigned char *b = row + (size_t)(k / 32) * BYTES;
        const uint32_t qh = u32(b + QH) >> (k % 32);
        JKC_UNROLL
        for (int e = 0; e < 8; e++)
            q[e] = (nib32(b + QH + 4, k % 32 + e) | (int)((qh >> e) & 1) << 4) -
                   (DT == JK_Q5_0 ? 16 : 0);
    } else if constexpr (DT == JK_Q4_K || DT == JK_Q5_K) {
        constexpr int BYTES = DT == JK_Q4_K ? Q4_K_BYTES : Q5_K_BYTES;
        const unsigned char *b = row + (size_t)(k / QK_K) * BYTES;
        const int j = k % QK_K, s = j / 32, l = j % 32;
        const unsigned char *qs = b + (DT == JK_Q5_K ? 48 : 16) + 32 * (s / 2) + l;
        JKC_UNROLL
        for (int e = 0; e < 8; e++) {
            q[e] = s % 2 ? qs[e] >> 4 : qs[e] & 15;
            if constexpr (DT == JK_Q5_K) q[e] |= ((b[16 + l + e] >> s) & 1) << 4;
        }
    } else if constexpr (DT == JK_Q6_K) {
        const unsigned char *b = row + (size_t)(k / QK_K) * Q6_K_BYTES;
        const int j = k % QK_K, h = j / 128, g = (j % 128) / 32, l = j % 32;
        const unsigned char *ql = b + 64 * h + 32 * (g & 1) + l, *qh = b + 128 + 32 * h + l;
        JKC_UNROLL
        for (int e = 0; e < 8; e++)
            q[e] = ((g < 2 ? ql[e] & 15 : ql[e] >> 4) | ((qh[e] >> (2 * g)) & 3) << 4) - 32;
    } else {
        static_assert(DT >= JK_Q8_0 && DT < JK_NDTYPES, "jkc_codes8: not a block format");
    }
}

template <int DT>
__device__ __forceinline__ void jkc_scale_offset(const unsigned char *__restrict__ row, int k,
                                                 float &d, float &m) {
    using namespace jkc_dq;
    constexpr int QK = DT >= JK_Q4_K ? QK_K : 32;
    constexpr int BYTES = DT == JK_Q8_0 ? Q8_0_BYTES : DT == JK_Q4_0 ? Q4_0_BYTES
                        : DT == JK_Q4_1 ? Q4_1_BYTES : DT == JK_Q5_0 ? Q5_0_BYTES
                        : DT == JK_Q5_1 ? Q5_1_BYTES : DT == JK_Q4_K ? Q4_K_BYTES
                        : DT == JK_Q5_K ? Q5_K_BYTES : Q6_K_BYTES;
    const unsigned char *b = row + (size_t)(k / QK) * BYTES;
    m = 0.0f;
    if constexpr (DT == JK_Q4_K || DT == JK_Q5_K) {
        int sc, mn;
        scale_min_k4(b + 4, k % QK_K / 32, sc, mn);
        d = h16(b) * (float)sc;
        m = -(h16(b + 2) * (float)mn);
    } else if constexpr (DT == JK_Q6_K) {
        d = h16(b + 208) * (float)(int8_t)b[192 + k % QK_K / 16];
    } else {
        d = h16(b);
        if constexpr (DT == JK_Q4_1 || DT == JK_Q5_1) m = h16(b + 2);
    }
}

#endif
