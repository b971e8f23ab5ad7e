/*
 * attn_avx2.c — fused flash attention for AVX2 + FMA: the template kernels/x86/attn_tmpl.h
 * over the AVX2 layer (kernels/x86/ops_avx2.h: 4 keys x 24 queries register tiles in
 * 16 ymm). Compiled with -mavx2 -mfma -mf16c; reached only through the table
 * (kernels/x86/init_ops_x86.c). Tested by tests/checkasm/test_ops.c, timed by its --bench.
 */
#include "kernels/x86/ops_avx2.h"
#include "kernels/x86/ops_x86.h"

#define JK_SFX(name) name##_avx2
#include "kernels/x86/attn_tmpl.h"
