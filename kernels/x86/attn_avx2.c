/* attn_avx2.c — (to be written) */
#include "kernels/x86/x86.h"
