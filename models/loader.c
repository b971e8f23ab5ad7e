/* loader.c — (to be written) schema-v1 loader; see model.h. */
#include "models/model.h"
