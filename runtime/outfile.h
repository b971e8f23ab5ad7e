/*
 * outfile.h — output files that are never seen half-written and cannot be redirected.
 *
 * jr_outfile_open creates the temporary beside the target with mkstemp: a random name
 * ".<name>.XXXXXX" in the target's directory, created with O_EXCL (a planted file or
 * symlink there makes it pick another name, never follow it), mode 0644. The caller
 * writes through o->f; jr_outfile_commit flushes, fsyncs, renames the temporary over the
 * target and fsyncs the directory; any failure there, or jr_outfile_abort, removes the
 * temporary, so the target is either the old file or the whole new one.
 *
 * A target that exists and is not a regular file (a device, a FIFO: `-o /dev/stdout`)
 * cannot be renamed over: with allow_direct it is written directly, otherwise refused.
 * Write errors (ENOSPC, EFBIG past RLIMIT_FSIZE once SIGXFSZ is ignored) come back as a
 * one-line JEPA_ERR_IO naming the target.
 *
 * Tested by tests/models/test_cli_run.sh (planted names beside the output, a full
 * disk stand-in through RLIMIT_FSIZE) and by every writer's tests.
 */
#ifndef JEPA_RUNTIME_OUTFILE_H
#define JEPA_RUNTIME_OUTFILE_H

#include <stdbool.h>
#include <stdio.h>

#include "runtime/error.h"

struct jr_outfile {
    FILE *f;          /* write here */
    char *path;       /* the target */
    char *tmp;        /* the temporary (NULL when written directly) */
};

jepa_status jr_outfile_open(struct jr_outfile *o, const char *path, bool allow_direct, struct jerr *e);
/* Finish: the target holds what was written (JEPA_OK), or is untouched (an error). */
jepa_status jr_outfile_commit(struct jr_outfile *o, struct jerr *e);
/* Give up: the temporary is removed, the target untouched. Safe on a closed outfile. */
void jr_outfile_abort(struct jr_outfile *o);

#endif
