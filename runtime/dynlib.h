/*
 * dynlib.h — a library opened with dlopen at its first use instead of linked, so that
 * processes that never use it do not map it (FFmpeg for video, libmicrohttpd for the
 * server: docs/performance.md, "Memory").
 *
 * The caller keeps its functions in a struct of typed pointers, declared from the
 * library's own header (so a call that does not match the build's ABI does not compile),
 * and lists them as jr_dlsym entries. jr_dl_load opens the libraries and fills every
 * pointer, or says which library or symbol is missing.
 */
#ifndef JEPA_RUNTIME_DYNLIB_H
#define JEPA_RUNTIME_DYNLIB_H

#include <stddef.h>

struct jr_dlsym {
    int lib;             /* index into the sonames of jr_dl_load */
    const char *name;    /* the symbol */
    void **slot;         /* where its address goes */
};

/* dlopen each of sonames[0 .. nlibs) in order (RTLD_NOW | RTLD_LOCAL; the handles stay
 * open for the life of the process), then resolve every entry of syms in its library.
 * 0 when all are there. Otherwise -1 and one line in err (n bytes): "<soname> did not load
 * (<dlerror>)" or "<soname> has no <symbol> (not the <what> this was built with)". Not
 * thread-safe: call it under a once-guard or from one thread. */
int jr_dl_load(const char *const *sonames, int nlibs, const struct jr_dlsym *syms, size_t nsyms,
               const char *what, char *err, size_t n);

#endif
