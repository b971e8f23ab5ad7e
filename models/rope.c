/* rope.c — (to be written) see rope.h */
#include "models/rope.h"
