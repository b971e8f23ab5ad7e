/* init_arm.c — the aarch64 rung of the kernel ladder: NEON (always present on aarch64). */
#include "kernels/arm/arm.h"

void jk_init_arm(struct jk_kernels *k, unsigned cpu_flags) {
    jk_init_gemm_arm(k, cpu_flags);
    jk_init_ops_arm(k, cpu_flags);
}
