/*
 * _jepa.c — the CPython extension behind the `jepa` package (python/jepa_c/__init__.py).
 *
 * A thin layer over include/jepa.h plus the clip readers of input/clips.h (image and
 * video files, decoded and preprocessed as the CLI does). Every array crosses as a
 * buffer (the buffer protocol: numpy arrays, bytearrays, memoryviews), C-contiguous,
 * float32 / int32 / uint8 as named: the extension needs no numpy headers, and the caller
 * (the Python layer) allocates every output, so no result is copied on its way out.
 *
 * Objects
 *   Model       a loaded GGUF (immutable; shared by any number of contexts and threads)
 *   Context     one jepa_ctx: its calls release the GIL for the computation; a context
 *               runs one call at a time (the C API's contract), and a second thread that
 *               tries it gets jepa.Error instead of a data race. The Python layer keeps a
 *               pool of contexts per model, so threads compute at once.
 *   ClipReader  a clip source (images forming one clip, or a video cut into clips) that
 *               writes clip k into a caller's buffer; decodes forward, never seeking.
 * Errors raise jepa.Error (module attribute Error) with the library's one-line reason. A
 * method of an object whose __init__ never ran or failed raises too. The predictors' calls
 * raise on a non-finite output, as the CLI refuses to write one (finite_out).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common/buildinfo.h"
#include "common/hub.h"
#include "input/clips.h"
#include "input/image.h"
#include "jepa.h"
#include "runtime/dtype.h"

static PyObject *JepaError;   /* jepa.Error, a subclass of RuntimeError */

static PyObject *raise_error(const char *msg) {
    PyErr_SetString(JepaError, msg && msg[0] ? msg : "unknown error");
    return NULL;
}

/* ---- buffers -------------------------------------------------------------------------- */

/* A C-contiguous buffer of exactly `count` items of `fmt` ('f' float32, 'i' int32, 'B'
 * uint8), writable when asked. obj None gives a NULL pointer when `optional`. */
struct buf {
    Py_buffer view;
    int held;
};

static int fmt_matches(const char *have, char want) {
    if (!have) return want == 'B';
    if (have[0] == '<' || have[0] == '=' || have[0] == '@') have++;
    if (want == 'i') return (have[0] == 'i' || have[0] == 'l') && have[1] == '\0';
    return have[0] == want && have[1] == '\0';
}

static int buf_get(struct buf *b, PyObject *obj, const char *name, char fmt, size_t itemsize, int64_t count,
                   int writable, int optional, void **ptr) {
    b->held = 0;
    *ptr = NULL;
    if (obj == NULL || obj == Py_None) {
        if (optional) return 0;
        PyErr_Format(JepaError, "%s: an array is needed", name);
        return -1;
    }
    const int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &b->view, flags) < 0) {
        PyErr_Clear();
        PyErr_Format(JepaError, "%s: not a C-contiguous%s buffer", name, writable ? " writable" : "");
        return -1;
    }
    b->held = 1;
    if ((size_t)b->view.itemsize != itemsize || !fmt_matches(b->view.format, fmt)) {
        PyErr_Format(JepaError, "%s: items of type '%s', expected %s", name, b->view.format ? b->view.format : "B",
                     fmt == 'f' ? "float32" : fmt == 'i' ? "int32" : "uint8");
        return -1;
    }
    if (count < 0 || b->view.len != (Py_ssize_t)((size_t)count * itemsize)) {
        PyErr_Format(JepaError, "%s: %zd items, expected %lld", name, b->view.len / (Py_ssize_t)itemsize,
                     (long long)count);
        return -1;
    }
    *ptr = b->view.buf;
    return 0;
}

static void buf_release(struct buf *b) {
    if (b->held) PyBuffer_Release(&b->view);
    b->held = 0;
}

/* count = a * b * c ... with overflow and sanity checks (every factor >= 0, the product
 * below 2^62). -1 on overflow. */
static int64_t prod(int n, const int64_t *f) {
    int64_t p = 1;
    for (int i = 0; i < n; i++) {
        if (f[i] < 0 || (f[i] && p > ((int64_t)1 << 62) / f[i])) return -1;
        p *= f[i];
    }
    return p;
}
#define PROD(...) prod(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t), (int64_t[]){__VA_ARGS__})

/* ---- Model ---------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    jepa_model *m;
    jepa_model_info info;
    jepa_preprocess_recipe pre;   /* the model's jepa.pre.* recipe, for the clip readers */
} ModelObject;

static PyTypeObject ModelType;

static int Model_init(ModelObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"path", NULL};
    PyObject *path_obj = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&", kwlist, PyUnicode_FSConverter, &path_obj)) return -1;
    if (self->m) {   /* contexts and readers may hold the loaded model */
        Py_DECREF(path_obj);
        raise_error("Model: already loaded (make a new Model)");
        return -1;
    }
    char err[JEPA_ERR_LEN] = {0};
    jepa_status st;
    const char *path = PyBytes_AS_STRING(path_obj);
    Py_BEGIN_ALLOW_THREADS
    st = jepa_model_load(&self->m, path, err);
    Py_END_ALLOW_THREADS
    Py_DECREF(path_obj);
    if (st) {
        raise_error(err);
        return -1;
    }
    jepa_model_get_info(self->m, &self->info);
    jepa_model_get_preprocess(self->m, &self->pre);
    return 0;
}

static void Model_dealloc(ModelObject *self) {
    if (self->m) jepa_model_free(self->m);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int model_ready(ModelObject *self) {
    if (!self->m) {
        raise_error("the model is not loaded");
        return 0;
    }
    return 1;
}

static PyObject *Model_info(ModelObject *self, PyObject *unused) {
    (void)unused;
    if (!model_ready(self)) return NULL;
    const jepa_model_info *i = &self->info;
    return Py_BuildValue(
        "{s:s,s:s,s:s,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:O,s:O,s:i,s:O,s:i,s:i,s:i,s:z,s:i,s:i,s:i,s:i,"
        "s:i,s:i,s:i,s:i}",
        "family", i->family, "modality", i->modality, "name", i->name ? i->name : "", "embed_dim", i->embed_dim,
        "n_layer", i->n_layer, "n_head", i->n_head, "head_dim", i->head_dim, "ffn_dim", i->ffn_dim, "patch_size",
        i->patch_size, "tubelet_size", i->tubelet_size, "img_size", i->img_size, "n_frames", i->n_frames,
        "in_chans", i->in_chans, "has_cls", i->has_cls ? Py_True : Py_False, "has_predictor",
        i->has_predictor ? Py_True : Py_False, "pred_out_dim", i->pred_out_dim, "has_head",
        i->has_head ? Py_True : Py_False, "n_classes", i->n_classes, "n_hier", i->n_hier, "emb_dim", i->emb_dim,
        "predictor", i->predictor, "action_dim", i->action_dim, "state_dim", i->state_dim, "pred_n_frames",
        i->pred_n_frames, "pred_tokens_per_frame", i->pred_tokens_per_frame, "pred_embed_dim", i->pred_embed_dim,
        "pred_n_layer", i->pred_n_layer, "pred_n_head", i->pred_n_head, "pred_ffn_dim", i->pred_ffn_dim);
}

static PyObject *Model_labels(ModelObject *self, PyObject *unused) {
    (void)unused;
    if (!model_ready(self)) return NULL;
    if (!jepa_model_label(self->m, 0)) Py_RETURN_NONE;
    PyObject *list = PyList_New(self->info.n_classes);
    if (!list) return NULL;
    for (int i = 0; i < self->info.n_classes; i++) {
        const char *l = jepa_model_label(self->m, i);
        PyObject *s = PyUnicode_DecodeUTF8(l ? l : "", (Py_ssize_t)strlen(l ? l : ""), "replace");
        if (!s) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, s);
    }
    return list;
}

/* The CLI's message for an input size that does not fit the model. */
static PyObject *grid_error(const ModelObject *self, int T, int H, int W) {
    const int P = self->info.patch_size, tub = self->info.tubelet_size;
    return PyErr_Format(JepaError, "a %dx%dx%d input does not fit this model (patch %d, tubelet %d): %s", T, H, W,
                        P, tub,
                        H < P || W < P     ? "smaller than one patch"
                        : T > 1 && T < tub ? "fewer frames than one tubelet (1 frame is a still image)"
                                           : "more tokens than one clip may have");
}

static PyObject *Model_grid(ModelObject *self, PyObject *args) {
    int T, H, W, gt, gh, gw, n;
    if (!PyArg_ParseTuple(args, "iii", &T, &H, &W) || !model_ready(self)) return NULL;
    if (jepa_model_grid(self->m, T, H, W, &gt, &gh, &gw, &n)) return grid_error(self, T, H, W);
    return Py_BuildValue("(iiii)", gt, gh, gw, n);
}

/* Preprocessing overrides: filter (0 model, 4 cv2 linear ...), resize_short, norm. */
static int pre_params(jepa_preprocess_params *pp, int filter, int resize_short, int norm) {
    *pp = jepa_preprocess_default_params();
    if (filter < JEPA_RESIZE_MODEL || filter > JEPA_RESIZE_CV2_LINEAR || resize_short < 0 || norm < 0 || norm > 1) {
        raise_error("preprocessing: unknown filter or norm, or a negative resize_short");
        return -1;
    }
    pp->filter = (jepa_resize_filter)filter;
    pp->resize_short = resize_short;
    pp->norm = (jepa_norm_form)norm;
    return 0;
}

static PyObject *Model_preprocess_size(ModelObject *self, PyObject *args) {
    int filter, resize_short, norm, h, w;
    jepa_preprocess_params pp;
    if (!PyArg_ParseTuple(args, "iii", &filter, &resize_short, &norm) || !model_ready(self) ||
        pre_params(&pp, filter, resize_short, norm))
        return NULL;
    if (jepa_preprocess_size(self->m, &pp, &h, &w)) return raise_error("the model's preprocessing does not fit");
    return Py_BuildValue("(ii)", h, w);
}

/* preprocess_frames(frames u8 [T, h, w, 3], T, h, w, out f32 [3, T, H, W], filter, resize_short, norm) */
static PyObject *Model_preprocess_frames(ModelObject *self, PyObject *args) {
    PyObject *fo, *oo;
    int T, h, w, filter, resize_short, norm, H, W;
    jepa_preprocess_params pp;
    if (!PyArg_ParseTuple(args, "OiiiOiii", &fo, &T, &h, &w, &oo, &filter, &resize_short, &norm) ||
        !model_ready(self) || pre_params(&pp, filter, resize_short, norm))
        return NULL;
    if (T < 1 || h < 1 || w < 1) return PyErr_Format(JepaError, "frames: %d frames of %dx%d", T, h, w);
    if (jepa_preprocess_size(self->m, &pp, &H, &W)) return raise_error("the model's preprocessing does not fit");
    struct buf bf, bo;
    void *frames, *out;
    PyObject *ret = NULL;
    if (buf_get(&bf, fo, "frames", 'B', 1, PROD(T, h, w, 3), 0, 0, &frames) ||
        buf_get(&bo, oo, "out", 'f', 4, PROD(3, T, H, W), 1, 0, &out))
        goto done;
    char err[JEPA_ERR_LEN] = {0};
    jepa_status st = JEPA_OK;
    const size_t frame = (size_t)h * w * 3;
    Py_BEGIN_ALLOW_THREADS
    for (int t = 0; t < T && !st; t++)
        st = jepa_preprocess_rgb(self->m, (const uint8_t *)frames + frame * t, h, w, &pp, out, T, t, err);
    Py_END_ALLOW_THREADS
    if (st) raise_error(err);
    else ret = Py_BuildValue("(ii)", H, W);
done:
    buf_release(&bf), buf_release(&bo);
    return ret;
}

static PyMethodDef Model_methods[] = {
    {"info", (PyCFunction)Model_info, METH_NOARGS, "the model's jepa_model_info as a dict"},
    {"labels", (PyCFunction)Model_labels, METH_NOARGS, "class labels, or None"},
    {"grid", (PyCFunction)Model_grid, METH_VARARGS, "grid(T, H, W) -> (gt, gh, gw, n_tokens)"},
    {"preprocess_size", (PyCFunction)Model_preprocess_size, METH_VARARGS,
     "preprocess_size(filter, resize_short, norm) -> (H, W)"},
    {"preprocess_frames", (PyCFunction)Model_preprocess_frames, METH_VARARGS,
     "preprocess_frames(frames, T, h, w, out, filter, resize_short, norm) -> (H, W)"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ModelType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "jepa_c._jepa.Model",
    .tp_basicsize = sizeof(ModelObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Model(path): a schema-v1 GGUF, memory-mapped",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Model_init,
    .tp_dealloc = (destructor)Model_dealloc,
    .tp_methods = Model_methods,
};

/* ---- Context -------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    ModelObject *model;   /* a reference: the model outlives its contexts */
    jepa_ctx *c;
    int busy;             /* a call is running (set and read under the GIL) */
} ContextObject;

static int Context_init(ContextObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"model", "threads", "device", "cpu", "prepack", "precision", NULL};
    PyObject *model;
    int threads = 0, prepack = 0;
    const char *device = NULL, *cpu = NULL, *precision = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!|izzpz", kwlist, &ModelType, &model, &threads, &device,
                                     &cpu, &prepack, &precision))
        return -1;
    if (!model_ready((ModelObject *)model)) return -1;
    if (self->c || self->model) {
        raise_error("Context: already initialised");
        return -1;
    }
    if (threads < 0) {
        raise_error("threads: must be >= 0 (0: all cores)");
        return -1;
    }
    jepa_ctx_params p = jepa_ctx_default_params();
    p.n_threads = threads, p.device = device, p.cpu = cpu, p.precision = precision;
    char err[JEPA_ERR_LEN] = {0};
    jepa_status st;
    Py_BEGIN_ALLOW_THREADS
    st = jepa_ctx_new(&self->c, ((ModelObject *)model)->m, &p, err);
    Py_END_ALLOW_THREADS
    if (st) {
        raise_error(err);
        return -1;
    }
    if (prepack && jepa_ctx_set_prepack(self->c, 1)) {
        raise_error(jepa_ctx_error(self->c));
        jepa_ctx_free(self->c);
        self->c = NULL;
        return -1;
    }
    Py_INCREF(model);
    self->model = (ModelObject *)model;
    return 0;
}

static void Context_dealloc(ContextObject *self) {
    if (self->c) jepa_ctx_free(self->c);
    Py_XDECREF(self->model);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Take the context for one call (under the GIL), or raise. */
static int ctx_take(ContextObject *self) {
    if (!self->c) {
        raise_error("the context is not initialised");
        return 0;
    }
    if (self->busy) {
        raise_error("this context is running a call in another thread (use one context per thread)");
        return 0;
    }
    self->busy = 1;
    return 1;
}

static PyObject *ctx_done(ContextObject *self, jepa_status st, PyObject *ret) {
    self->busy = 0;
    if (st) {
        Py_XDECREF(ret);
        return raise_error(jepa_ctx_error(self->c));
    }
    return ret;
}

/* ret, or jepa.Error (ret released) when y [n] holds a NaN or an infinity: the message of
 * the CLI's cli_check_finite_output. y NULL: nothing to check. */
static PyObject *finite_out(PyObject *ret, const char *what, const float *y, int64_t n) {
    if (!ret || !y) return ret;
    const size_t i = f32_first_nonfinite(y, (size_t)n);
    if (i == (size_t)n) return ret;
    Py_DECREF(ret);
    return PyErr_Format(JepaError, "%s: output element %zu is %s (non-finite weights in the model?)", what, i,
                        isnan(y[i]) ? "NaN" : "infinite");
}

static PyObject *Context_get_isa(ContextObject *self, void *unused) {
    (void)unused;
    return self->c ? PyUnicode_FromString(jepa_ctx_isa(self->c)) : raise_error("no context");
}
static PyObject *Context_get_precision(ContextObject *self, void *unused) {
    (void)unused;
    return self->c ? PyUnicode_FromString(jepa_ctx_precision(self->c)) : raise_error("no context");
}
static PyObject *Context_get_matmul_isa(ContextObject *self, void *unused) {
    (void)unused;
    return self->c ? PyUnicode_FromString(jepa_ctx_matmul_isa(self->c)) : raise_error("no context");
}
static PyObject *Context_get_device(ContextObject *self, void *unused) {
    (void)unused;
    return self->c ? PyUnicode_FromString(jepa_ctx_device(self->c)) : raise_error("no context");
}
static PyObject *Context_get_threads(ContextObject *self, void *unused) {
    (void)unused;
    return self->c ? PyLong_FromLong(jepa_ctx_threads(self->c)) : raise_error("no context");
}
static PyObject *Context_get_prepacked_bytes(ContextObject *self, void *unused) {
    (void)unused;
    return self->c ? PyLong_FromSize_t(jepa_ctx_prepacked_bytes(self->c)) : raise_error("no context");
}

/* A ClipReader (defined with its methods below): images or a video as preprocessed clips. */
typedef struct {
    PyObject_HEAD
    ModelObject *model;
    struct clip_reader *r;
    PyObject *keep;       /* a tuple of the paths' bytes: the reader keeps pointers into them */
    const char **names;
    int next;             /* the next clip clips_next() gives */
    int busy;
} ClipReaderObject;
static PyTypeObject ClipReaderType;

/* The next B clips of rd, read straight into the arena room jepa_ctx_embed_input gives for
 * this call, then the call: the clips cost no memory of their own. The first note the
 * reader gives goes to note (empty if none). Runs without the GIL. JEPA_OK, or a status
 * and the reason in e (the reader's) or in c (the context's: e->msg left empty). */
static jepa_status embed_from_reader(jepa_ctx *c, ClipReaderObject *rd, int B, int T, int H, int W,
                                     const jepa_embed_params *p, jepa_embed_out *out, struct jerr *e,
                                     char *note, size_t note_n) {
    note[0] = 0;
    float *room;
    jepa_status st = jepa_ctx_embed_input(c, T, H, W, p, out, &room);
    if (st) return st;
    const size_t clip = (size_t)3 * T * H * W;
    for (int j = 0; j < B; j++) {
        if ((st = clips_next(rd->r, room + (size_t)j * clip, e))) return st;
        rd->next++;
        const char *nt = clips_take_note(rd->r);
        if (nt && !note[0]) snprintf(note, note_n, "%s", nt);
    }
    return jepa_ctx_embed(c, room, T, H, W, p, out);
}

/* embed(x, B, T, H, W, tokens=None, pooled=None, cls=None, hier=None, emb=None)
 * x float32 [B, 3, T, H, W], or a ClipReader whose next B clips (of shape [3, T, H, W]) are
 * read into the context's arena (jepa_ctx_embed_input); each output a writable float32
 * buffer of its full size, or None. Returns None, or for a reader its first note (str). */
static PyObject *Context_embed(ContextObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"x", "B", "T", "H", "W", "tokens", "pooled", "cls", "hier", "emb", NULL};
    PyObject *xo, *to = Py_None, *po = Py_None, *co = Py_None, *ho = Py_None, *eo = Py_None;
    int B, T, H, W;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Oiiii|OOOOO", kwlist, &xo, &B, &T, &H, &W, &to, &po, &co, &ho, &eo))
        return NULL;
    if (!self->c) return raise_error("no context");
    const jepa_model_info *in = &self->model->info;
    int gt, gh, gw, n;
    if (B < 1) return raise_error("embed: a batch of at least one clip is needed");
    if (jepa_model_grid(self->model->m, T, H, W, &gt, &gh, &gw, &n)) return grid_error(self->model, T, H, W);
    struct buf bx, bt, bp, bc, bh, be;
    memset(&bt, 0, sizeof bt), memset(&bp, 0, sizeof bp), memset(&bc, 0, sizeof bc);
    memset(&bh, 0, sizeof bh), memset(&be, 0, sizeof be);
    memset(&bx, 0, sizeof bx);
    void *x = NULL;
    jepa_embed_out out = {0};
    PyObject *ret = NULL;
    const int D = in->embed_dim;
    ClipReaderObject *rd = PyObject_TypeCheck(xo, &ClipReaderType) ? (ClipReaderObject *)xo : NULL;
    if (rd) {
        int rT, rH, rW;
        if (!rd->r) return raise_error("no clip reader");
        if (rd->busy) return raise_error("this clip reader is reading in another thread");
        clips_shape(rd->r, &rT, &rH, &rW);
        if (rT != T || rH != H || rW != W || in->in_chans != 3)
            return raise_error("embed: the clip reader's clips are not [B, 3, T, H, W] of this call");
        if (rd->next + B > clips_count(rd->r))
            return raise_error("embed: the clip reader has fewer clips left than the batch");
    }
    if ((!rd && buf_get(&bx, xo, "x", 'f', 4, PROD(B, in->in_chans, T, H, W), 0, 0, &x)) ||
        buf_get(&bt, to, "tokens", 'f', 4, PROD(B, n, D), 1, 1, (void **)&out.tokens) ||
        buf_get(&bp, po, "pooled", 'f', 4, PROD(B, D), 1, 1, (void **)&out.pooled) ||
        buf_get(&bc, co, "cls", 'f', 4, in->has_cls ? PROD(B, D) : -1, 1, 1, (void **)&out.cls) ||
        buf_get(&bh, ho, "hier", 'f', 4, in->n_hier ? PROD(B, in->n_hier, n, D) : -1, 1, 1, (void **)&out.hier) ||
        buf_get(&be, eo, "emb", 'f', 4, in->emb_dim ? PROD(B, in->emb_dim) : -1, 1, 1, (void **)&out.emb))
        goto fail;
    if (!ctx_take(self)) goto fail;
    jepa_embed_params p = {.batch = B};
    jepa_status st;
    struct jerr e = {0};
    char note[JEPA_ERR_LEN];
    note[0] = 0;
    if (rd) rd->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    st = rd ? embed_from_reader(self->c, rd, B, T, H, W, &p, &out, &e, note, sizeof note)
            : jepa_ctx_embed(self->c, x, T, H, W, &p, &out);
    Py_END_ALLOW_THREADS
    if (rd) rd->busy = 0;
    if (st && e.msg[0]) {   /* the reader's failure, not the context's */
        self->busy = 0;
        raise_error(e.msg);
        goto fail;
    }
    if (note[0]) {
        ret = PyUnicode_FromString(note);
    } else {
        Py_INCREF(Py_None);
        ret = Py_None;
    }
    ret = ctx_done(self, st, ret);
fail:
    buf_release(&bx), buf_release(&bt), buf_release(&bp), buf_release(&bc), buf_release(&bh), buf_release(&be);
    return ret;
}

/* classify(tokens [n_tokens, D], n_tokens, logits [n_classes]) */
static PyObject *Context_classify(ContextObject *self, PyObject *args) {
    PyObject *to, *lo;
    int n;
    if (!PyArg_ParseTuple(args, "OiO", &to, &n, &lo)) return NULL;
    if (!self->c) return raise_error("no context");
    const jepa_model_info *in = &self->model->info;
    if (!in->has_head) return raise_error("this model file has no classifier head");
    struct buf bt, bl;
    memset(&bl, 0, sizeof bl);
    void *t, *l;
    PyObject *ret = NULL;
    if (buf_get(&bt, to, "tokens", 'f', 4, PROD(n, in->embed_dim), 0, 0, &t) ||
        buf_get(&bl, lo, "logits", 'f', 4, in->n_classes, 1, 0, &l) || !ctx_take(self))
        goto done;
    jepa_status st;
    Py_BEGIN_ALLOW_THREADS
    st = jepa_ctx_classify(self->c, t, n, l);
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    ret = ctx_done(self, st, Py_None);
done:
    buf_release(&bt), buf_release(&bl);
    return ret;
}

/* predict(tokens [n_ctx, D], ctx_ids int32 [n_ctx], tgt_ids int32 [n_tgt], pred [n_tgt, out],
 *         ctx_out [n_ctx, out] or None, mask_index, modality) */
static PyObject *Context_predict(ContextObject *self, PyObject *args) {
    PyObject *to, *co, *go, *po, *xo;
    int n_ctx, n_tgt, mask_index, modality;
    if (!PyArg_ParseTuple(args, "OOiOiOOii", &to, &co, &n_ctx, &go, &n_tgt, &po, &xo, &mask_index, &modality))
        return NULL;
    if (!self->c) return raise_error("no context");
    const jepa_model_info *in = &self->model->info;
    if (!in->predictor || strcmp(in->predictor, "masked"))
        return raise_error("this model file has no masked predictor");
    if (modality < 0 || modality > 2) return raise_error("modality is 0 (auto), 1 (video) or 2 (image)");
    struct buf bt, bc, bg, bp, bx;
    memset(&bc, 0, sizeof bc), memset(&bg, 0, sizeof bg), memset(&bp, 0, sizeof bp), memset(&bx, 0, sizeof bx);
    void *t, *c, *g, *p, *x;
    PyObject *ret = NULL;
    const int od = in->pred_out_dim;
    if (buf_get(&bt, to, "tokens", 'f', 4, PROD(n_ctx, in->embed_dim), 0, 0, &t) ||
        buf_get(&bc, co, "ctx_ids", 'i', 4, n_ctx, 0, 0, &c) || buf_get(&bg, go, "tgt_ids", 'i', 4, n_tgt, 0, 0, &g) ||
        buf_get(&bp, po, "pred", 'f', 4, PROD(n_tgt, od), 1, 0, &p) ||
        buf_get(&bx, xo, "ctx_out", 'f', 4, PROD(n_ctx, od), 1, 1, &x) || !ctx_take(self))
        goto done;
    jepa_predict_params pp = {.ctx_ids = c, .n_ctx = n_ctx, .tgt_ids = g, .n_tgt = n_tgt, .mask_index = mask_index,
                              .modality = (jepa_modality)modality};
    jepa_status st;
    Py_BEGIN_ALLOW_THREADS
    st = jepa_ctx_predict(self->c, t, &pp, p, x);
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    ret = finite_out(ctx_done(self, st, Py_None), "predict", p, PROD(n_tgt, od));
    ret = finite_out(ret, "predict (ctx_out)", x, PROD(n_ctx, od));
done:
    buf_release(&bt), buf_release(&bc), buf_release(&bg), buf_release(&bp), buf_release(&bx);
    return ret;
}

static int need_predictor(ContextObject *self, const char *which) {
    if (!self->c || !self->model) {   /* before anything of the model is read */
        raise_error("no context");
        return 0;
    }
    const char *p = self->model->info.predictor;
    if (!p || strcmp(p, which)) {
        PyErr_Format(JepaError, "this model file has no %s predictor (family '%s')",
                     !strcmp(which, "ac") ? "V-JEPA 2-AC" : "LeWM", self->model->info.family);
        return 0;
    }
    return 1;
}

/* lewm_predict(emb [B, T, E], actions [B, T, A], B, T, pred [B, T, out]) */
static PyObject *Context_lewm_predict(ContextObject *self, PyObject *args) {
    PyObject *eo, *ao, *po;
    int B, T;
    if (!PyArg_ParseTuple(args, "OOiiO", &eo, &ao, &B, &T, &po) || !need_predictor(self, "lewm")) return NULL;
    const jepa_model_info *in = &self->model->info;
    struct buf be, ba, bp;
    memset(&ba, 0, sizeof ba), memset(&bp, 0, sizeof bp);
    void *e, *a, *p;
    PyObject *ret = NULL;
    if (buf_get(&be, eo, "emb", 'f', 4, PROD(B, T, in->emb_dim), 0, 0, &e) ||
        buf_get(&ba, ao, "actions", 'f', 4, PROD(B, T, in->action_dim), 0, 0, &a) ||
        buf_get(&bp, po, "pred", 'f', 4, PROD(B, T, in->pred_out_dim), 1, 0, &p) || !ctx_take(self))
        goto done;
    jepa_status st;
    Py_BEGIN_ALLOW_THREADS
    st = jepa_ctx_lewm_predict(self->c, e, a, B, T, p);
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    ret = finite_out(ctx_done(self, st, Py_None), "lewm_predict", p, PROD(B, T, in->pred_out_dim));
done:
    buf_release(&be), buf_release(&ba), buf_release(&bp);
    return ret;
}

/* lewm_rollout(emb [B, T, E], B, T, actions [B, T + steps - 1, A], steps, traj [B, steps, E]) */
static PyObject *Context_lewm_rollout(ContextObject *self, PyObject *args) {
    PyObject *eo, *ao, *to;
    int B, T, steps;
    if (!PyArg_ParseTuple(args, "OiiOiO", &eo, &B, &T, &ao, &steps, &to) || !need_predictor(self, "lewm"))
        return NULL;
    const jepa_model_info *in = &self->model->info;
    struct buf be, ba, bt;
    memset(&ba, 0, sizeof ba), memset(&bt, 0, sizeof bt);
    void *e, *a, *t;
    PyObject *ret = NULL;
    if (steps < 1) return raise_error("steps: at least 1");
    if (buf_get(&be, eo, "emb", 'f', 4, PROD(B, T, in->emb_dim), 0, 0, &e) ||
        buf_get(&ba, ao, "actions", 'f', 4, PROD(B, (int64_t)T + steps - 1, in->action_dim), 0, 0, &a) ||
        buf_get(&bt, to, "traj", 'f', 4, PROD(B, steps, in->emb_dim), 1, 0, &t) || !ctx_take(self))
        goto done;
    jepa_status st;
    Py_BEGIN_ALLOW_THREADS
    st = jepa_ctx_lewm_rollout(self->c, e, B, T, a, steps, t);
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    ret = finite_out(ctx_done(self, st, Py_None), "lewm_rollout", t, PROD(B, steps, in->emb_dim));
done:
    buf_release(&be), buf_release(&ba), buf_release(&bt);
    return ret;
}

/* ac_predict(tokens [B, F N, D], actions [B, F, A], states [B, F, S], B, F, pred [B, F N, out]) */
static PyObject *Context_ac_predict(ContextObject *self, PyObject *args) {
    PyObject *to, *ao, *so, *po;
    int B, F;
    if (!PyArg_ParseTuple(args, "OOOiiO", &to, &ao, &so, &B, &F, &po) || !need_predictor(self, "ac")) return NULL;
    const jepa_model_info *in = &self->model->info;
    const int64_t N = in->pred_tokens_per_frame;
    struct buf bt, ba, bs, bp;
    memset(&ba, 0, sizeof ba), memset(&bs, 0, sizeof bs), memset(&bp, 0, sizeof bp);
    void *t, *a, *s, *p;
    PyObject *ret = NULL;
    if (buf_get(&bt, to, "tokens", 'f', 4, PROD(B, F, N, in->embed_dim), 0, 0, &t) ||
        buf_get(&ba, ao, "actions", 'f', 4, PROD(B, F, in->action_dim), 0, 0, &a) ||
        buf_get(&bs, so, "states", 'f', 4, PROD(B, F, in->state_dim), 0, 0, &s) ||
        buf_get(&bp, po, "pred", 'f', 4, PROD(B, F, N, in->pred_out_dim), 1, 0, &p) || !ctx_take(self))
        goto done;
    jepa_status st;
    Py_BEGIN_ALLOW_THREADS
    st = jepa_ctx_ac_predict(self->c, t, a, s, B, F, p);
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    ret = finite_out(ctx_done(self, st, Py_None), "ac_predict", p, PROD(B, F, N, in->pred_out_dim));
done:
    buf_release(&bt), buf_release(&ba), buf_release(&bs), buf_release(&bp);
    return ret;
}

/* ac_rollout(tokens [B, T N, D], states [B, T, 7], B, T, actions [B, T + steps - 1, 7], steps, normalize,
 *            traj [B, steps N, D], traj_states [B, steps, 7] or None) */
static PyObject *Context_ac_rollout(ContextObject *self, PyObject *args) {
    PyObject *to, *so, *ao, *ro, *rso;
    int B, T, steps, normalize;
    if (!PyArg_ParseTuple(args, "OOiiOipOO", &to, &so, &B, &T, &ao, &steps, &normalize, &ro, &rso) ||
        !need_predictor(self, "ac"))
        return NULL;
    if (steps < 1) return raise_error("steps: at least 1");
    const jepa_model_info *in = &self->model->info;
    const int64_t N = in->pred_tokens_per_frame, D = in->embed_dim;
    struct buf bt, bs, ba, br, brs;
    memset(&bs, 0, sizeof bs), memset(&ba, 0, sizeof ba), memset(&br, 0, sizeof br), memset(&brs, 0, sizeof brs);
    void *t, *s, *a, *r, *rs;
    PyObject *ret = NULL;
    if (buf_get(&bt, to, "tokens", 'f', 4, PROD(B, T, N, D), 0, 0, &t) ||
        buf_get(&bs, so, "states", 'f', 4, PROD(B, T, in->state_dim), 0, 0, &s) ||
        buf_get(&ba, ao, "actions", 'f', 4, PROD(B, (int64_t)T + steps - 1, in->action_dim), 0, 0, &a) ||
        buf_get(&br, ro, "traj", 'f', 4, PROD(B, steps, N, D), 1, 0, &r) ||
        buf_get(&brs, rso, "traj_states", 'f', 4, PROD(B, steps, in->state_dim), 1, 1, &rs) || !ctx_take(self))
        goto done;
    jepa_status st;
    Py_BEGIN_ALLOW_THREADS
    st = jepa_ctx_ac_rollout(self->c, t, s, B, T, a, steps, normalize, r, rs);
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    ret = finite_out(ctx_done(self, st, Py_None), "ac_rollout", r, PROD(B, steps, N, D));
    ret = finite_out(ret, "ac_rollout (traj_states)", rs, PROD(B, steps, in->state_dim));
done:
    buf_release(&bt), buf_release(&bs), buf_release(&ba), buf_release(&br), buf_release(&brs);
    return ret;
}

/* The planner's settings from a dict (absent keys keep the defaults). "maxnorm" (V-JEPA
 * 2-AC, `jepa plan --maxnorm`): the xyz components of p's action box span +-maxnorm with that
 * initial std, in box (p->components is pointed at it). */
static int plan_params(PyObject *d, jepa_plan_params *p, jepa_plan_component *box) {
    if (!d || d == Py_None) return 0;
    if (!PyDict_Check(d)) {
        raise_error("plan: the settings are a dict");
        return -1;
    }
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(d, &pos, &k, &v)) {
        const char *key = PyUnicode_Check(k) ? PyUnicode_AsUTF8(k) : NULL;
        if (!key) {
            raise_error("plan: setting names are strings");
            return -1;
        }
        int *ip = !strcmp(key, "horizon") ? &p->horizon : !strcmp(key, "samples") ? &p->samples
                : !strcmp(key, "iterations") ? &p->iterations : !strcmp(key, "elites") ? &p->elites : NULL;
        float *fp = !strcmp(key, "init_std") ? &p->init_std : !strcmp(key, "lo") ? &p->lo
                  : !strcmp(key, "hi") ? &p->hi : !strcmp(key, "momentum_mean") ? &p->momentum_mean
                  : !strcmp(key, "momentum_std") ? &p->momentum_std : NULL;
        if (ip) {
            const long x = PyLong_AsLong(v);
            if (x == -1 && PyErr_Occurred()) return -1;
            if (x < 0 || x > 1000000) {
                PyErr_Format(JepaError, "plan: %s = %ld is out of range", key, x);
                return -1;
            }
            *ip = (int)x;
        } else if (fp) {
            const double x = PyFloat_AsDouble(v);
            if (x == -1.0 && PyErr_Occurred()) return -1;
            *fp = (float)x;
        } else if (!strcmp(key, "maxnorm")) {
            const double x = PyFloat_AsDouble(v);
            if (x == -1.0 && PyErr_Occurred()) return -1;
            if (!p->components || !(x >= 0 && x <= 1e6)) {
                PyErr_Format(JepaError, "plan: maxnorm %g: V-JEPA 2-AC's xyz box, in [0, 1e6]", x);
                return -1;
            }
            memcpy(box, p->components, sizeof(jepa_plan_component) * 7);
            for (int j = 0; j < 3; j++) box[j].lo = (float)-x, box[j].hi = (float)x, box[j].init_std = (float)x;
            p->components = box;
        } else if (!strcmp(key, "seed")) {
            const unsigned long long x = PyLong_AsUnsignedLongLong(v);
            if (x == (unsigned long long)-1 && PyErr_Occurred()) return -1;
            p->seed = x;
        } else {
            PyErr_Format(JepaError, "plan: unknown setting '%s'", key);
            return -1;
        }
    }
    return 0;
}

/* plan(which, history, T, states or None, past_actions or None, goal, settings, actions, energies)
 * -> final energy. which "lewm": history emb [T, E], goal [E]; "ac": tokens [T N, D], states
 * [T, 7], goal [N, D]. actions [horizon, A]; energies [iterations] or None. */
static PyObject *Context_plan(ContextObject *self, PyObject *args) {
    const char *which;
    PyObject *ho, *so, *pao, *go, *settings, *ao, *eno;
    int T;
    if (!PyArg_ParseTuple(args, "sOiOOOOOO", &which, &ho, &T, &so, &pao, &go, &settings, &ao, &eno)) return NULL;
    const int ac = !strcmp(which, "ac");
    if (!ac && strcmp(which, "lewm")) return raise_error("plan: 'lewm' or 'ac'");
    if (!need_predictor(self, which)) return NULL;
    const jepa_model_info *in = &self->model->info;
    jepa_plan_params p = ac ? jepa_plan_ac_default_params() : jepa_plan_default_params();
    jepa_plan_component box[7];
    if (ac && in->action_dim != 7)
        return PyErr_Format(JepaError, "the V-JEPA 2-AC planner moves Meta's 7-d Franka action; this predictor "
                                       "takes %d-d actions", in->action_dim);
    if (plan_params(settings, &p, box)) return NULL;
    if (p.lo > p.hi) {   /* lo == hi is the C API's "no bounds"; lo > hi a mistake */
        char msg[160];
        snprintf(msg, sizeof msg, "plan: lo %g is above hi %g (lo < hi bounds the actions, lo == hi: none)",
                 (double)p.lo, (double)p.hi);
        return raise_error(msg);
    }
    if (T < 1) return raise_error("plan: a history of at least one frame");
    const int64_t N = in->pred_tokens_per_frame, D = in->embed_dim, A = in->action_dim;
    struct buf bh, bs, bpa, bg, ba, ben;
    memset(&bs, 0, sizeof bs), memset(&bpa, 0, sizeof bpa), memset(&bg, 0, sizeof bg);
    memset(&ba, 0, sizeof ba), memset(&ben, 0, sizeof ben);
    void *h, *s = NULL, *pa, *g, *a, *en;
    PyObject *ret = NULL;
    if (buf_get(&bh, ho, "history", 'f', 4, ac ? PROD(T, N, D) : PROD(T, in->emb_dim), 0, 0, &h) ||
        (ac && buf_get(&bs, so, "states", 'f', 4, PROD(T, in->state_dim), 0, 0, &s)) ||
        buf_get(&bpa, pao, "past_actions", 'f', 4, PROD((int64_t)T - 1, A), 0, T == 1, &pa) ||
        buf_get(&bg, go, "goal", 'f', 4, ac ? PROD(N, D) : in->emb_dim, 0, 0, &g) ||
        buf_get(&ba, ao, "actions", 'f', 4, PROD(p.horizon, A), 1, 0, &a) ||
        buf_get(&ben, eno, "energies", 'f', 4, p.iterations, 1, 1, &en) || !ctx_take(self))
        goto done;
    float final_energy = 0;
    jepa_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ac ? jepa_ctx_ac_plan(self->c, h, s, T, pa, g, &p, a, en, &final_energy)
            : jepa_ctx_lewm_plan(self->c, h, T, pa, g, &p, a, en, &final_energy);
    Py_END_ALLOW_THREADS
    ret = ctx_done(self, st, PyFloat_FromDouble(final_energy));
done:
    buf_release(&bh), buf_release(&bs), buf_release(&bpa), buf_release(&bg), buf_release(&ba), buf_release(&ben);
    return ret;
}

/* plan_defaults(which) -> the planner's default settings as a dict */
static PyObject *plan_defaults(PyObject *mod, PyObject *args) {
    (void)mod;
    const char *which;
    if (!PyArg_ParseTuple(args, "s", &which)) return NULL;
    const int ac = !strcmp(which, "ac");
    if (!ac && strcmp(which, "lewm")) return raise_error("plan: 'lewm' or 'ac'");
    const jepa_plan_params p = ac ? jepa_plan_ac_default_params() : jepa_plan_default_params();
    PyObject *d = Py_BuildValue("{s:i,s:i,s:i,s:i,s:d,s:d,s:d,s:K,s:d,s:d}", "horizon", p.horizon, "samples",
                                p.samples, "iterations", p.iterations, "elites", p.elites, "init_std",
                                (double)p.init_std, "lo", (double)p.lo, "hi", (double)p.hi, "seed",
                                (unsigned long long)p.seed, "momentum_mean", (double)p.momentum_mean,
                                "momentum_std", (double)p.momentum_std);
    if (d && ac) {   /* the xyz box's half-width, `jepa plan --maxnorm`'s default */
        PyObject *x = PyFloat_FromDouble((double)p.components[0].hi);
        if (!x || PyDict_SetItemString(d, "maxnorm", x) < 0) Py_CLEAR(d);
        Py_XDECREF(x);
    }
    return d;
}

static PyGetSetDef Context_getset[] = {
    {"isa", (getter)Context_get_isa, NULL, "the kernels' instruction set", NULL},
    {"precision", (getter)Context_get_precision, NULL, "the precision tier (matmuls; attention too in bf16)", NULL},
    {"matmul_isa", (getter)Context_get_matmul_isa, NULL, "the kernels the matmul runs for the tier", NULL},
    {"device", (getter)Context_get_device, NULL, "the device the context runs on", NULL},
    {"threads", (getter)Context_get_threads, NULL, "the thread count", NULL},
    {"prepacked_bytes", (getter)Context_get_prepacked_bytes, NULL,
     "the bytes of weights this context holds packed (jepa_ctx_prepacked_bytes)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef Context_methods[] = {
    {"embed", (PyCFunction)(void (*)(void))Context_embed, METH_VARARGS | METH_KEYWORDS, "jepa_ctx_embed"},
    {"classify", (PyCFunction)Context_classify, METH_VARARGS, "jepa_ctx_classify"},
    {"predict", (PyCFunction)Context_predict, METH_VARARGS, "jepa_ctx_predict"},
    {"lewm_predict", (PyCFunction)Context_lewm_predict, METH_VARARGS, "jepa_ctx_lewm_predict"},
    {"lewm_rollout", (PyCFunction)Context_lewm_rollout, METH_VARARGS, "jepa_ctx_lewm_rollout"},
    {"ac_predict", (PyCFunction)Context_ac_predict, METH_VARARGS, "jepa_ctx_ac_predict"},
    {"ac_rollout", (PyCFunction)Context_ac_rollout, METH_VARARGS, "jepa_ctx_ac_rollout"},
    {"plan", (PyCFunction)Context_plan, METH_VARARGS, "jepa_ctx_lewm_plan / jepa_ctx_ac_plan"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ContextType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "jepa_c._jepa.Context",
    .tp_basicsize = sizeof(ContextObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Context(model, threads=0, device=None, cpu=None, prepack=False, precision=None): one jepa_ctx",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Context_init,
    .tp_dealloc = (destructor)Context_dealloc,
    .tp_methods = Context_methods,
    .tp_getset = Context_getset,
};

/* ---- ClipReader ----------------------------------------------------------------------- */

/* ClipReader(model, paths, video, frames_per_clip, frame_step, num_clips, dense, stride,
 *            filter, resize_short, norm): paths a list of image paths (one clip), or one
 * video path with video true. The defaults (0) are the CLI's. */
static int ClipReader_init(ClipReaderObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"model", "paths", "video", "frames_per_clip", "frame_step", "num_clips", "dense",
                             "stride", "filter", "resize_short", "norm", NULL};
    PyObject *model, *paths;
    int video = 0, fpc = 0, fstep = 0, nclips = 0, dense = 0, filter = 0, resize_short = 0, norm = 0;
    long long stride = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!O|piiipLiii", kwlist, &ModelType, &model, &paths, &video, &fpc,
                                     &fstep, &nclips, &dense, &stride, &filter, &resize_short, &norm))
        return -1;
    if (self->r || self->model) {
        raise_error("ClipReader: already initialised");
        return -1;
    }
    ModelObject *mo = (ModelObject *)model;
    jepa_preprocess_params pp;
    if (!model_ready(mo) || pre_params(&pp, filter, resize_short, norm)) return -1;
    if (fpc < 0 || fstep < 0 || nclips < 0 || stride < 0 || (nclips && dense) || (stride && !dense)) {
        raise_error("clip sampling: frames_per_clip, frame_step, num_clips and stride are >= 0; num_clips and "
                    "dense exclude each other; stride goes with dense");
        return -1;
    }
    PyObject *seq = PySequence_Fast(paths, "paths: a list of file paths");
    if (!seq) return -1;
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n < 1 || n > CLIPS_MAX_IMAGES || (video && n != 1)) {
        Py_DECREF(seq);
        PyErr_Format(JepaError, "paths: %zd given; a video is one path, images 1 to %d", n, CLIPS_MAX_IMAGES);
        return -1;
    }
    PyObject *keep = PyTuple_New(n);
    const char **names = PyMem_Calloc((size_t)n, sizeof *names);
    int rc = -1;
    if (!keep || !names) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *b = NULL;
        if (!PyUnicode_FSConverter(PySequence_Fast_GET_ITEM(seq, i), &b)) goto done;
        PyTuple_SET_ITEM(keep, i, b);
        names[i] = PyBytes_AS_STRING(b);
    }
    const struct clip_inputs in = {
        .video = video ? names[0] : NULL, .images = video ? NULL : names, .n_images = video ? 0 : (int)n,
        .sampling = {.frames_per_clip = fpc, .frame_step = fstep, .num_clips = nclips, .dense = dense,
                     .stride = stride}};
    struct jerr e = {0};
    jepa_status st;
    Py_BEGIN_ALLOW_THREADS
    st = clips_open_inputs(&self->r, &in, &mo->pre, &pp, mo->info.n_frames, "resize_short", &e);
    Py_END_ALLOW_THREADS
    if (st) {
        raise_error(e.msg);
        goto done;
    }
    Py_INCREF(model);
    self->model = mo;
    self->keep = keep, self->names = names;
    keep = NULL, names = NULL;
    rc = 0;
done:
    Py_XDECREF(keep);
    PyMem_Free(names);
    Py_DECREF(seq);
    return rc;
}

static void ClipReader_dealloc(ClipReaderObject *self) {
    if (self->r) clips_close(self->r);
    Py_XDECREF(self->keep);
    PyMem_Free(self->names);
    Py_XDECREF(self->model);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *ClipReader_get_count(ClipReaderObject *self, void *unused) {
    (void)unused;
    return self->r ? PyLong_FromLong(clips_count(self->r)) : raise_error("no clip reader");
}

static PyObject *ClipReader_get_shape(ClipReaderObject *self, void *unused) {
    (void)unused;
    if (!self->r) return raise_error("no clip reader");
    int T, H, W;
    clips_shape(self->r, &T, &H, &W);
    return Py_BuildValue("(iiii)", 3, T, H, W);
}

/* read_into(out float32 [3, T, H, W]): the next clip. */
static PyObject *ClipReader_read_into(ClipReaderObject *self, PyObject *args) {
    PyObject *oo;
    if (!PyArg_ParseTuple(args, "O", &oo)) return NULL;
    if (!self->r) return raise_error("no clip reader");
    if (self->busy) return raise_error("this clip reader is reading in another thread");
    if (self->next >= clips_count(self->r)) return raise_error("read_into: every clip was read");
    int T, H, W;
    clips_shape(self->r, &T, &H, &W);
    struct buf bo;
    void *out;
    if (buf_get(&bo, oo, "out", 'f', 4, PROD(3, T, H, W), 1, 0, &out)) {
        buf_release(&bo);
        return NULL;
    }
    struct jerr e = {0};
    jepa_status st;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    st = clips_next(self->r, out, &e);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    buf_release(&bo);
    if (st) return raise_error(e.msg);
    self->next++;
    const char *note = clips_take_note(self->r);
    if (note) return PyUnicode_FromString(note);
    Py_RETURN_NONE;
}

static PyGetSetDef ClipReader_getset[] = {
    {"count", (getter)ClipReader_get_count, NULL, "the number of clips", NULL},
    {"shape", (getter)ClipReader_get_shape, NULL, "(3, T, H, W) of every clip", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef ClipReader_methods[] = {
    {"read_into", (PyCFunction)ClipReader_read_into, METH_VARARGS,
     "read_into(out): the next clip into out; returns a note (str) once, or None"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ClipReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "jepa_c._jepa.ClipReader",
    .tp_basicsize = sizeof(ClipReaderObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "ClipReader(model, paths, video=False, ...): images or a video as preprocessed clips",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)ClipReader_init,
    .tp_dealloc = (destructor)ClipReader_dealloc,
    .tp_methods = ClipReader_methods,
    .tp_getset = ClipReader_getset,
};

/* ---- module --------------------------------------------------------------------------- */

static PyObject *is_image_file(PyObject *mod, PyObject *args) {
    (void)mod;
    PyObject *p;
    if (!PyArg_ParseTuple(args, "O&", PyUnicode_FSConverter, &p)) return NULL;
    const bool r = image_is_image_file(PyBytes_AS_STRING(p));
    Py_DECREF(p);
    return PyBool_FromLong(r);
}

static PyObject *version(PyObject *mod, PyObject *unused) {
    (void)mod, (void)unused;
    return PyUnicode_FromString(jepa_version());
}

/* build_info() -> the commit and the "key: value" feature lines of `jepa --version`
 * (common/buildinfo.h); the package parses them into a dict. */
static PyObject *build_info(PyObject *mod, PyObject *unused) {
    (void)mod, (void)unused;
    return Py_BuildValue("(ss)", cli_build_commit, cli_build_features);
}

/* jepa.pull(ref, type, endpoint, retries, stall_timeout, progress, small): a model file from
 * the Hugging Face hub into the cache (common/hub.h), its path; None when the repository
 * holds a checkpoint for the converter instead (jepa_c/hub.py); small: take a file without
 * a sha256 of at most JH_SMALL_MAX bytes. The GIL released meanwhile. */
static PyObject *pull(PyObject *mod, PyObject *args, PyObject *kw) {
    (void)mod;
    static char *kwlist[] = {"ref", "type", "endpoint", "retries", "stall_timeout", "progress", "small", NULL};
    const char *ref, *type = NULL, *endpoint = NULL;
    int retries = -1, progress = 0, small = 0;
    long stall = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s|zzilpp", kwlist, &ref, &type, &endpoint, &retries, &stall,
                                     &progress, &small))
        return NULL;
    struct jh_ref r;
    char err[JH_ERR_LEN], path[JH_PATH_LEN];
    if (jh_ref_parse(ref, &r, err)) return PyErr_Format(PyExc_ValueError, "%s", err);
    const struct jh_pull_opts o = {.endpoint = endpoint, .type = type, .retries = retries, .stall_timeout_s = stall,
                                   .progress = progress ? jh_progress_stderr : NULL,
                                   .small_max = small ? JH_SMALL_MAX : 0};
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = jh_pull(&r, &o, path, sizeof path, err);
    Py_END_ALLOW_THREADS
    if (rc == JH_CHECKPOINT) Py_RETURN_NONE;
    if (rc) return PyErr_Format(rc == JH_ERR_USAGE ? PyExc_ValueError : JepaError, "%s", err);
    return PyUnicode_DecodeFSDefault(path);
}

/* hub_list(repo, endpoint, retries, stall_timeout) -> (cache folder, [file names]). */
static PyObject *hub_list(PyObject *mod, PyObject *args) {
    (void)mod;
    const char *ref, *endpoint = NULL;
    int retries = -1;
    long stall = 0;
    if (!PyArg_ParseTuple(args, "s|zil", &ref, &endpoint, &retries, &stall)) return NULL;
    struct jh_ref r;
    char err[JH_ERR_LEN], dir[JH_PATH_LEN], *names = NULL;
    if (jh_ref_parse(ref, &r, err)) return PyErr_Format(PyExc_ValueError, "%s", err);
    const struct jh_pull_opts o = {.endpoint = endpoint, .retries = retries, .stall_timeout_s = stall};
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = jh_list(&r, &o, dir, sizeof dir, &names, err);
    Py_END_ALLOW_THREADS
    if (rc) {
        free(names);
        return PyErr_Format(rc == JH_ERR_USAGE ? PyExc_ValueError : JepaError, "%s", err);
    }
    PyObject *res = Py_BuildValue("(Ns)", PyUnicode_DecodeFSDefault(dir), names);
    free(names);
    return res;
}

static PyMethodDef module_methods[] = {
    {"pull", (PyCFunction)(void (*)(void))pull, METH_VARARGS | METH_KEYWORDS, "a model file from the hub into the cache"},
    {"hub_list", hub_list, METH_VARARGS, "(cache folder, '\\n'-joined file names) of a hub repository"},
    {"version", version, METH_NOARGS, "the library's version"},
    {"build_info", build_info, METH_NOARGS, "(commit, feature lines) of this build"},
    {"is_image_file", is_image_file, METH_VARARGS, "whether a file starts with a PNG, JPEG or WebP signature"},
    {"plan_defaults", plan_defaults, METH_VARARGS, "plan_defaults('lewm' | 'ac') -> dict"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_jepa", "jepa.c's C library, bound for the jepa package", -1, module_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__jepa(void) {
    if (PyType_Ready(&ModelType) < 0 || PyType_Ready(&ContextType) < 0 || PyType_Ready(&ClipReaderType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    JepaError = PyErr_NewExceptionWithDoc("jepa_c.Error", "an error reported by jepa.c, with its one-line reason",
                                          PyExc_RuntimeError, NULL);
    if (!JepaError || PyModule_AddObjectRef(m, "Error", JepaError) < 0 ||
        PyModule_AddObjectRef(m, "Model", (PyObject *)&ModelType) < 0 ||
        PyModule_AddObjectRef(m, "Context", (PyObject *)&ContextType) < 0 ||
        PyModule_AddObjectRef(m, "ClipReader", (PyObject *)&ClipReaderType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
