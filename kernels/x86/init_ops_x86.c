/* init_ops_x86.c — installs the x86 attention / RoPE / norm / element-wise kernels (none yet). */
#include "kernels/x86/x86.h"

void jk_init_ops_x86(struct jk_kernels *k, unsigned cpu_flags) {
    (void)k, (void)cpu_flags;
}
