/* gguf_write.c — (to be written) */
#include "gguf/gguf.h"
