/*
 * simd.h — the one place the x86 kernel files get their intrinsics from.
 *
 * Normally this is <immintrin.h>, and each *_avx2.c / *_avx512.c file is compiled with
 * its own -m flags (kernels/meson.build). With -DJEPA_SIMDE the AVX-512 files are built
 * instead against SIMDe (libsimde-dev, "SIMD Everywhere"), which implements the
 * _mm512_* intrinsics on top of AVX2: tests/checkasm/meson.build compiles
 * gemm_avx512.c and ops_avx512.c that way (with only -mavx2 -mfma
 * -mf16c) into checkasm_*_avx512emu, so the AVX-512 code paths are tested on machines
 * without AVX-512. Files that go through SIMDe must restrict themselves to the
 * intrinsics SIMDe 0.7.4 implements (no _mm512_cvtph_ps, _mm512_cvtepi32_ps,
 * _mm512_cvtepi8_epi32, masked loads/stores or _mm512_reduce_*; use the 256-bit AVX2
 * forms plus _mm512_insertf32x8 / _mm512_extractf64x4_pd instead).
 */
#ifndef JEPA_KERNELS_X86_SIMD_H
#define JEPA_KERNELS_X86_SIMD_H

#ifdef JEPA_SIMDE
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#include <simde/x86/f16c.h>
#include <simde/x86/fma.h>
#else
#include <immintrin.h>
#endif

#endif
