/*
 * npy.h — NumPy .npy files in and out (format versions 1.0-3.0, C order, little-endian).
 *
 * Reading checks the magic, the header dict ('descr', 'fortran_order', 'shape'), the
 * element type against what the caller accepts and the data size against the file
 * size; every failure is a one-line message. Writing goes through a temporary beside
 * PATH and a rename (runtime/outfile.h), so an interrupted run never leaves a
 * complete-looking file.
 */
#ifndef JEPA_INPUT_NPY_H
#define JEPA_INPUT_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/error.h"
#include "runtime/outfile.h"

enum npy_dtype { NPY_F32, NPY_F64, NPY_I32, NPY_I64, NPY_U8 };

struct npy {
    enum npy_dtype dtype;
    int ndim;
    int64_t shape[8];
    int64_t count;      /* product of shape */
    void *data;         /* malloc'ed, count elements */
};

/* Load path; dtype is whatever the file holds. The shape is checked against the file's
 * size before the data is allocated. */
jepa_status npy_load(struct npy *a, const char *path, struct jerr *err);
/* The header of a float32 or float64 file, checked as npy_load checks it (dtype, shape,
 * count; data NULL, nothing to free), and then its data as float32 into dst (a->count
 * floats; float64 converted as npy_load_f32 converts it), where a is what npy_peek_f32
 * gave for path: the header is read and checked again, and a file whose header changed in
 * between is refused. For data that goes straight where it is used (the CLI's input clip,
 * into the context's arena). */
jepa_status npy_peek_f32(struct npy *a, const char *path, struct jerr *err);
jepa_status npy_read_f32(const struct npy *a, const char *path, float *dst, struct jerr *err);
/* Load and convert to f32 / int32 (ids); integer conversion fails on values out of range. */
jepa_status npy_load_f32(struct npy *a, const char *path, struct jerr *err);
jepa_status npy_load_i32(struct npy *a, const char *path, struct jerr *err);
void npy_free(struct npy *a);
/* The same from memory (a copy of the data is made). */
jepa_status npy_parse(struct npy *a, const void *data, size_t size, struct jerr *err);

/* The writers below take the path "-" for stdout, written directly (no temporary, no
 * rename: a reader sees the bytes as they come); npy_set_stdout gives the descriptor that
 * "-" means (default STDOUT_FILENO), for a caller that moved stdout elsewhere. */
void npy_set_stdout(int fd);

jepa_status npy_save_f32(const char *path, const float *data, int ndim, const int64_t *shape,
                         struct jerr *err);
/* The same in two steps, for a command with several outputs (all or none): write into
 * the temporary of o (runtime/outfile.h), then jr_outfile_commit or jr_outfile_abort. */
jepa_status npy_write_f32(struct jr_outfile *o, const char *path, const float *data, int ndim,
                          const int64_t *shape, struct jerr *err);
/* n outputs, all or none (paths[i] NULL: none there): each written whole to its temporary
 * and flushed, then all renamed into place. A failure before the renames (a folder that
 * does not exist, a full disk) removes every temporary and leaves every target as it was. */
jepa_status npy_save_f32_all(int n, const char *const *paths, const float *const *data, const int *ndim,
                             const int64_t *const *shapes, struct jerr *err);
/* The header alone (float32, shape), the data to follow through o->f (shape's product of
 * floats), then jr_outfile_commit or jr_outfile_abort: for outputs assembled in pieces. */
jepa_status npy_write_f32_begin(struct jr_outfile *o, const char *path, int ndim, const int64_t *shape,
                                struct jerr *err);

#endif
