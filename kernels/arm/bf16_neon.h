/*
 * bf16_neon.h — f32 -> bf16 rounding on NEON vectors for the bf16 precision tier's packing
 * (gemm_pairs.h for the matmul, attn_neon_bf16.c for the attention): round to nearest even
 * exactly as runtime/dtype.h's f32_to_bf16 does (NaN stays a quiet NaN), in integer
 * arithmetic so that FPCR's rounding mode and flush-to-zero bits cannot change it (BFCVT
 * would follow them). A bf16 pair, the operand of BFDOT, is one uint32: the first value's
 * bf16 in the low half, the second's in the high half.
 */
#ifndef JEPA_KERNELS_ARM_BF16_NEON_H
#define JEPA_KERNELS_ARM_BF16_NEON_H

#include <arm_neon.h>

/* 4 lanes rounded to bf16 (nearest even; NaN quieted), each in the high half of its lane. */
static inline __attribute__((always_inline)) uint32x4_t bf16_hi4(float32x4_t v) {
    const uint32x4_t u = vreinterpretq_u32_f32(v);
    const uint32x4_t lsb = vandq_u32(vshrq_n_u32(u, 16), vdupq_n_u32(1));
    const uint32x4_t r = vaddq_u32(u, vaddq_u32(vdupq_n_u32(0x7fff), lsb));
    const uint32x4_t mag = vandq_u32(u, vdupq_n_u32(0x7fffffff));
    const uint32x4_t nan = vcgtq_u32(mag, vdupq_n_u32(0x7f800000));
    return vbslq_u32(nan, vorrq_u32(u, vdupq_n_u32(0x00400000)), r);
}

/* 8 consecutive values (lo: 0..3, hi: 4..7) -> their 4 pairs in order: the high halves of
 * the 8 lanes, side by side (uzp2 takes the odd 16-bit elements). */
static inline __attribute__((always_inline)) float32x4_t pairs8(float32x4_t lo, float32x4_t hi) {
    const uint16x8_t l16 = vreinterpretq_u16_u32(bf16_hi4(lo));
    const uint16x8_t h16 = vreinterpretq_u16_u32(bf16_hi4(hi));
    return vreinterpretq_f32_u16(vuzp2q_u16(l16, h16));
}

/* Lane by lane, the pair (a[i], b[i]): a's bf16 in the low half (sri inserts a's high half
 * shifted down under b's). */
static inline __attribute__((always_inline)) uint32x4_t pairs_ab(float32x4_t a, float32x4_t b) {
    return vsriq_n_u32(bf16_hi4(b), bf16_hi4(a), 16);
}

#endif
