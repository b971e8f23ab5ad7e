/* init_ops_arm.c — installs the NEON attention / RoPE / norm / element-wise kernels (none yet). */
#include "kernels/arm/arm.h"

void jk_init_ops_arm(struct jk_kernels *k, unsigned cpu_flags) {
    (void)k, (void)cpu_flags;
}
