/* init_gemm_arm.c — installs the NEON matmul kernels (none yet). */
#include "kernels/arm/arm.h"

void jk_init_gemm_arm(struct jk_kernels *k, unsigned cpu_flags) {
    (void)k, (void)cpu_flags;
}
