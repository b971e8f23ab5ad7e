/* types.c — (to be written) */
#include "gguf/gguf.h"
