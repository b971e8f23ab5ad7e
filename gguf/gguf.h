/*
 * gguf.h — GGUF v3 reader and writer (the container of jepa.cpp's schema v1).
 *
 * Reader: the file is memory-mapped read-only (or a caller's buffer is used as is)
 * and every field is checked before it is trusted: counts against the bytes left,
 * string and array lengths against the end of the file, value and tensor types
 * against the known tables, tensor dims against overflow, tensor data against the
 * data section (aligned to general.alignment, inside the file, no two tensors
 * overlapping), names unique. A file that fails any check is refused with a
 * message naming the field and what was expected; nothing is read out of bounds.
 *
 * After a successful open, keys, values and tensor names are NUL-terminated copies
 * owned by the gguf_file; tensor data pointers point into the mapping.
 *
 * Writer: collects key/value pairs and tensors, then writes a file that ggml's own
 * gguf reader accepts (v3, little-endian, alignment 32 unless set), through a
 * temporary file renamed into place so a failed write never leaves a file that
 * looks complete.
 */
#ifndef JEPA_GGUF_H
#define JEPA_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/error.h"

#define GGUF_MAGIC "GGUF"
#define GGUF_VERSION 3
#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_DIMS 4

/* ggml tensor types (values are ggml's enum ggml_type). */
enum gguf_type {
    GGUF_TYPE_F32 = 0,
    GGUF_TYPE_F16 = 1,
    GGUF_TYPE_Q4_0 = 2,
    GGUF_TYPE_Q4_1 = 3,
    GGUF_TYPE_Q5_0 = 6,
    GGUF_TYPE_Q5_1 = 7,
    GGUF_TYPE_Q8_0 = 8,
    GGUF_TYPE_Q8_1 = 9,
    GGUF_TYPE_Q2_K = 10,
    GGUF_TYPE_Q3_K = 11,
    GGUF_TYPE_Q4_K = 12,
    GGUF_TYPE_Q5_K = 13,
    GGUF_TYPE_Q6_K = 14,
    GGUF_TYPE_Q8_K = 15,
    GGUF_TYPE_BF16 = 30,
    GGUF_TYPE_COUNT = 40,   /* upper bound of ids the table knows */
};

struct jg_type_info {
    const char *name;       /* "f32", "q8_0", ... */
    int64_t block_size;     /* elements per block (1 for float types) */
    size_t type_size;       /* bytes per block */
};

/* NULL when t is not a type this build knows. */
const struct jg_type_info *jg_type_info(uint32_t t);
/* Bytes of a row of n elements of type t, or 0 if n is not a multiple of the block size
 * or t is unknown. */
size_t jg_row_bytes(uint32_t t, int64_t n);

/* Metadata value types (GGUF on-disk ids). */
enum gguf_vtype {
    GGUF_V_U8 = 0, GGUF_V_I8 = 1, GGUF_V_U16 = 2, GGUF_V_I16 = 3,
    GGUF_V_U32 = 4, GGUF_V_I32 = 5, GGUF_V_F32 = 6, GGUF_V_BOOL = 7,
    GGUF_V_STRING = 8, GGUF_V_ARRAY = 9, GGUF_V_U64 = 10, GGUF_V_I64 = 11,
    GGUF_V_F64 = 12,
    GGUF_V_COUNT = 13,
};

const char *jg_vtype_name(uint32_t vt);

struct gguf_kv {
    const char *key;            /* NUL-terminated */
    uint32_t type;              /* enum gguf_vtype */
    union {                     /* scalar value, widened (type says which member) */
        uint64_t u;             /* U8/U16/U32/U64/BOOL */
        int64_t i;              /* I8/I16/I32/I64 */
        double f;               /* F32/F64 */
        const char *s;          /* STRING (NUL-terminated copy) */
    } v;
    /* arrays (type == GGUF_V_ARRAY): element type and count. Numeric elements are
     * little-endian raw data in the mapping (arr_data, possibly unaligned: read with
     * jg_arr_u64 / i64 / f64); string elements are NUL-terminated copies in arr_str. */
    uint32_t arr_type;
    uint64_t arr_n;
    const void *arr_data;
    const char **arr_str;
};

struct gguf_tensor {
    const char *name;           /* NUL-terminated */
    uint32_t type;              /* enum gguf_type */
    int n_dims;                 /* 1..4 */
    int64_t ne[GGUF_MAX_DIMS];  /* ggml order: ne[0] is the contiguous (innermost) dim; unused = 1 */
    int64_t n_elements;
    uint64_t offset;            /* from the start of the data section */
    size_t nbytes;
    const void *data;           /* into the mapping, aligned to the file's alignment */
};

struct gguf_file;

/* Open and validate. *out is NULL on failure. */
jepa_status jg_open(struct gguf_file **out, const char *path, struct jerr *err);
/* The same on a caller's buffer (not copied; must outlive the gguf_file). */
jepa_status jg_open_memory(struct gguf_file **out, const void *data, size_t size,
                             struct jerr *err);
void jg_close(struct gguf_file *g);

uint32_t jg_version(const struct gguf_file *g);
size_t jg_alignment(const struct gguf_file *g);
size_t jg_file_size(const struct gguf_file *g);
size_t jg_data_offset(const struct gguf_file *g);  /* start of the data section */
/* The whole file in memory (the mapping, or jg_open_memory's buffer): jg_file_size()
 * bytes; every tensor's data lies in [base + jg_data_offset(), base + size). */
const void *jg_base(const struct gguf_file *g);

int64_t jg_n_kv(const struct gguf_file *g);
const struct gguf_kv *jg_kv_at(const struct gguf_file *g, int64_t i);
const struct gguf_kv *jg_find_kv(const struct gguf_file *g, const char *key); /* NULL if absent */

int64_t jg_n_tensors(const struct gguf_file *g);
const struct gguf_tensor *jg_tensor_at(const struct gguf_file *g, int64_t i);
const struct gguf_tensor *jg_find_tensor(const struct gguf_file *g, const char *name);

/* Element i of a numeric array, converted. Caller checks i < arr_n and the type. */
uint64_t jg_arr_u64(const struct gguf_kv *kv, uint64_t i);
int64_t jg_arr_i64(const struct gguf_kv *kv, uint64_t i);
double jg_arr_f64(const struct gguf_kv *kv, uint64_t i);

/* Print a value for humans ("42", "\"vjepa2\"", "[2, 5, 8, 11]", "[174 strings]"). */
void jg_kv_format(const struct gguf_kv *kv, char *buf, size_t size, int max_items);

/* ---- writer ------------------------------------------------------------------ */

struct gguf_writer;

struct gguf_writer *jg_writer_new(void);      /* NULL on allocation failure */
void jg_writer_free(struct gguf_writer *w);

/* Setting a key that exists replaces its value. Strings are copied. Each returns
 * JEPA_OK or JEPA_ERR_NOMEM. */
jepa_status jg_writer_set_u32(struct gguf_writer *w, const char *key, uint32_t v);
jepa_status jg_writer_set_i32(struct gguf_writer *w, const char *key, int32_t v);
jepa_status jg_writer_set_u64(struct gguf_writer *w, const char *key, uint64_t v);
jepa_status jg_writer_set_f32(struct gguf_writer *w, const char *key, float v);
jepa_status jg_writer_set_bool(struct gguf_writer *w, const char *key, bool v);
jepa_status jg_writer_set_str(struct gguf_writer *w, const char *key, const char *v);
/* Any scalar type: raw little-endian value bytes of the given vtype. */
jepa_status jg_writer_set_scalar(struct gguf_writer *w, const char *key, uint32_t vtype,
                                   const void *value);
/* Numeric array of n elements of vtype elem (data: n packed little-endian values). */
jepa_status jg_writer_set_arr(struct gguf_writer *w, const char *key, uint32_t elem,
                                const void *data, uint64_t n);
jepa_status jg_writer_set_arr_str(struct gguf_writer *w, const char *key,
                                    const char *const *v, uint64_t n);
/* Copy every key/value of an open file (e.g. for quantize). */
jepa_status jg_writer_copy_kv(struct gguf_writer *w, const struct gguf_file *g);

/* Add a tensor; data (nbytes = jg_row_bytes(type, ne[0]) * rows) is copied. ne in ggml
 * order. JEPA_ERR_ARG for a duplicate name, bad dims or wrong nbytes. */
jepa_status jg_writer_add_tensor(struct gguf_writer *w, const char *name, uint32_t type,
                                   int n_dims, const int64_t *ne, const void *data,
                                   size_t nbytes, struct jerr *err);

/* Write everything to path (via path.tmp + rename). */
jepa_status jg_writer_write(const struct gguf_writer *w, const char *path, struct jerr *err);
/* Or to a malloc'ed buffer (caller frees). */
jepa_status jg_writer_write_mem(const struct gguf_writer *w, void **data, size_t *size,
                                  struct jerr *err);


/* ---- additions (reader limits and helpers) ----------------------------------- */

/* Longest key or tensor name the reader accepts (bytes, without the NUL). */
#define GGUF_MAX_NAME 65535
/* Longest tensor name the writer accepts: ggml's GGML_MAX_NAME is 64 bytes with the
 * NUL, and ggml's reader refuses a file with a longer one. */
#define GGUF_GGML_MAX_NAME 63

/* Bytes of one scalar of value type vt (1, 2, 4 or 8), 0 for string, array or unknown. */
size_t jg_vtype_size(uint32_t vt);

/*
 * What the reader refuses, and with which status:
 *   JEPA_ERR_IO           jg_open: cannot open, stat or map the file; not a regular file
 *   JEPA_ERR_UNSUPPORTED  version 1 or a byte-swapped (big-endian) header; a tensor type
 *                         ggml knows but schema v1 does not allow (q8_1, q2_K, iq*, ...)
 *   JEPA_ERR_FORMAT       everything else: truncation, bad magic or version, absurd counts,
 *                         unknown value or tensor type ids, nested arrays, bool not 0/1,
 *                         bad names or duplicates, bad dims, misplaced tensor data
 *   JEPA_ERR_NOMEM        an allocation failed (its size is bounded by the file size)
 * Versions 2 and 3 are read (same layout). Data pointers are aligned to the file's
 * alignment relative to the start of the buffer; jg_open's mapping is page-aligned.
 * Value strings are NUL-terminated copies; a value with an embedded NUL reads as its
 * prefix (keys and tensor names with one are refused).
 */

#endif
