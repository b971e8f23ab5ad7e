/*
 * ops_neon.c — RoPE, LayerNorm, erf-GELU, tanh-GELU, SiLU, softmax, residual add and
 * patchify for NEON: the template kernels/x86/ops_tmpl.h (ISA-independent, shared with
 * x86) over the NEON layer (kernels/arm/ops_neon.h). Reached through the table
 * (kernels/arm/init_ops_arm.c). Tested by tests/checkasm/test_ops.c.
 */
#include "kernels/arm/ops_arm.h"
#include "kernels/arm/ops_neon.h"

#define JK_SFX(name) name##_neon
#include "kernels/x86/ops_tmpl.h"
