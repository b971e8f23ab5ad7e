/* attn_avx512.c — (to be written) */
#include "kernels/x86/x86.h"
