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
 */
#include <pthread.h>
#include <stdlib.h>

#include "gguf/gguf.h"
#include "kernels/device.h"
#include "models/model.h"

struct jm_dev_copy {
    int ordinal;
    int refs;
    struct jk_device *dev;   /* the cache's own device on that ordinal */
    uint8_t *base;           /* the data section in its memory */
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

static void copy_free(struct jm_dev_copy *cp) {
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

jepa_status jm_dev_weights_acquire(const struct jepa_model *m, int ordinal, uint8_t **dev_base,
                                   struct jerr *err) {
    struct jm_dev_cache *dc = m->dev_cache;
    pthread_mutex_lock(&dc->lock);
    struct jm_dev_copy *cp = dc->copies;
    while (cp && cp->ordinal != ordinal) cp = cp->next;
    if (!cp && (cp = copy_new(m, ordinal, err))) {
        cp->next = dc->copies;
        dc->copies = cp;
    }
    if (cp) {
        cp->refs++;
        *dev_base = cp->base;
    }
    pthread_mutex_unlock(&dc->lock);
    return cp ? JEPA_OK : err->status;
}

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
