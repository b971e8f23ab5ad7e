/*
 * devcache.c — device copies of a model's weights (model.h, "device copies").
 *
 * A GPU context needs every weight in device memory. Uploading per context would cost
 * one copy of the model per context (and the upload time each time), so the copy belongs
 * to the model: one per CUDA ordinal, reference-counted by the contexts using it.
 *
 * Each copy is allocated and freed through a jk_device the cache opens for itself on that
 * ordinal, not through the first context's device: that context may be freed (and its
 * device closed) while others still use the weights. The upload is followed by a sync,
 * so the bytes are in place before any context's stream reads them.
 *
 * What is copied is the GGUF data section as it lies in the host mapping, so a weight
 * pointer translates by a constant offset (forward.h, dw()). The lock is held during an
 * upload: a second context asking for the same copy waits for it instead of uploading
 * again.
 *
 * The split copy (struct jm_wsplit, for the GPU's pipelined kernels): every f32 matmul
 * weight of the model once more, split in bf16 as gemm.cu's f32 path splits it at each
 * tile load (hi = bf16(w), lo = bf16(w - hi), nearest even; a NaN weight gives 0x7fff
 * twice, CUDA's NaN), so that the pipelined f32 matmul copies hi and lo straight into
 * shared memory. Row n of an [N, K] weight is K hi values then K lo values, each half
 * padded with zeros to a multiple of 8 elements (16 bytes: cp.async's unit), at a 256-byte
 * aligned offset: 4 N ceil8(K) bytes, about as much as the f32 weight itself. It is made
 * on the first acquire that asks for it (a context with the pipelined table), split on the
 * host one weight at a time and uploaded, belongs to the device copy (shared by its
 * contexts, freed with it) and is immutable once made.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "kernels/device.h"
#include "models/model.h"
#include "runtime/dtype.h"

struct jm_wsplit_ent {
    const void *w;           /* the f32 weight in the host mapping (the key) */
    int n, k;                /* rows, weights a row */
    size_t ldw;              /* its row stride in bytes */
    size_t off;              /* its split's byte offset in base */
};

struct jm_wsplit {
    uint8_t *base;           /* device memory, `bytes` of it */
    size_t bytes;
    int n;
    struct jm_wsplit_ent *ents;   /* sorted by w */
};

struct jm_dev_copy {
    int ordinal;
    int refs;
    struct jk_device *dev;   /* the cache's own device on that ordinal */
    uint8_t *base;           /* the data section in its memory */
    struct jm_wsplit *split; /* NULL until asked for (or the model has no f32 matmul weight) */
    struct jm_dev_copy *next;
};

struct jm_dev_cache {
    pthread_mutex_t lock;
    struct jm_dev_copy *copies;
};

struct jm_dev_cache *jm_dev_cache_new(void) {
    struct jm_dev_cache *dc = calloc(1, sizeof *dc);
    if (!dc) return NULL;
    if (pthread_mutex_init(&dc->lock, NULL)) {
        free(dc);
        return NULL;
    }
    return dc;
}

static void split_free(struct jk_device *dev, struct jm_wsplit *ws) {
    if (!ws) return;
    dev->free(dev, ws->base);
    free(ws->ents);
    free(ws);
}

static void copy_free(struct jm_dev_copy *cp) {
    split_free(cp->dev, cp->split);
    cp->dev->free(cp->dev, cp->base);
    cp->dev->close(cp->dev);
    free(cp);
}

void jm_dev_cache_free(struct jm_dev_cache *dc) {
    if (!dc) return;
    /* copies still referenced belong to contexts that outlive their model (a caller bug);
     * the memory goes back to the device anyway */
    for (struct jm_dev_copy *cp = dc->copies, *next; cp; cp = next) {
        next = cp->next;
        copy_free(cp);
    }
    pthread_mutex_destroy(&dc->lock);
    free(dc);
}

void jm_weights_range(const struct jepa_model *m, const uint8_t **host_base, size_t *size) {
    const size_t off = jg_data_offset(m->g), total = jg_file_size(m->g);
    *host_base = (const uint8_t *)jg_base(m->g) + (off < total ? off : total);
    *size = off < total ? total - off : 0;
}

/* Open a device on `ordinal`, allocate and fill the copy; NULL with err set on failure. */
static struct jm_dev_copy *copy_new(const struct jepa_model *m, int ordinal, struct jerr *err) {
    const uint8_t *hb;
    size_t size;
    jm_weights_range(m, &hb, &size);
    struct jm_dev_copy *cp = calloc(1, sizeof *cp);
    if (!cp) {
        jr_err_set(err, JEPA_ERR_NOMEM, "out of memory");
        return NULL;
    }
    char why[JEPA_ERR_LEN];
    cp->ordinal = ordinal;
    cp->dev = jk_device_open_cuda(ordinal, why, sizeof why);
    if (!cp->dev) {
        jr_err_set(err, JEPA_ERR_DEVICE, "%s", why);
        free(cp);
        return NULL;
    }
    cp->dev->bind(cp->dev);
    cp->base = cp->dev->alloc(cp->dev, size ? size : 1);
    if (!cp->base) {
        jr_err_set(err, JEPA_ERR_NOMEM, "%s: cannot allocate %zu MiB for the weights: %s",
                 cp->dev->name, size >> 20, cp->dev->error(cp->dev));
        cp->dev->close(cp->dev);
        free(cp);
        return NULL;
    }
    if (cp->dev->upload(cp->dev, cp->base, hb, size) || cp->dev->sync(cp->dev)) {
        jr_err_set(err, JEPA_ERR_DEVICE, "%s: cannot copy the weights (%zu MiB): %s", cp->dev->name,
                 size >> 20, cp->dev->error(cp->dev));
        copy_free(cp);
        return NULL;
    }
    return cp;
}

static int ent_cmp(const void *a, const void *b) {
    const uintptr_t x = (uintptr_t)((const struct jm_wsplit_ent *)a)->w;
    const uintptr_t y = (uintptr_t)((const struct jm_wsplit_ent *)b)->w;
    return x < y ? -1 : x > y;
}

/* Row elements of a split weight of k columns: hi and lo, each padded to 8. */
static size_t split_row(int k) { return 2 * (((size_t)k + 7) / 8 * 8); }

/* hi = bf16(w), lo = bf16(w - hi), as gemm.cu's jkc_split_bf16 (CUDA's NaN for a NaN). */
static void split_row_fill(uint16_t *dst, const float *w, int k) {
    const size_t half = split_row(k) / 2;
    memset(dst, 0, 2 * half * sizeof *dst);
    for (int i = 0; i < k; i++) {
        const uint16_t hi = isnan(w[i]) ? 0x7fff : f32_to_bf16(w[i]);
        const float r = w[i] - bf16_to_f32(hi);
        dst[i] = hi;
        dst[half + (size_t)i] = isnan(r) ? 0x7fff : f32_to_bf16(r);
    }
}

/* Make cp->split for m's f32 matmul weights (nothing when it has none); JEPA_ERR_DEVICE
 * (or NOMEM on the host) with err set on failure, cp->split then NULL. */
static jepa_status split_new(const struct jepa_model *m, struct jm_dev_copy *cp, struct jerr *err) {
    int n = 0;
    for (int i = 0; i < m->n_weights; i++) n += m->weights[i].lin->dt == JK_F32;
    if (!n) return JEPA_OK;
    struct jm_wsplit *ws = calloc(1, sizeof *ws);
    if (ws) ws->ents = calloc((size_t)n, sizeof *ws->ents);
    if (!ws || !ws->ents) {
        if (ws) free(ws);
        return jr_err_set(err, JEPA_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < m->n_weights; i++) {
        const struct jm_linear *L = m->weights[i].lin;
        if (L->dt == JK_F32)
            ws->ents[ws->n++] = (struct jm_wsplit_ent){L->w, L->n_out, L->n_in, L->ldw, 0};
    }
    qsort(ws->ents, (size_t)ws->n, sizeof *ws->ents, ent_cmp);
    /* one split per distinct weight; sizes bounded before anything is allocated: each is
     * about its f32 bytes, which lie in the file */
    int u = 0;
    size_t total = 0, largest = 0;
    for (int i = 0; i < ws->n; i++) {
        const struct jm_wsplit_ent *e = &ws->ents[i];
        if (u && ws->ents[u - 1].w == e->w) continue;
        const size_t rb = split_row(e->k) * sizeof(uint16_t);
        if (e->n <= 0 || e->k <= 0 || (size_t)e->n > (SIZE_MAX / 2 - total) / rb) {
            split_free(cp->dev, ws);
            return jr_err_set(err, JEPA_ERR_DEVICE, "%s: f32 weight of %d x %d: too large to split",
                              cp->dev->name, e->n, e->k);
        }
        const size_t bytes = (size_t)e->n * rb;
        ws->ents[u] = *e;
        ws->ents[u++].off = total;
        total += (bytes + 255) / 256 * 256;
        if (bytes > largest) largest = bytes;
    }
    ws->n = u;
    uint16_t *host = malloc(largest);
    ws->base = host ? cp->dev->alloc(cp->dev, total) : NULL;
    ws->bytes = total;
    if (!ws->base) {
        free(host);
        const jepa_status st =
            host ? jr_err_set(err, JEPA_ERR_DEVICE, "%s: cannot allocate %zu MiB for the f32 "
                              "weights' bf16 hi/lo copy: %s", cp->dev->name, total >> 20,
                              cp->dev->error(cp->dev))
                 : jr_err_set(err, JEPA_ERR_NOMEM, "out of memory");
        split_free(cp->dev, ws);
        return st;
    }
    /* one weight at a time through one host buffer; the sync lets it be refilled */
    for (int i = 0; i < ws->n; i++) {
        const struct jm_wsplit_ent *e = &ws->ents[i];
        const size_t row = split_row(e->k);
        for (int r = 0; r < e->n; r++) {
            const float *w = (const float *)((const uint8_t *)e->w + (size_t)r * e->ldw);
            split_row_fill(host + (size_t)r * row, w, e->k);
        }
        if (cp->dev->upload(cp->dev, ws->base + e->off, host, (size_t)e->n * row * 2) ||
            cp->dev->sync(cp->dev)) {
            free(host);
            const jepa_status st =
                jr_err_set(err, JEPA_ERR_DEVICE, "%s: cannot copy the f32 weights' bf16 hi/lo "
                           "copy (%zu MiB): %s", cp->dev->name, total >> 20,
                           cp->dev->error(cp->dev));
            split_free(cp->dev, ws);
            return st;
        }
    }
    free(host);
    cp->split = ws;
    return JEPA_OK;
}

jepa_status jm_dev_weights_acquire(const struct jepa_model *m, int ordinal, bool split,
                                   uint8_t **dev_base, const struct jm_wsplit **ws,
                                   struct jerr *err) {
    struct jm_dev_cache *dc = m->dev_cache;
    pthread_mutex_lock(&dc->lock);
    struct jm_dev_copy *cp = dc->copies;
    while (cp && cp->ordinal != ordinal) cp = cp->next;
    const bool fresh = !cp;
    if (!cp && (cp = copy_new(m, ordinal, err))) {
        cp->next = dc->copies;
        dc->copies = cp;
    }
    if (cp && split && !cp->split) {
        cp->dev->bind(cp->dev);
        if (split_new(m, cp, err)) {
            if (fresh) {   /* nobody else holds it yet */
                dc->copies = cp->next;
                copy_free(cp);
            }
            cp = NULL;
        }
    }
    if (cp) {
        cp->refs++;
        *dev_base = cp->base;
        *ws = split ? cp->split : NULL;
    }
    pthread_mutex_unlock(&dc->lock);
    return cp ? JEPA_OK : err->status;
}

const uint16_t *jm_wsplit_find(const struct jm_wsplit *ws, const void *w, size_t *ld) {
    if (!ws || !w) return NULL;
    const struct jm_wsplit_ent key = {w, 0, 0, 0, 0};
    const struct jm_wsplit_ent *e = bsearch(&key, ws->ents, (size_t)ws->n, sizeof key, ent_cmp);
    if (!e) return NULL;
    *ld = split_row(e->k);
    return (const uint16_t *)(ws->base + e->off);
}

size_t jm_wsplit_bytes(const struct jm_wsplit *ws) { return ws ? ws->bytes : 0; }

void jm_dev_weights_release(const struct jepa_model *m, int ordinal) {
    struct jm_dev_cache *dc = m->dev_cache;
    pthread_mutex_lock(&dc->lock);
    for (struct jm_dev_copy **pp = &dc->copies; *pp; pp = &(*pp)->next) {
        struct jm_dev_copy *cp = *pp;
        if (cp->ordinal != ordinal) continue;
        if (--cp->refs == 0) {
            *pp = cp->next;
            copy_free(cp);
        }
        break;
    }
    pthread_mutex_unlock(&dc->lock);
}
