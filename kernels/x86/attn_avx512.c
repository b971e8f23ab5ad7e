/*
 * attn_avx512.c — fused flash attention for AVX-512 (F/BW/VL/DQ): the template
 * kernels/x86/attn_tmpl.h over the AVX-512 layer (kernels/x86/ops_avx512.h: 8 keys x 48
 * queries register tiles in 32 zmm). Compiled with the AVX-512 flags, or against SIMDe
 * for checkasm_ops_avx512emu; reached only through the table (kernels/x86/init_ops_x86.c).
 * Tested by tests/checkasm/test_ops.c.
 */
#include "kernels/x86/ops_avx512.h"
#include "kernels/x86/ops_x86.h"

#define JK_SFX(name) name##_avx512
#include "kernels/x86/attn_tmpl.h"
