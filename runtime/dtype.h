/*
 * dtype.h — scalar conversions between f32 and the 16-bit float formats, the q8_0
 * block layout, and the scan for a non-finite f32. Plain C, exact (round-to-nearest-even
 * on the way down), used by the reference kernels, the GGUF writer and the tests. SIMD
 * kernels convert with their own instructions (F16C, NEON fcvt) and are tested against
 * these.
 */
#ifndef JEPA_RUNTIME_DTYPE_H
#define JEPA_RUNTIME_DTYPE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "runtime/weight_types.h"

static inline uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float f32_from_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* Index of the first NaN or infinity in x[0, n), n if there is none. Blocks of 1024 get
 * an OR of "exponent all ones" (a loop without an early exit, which the compiler
 * vectorises: ~4x the element-wise isfinite loop on a 16-frame clip), and only a block
 * that has one is searched. Used on every input the library is given and every output
 * the CLI writes. */
static inline size_t f32_first_nonfinite(const float *x, size_t n) {
    for (size_t i0 = 0; i0 < n; i0 += 1024) {
        const size_t end = n - i0 < 1024 ? n : i0 + 1024;
        uint32_t hit = 0;
        for (size_t i = i0; i < end; i++) hit |= (~f32_bits(x[i]) & 0x7f800000u) ? 0u : 1u;
        if (hit)
            for (size_t i = i0; i < end; i++)
                if (!(~f32_bits(x[i]) & 0x7f800000u)) return i;
    }
    return n;
}

/* IEEE binary16 -> binary32, exact for every input (subnormals, inf, NaN). */
static inline float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f) return f32_from_bits(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        /* zero or subnormal: man * 2^-24 exactly */
        float f = (float)man * 5.9604644775390625e-8f;
        return sign ? -f : f;
    }
    return f32_from_bits(sign | ((exp + 112) << 23) | (man << 13));
}

/* binary32 -> binary16, round to nearest even; overflow to inf; NaN stays NaN. */
static inline uint16_t f32_to_f16(float f) {
    uint32_t u = f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000;
    uint32_t a = u & 0x7fffffffu;
    if (a >= 0x7f800000u) return (uint16_t)(sign | 0x7c00 | (a > 0x7f800000u ? 0x200 : 0));
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00);       /* rounds to >= 65520: inf */
    if (a < 0x38800000u) {                                        /* result subnormal or zero */
        if (a < 0x33000000u) return (uint16_t)sign;               /* < 2^-25: rounds to 0 */
        uint32_t e = a >> 23, m = (a & 0x7fffff) | 0x800000;
        uint32_t shift = 126 - e;                                 /* 14..24 */
        uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = a + 0xfffu + ((a >> 13) & 1);                    /* round to nearest even */
    return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
}

/* bfloat16 is the top half of a binary32. */
static inline float bf16_to_f32(uint16_t h) { return f32_from_bits((uint32_t)h << 16); }
static inline uint16_t f32_to_bf16(float f) {
    uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

/* q8_0: blocks of 32 weights = one f16 scale d + 32 int8 q; w = d * q. */
#define QK8_0 32
struct block_q8_0 {
    uint16_t d;
    int8_t qs[QK8_0];
};
#ifdef __cplusplus   /* the CUDA kernels include this file for the block sizes */
static_assert(sizeof(struct block_q8_0) == Q8_0_BYTES, "q8_0 block is 34 bytes");
#else
_Static_assert(sizeof(struct block_q8_0) == Q8_0_BYTES, "q8_0 block is 34 bytes");
#endif

/* ggml's 4-6 bit block formats: their byte layouts and sizes (Q4_0_BYTES, ...) are in
 * the table of weight types (decoded by kernels/ref/dequant_ref.c, written by
 * runtime/quant.c). QK_K: weights of a K-quant super-block. */
#define QK_K 256

/* The 6-bit scale and min of sub-block s (0 .. 7) of a q4_K / q5_K super-block, from its
 * 12 scale bytes (ggml's get_scale_min_k4): for s < 4 the low six bits of sc[s] and
 * sc[s + 4]; for s >= 4 the low (scale) or high (min) nibble of sc[s + 4] with the top two
 * bits of sc[s - 4] (scale) or sc[s] (min) above it. */
static inline void jr_scale_min_k4(const uint8_t *sc, int s, int *scale, int *min) {
    if (s < 4) {
        *scale = sc[s] & 63;
        *min = sc[s + 4] & 63;
    } else {
        *scale = (sc[s + 4] & 0x0f) | ((sc[s - 4] >> 6) << 4);
        *min = (sc[s + 4] >> 4) | ((sc[s] >> 6) << 4);
    }
}

/* Bytes of one block of block type t (enum jk_dtype), 0 for the float types and anything
 * else. */
static inline size_t jr_block_bytes(int t) {
    switch (t) {
#define JR_BLOCK_BYTES(a, name, NAME, id, gguf, block, bytes, ...) \
    case JK_##NAME: return block > 1 ? bytes : 0;
    JR_WEIGHT_TYPES(JR_BLOCK_BYTES, )
#undef JR_BLOCK_BYTES
    default: return 0;
    }
}

#endif
