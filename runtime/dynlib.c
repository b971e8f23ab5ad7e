/* dynlib.c — jr_dl_load (dynlib.h). */
#include "runtime/dynlib.h"

#include <dlfcn.h>
#include <stdio.h>

enum { DL_MAX_LIBS = 8 };

int jr_dl_load(const char *const *sonames, int nlibs, const struct jr_dlsym *syms, size_t nsyms,
               const char *what, char *err, size_t n) {
    void *lib[DL_MAX_LIBS];
    if (nlibs < 1 || nlibs > DL_MAX_LIBS) {
        snprintf(err, n, "%s: %d libraries to open (1 to %d)", what, nlibs, DL_MAX_LIBS);
        return -1;
    }
    for (int i = 0; i < nlibs; i++)
        if (!(lib[i] = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL))) {
            const char *why = dlerror();
            snprintf(err, n, "%s did not load (%s)", sonames[i], why ? why : "dlopen failed");
            return -1;
        }
    for (size_t s = 0; s < nsyms; s++) {
        const int l = syms[s].lib;
        void *p = l >= 0 && l < nlibs ? dlsym(lib[l], syms[s].name) : NULL;
        if (!p) {
            snprintf(err, n, "%s has no %s (not the %s this was built with)",
                     l >= 0 && l < nlibs ? sonames[l] : "?", syms[s].name, what);
            return -1;
        }
        *syms[s].slot = p;
    }
    return 0;
}
