/* outfile.c — see outfile.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* mkostemp */
#endif
#include "runtime/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void clear(struct jr_outfile *o) {
    free(o->path);
    free(o->tmp);
    o->path = o->tmp = NULL;
    o->f = NULL;
}

jepa_status jr_outfile_open(struct jr_outfile *o, const char *path, bool allow_direct, struct jerr *e) {
    memset(o, 0, sizeof *o);
    if (!path || !*path) return jr_err_set(e, JEPA_ERR_ARG, "no output path");
    struct stat sb;
    const bool special = stat(path, &sb) == 0 && !S_ISREG(sb.st_mode);
    if (special && !allow_direct)
        return jr_err_set(e, JEPA_ERR_IO, "refusing to replace '%s': not a regular file", path);
    o->path = strdup(path);
    if (!o->path) return jr_err_set(e, JEPA_ERR_NOMEM, "out of memory");
    if (special) {   /* a device or a FIFO: written as it is */
        o->f = fopen(path, "wb");
        if (!o->f) {
            jepa_status st = jr_err_set(e, JEPA_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
            clear(o);
            return st;
        }
        return JEPA_OK;
    }
    /* "<dir>/.<name>.XXXXXX" */
    const char *slash = strrchr(path, '/');
    const size_t dlen = slash ? (size_t)(slash - path) + 1 : 0, plen = strlen(path);
    o->tmp = malloc(plen + 9);
    if (!o->tmp) {
        clear(o);
        return jr_err_set(e, JEPA_ERR_NOMEM, "out of memory");
    }
    memcpy(o->tmp, path, dlen);
    o->tmp[dlen] = '.';
    memcpy(o->tmp + dlen + 1, path + dlen, plen - dlen);
    memcpy(o->tmp + plen + 1, ".XXXXXX", 8);
    int fd = mkostemp(o->tmp, O_CLOEXEC);
    if (fd < 0) {
        jepa_status st = jr_err_set(e, JEPA_ERR_IO, "cannot create a file beside '%s': %s", path, strerror(errno));
        clear(o);
        return st;
    }
    if (fchmod(fd, 0644) != 0 || !(o->f = fdopen(fd, "wb"))) {
        jepa_status st = jr_err_set(e, JEPA_ERR_IO, "cannot write beside '%s': %s", path, strerror(errno));
        close(fd);
        unlink(o->tmp);
        clear(o);
        return st;
    }
    return JEPA_OK;
}

/* fsync the directory holding path, so the rename itself is durable (best effort). */
static void sync_dir(const char *path) {
    const char *slash = strrchr(path, '/');
    char dir[4096];
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else if ((size_t)(slash - path) < sizeof dir) snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    else return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

jepa_status jr_outfile_commit(struct jr_outfile *o, struct jerr *e) {
    if (!o->f) return jr_err_set(e, JEPA_ERR_ARG, "output file not open");
    jepa_status st = JEPA_OK;
    int ok = fflush(o->f) == 0 && !ferror(o->f);
    int err = errno;
    if (ok && o->tmp && fsync(fileno(o->f)) != 0) ok = 0, err = errno;
    if (fclose(o->f) != 0 && ok) ok = 0, err = errno;
    o->f = NULL;
    if (!ok) {
        st = jr_err_set(e, JEPA_ERR_IO, "cannot write '%s': %s", o->path, strerror(err ? err : EIO));
    } else if (o->tmp && rename(o->tmp, o->path) != 0) {
        st = jr_err_set(e, JEPA_ERR_IO, "cannot replace '%s': %s", o->path, strerror(errno));
    } else if (o->tmp) {
        sync_dir(o->path);
        free(o->tmp);
        o->tmp = NULL;
    }
    if (st && o->tmp) unlink(o->tmp);
    clear(o);
    return st;
}

void jr_outfile_abort(struct jr_outfile *o) {
    if (o->f) fclose(o->f);
    if (o->tmp) unlink(o->tmp);
    clear(o);
}
