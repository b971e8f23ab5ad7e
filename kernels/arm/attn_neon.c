/*
 * attn_neon.c — fused flash attention for NEON: the template kernels/x86/attn_tmpl.h
 * (ISA-independent, shared with x86) over the NEON layer (kernels/arm/ops_neon.h: 8 keys
 * x 12 queries register tiles in 32 q registers). Reached through the table
 * (kernels/arm/init_ops_arm.c). Tested by tests/checkasm/test_ops.c, timed by its --bench.
 */
#include "kernels/arm/ops_arm.h"
#include "kernels/arm/ops_neon.h"

#define JK_SFX(name) name##_neon
#include "kernels/x86/attn_tmpl.h"
