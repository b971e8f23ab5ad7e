/*
 * ops_avx2.c — RoPE, LayerNorm, erf-GELU, tanh-GELU, SiLU, softmax, residual add and
 * patchify for AVX2 + FMA: the template kernels/x86/ops_tmpl.h over the AVX2 layer
 * (kernels/x86/ops_avx2.h). Compiled with -mavx2 -mfma -mf16c; reached only through the
 * table (kernels/x86/init_ops_x86.c). Tested by tests/checkasm/test_ops.c.
 */
#include "kernels/x86/ops_avx2.h"
#include "kernels/x86/ops_x86.h"

#define JK_SFX(name) name##_avx2
#include "kernels/x86/ops_tmpl.h"
