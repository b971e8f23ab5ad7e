/*
 * cmd_run.c — `jepa embed`, `jepa predict` and `jepa classify`: load a model, read the
 * input, run the forward through the public API (include/jepa.h), write .npy outputs.
 * One loop for every input: its clips (one clip, a 5-D tensor's B clips, N test
 * patterns, a video's sampled or dense clips) run in passes of G clips, and each clip's
 * outputs (embeddings, logits, a per-clip top-k for dense clips) are taken as its pass
 * ends; then each command writes what it writes.
 *
 *   jepa embed    -m MODEL INPUT [--pool mean|cls|lewm|none] [--hier] [--batch N] [-o OUT.npy]
 *   jepa predict  -m MODEL INPUT --ctx C.npy --tgt T.npy [--mask-index K]
 *                 [--modality auto|video|image] -o PRED.npy [--ctx-out CTX.npy]
 *   jepa classify -m MODEL INPUT [-k 5] [--logits-out L.npy]
 *   INPUT: --input-tensor X.npy (float32 [C,T,H,W] or [C,H,W], already preprocessed),
 *          --test-pattern TxHxW, or pixels: -i IMAGE..., --frames-npy F.npy, VIDEO
 *          (cli/inputs.c: the options; input/clips.c: decoding, the clip plan, the
 *          model's preprocessing)
 *   common: -g N (CUDA GPU N), -t N threads, --cpu ISA, --time, -v, -q
 *   --batch N (embed): N clips per forward pass, outputs stacked on a leading axis: N test
 *          patterns, the clips of a 5-D [B, C, T, H, W] input tensor, or a video's clips
 *   --repeat N (embed): N more timed encodes of the same input, median on stderr
 *   --prepack: the matmul weights packed once and kept (CPU; 4 bytes per weight)
 *
 * Tested by tests/models/test_cli_run.sh (fixtures) and tests/input/test_cli_input.sh
 * (pixel inputs).
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/inputs.h"
#include "cli/progress.h"
#include "cli/run_many.h"
#include "common/topk.h"
#include "input/clips.h"
#include "input/image.h"
#include "input/npy.h"
#include "jepa.h"

enum run_cmd { RUN_EMBED, RUN_PREDICT, RUN_CLASSIFY };

struct run_opts {
    const char *model, *input_tensor, *test_pattern, *out, *ctx, *tgt, *ctx_out, *logits_out, *cpu;
    const char *pool;      /* mean | cls | lewm | none */
    int hier, threads, timing, verbose, topk, mask_index;
    int gpu;               /* -g N: CUDA device N; -1: the CPU */
    int batch;             /* --batch N (embed); 0: not given */
    int repeat;            /* --repeat N (embed): N more timed encodes */
    int prepack;           /* --prepack: the weights packed once (jepa_ctx_set_prepack) */
    jepa_modality modality;
    struct inputs_opts in;   /* -i / --frames-npy / VIDEO and their options (cli/inputs.h) */
    /* many inputs (embed, classify): --out-dir D, the inputs from the positional FILE / DIR
     * arguments and --inputs LIST.txt, one output per input (run_many) */
    const char *out_dir, *inputs_list;
    int resume, quiet;
    bool many;               /* many inputs (run_many): --out-dir, --inputs, --resume or a DIR */
    const char **pos;        /* the positional arguments, in order (parse allocates) */
    int n_pos;
    bool results_quiet;      /* run_input prints no per-input results (run_many) */
    const struct encoded *pre;   /* the input was encoded already (a batch of many inputs) */
};

/* One clip's encoder outputs, computed in a batch with other inputs (many_prefetch); the
 * pointers are into the batch's buffers. */
struct encoded {
    int T, H, W;
    const float *tokens, *pooled, *cls, *emb, *hier;
};

/* What run_input tells run_many about one input. */
struct run_result {
    int clips;               /* clips encoded */
    bool stacked;            /* the outputs have a leading clip axis */
    int top1;                /* classify: the top class (-1: none) and its probability */
    double p1;
};

static const char *cmd_name(enum run_cmd c) {
    return c == RUN_EMBED ? "embed" : c == RUN_PREDICT ? "predict" : "classify";
}

static void run_usage(enum run_cmd c) {
    printf("usage: jepa %s -m MODEL ", cmd_name(c));
    switch (c) {
    case RUN_EMBED:
        printf("INPUT [--pool mean|cls|lewm|none] [--hier] [--batch N] [-o OUT.npy]\n"
               "  writes tokens [N, D] (--pool none, the default), pooled [D] (mean of the patch\n"
               "  tokens, or the CLS row), LeWM's projected state (lewm),\n"
               "  or with --hier the hierarchical levels [L, N, D] (V-JEPA 2.1)\n"
               "  --batch N             encode N clips per forward pass, outputs stacked on a\n"
               "                        leading clip axis ([B, N, D], [B, D], ...): with\n"
               "                        --test-pattern, N patterns (each its own phase); with a\n"
               "                        5-D --input-tensor [B, C, T, H, W], its B clips N at a time\n"
               "                        (a 5-D tensor alone runs all B at once); with a video's\n"
               "                        clips (--num-clips, --dense), N at a time (same outputs)\n"
               "  --repeat N            encode the input N more times and print the median time\n");
        break;
    case RUN_PREDICT:
        printf("INPUT --ctx C.npy --tgt T.npy -o PRED.npy\n"
               "       [--mask-index K] [--modality auto|video|image] [--ctx-out CTX.npy]\n"
               "  encodes the input, takes the tokens at the context ids and predicts the\n"
               "  target ids: PRED [N_tgt, out_dim], CTX [N_ctx, out_dim] (V-JEPA 2.1)\n");
        break;
    case RUN_CLASSIFY:
        printf("INPUT [-k 5] [--logits-out L.npy]\n");
        break;
    }
    if (c != RUN_PREDICT)
        printf("  many inputs: --out-dir D [--inputs LIST.txt] [--resume] FILE|DIR ... (images and videos;\n"
               "  a DIR stands for its image and video files, LIST.txt for one path per line): the model\n"
               "  is loaded once; each input's output goes to D/<its file name>%s, written whole or not\n"
               "  at all; a bad input is reported on its own line and skipped (exit 1 at the end);\n"
               "  D/index.jsonl has one line per input (source, output, status, clips%s, error);\n"
               "  --resume skips inputs whose output exists; progress on stderr unless -q;\n"
               "  --batch N encodes inputs of one shape N per forward (default 1 on the CPU, where it\n"
               "  gains ~5 %% and moves the last bits; 8 with -g), each output as one input's within\n"
               "  rounding\n",
               c == RUN_EMBED ? ".npy" : ".logits.npy", c == RUN_CLASSIFY ? ", top1, p, label" : "");
    printf("INPUT is one of:\n"
           "  --input-tensor X.npy  float32 [C, T, H, W] clip or [C, H, W] image, preprocessed%s\n",
           c == RUN_EMBED ? ";\n                        [B, C, T, H, W]: B clips (outputs stacked)" : "");
    inputs_usage(c != RUN_PREDICT);
    printf(
           "  --test-pattern TxHxW  a synthetic moving pattern of T frames of H x W (no file needed)\n"
           "  -g, --gpu N           run on CUDA GPU N (exit 1 with the reason when there is none)\n"
           "  -t N                  threads (default: all cores)\n"
           "  --cpu ISA             cap the kernels: scalar, avx2, avx512, neon\n"
           "  --prepack             keep the matmul weights packed for the CPU kernels after\n"
           "                        their first use: later clips skip that packing (4-9 %% of a\n"
           "                        small model's time), same outputs; costs 4 bytes per weight\n"
           "  --time                print timings to stderr\n"
           "  -v                    describe the run on stderr (grid, kernels, threads)\n"
           "  -q                    print nothing but errors\n");
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int parse(enum run_cmd c, int argc, char **argv, struct run_opts *o) {
    const char *name = cmd_name(c);
    int rc;
    long long num;
    memset(o, 0, sizeof *o);
    o->pos = malloc(sizeof(char *) * (size_t)(argc > 0 ? argc : 1));
    if (!o->pos) return cli_fail(NULL, "out of memory");
    o->gpu = -1;
    o->pool = "none";
    o->topk = 5;
    o->mask_index = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEEDV() do { if (!v) return cli_usage_error(name, "option %s needs a value", a); i++; } while (0)
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { run_usage(c); return -1; }
        else if (!strcmp(a, "-m") || !strcmp(a, "--model")) { NEEDV(); o->model = v; }
        else if (!strcmp(a, "--input-tensor")) { NEEDV(); o->input_tensor = v; }
        else if (!strcmp(a, "--test-pattern")) { NEEDV(); o->test_pattern = v; }
        else if (!strcmp(a, "-o") || !strcmp(a, "--out")) { NEEDV(); o->out = v; }
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            NEEDV();
            if ((rc = cli_parse_int(name, a, v, 1, 4096, &num))) return rc;
            o->threads = (int)num;
        }
        else if (!strcmp(a, "--cpu")) { NEEDV(); o->cpu = v; }
        else if (!strcmp(a, "--prepack")) o->prepack = 1;
        else if (!strcmp(a, "-g") || !strcmp(a, "--gpu")) {
            NEEDV();
            if ((rc = cli_parse_int(name, a, v, 0, 1024, &num))) return rc;
            o->gpu = (int)num;
        }
        else if (c == RUN_EMBED && !strcmp(a, "--repeat")) {
            NEEDV();
            if ((rc = cli_parse_int(name, a, v, 1, 100000, &num))) return rc;
            o->repeat = (int)num;
        }
        else if (c != RUN_PREDICT && !strcmp(a, "--batch")) {
            NEEDV();
            if ((rc = cli_parse_int(name, a, v, 1, 65536, &num))) return rc;
            o->batch = (int)num;
        }
        else if (!strcmp(a, "--time")) o->timing = 1;
        else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) o->verbose = 0, o->quiet = 1;
        else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) o->verbose = 1;
        else if (c == RUN_EMBED && !strcmp(a, "--pool")) {
            NEEDV();
            if (strcmp(v, "mean") && strcmp(v, "cls") && strcmp(v, "lewm") && strcmp(v, "none"))
                return cli_usage_error(name, "--pool takes mean, cls, lewm or none, not '%s'", v);
            o->pool = v;
        }
        else if (c == RUN_EMBED && !strcmp(a, "--hier")) o->hier = 1;
        else if (c == RUN_PREDICT && !strcmp(a, "--ctx")) { NEEDV(); o->ctx = v; }
        else if (c == RUN_PREDICT && !strcmp(a, "--tgt")) { NEEDV(); o->tgt = v; }
        else if (c == RUN_PREDICT && !strcmp(a, "--ctx-out")) { NEEDV(); o->ctx_out = v; }
        else if (c == RUN_PREDICT && !strcmp(a, "--mask-index")) {
            NEEDV();
            if ((rc = cli_parse_int(name, a, v, 0, 1 << 24, &num))) return rc;
            o->mask_index = (int)num;
        }
        else if (c == RUN_PREDICT && !strcmp(a, "--modality")) {
            NEEDV();
            if (!strcmp(v, "auto")) o->modality = JEPA_MODALITY_AUTO;
            else if (!strcmp(v, "video")) o->modality = JEPA_MODALITY_VIDEO;
            else if (!strcmp(v, "image")) o->modality = JEPA_MODALITY_IMAGE;
            else return cli_usage_error(name, "--modality takes auto, video or image, not '%s'", v);
        }
        else if (c == RUN_CLASSIFY && !strcmp(a, "-k")) {
            NEEDV();
            if ((rc = cli_parse_int(name, a, v, 1, 1 << 20, &num))) return rc;
            o->topk = (int)num;
        }
        else if (c == RUN_CLASSIFY && !strcmp(a, "--logits-out")) { NEEDV(); o->logits_out = v; }
        else if (c != RUN_PREDICT && !strcmp(a, "--out-dir")) { NEEDV(); o->out_dir = v; }
        else if (c != RUN_PREDICT && !strcmp(a, "--inputs")) { NEEDV(); o->inputs_list = v; }
        else if (c != RUN_PREDICT && !strcmp(a, "--resume")) o->resume = 1;
        else if ((rc = inputs_parse(&o->in, name, c != RUN_PREDICT, argc, argv, &i))) { if (rc != 1) return rc; }
        else if (a[0] == '-') return cli_usage_error(name, "unknown option '%s'", a);
        else o->pos[o->n_pos++] = a;
#undef NEEDV
    }
    if (!o->model) return cli_usage_error(name, "missing -m MODEL");
    bool dir_arg = false;   /* a DIR argument means many inputs */
    for (int k = 0; k < o->n_pos && !dir_arg; k++) {
        struct stat st;
        dir_arg = !stat(o->pos[k], &st) && S_ISDIR(st.st_mode);
    }
    if (c != RUN_PREDICT && (o->out_dir || o->inputs_list || o->resume || dir_arg)) {
        /* many inputs: one file each into --out-dir D, or stacked into -o / --logits-out
         * (run_many checks the rest) */
        const char *stack = c == RUN_EMBED ? o->out : o->logits_out;
        if (!o->out_dir && !stack)
            return cli_usage_error(name, "many inputs (--inputs, a DIR, --resume) write into --out-dir D or, stacked, "
                                         "into %s", c == RUN_EMBED ? "-o FEATS.npy" : "--logits-out LOGITS.npy");
        if (o->out_dir && stack)
            return cli_usage_error(name, "--out-dir writes one file per input; %s stacks them into one: not both",
                                   c == RUN_EMBED ? "-o" : "--logits-out");
        if (o->input_tensor || o->test_pattern || o->in.n_images || o->in.frames_npy ||
            (c == RUN_EMBED && o->logits_out) || (c == RUN_CLASSIFY && o->out) || o->repeat)
            return cli_usage_error(name, "many inputs come as FILE / DIR arguments or --inputs LIST.txt (images, "
                                         "videos, uint8 frame arrays .npy), one output each: not with "
                                         "--input-tensor, --test-pattern, -i, --frames-npy or --repeat%s",
                                   c == RUN_EMBED ? ", --logits-out" : ", -o");
        if (!o->n_pos && !o->inputs_list) return cli_usage_error(name, "many inputs: give FILE, DIR or --inputs");
        o->many = true;
        if (o->hier && strcmp(o->pool, "none"))
            return cli_usage_error(name, "--hier writes every token of every level; drop --pool");
        return 0;
    }
    if (c == RUN_CLASSIFY && o->batch)
        return cli_usage_error(name, "--batch N groups many inputs (--out-dir, --inputs, a DIR); one input's clips "
                                     "run together already");
    for (int k = 0; k < o->n_pos; k++)
        if ((rc = inputs_positional(&o->in, name, o->pos[k]))) return rc;
    if ((rc = inputs_check(&o->in, name))) return rc;
    if (!!o->input_tensor + !!o->test_pattern + !!inputs_given(&o->in) != 1)
        return cli_usage_error(name, "give one input: --input-tensor X.npy, --test-pattern TxHxW, -i IMAGE, "
                                     "--frames-npy F.npy or a VIDEO");
    if (c == RUN_PREDICT && (!o->ctx || !o->tgt || !o->out))
        return cli_usage_error(name, "predict needs --ctx, --tgt and -o");
    {   /* no output may replace an input, nor two outputs one file */
        const char *outs[] = {o->out, o->ctx_out, o->logits_out};
        const char *ins[CLIPS_MAX_IMAGES + 6] = {o->model, o->input_tensor, o->ctx, o->tgt, o->in.frames_npy,
                                                  o->in.video};
        for (int k = 0; k < o->in.n_images; k++) ins[6 + k] = o->in.images[k];
        if ((rc = cli_check_outputs(name, ins, 6 + o->in.n_images, outs, 3))) return rc;
    }
    if (o->hier && strcmp(o->pool, "none"))
        return cli_usage_error(name, "--hier writes every token of every level; drop --pool");
    return 0;
}

/* The input tensor as a clip: [C, T, H, W], or [C, H, W] read as T = 1; with batch_ok also
 * [B, C, T, H, W], B clips (*nb = B; 1 otherwise). With peek, only the header (npy_peek_f32:
 * a->data NULL; the data read later by npy_read_f32). */
static int load_clip(const char *path, struct npy *a, int in_chans, int batch_ok, bool peek, int *nb,
                     int *T, int *H, int *W) {
    struct jerr e = {0};
    if (peek ? npy_peek_f32(a, path, &e) : npy_load_f32(a, path, &e)) return cli_fail(path, "%s", e.msg);
    const int c0 = a->ndim == 5 ? 1 : 0;   /* index of the channel axis */
    *nb = 1;
    if (a->ndim == 3) {
        *T = 1, *H = (int)a->shape[1], *W = (int)a->shape[2];
    } else if (a->ndim == 4 || (a->ndim == 5 && batch_ok)) {
        if (a->ndim == 5) *nb = (int)a->shape[0];
        *T = (int)a->shape[c0 + 1], *H = (int)a->shape[c0 + 2], *W = (int)a->shape[c0 + 3];
    } else {
        int nd = a->ndim;
        npy_free(a);
        return cli_fail(path, "expected a [C, T, H, W] or [C, H, W] array%s, got %d dimensions",
                        batch_ok ? " (or [B, C, T, H, W])" : "", nd);
    }
    if (a->shape[c0] != in_chans || *nb < 1) {
        int c = (int)a->shape[c0];
        npy_free(a);
        return cli_fail(path, "expected %d channels first ([%sC, T, H, W]), got %d", in_chans,
                        c0 ? "B, " : "", c);
    }
    return 0;
}

/* "TxHxW": three decimal integers joined by 'x', T in 1..4096, H and W in 1..8192. */
static int parse_dims(const char *s, int *T, int *H, int *W) {
    static const long hi[3] = {4096, 8192, 8192};
    int *dst[3] = {T, H, W};
    for (int i = 0; i < 3; i++) {
        long v = 0;
        int digits = 0;
        for (; *s >= '0' && *s <= '9'; s++, digits++) {
            v = v * 10 + (*s - '0');
            if (v > hi[i]) return -1;
        }
        if (!digits || v < 1 || *s != (i < 2 ? 'x' : '\0')) return -1;
        *dst[i] = (int)v;
        if (i < 2) s++;
    }
    return 0;
}

/* nb deterministic clips [nb, 3, T, H, W]: drifting colour gratings, normalised to about
 * [-2, 2] like an ImageNet-normalised frame, clip b with its own phase (clip 0 is the
 * pattern of a single run). For demos and benchmarks without files. pattern_shape reads
 * the spec and sizes a (data NULL), pattern_fill writes the values. */
static int pattern_shape(const char *spec, struct npy *a, int in_chans, int nb, int *T, int *H, int *W) {
    if (parse_dims(spec, T, H, W))
        return cli_usage_error("embed", "--test-pattern takes FRAMESxHEIGHTxWIDTH (1..4096 x 1..8192 x 1..8192), "
                               "e.g. 16x256x256, not '%s'", spec);
    memset(a, 0, sizeof *a);
    if ((int64_t)nb * in_chans * *T * *H * *W > ((int64_t)1 << 28))   /* 1 GiB of floats */
        return cli_usage_error("embed", "--test-pattern %s x %d clips is more than 1 GiB of input", spec, nb);
    a->dtype = NPY_F32;
    a->ndim = nb > 1 ? 5 : 4;
    int64_t *sh = a->shape + (nb > 1);
    if (nb > 1) a->shape[0] = nb;
    sh[0] = in_chans, sh[1] = *T, sh[2] = *H, sh[3] = *W;
    a->count = (int64_t)nb * in_chans * *T * *H * *W;
    return 0;
}

static void pattern_fill(float *x, int nb, int in_chans, int T, int H, int W) {
    for (int b = 0; b < nb; b++)
        for (int c = 0; c < in_chans; c++)
            for (int t = 0; t < T; t++)
                for (int y = 0; y < H; y++)
                    for (int xx = 0; xx < W; xx++)
                        *x++ = (float)(1.5 * sin(0.07 * (c + 1) * xx + 0.05 * y + 0.3 * t + 0.9 * b) *
                                       cos(0.04 * y - 0.02 * (c + 2) * xx + 0.1 * t + 0.5 * b));
}

static int load_ids(const char *path, struct npy *a, int n_tokens) {
    struct jerr e = {0};
    if (npy_load_i32(a, path, &e)) return cli_fail(path, "%s", e.msg);
    if (a->ndim != 1 || a->count < 1) {
        npy_free(a);
        return cli_fail(path, "expected a non-empty 1-D array of token ids");
    }
    const int32_t *v = a->data;
    for (int64_t i = 0; i < a->count; i++)
        if (v[i] < 0 || v[i] >= n_tokens) {
            int bad = v[i];
            npy_free(a);
            return cli_fail(path, "token id %d at index %lld is outside the input's %d tokens", bad,
                            (long long)i, n_tokens);
        }
    return 0;
}

static int save(const char *path, const float *data, int ndim, const int64_t *shape) {
    struct jerr e = {0};
    if (npy_save_f32(path, data, ndim, shape, &e)) return cli_fail(NULL, "%s", e.msg);   /* names the file */
    return 0;
}

/* jepa_embed_params.on_layer for -v: the blocks of one clip as progress. */
static void layer_progress(void *user, int done, int n_layers) {
    struct cli_progress *p = user;
    p->done_run = done;
    cli_progress_show(p, done, n_layers, done == n_layers);
}

/* "wrote PATH: float32 [a, b] (what)" on stderr, after an output is complete. */
static void report_written(const char *path, int ndim, const int64_t *shape, const char *what) {
    char dims[128];
    size_t k = 0;
    dims[0] = 0;
    for (int i = 0; i < ndim && k < sizeof dims; i++)
        k += (size_t)snprintf(dims + k, sizeof dims - k, "%s%lld", i ? ", " : "", (long long)shape[i]);
    char esc[4 * 256 + 1];
    fprintf(stderr, "wrote %s: float32 [%s] (%s)\n", cli_escape(path, esc, sizeof esc), dims, what);
}

/* Where the clips come from: nb clips held in memory (an input tensor, test patterns, a
 * one-clip pixel input), or a reader streaming a video's clips (input/clips.h).
 *
 * A single clip of a pixel input, a test pattern or an input tensor is made only by
 * source_load, once the request is known, so that it can be written straight into the context's arena
 * (jepa_ctx_embed_input), where it costs no memory of its own. */
struct clip_source {
    struct clip_reader *rdr;   /* streams clips when they are more than one */
    struct npy mem;            /* the clips in memory [nb, C, T, H, W] */
    int nb, T, H, W;
    bool stacked;              /* the outputs get a leading clip axis */
    const char *name;
    bool pending;              /* mem is sized, its one clip not made yet (source_load) */
    struct clip_reader *one;   /* the reader of a pending pixel input */
    const char *npy_path;      /* the file of a pending input tensor (mem: its header) */
                               /* neither: a pending test pattern */
    int in_chans;
    bool in_arena;             /* mem.data is the context's (not freed here) */
};

static int source_open(struct clip_source *s, const struct run_opts *o, enum run_cmd cmd,
                       const jepa_model *m, const jepa_model_info *info) {
    memset(s, 0, sizeof *s);
    s->nb = 1;
    if (o->pre) {   /* encoded already: only its geometry is needed */
        s->name = inputs_name(&o->in);
        s->T = o->pre->T, s->H = o->pre->H, s->W = o->pre->W;
        return 0;
    }
    if (inputs_given(&o->in)) {
        s->name = inputs_name(&o->in);
        if (inputs_open(&s->rdr, &o->in, m, o->verbose)) return CLI_EXIT_FAIL;
        clips_shape(s->rdr, &s->T, &s->H, &s->W);
        s->nb = clips_count(s->rdr);
        s->stacked = s->nb > 1;
        if (s->nb == 1) {   /* one clip: held like a tensor, read by source_load */
            s->mem.dtype = NPY_F32, s->mem.ndim = 4;
            s->mem.count = (int64_t)3 * s->T * s->H * s->W;
            s->one = s->rdr, s->rdr = NULL;
            s->pending = true;
        }
        return 0;
    }
    if (o->test_pattern) {
        s->name = "test pattern";
        s->nb = o->batch > 0 ? o->batch : 1;
        s->stacked = s->nb > 1;
        s->in_chans = info->in_chans;
        int rc = pattern_shape(o->test_pattern, &s->mem, info->in_chans, s->nb, &s->T, &s->H, &s->W);
        s->pending = !rc;
        return rc;
    }
    s->name = o->input_tensor;
    int rc = load_clip(o->input_tensor, &s->mem, info->in_chans, cmd == RUN_EMBED, true, &s->nb, &s->T, &s->H,
                       &s->W);
    if (!rc && s->nb == 1) {   /* one clip: its data read by source_load */
        s->npy_path = o->input_tensor;
        s->pending = true;
    } else if (!rc) {          /* a batch of clips: read now */
        rc = load_clip(o->input_tensor, &s->mem, info->in_chans, cmd == RUN_EMBED, false, &s->nb, &s->T,
                       &s->H, &s->W);
    }
    s->stacked = !rc && s->mem.ndim == 5;
    return rc;
}

/* Makes a pending source's clips: into dst (room for them: the context's arena), or into
 * memory of its own when dst is NULL. */
static int source_load(struct clip_source *s, float *dst) {
    if (!s->pending) return 0;
    s->pending = false;
    float *x = dst ? dst : malloc(sizeof(float) * (size_t)s->mem.count);
    if (!x) return cli_fail(NULL, "out of memory for the %dx%dx%d input", s->T, s->H, s->W);
    s->mem.data = x;
    s->in_arena = dst != NULL;
    struct jerr e = {0};
    if (s->npy_path) {
        const int failed = npy_read_f32(&s->mem, s->npy_path, x, &e) != JEPA_OK;
        s->mem.dtype = NPY_F32;
        return failed ? cli_fail(s->npy_path, "%s", e.msg) : 0;
    }
    if (!s->one) {
        pattern_fill(x, s->nb, s->in_chans, s->T, s->H, s->W);
        return 0;
    }
    const int failed = clips_next(s->one, x, &e);
    clips_close(s->one);
    s->one = NULL;
    return failed ? cli_fail(NULL, "%s", e.msg) : 0;
}

/* Clips k0 .. k0 + g - 1 as one [g, C, T, H, W] array: in place for clips in memory, read
 * into buf otherwise. NULL after printing the reason. */
static const float *source_clips(struct clip_source *s, int k0, int g, float *buf, bool verbose) {
    const size_t clip_floats = (size_t)3 * s->T * s->H * s->W;
    if (!s->rdr) return (const float *)s->mem.data + (size_t)k0 * clip_floats;
    for (int j = 0; j < g; j++) {
        struct jerr e = {0};
        if (clips_next(s->rdr, buf + (size_t)j * clip_floats, &e)) {
            cli_fail(NULL, "%s", e.msg);
            return NULL;
        }
        const char *note = clips_take_note(s->rdr);
        if (note && verbose) fprintf(stderr, "jepa: %s: note: %s\n", s->name, note);
    }
    return buf;
}

static void source_close(struct clip_source *s) {
    clips_close(s->rdr);
    clips_close(s->one);
    if (s->in_arena) s->mem.data = NULL;
    npy_free(&s->mem);
}

/* The encoder's outputs of k clips, as one forward pass writes them (jepa_embed_out). The
 * token grid [k, n, D] (and the hierarchical levels) only where the command reads them:
 * unasked for, the encoder leaves its tokens in its arena, and a 3137-token ViT-L clip
 * saves 12 MiB. The per-clip vectors are always there (the summary prints the mean). */
struct enc_outs {
    float *tokens, *pooled, *cls, *emb, *hier;
};

static bool cmd_reads_tokens(enum run_cmd cmd, const struct run_opts *o) {
    return cmd != RUN_EMBED || (!o->hier && !strcmp(o->pool, "none"));   /* classify, predict */
}

static void enc_outs_free(struct enc_outs *b) {
    free(b->tokens), free(b->pooled), free(b->cls), free(b->emb), free(b->hier);
    *b = (struct enc_outs){0};
}

/* 0, or -1 with nothing held (out of memory). */
static int enc_outs_alloc(struct enc_outs *b, enum run_cmd cmd, const struct run_opts *o,
                          const jepa_model_info *in, int k, int n) {
    const size_t D = (size_t)in->embed_dim, nd = (size_t)k * n * D;
    *b = (struct enc_outs){0};
    const bool tok = cmd_reads_tokens(cmd, o);
    if ((tok && !(b->tokens = malloc(sizeof(float) * nd))) || !(b->pooled = malloc(sizeof(float) * k * D)) ||
        (in->has_cls && !(b->cls = malloc(sizeof(float) * k * D))) ||
        (in->emb_dim && !(b->emb = malloc(sizeof(float) * k * (size_t)in->emb_dim))) ||
        (o->hier && !(b->hier = malloc(sizeof(float) * in->n_hier * nd)))) {
        enc_outs_free(b);
        return -1;
    }
    return 0;
}

static jepa_embed_out enc_outs_embed_out(const struct enc_outs *b) {
    return (jepa_embed_out){.tokens = b->tokens, .pooled = b->pooled, .cls = b->cls, .hier = b->hier, .emb = b->emb};
}

/* The buffers of one run: a pass's outputs (G clips) and what is kept over all clips. */
struct run_bufs {
    struct enc_outs enc;                         /* [G, ...] one pass */
    float *xs;                                   /* [G, C, T, H, W] streamed clips */
    float *all;                                  /* embed: [nb, per] the requested output */
    float *logits;                               /* classify: [nb, K] */
    double *prob, *mean;                         /* classify: [K] */
    int *order;                                  /* classify: [K] */
    float *pred, *ctx_out;                       /* predict */
};

static void bufs_free(struct run_bufs *b) {
    enc_outs_free(&b->enc);
    free(b->xs), free(b->all), free(b->logits), free(b->prob), free(b->mean), free(b->order), free(b->pred);
    free(b->ctx_out);
}

/* One input (the options' input) through the loaded model m and context c, its outputs
 * written as the options say. 0, or the exit status after printing the reason. */
static int run_input(enum run_cmd cmd, const struct run_opts *op, const jepa_model *m, jepa_ctx *c,
                     const jepa_model_info *infop, double t_load, struct run_result *res) {
    const struct run_opts o = *op;
    const jepa_model_info info = *infop;
    const char *name = cmd_name(cmd);
    struct clip_source src = {0};
    struct npy ctx_ids = {0}, tgt_ids = {0};
    struct run_bufs b = {0};
    int rc = CLI_EXIT_FAIL;
    jepa_status st;
    if (res) res->clips = 0, res->top1 = -1, res->p1 = 0, res->stacked = false;

    /* ---- the clips, and what the request needs of the model ---- */
    double t0 = now_ms();
    if ((rc = source_open(&src, &o, cmd, m, &info))) goto done;
    rc = CLI_EXIT_FAIL;
    const int nb = src.nb, T = src.T, H = src.H, W = src.W;
    if (o.batch > 1 && !src.stacked && !o.test_pattern) {
        rc = cli_usage_error("embed", "--batch %d: %s is one clip; batches come from --test-pattern, a "
                             "5-D --input-tensor [B, C, T, H, W] or a video's clips (--num-clips, --dense)",
                             o.batch, src.name);
        goto done;
    }
    if (o.repeat > 0 && src.rdr) {
        rc = cli_usage_error("embed", "--repeat times clips held in memory; %s streams %d clips", src.name, nb);
        goto done;
    }
    int gt, gh, gw, n;
    if (jepa_model_grid(m, T, H, W, &gt, &gh, &gw, &n)) {
        const int P = info.patch_size, tub = info.tubelet_size;
        cli_fail(src.name, "a %dx%dx%d input does not fit this model (patch %d, tubelet %d): %s", T, H, W, P,
                 tub, H < P || W < P ? "smaller than one patch"
                      : T > 1 && T < tub ? "fewer frames than one tubelet (1 frame is a still image)"
                                         : "more tokens than one clip may have");
        goto done;
    }
    if (o.verbose) {   /* what the patch embedding leaves out, as the reference's does */
        const int P = info.patch_size, tf = T == 1 ? 1 : T - T % info.tubelet_size;
        if (tf != T || gh * P != H || gw * P != W)
            fprintf(stderr, "jepa: %s: note: the last %d frame(s), %d row(s) and %d column(s) of the %dx%dx%d "
                    "input do not fill a tubelet / patch and are dropped, as the reference patch "
                    "embedding drops them\n", src.name, T - tf, H - gh * P, W - gw * P, T, H, W);
    }
    const bool pool_mean = !strcmp(o.pool, "mean"), pool_cls = !strcmp(o.pool, "cls");
    const bool pool_lewm = !strcmp(o.pool, "lewm");
    if (cmd == RUN_EMBED && pool_cls && !info.has_cls) {
        rc = cli_usage_error("embed", "--pool cls: family '%s' has no CLS token", info.family);
        goto done;
    }
    if (cmd == RUN_EMBED && pool_lewm && !info.emb_dim) {
        rc = cli_usage_error("embed", "--pool lewm: family '%s' has no LeWM projector", info.family);
        goto done;
    }
    if (cmd == RUN_EMBED && o.hier && !info.n_hier) {
        rc = cli_usage_error("embed", "--hier: family '%s' has no hierarchical outputs", info.family);
        goto done;
    }
    if (cmd == RUN_PREDICT && !info.has_predictor) { cli_fail(o.model, "this model file has no predictor"); goto done; }
    if (cmd == RUN_CLASSIFY && !info.has_head) { cli_fail(o.model, "this model file has no classifier head"); goto done; }
    if (cmd == RUN_PREDICT && nb != 1) { rc = cli_usage_error(name, "predict takes one clip"); goto done; }
    if (cmd == RUN_PREDICT && (load_ids(o.ctx, &ctx_ids, n) || load_ids(o.tgt, &tgt_ids, n))) goto done;

    /* ---- buffers: G clips per forward pass (embed --batch; in memory: all at once) ---- */
    const int D = info.embed_dim, K = info.n_classes;
    const int G = cmd == RUN_EMBED && o.batch > 0 ? (o.batch < nb ? o.batch : nb) : src.rdr ? 1 : nb;
    const size_t clip_floats = (size_t)info.in_chans * T * H * W;
    const size_t per = o.hier ? (size_t)info.n_hier * n * D : pool_lewm ? (size_t)info.emb_dim
                     : (pool_mean || pool_cls) ? (size_t)D : (size_t)n * D;   /* embed, per clip */
    const int enc_failed = enc_outs_alloc(&b.enc, cmd, &o, &info, G, n);
    b.xs = src.rdr ? malloc(sizeof(float) * (size_t)G * clip_floats) : NULL;
    b.all = cmd == RUN_EMBED && o.out ? malloc(sizeof(float) * per * (size_t)nb) : NULL;
    if (cmd == RUN_CLASSIFY) {
        b.logits = malloc(sizeof(float) * (size_t)K * nb);
        b.prob = calloc((size_t)K, sizeof(double));
        b.mean = calloc((size_t)K, sizeof(double));
        b.order = malloc(sizeof(int) * (size_t)K);
    }
    if (enc_failed || (src.rdr && !b.xs) || (cmd == RUN_EMBED && o.out && !b.all) ||
        (cmd == RUN_CLASSIFY && (!b.logits || !b.prob || !b.mean || !b.order))) {
        cli_fail(NULL, "out of memory for %d clip%s", nb, nb > 1 ? "s" : "");
        goto done;
    }

    /* ---- a single clip made now (source_load): encoded once, it is written into the
     * context's arena, where the encoder's blocks reuse its memory; where that cannot be
     * (--repeat encodes it again), or the call cannot be planned, into its own memory ---- */
    if (src.pending) {
        float *room = NULL;
        if (!o.repeat && nb == 1) {
            const jepa_embed_params ep = {.batch = 1};
            const jepa_embed_out eo = enc_outs_embed_out(&b.enc);
            if (jepa_ctx_embed_input(c, T, H, W, &ep, &eo, &room)) room = NULL;
        }
        if (source_load(&src, room)) goto done;
    }

    /* ---- the one loop: clips in passes of G; each clip's outputs as it is done ---- */
    const bool dense = o.in.dense;
    const int k_show = o.topk < K ? o.topk : K;
    double t_in = now_ms() - t0, t_enc = 0, t_cls = 0;
    /* a video's clips (--num-clips, --dense): progress when nothing else is printed per clip */
    struct cli_progress pg;
    cli_progress_start(&pg, nb > 1 && !o.quiet && !o.results_quiet &&
                                ((cmd == RUN_EMBED && b.all) || (cmd == RUN_CLASSIFY && !dense)),
                       "clips");
    for (int k0 = 0; k0 < nb; k0 += G) {
        const int g = nb - k0 < G ? nb - k0 : G;
        cli_progress_show(&pg, k0, nb, false);
        t0 = now_ms();
        const float *x = o.pre ? NULL : source_clips(&src, k0, g, b.xs, o.verbose);
        if (!x && !o.pre) { cli_progress_clear(&pg); goto done; }
        t_in += now_ms() - t0;
        jepa_embed_out eo = enc_outs_embed_out(&b.enc);
        jepa_embed_params ep = {.batch = g};
        struct cli_progress lp;   /* -v on one long clip: the encoder's blocks */
        cli_progress_start(&lp, o.verbose && nb == 1 && !o.results_quiet, "layers");
        if (lp.on) ep.on_layer = layer_progress, ep.user = &lp;
        t0 = now_ms();
        if (o.pre) {   /* one clip, encoded in a batch of inputs (many_prefetch) */
            const struct encoded *p = o.pre;
            if (eo.tokens) memcpy(eo.tokens, p->tokens, sizeof(float) * (size_t)n * info.embed_dim);
            memcpy(eo.pooled, p->pooled, sizeof(float) * (size_t)info.embed_dim);
            if (eo.cls) memcpy(eo.cls, p->cls, sizeof(float) * (size_t)info.embed_dim);
            if (eo.emb) memcpy(eo.emb, p->emb, sizeof(float) * (size_t)info.emb_dim);
            if (eo.hier) memcpy(eo.hier, p->hier, sizeof(float) * (size_t)info.n_hier * n * info.embed_dim);
        } else if (jepa_ctx_embed(c, x, T, H, W, &ep, &eo)) {
            cli_progress_clear(&pg), cli_progress_clear(&lp);
            if (nb == 1) cli_fail(src.name, "%s", jepa_ctx_error(c));
            else if (g == 1) cli_fail(src.name, "clip %d: %s", k0, jepa_ctx_error(c));
            else cli_fail(src.name, "clips %d..%d: %s", k0, k0 + g - 1, jepa_ctx_error(c));
            goto done;
        }
        t_enc += now_ms() - t0;
        pg.done_run += g;
        for (int j = 0; j < g; j++) {
            const int k = k0 + j;
            const int64_t *fr = src.rdr ? clips_frames(src.rdr, k) : NULL;
            const long long f0 = fr ? (long long)fr[0] : 0, f1 = fr ? (long long)fr[T - 1] : 0;
            if (cmd == RUN_EMBED) {
                const float *out = o.hier ? b.enc.hier : pool_lewm ? b.enc.emb : pool_mean ? b.enc.pooled
                                 : pool_cls ? b.enc.cls : b.enc.tokens;
                if (b.all) memcpy(b.all + per * (size_t)k, out + per * (size_t)j, sizeof(float) * per);
                else if (!o.results_quiet) {   /* nothing written: a summary */
                    const float *pv = b.enc.pooled + (size_t)j * D;
                    double nrm = 0;
                    for (int q = 0; q < D; q++) nrm += (double)pv[q] * pv[q];
                    if (src.stacked) printf("clip %d ", k);
                    if (fr) printf("frames %lld..%lld ", f0, f1);
                    printf("pooled mean: |v| = %.6g, v[0..3] = %.6g %.6g %.6g %.6g\n", sqrt(nrm), pv[0],
                           pv[1 % D], pv[2 % D], pv[3 % D]);
                }
            } else if (cmd == RUN_CLASSIFY) {
                float *lg = b.logits + (size_t)K * k;
                t0 = now_ms();
                if (jepa_ctx_classify(c, b.enc.tokens + (size_t)j * n * D, n, lg)) {
                    cli_progress_clear(&pg);
                    if (nb == 1) cli_fail(o.model, "classify: %s", jepa_ctx_error(c));
                    else cli_fail(src.name, "clip %d: classify: %s", k, jepa_ctx_error(c));
                    goto done;
                }
                t_cls += now_ms() - t0;
                if (cli_check_finite_output(src.name, lg, (size_t)K)) { cli_progress_clear(&pg); goto done; }
                topk_softmax(lg, K, b.prob);
                for (int i = 0; i < K; i++) b.mean[i] += b.prob[i] / nb;
                if (dense && !o.results_quiet) {   /* one top-k per clip, with its frames */
                    topk_rank(b.prob, K, b.order);
                    for (int q = 0; q < k_show; q++) {
                        char lb[4 * 256 + 1];
                        printf("%d\t%lld\t%lld\t%d\t%.4f\t%s\n", k, f0, f1, b.order[q], b.prob[b.order[q]],
                               cli_escape(jepa_model_label(m, b.order[q]), lb, sizeof lb));
                    }
                }
            }
        }
    }

    cli_progress_show(&pg, nb, nb, true);

    /* ---- --repeat: the same encodes again, timed (clips in memory) ---- */
    if (o.repeat > 0) {
        double *ms = malloc(sizeof(double) * (size_t)o.repeat);
        if (!ms) { cli_fail(NULL, "out of memory"); goto done; }
        st = JEPA_OK;
        for (int r = 0; r < o.repeat && st == JEPA_OK; r++) {
            const double tr = now_ms();
            for (int k0 = 0; k0 < nb && st == JEPA_OK; k0 += G) {
                jepa_embed_params ep = {.batch = nb - k0 < G ? nb - k0 : G};
                jepa_embed_out ek = enc_outs_embed_out(&b.enc);   /* what the first pass asked for */
                st = jepa_ctx_embed(c, (const float *)src.mem.data + (size_t)k0 * clip_floats, T, H, W, &ep, &ek);
            }
            ms[r] = now_ms() - tr;
        }
        if (st) { free(ms); cli_fail(src.name, "%s", jepa_ctx_error(c)); goto done; }
        qsort(ms, (size_t)o.repeat, sizeof *ms, cmp_double);
        const double med = ms[o.repeat / 2];
        free(ms);
        fprintf(stderr, "time: repeat %d: median %.3f ms (%.3f ms per clip, %.0f tokens/s, %.1f GFLOP/s)\n",
                o.repeat, med, med / nb, (double)nb * n / (med / 1e3),
                nb * jepa_encoder_flops(&info, n, T == 1 ? 1 : info.tubelet_size) / (med * 1e6));
    }
    if (o.verbose)
        fprintf(stderr, "jepa: %s %s: %d%s tokens (%dx%dx%d grid) x %d dims, %s kernels on %s, %d threads\n",
                info.family, name, n, nb > 1 ? " x B" : "", gt, gh, gw, D, jepa_ctx_isa(c),
                jepa_ctx_device(c), jepa_ctx_threads(c));
    if (o.verbose && src.stacked) fprintf(stderr, "jepa: B = %d clips, %d per forward pass\n", nb, G);
    if (o.verbose && o.prepack)
        fprintf(stderr, "jepa: --prepack: %.1f MiB of weights held packed\n", jepa_ctx_prepacked_bytes(c) / 1048576.0);
    if (o.timing) {
        fprintf(stderr, "time: load %.1f ms, input %.1f ms, encode %.1f ms (%d clip%s, %.0f tokens/s, %.1f GFLOP/s)\n",
                t_load, t_in, t_enc, nb, nb > 1 ? "s" : "", (double)nb * n / (t_enc / 1e3),
                nb * jepa_encoder_flops(&info, n, T == 1 ? 1 : info.tubelet_size) / (t_enc * 1e6));
        if (cmd == RUN_CLASSIFY) fprintf(stderr, "time: classify %.1f ms\n", t_cls);
    }

    /* ---- what each command writes ---- */
    if (cmd == RUN_EMBED && b.all) {
        int64_t shape[5] = {0};
        int nd = 0;
        if (src.stacked) shape[nd++] = nb;
        if (o.hier) shape[nd++] = info.n_hier, shape[nd++] = n, shape[nd++] = D;
        else if (pool_lewm) shape[nd++] = info.emb_dim;
        else if (pool_mean || pool_cls) shape[nd++] = D;
        else shape[nd++] = n, shape[nd++] = D;
        if (cli_check_finite_output(src.name, b.all, per * (size_t)nb) || save(o.out, b.all, nd, shape)) goto done;
        if (!o.quiet && !o.results_quiet) {
            char what[160];
            if (o.hier) snprintf(what, sizeof what, "%d hierarchical outputs of %d tokens", info.n_hier, n);
            else if (pool_lewm) snprintf(what, sizeof what, "the LeWM embedding");
            else if (pool_cls) snprintf(what, sizeof what, "the CLS token");
            else if (pool_mean) snprintf(what, sizeof what, "the mean of %d tokens", n);
            else snprintf(what, sizeof what, "%d tokens", n);
            if (src.stacked) {
                const size_t k = strlen(what);
                snprintf(what + k, sizeof what - k, ", for each of %d clips", nb);
            }
            report_written(o.out, nd, shape, what);
        }
    }
    if (cmd == RUN_PREDICT) {
        const int nc = (int)ctx_ids.count, ntg = (int)tgt_ids.count, od = info.pred_out_dim;
        float *ctx_tok = malloc(sizeof(float) * (size_t)nc * D);
        b.pred = malloc(sizeof(float) * (size_t)ntg * od);
        if (o.ctx_out) b.ctx_out = malloc(sizeof(float) * (size_t)nc * od);
        if (!ctx_tok || !b.pred || (o.ctx_out && !b.ctx_out)) { free(ctx_tok); cli_fail(NULL, "out of memory"); goto done; }
        for (int i = 0; i < nc; i++)
            memcpy(ctx_tok + (size_t)i * D, b.enc.tokens + (size_t)((int32_t *)ctx_ids.data)[i] * D,
                   sizeof(float) * (size_t)D);
        jepa_modality mod = o.modality;
        if (mod == JEPA_MODALITY_AUTO) mod = T == 1 ? JEPA_MODALITY_IMAGE : JEPA_MODALITY_VIDEO;
        jepa_predict_params pp = {.ctx_ids = ctx_ids.data, .n_ctx = nc, .tgt_ids = tgt_ids.data,
                                  .n_tgt = ntg, .mask_index = o.mask_index, .modality = mod};
        const double t2 = now_ms();
        st = jepa_ctx_predict(c, ctx_tok, &pp, b.pred, b.ctx_out);
        free(ctx_tok);
        if (st) { cli_fail(o.model, "predict: %s", jepa_ctx_error(c)); goto done; }
        if (o.timing) fprintf(stderr, "time: predict %.1f ms\n", now_ms() - t2);
        if (cli_check_finite_output(src.name, b.pred, (size_t)ntg * od) ||
            (b.ctx_out && cli_check_finite_output(src.name, b.ctx_out, (size_t)nc * od)))
            goto done;
        /* both outputs or neither: each written to its temporary, then both renamed */
        int64_t sp[2] = {ntg, od}, sc[2] = {nc, od};
        struct jr_outfile fp, fc = {0};
        struct jerr e = {0};
        if (npy_write_f32(&fp, o.out, b.pred, 2, sp, &e)) { cli_fail(NULL, "%s", e.msg); goto done; }
        if (o.ctx_out && npy_write_f32(&fc, o.ctx_out, b.ctx_out, 2, sc, &e)) {
            jr_outfile_abort(&fp);
            cli_fail(NULL, "%s", e.msg);
            goto done;
        }
        if (jr_outfile_commit(&fp, &e)) { jr_outfile_abort(&fc); cli_fail(NULL, "%s", e.msg); goto done; }
        if (o.ctx_out && jr_outfile_commit(&fc, &e)) { cli_fail(NULL, "%s", e.msg); goto done; }
        if (!o.quiet) {
            report_written(o.out, 2, sp, "predicted target tokens");
            if (o.ctx_out) report_written(o.ctx_out, 2, sc, "predictor's context tokens");
        }
    }
    if (cmd == RUN_CLASSIFY) {
        if (cli_check_finite_output(src.name, b.logits, (size_t)K * nb)) goto done;
        topk_rank(b.mean, K, b.order);
        if (res) res->top1 = b.order[0], res->p1 = b.mean[b.order[0]];
        if (!dense && !o.results_quiet) {   /* one top-k: of the mean of the per-clip softmax (Meta's evaluation) */
            for (int q = 0; q < k_show; q++) {
                char lb[4 * 256 + 1];
                printf("%d\t%.4f\t%s\n", b.order[q], b.mean[b.order[q]],
                       cli_escape(jepa_model_label(m, b.order[q]), lb, sizeof lb));
            }
        }
        int64_t shape[2] = {nb, K};
        if (o.logits_out && save(o.logits_out, b.logits, src.stacked ? 2 : 1, src.stacked ? shape : shape + 1))
            goto done;
        if (o.logits_out && !o.quiet && !o.results_quiet)
            report_written(o.logits_out, src.stacked ? 2 : 1, src.stacked ? shape : shape + 1, "logits");
    }
    if (!o.quiet && !o.results_quiet && info.name && !strncmp(info.name, "random-", 7))
        fprintf(stderr, "jepa: note: %s has RANDOM weights (written by jepa synth): the numbers show "
                "that the engine runs, not what a trained model sees\n", o.model);
    if (res) res->clips = nb, res->stacked = src.stacked;
    rc = 0;
done:
    bufs_free(&b);
    npy_free(&ctx_ids);
    npy_free(&tgt_ids);
    source_close(&src);
    return rc;
}

/* Inputs of many encoded together (--batch N of many inputs): the clips that one
 * many_prefetch call could read, each one clip of the first one's shape, run as one
 * forward; many_one takes each input's outputs from here instead of encoding it. */
#define MANY_BATCH_MAX 256
#define MANY_BATCH_BYTES ((size_t)1 << 30)   /* the clips and outputs of one batch, at most */
struct many_batch {
    int n;
    const char *input[MANY_BATCH_MAX];   /* run_many's pointers, compared as such */
    bool taken[MANY_BATCH_MAX];
    struct encoded enc[MANY_BATCH_MAX];
    float *xs;
    struct enc_outs out;
};

static void many_batch_clear(struct many_batch *b) {
    free(b->xs);
    enc_outs_free(&b->out);
    memset(b, 0, sizeof *b);
}

/* run_many's per-input step: the options with this one input, as -i or a VIDEO. */
struct many_user {
    enum run_cmd cmd;
    const struct run_opts *o;
    const jepa_model *m;
    jepa_ctx *c;
    const jepa_model_info *info;
    struct many_batch batch;
};

/* The options for one input of many: an image (-i), a frame array or a video. */
static void many_input_opts(struct run_opts *o, const char *input) {
    o->in.n_images = 0, o->in.frames_npy = NULL, o->in.video = NULL;
    const size_t len = strlen(input);
    if (image_is_image_file(input)) o->in.images[0] = input, o->in.n_images = 1;
    else if (len > 4 && !strcasecmp(input + len - 4, ".npy")) o->in.frames_npy = input;   /* uint8 [T, H, W, 3] */
    else o->in.video = input;
    o->batch = 0;
    o->results_quiet = true;
}

/* run_many's prefetch: read the next inputs' clips and encode those that are one clip of
 * one shape (the first readable one's) together. Nothing is printed: an input that cannot
 * be read here, or is several clips, or of another shape, runs on its own in many_one,
 * which reports whatever is wrong with it. */
static void many_prefetch(void *user, const char *const *inputs, int n) {
    struct many_user *u = user;
    struct many_batch *b = &u->batch;
    const jepa_model_info *in = u->info;
    many_batch_clear(b);
    if (n > MANY_BATCH_MAX) n = MANY_BATCH_MAX;
    if (n < 2) return;
    struct run_opts o = *u->o;
    int T = 0, H = 0, W = 0, n_tok = 0, k = 0, cap = n;
    size_t clip = 0;
    for (int j = 0; j < n && k < cap; j++) {
        many_input_opts(&o, inputs[j]);
        struct clip_reader *r = NULL;
        struct jerr e = {0};
        if (inputs_open_quiet(&r, &o.in, u->m, &e) || clips_count(r) != 1) {
            clips_close(r);
            continue;
        }
        int t, h, w, gt, gh, gw, nt;
        clips_shape(r, &t, &h, &w);
        if (!k) {
            free(b->xs);   /* (a first clip that could not be read left one behind) */
            b->xs = NULL;
            if (jepa_model_grid(u->m, t, h, w, &gt, &gh, &gw, &nt)) {
                clips_close(r);
                continue;
            }
            /* as many clips as fit MANY_BATCH_BYTES with their outputs; the rest run alone */
            const size_t D = (size_t)in->embed_dim;
            const size_t grids = (cmd_reads_tokens(u->cmd, u->o) ? 1 : 0) + (u->o->hier ? in->n_hier : 0);
            const size_t per = sizeof(float) * ((size_t)3 * t * h * w + (size_t)nt * D * grids + 2 * D +
                                                (size_t)in->emb_dim);
            cap = per * (size_t)n <= MANY_BATCH_BYTES ? n : (int)(MANY_BATCH_BYTES / per);
            if (cap < 2 || !(b->xs = malloc(sizeof(float) * (size_t)3 * t * h * w * (size_t)cap))) {
                clips_close(r);
                break;
            }
            T = t, H = h, W = w, n_tok = nt, clip = (size_t)3 * t * h * w;
        }
        if (t == T && h == H && w == W && !clips_next(r, b->xs + clip * (size_t)k, &e)) b->input[k++] = inputs[j];
        clips_close(r);
    }
    const size_t D = (size_t)in->embed_dim;
    if (k < 2 || enc_outs_alloc(&b->out, u->cmd, u->o, in, k, n_tok)) {
        many_batch_clear(b);   /* one input, or no memory: each runs on its own */
        return;
    }
    jepa_embed_params ep = {.batch = k};
    jepa_embed_out eo = enc_outs_embed_out(&b->out);
    if (jepa_ctx_embed(u->c, b->xs, T, H, W, &ep, &eo)) {
        many_batch_clear(b);
        return;
    }
    free(b->xs), b->xs = NULL;
    if (u->o->verbose)
        fprintf(stderr, "jepa %s: %d inputs of %dx%dx%d in one forward\n", cmd_name(u->cmd), k, T, H, W);
    for (int j = 0; j < k; j++) {
        struct encoded *en = &b->enc[j];
        en->T = T, en->H = H, en->W = W;
        const struct enc_outs *bo = &b->out;
        en->tokens = bo->tokens ? bo->tokens + (size_t)j * n_tok * D : NULL;
        en->pooled = bo->pooled + (size_t)j * D;
        en->cls = bo->cls ? bo->cls + (size_t)j * D : NULL;
        en->emb = bo->emb ? bo->emb + (size_t)j * in->emb_dim : NULL;
        en->hier = bo->hier ? bo->hier + (size_t)j * in->n_hier * n_tok * D : NULL;
    }
    b->n = k;
}

static int many_one(void *user, const char *input, const char *out, struct many_result *r) {
    struct many_user *u = user;
    struct run_opts o = *u->o;
    many_input_opts(&o, input);
    for (int j = 0; j < u->batch.n; j++)
        if (u->batch.input[j] == input && !u->batch.taken[j]) {
            o.pre = &u->batch.enc[j];
            u->batch.taken[j] = true;
        }
    if (u->cmd == RUN_EMBED) o.out = out;
    else o.logits_out = out;
    struct run_result res;
    const int rc = run_input(u->cmd, &o, u->m, u->c, u->info, 0, &res);
    r->clips = res.clips, r->top1 = res.top1, r->p1 = res.p1, r->stacked = res.stacked;
    r->label = res.top1 >= 0 ? jepa_model_label(u->m, res.top1) : NULL;
    return rc;
}

static int run(enum run_cmd cmd, int argc, char **argv) {
    struct run_opts o;
    int rc = parse(cmd, argc, argv, &o);
    if (rc) {
        free(o.pos);
        return rc < 0 ? 0 : rc;
    }
    const char *name = cmd_name(cmd);
    char err[JEPA_ERR_LEN];
    jepa_model *m = NULL;
    jepa_ctx *c = NULL;
    rc = CLI_EXIT_FAIL;
    const double t0 = now_ms();
    if (jepa_model_load(&m, o.model, err)) {
        cli_fail(o.model, "%s", err);
    } else if (!(rc = cli_ctx_new(name, m, o.threads, o.cpu, o.gpu, &c)) && o.prepack &&
               jepa_ctx_set_prepack(c, 1)) {
        rc = cli_fail(NULL, "--prepack: %s", jepa_ctx_error(c));
    } else if (!rc) {
        jepa_model_info info;
        jepa_model_get_info(m, &info);
        const double t_load = now_ms() - t0;
        if (o.many) {
            const struct many_opts mo = {
                .cmd = name, .out_dir = o.out_dir, .stack_out = cmd == RUN_EMBED ? o.out : o.logits_out,
                .inputs_list = o.inputs_list,
                .args = (const char *const *)o.pos, .n_args = o.n_pos, .resume = o.resume, .quiet = o.quiet,
                .verbose = o.verbose, .suffix = cmd == RUN_EMBED ? ".npy" : ".logits.npy",
                .batch = o.batch ? (o.batch < MANY_BATCH_MAX ? o.batch : MANY_BATCH_MAX) : o.gpu >= 0 ? 8 : 1,
                .prefetch = many_prefetch};
            struct many_user *u = calloc(1, sizeof *u);
            if (!u) {
                rc = cli_fail(NULL, "out of memory");
            } else {
                *u = (struct many_user){.cmd = cmd, .o = &o, .m = m, .c = c, .info = &info};
                rc = run_many(&mo, many_one, u);
                many_batch_clear(&u->batch);
                free(u);
            }
        } else {
            rc = run_input(cmd, &o, m, c, &info, t_load, NULL);
        }
    }
    jepa_ctx_free(c);
    jepa_model_free(m);
    free(o.pos);
    return rc;
}

int cmd_embed(int argc, char **argv) { return run(RUN_EMBED, argc, argv); }
int cmd_predict(int argc, char **argv) {
    return cli_is_world_predict(argc, argv) ? cmd_world_predict(argc, argv) : run(RUN_PREDICT, argc, argv);
}
int cmd_classify(int argc, char **argv) { return run(RUN_CLASSIFY, argc, argv); }
