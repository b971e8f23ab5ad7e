/*
 * cmd_run.c — `jepa embed`, `jepa predict` and `jepa classify`: load a model, read the
 * input, run the forward through the public API (include/jepa.h), write .npy outputs.
 * One loop for every input: its clips (one clip, a 5-D tensor's B clips, N test
 * patterns, a video's sampled or dense clips) run in passes of G clips, and each clip's
 * outputs (embeddings, logits, a per-clip top-k for dense clips) are taken as its pass
 * ends; then each command writes what it writes. The clips come from cli/clip_source.c;
 * run_input is the loop, and each command adds its checks, buffers, per-clip step and
 * writer to it (struct run_command).
 *
 *   jepa embed    -m MODEL INPUT [--pool mean|cls|lewm|none] [--hier] [--batch N] [-o OUT.npy]
 *   jepa predict  -m MODEL INPUT --ctx C.npy --tgt T.npy [--mask-index K]
 *                 [--modality auto|video|image] -o PRED.npy [--ctx-out CTX.npy]
 *   jepa classify -m MODEL INPUT [-k 5] [--logits-out L.npy]
 *   INPUT: --input-tensor X.npy (float32 [C,T,H,W] or [C,H,W], already preprocessed),
 *          --test-pattern TxHxW, or pixels: IMAGE... (-i or positional: one item and
 *          one output row each), --images-npy (N items), [--as-clip] IMAGE... | DIR (one
 *          clip of frames), --frames-npy F.npy, VIDEO
 *          (cli/inputs.c: the options; input/clips.c: decoding, the clip plan, the
 *          model's preprocessing)
 *   common: -g N (CUDA GPU N), -t N threads, --cpu ISA, --precision T, --time, -v, -q
 *   --batch N (embed): N clips per forward pass, outputs stacked on a leading axis: N test
 *          patterns, the clips of a 5-D [B, C, T, H, W] input tensor, a video's clips, or
 *          items (embed, classify)
 *   --repeat N (embed): N more timed encodes of the same input, median on stderr
 *   --prepack: the matmul weights packed once and kept (CPU; 4 bytes per weight)
 *
 * Tested by tests/models/test_cli_run.sh (fixtures) and tests/input/test_cli_input.sh
 * (pixel inputs).
 */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/clip_source.h"
#include "cli/inputs.h"
#include "cli/progress.h"
#include "cli/run_many.h"
#include "cli/stream.h"
#include "common/topk.h"
#include "input/clips.h"
#include "input/image.h"
#include "input/npy.h"
#include "jepa.h"

enum run_cmd { RUN_EMBED, RUN_PREDICT, RUN_CLASSIFY };

struct run_opts {
    const char *model, *input_tensor, *test_pattern, *out, *ctx, *tgt, *ctx_out, *logits_out, *cpu;
    const char *precision;
    const char *pool;      /* mean | cls | lewm | none */
    int hier, threads, timing, verbose, topk, mask_index;
    int gpu;               /* -g N: CUDA device N; -1: the CPU */
    int batch;             /* --batch N (embed); 0: not given */
    int repeat;            /* --repeat N (embed): N more timed encodes */
    int prepack;           /* --prepack: the weights packed once (jepa_ctx_set_prepack) */
    int json;              /* --json: the results on stdout as JSON lines (embed, classify) */
    jepa_modality modality;
    struct inputs_opts in;   /* -i / --frames-npy / VIDEO and their options (cli/inputs.h) */
    /* many inputs (embed, classify): --out-dir D, the inputs from the positional FILE / DIR
     * arguments and --inputs LIST.txt, one output per input (run_many) */
    const char *out_dir, *inputs_list;
    int resume, quiet;
    int recursive;           /* --recursive: DIR arguments' subfolders too */
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
    printf("usage: jepa %s -m MODEL ", cmd_name(c));   /* -m, --model: the common options below */
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
               "                        clips (--num-clips, --dense), N at a time (same outputs);\n"
               "                        with several images (items), N at a time\n"
               "  --repeat N            encode the input N more times and print the median time\n");
        break;
    case RUN_PREDICT:
        printf("INPUT --ctx C.npy --tgt T.npy -o PRED.npy\n"
               "       [--mask-index K] [--modality auto|video|image] [--ctx-out CTX.npy]\n"
               "  encodes the input, takes the tokens at the context ids and predicts the\n"
               "  target ids: PRED [N_tgt, out_dim], CTX [N_ctx, out_dim] (V-JEPA 2.1)\n");
        break;
    case RUN_CLASSIFY:
        printf("INPUT [-k 5] [--logits-out L.npy]\n"
               "  prints the top k classes (class, p, label), of the mean softmax of a video's\n"
               "  clips; with several images (items), k lines per item led by the item's index\n"
               "  and path (item, path, class, p, label), and logits [B, K]\n");
        break;
    }
    if (c != RUN_PREDICT)
        printf("  many inputs: --out-dir D [--inputs LIST.txt] [--resume] [-r] FILE|DIR ... (images and\n"
               "  videos; a DIR stands for its image and video files, with -r/--recursive those of its\n"
               "  subfolders too; LIST.txt for one path per line): the model is loaded once; each\n"
               "  input's output goes to D/<its path under DIR, or file name>%s, written whole or not\n"
               "  at all; a bad input is reported on its own line and skipped (exit 1 at the end);\n"
               "  D/index.jsonl gets a row per input as it finishes (source, output, status, clips%s,\n"
               "  class: the first folder under DIR, error, the fingerprint of the model and options);\n"
               "  --resume keeps an output only when its row matches this model, these options, the\n"
               "  input and the file; Ctrl-C stops after the current input (exit 130);\n"
               "  progress on stderr unless -q;\n"
               "  --batch N encodes inputs of one shape N per forward (default 1 on the CPU, where it\n"
               "  gains ~5 %% and moves the last bits; 8 with -g), each output as one input's within\n"
               "  rounding\n",
               c == RUN_EMBED ? ".npy" : ".logits.npy", c == RUN_CLASSIFY ? ", top1, p, label" : "");
    printf("INPUT is one of:\n"
           "  --input-tensor X.npy  float32 [C, T, H, W] clip or [C, H, W] image, preprocessed%s\n",
           c == RUN_EMBED ? ";\n                        [B, C, T, H, W]: B clips (outputs stacked)" : "");
    inputs_usage(c != RUN_PREDICT);
    printf("  --test-pattern TxHxW  a synthetic moving pattern of T frames of H x W (no file needed)\n"
           "  -m, --model MODEL     the model file (.gguf), or OWNER/NAME[:FILE] from the cache\n"
           CLI_PULL_HELP
           "%s"
           "  -g, --gpu N           run on CUDA GPU N (exit 1 with the reason when there is none)\n"
           "  -t, --threads N       threads (default: all cores)\n"
           "  --cpu ISA             cap the kernels: scalar, avx2, avx512, neon\n"
           "  --precision T         the CPU's precision tier: exact (default: f32 products), high\n"
           "                        (f32-grade on matrix units; exact without them), bf16 (bf16\n"
           "                        operands, f32 sums: faster where the CPU has a bf16 dot\n"
           "                        product); JEPA_PRECISION does the same (docs/precision.md)\n"
           "  --prepack             keep the matmul weights packed for the CPU kernels after\n"
           "                        their first use: later clips skip that packing (4-9 %% of a\n"
           "                        small model's time), same outputs; costs 4 bytes per weight\n"
           "  --time                print timings to stderr\n"
           "  -v, --verbose         describe the run on stderr (grid, kernels, threads)\n"
           "  -q, --quiet           print nothing but errors\n"
           "%s"
           "'-' as a file reads stdin (an image or a .npy, found from its bytes) or, for a .npy\n"
           "output, writes stdout (everything else printed then goes to stderr); --name=value is\n"
           "--name value (docs/cli.md).\n",
           c == RUN_CLASSIFY ? "" : "  -o, --out OUT.npy     the output (-o -: stdout)\n",
           c == RUN_PREDICT ? "" : "  --json                the results on stdout as JSON lines; many inputs: the run's\n"
           "                        summary as one JSON object (docs/cli.md)\n");
    if (c == RUN_PREDICT) cli_world_predict_usage(stdout);
    if (c == RUN_EMBED) {
        printf("\n");
        cli_embed_stream_usage();
    }
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

/* The options of the run commands, besides -h and the input options (cli/inputs.h): the
 * commands that take each one (bits 1 << enum run_cmd; elsewhere it is unknown), and what
 * it sets in struct run_opts. */
enum opt_kind {
    OPT_STR,        /* a const char * field: the value */
    OPT_INT,        /* an int field: the value, an integer in [lo, hi] */
    OPT_FLAG,       /* an int field: 1 */
    OPT_QUIET,      /* -q: quiet, and not verbose */
    OPT_POOL,       /* --pool: mean, cls, lewm or none */
    OPT_MODALITY,   /* --modality: auto, video or image */
};

struct run_option {
    const char *flag, *alias;
    unsigned cmds;
    enum opt_kind kind;
    size_t field;          /* offsetof(struct run_opts, the field) */
    long long lo, hi;      /* OPT_INT */
};

#define FOR_EMBED (1u << RUN_EMBED)
#define FOR_PREDICT (1u << RUN_PREDICT)
#define FOR_CLASSIFY (1u << RUN_CLASSIFY)
#define FOR_MANY (FOR_EMBED | FOR_CLASSIFY)   /* the commands that take many inputs */
#define FOR_ALL (FOR_EMBED | FOR_PREDICT | FOR_CLASSIFY)
#define FIELD(f) offsetof(struct run_opts, f)

static const struct run_option run_options[] = {
    {"-m", "--model", FOR_ALL, OPT_STR, FIELD(model), 0, 0},
    {"--input-tensor", NULL, FOR_ALL, OPT_STR, FIELD(input_tensor), 0, 0},
    {"--test-pattern", NULL, FOR_ALL, OPT_STR, FIELD(test_pattern), 0, 0},
    {"-o", "--out", FOR_EMBED | FOR_PREDICT, OPT_STR, FIELD(out), 0, 0},
    {"-t", "--threads", FOR_ALL, OPT_INT, FIELD(threads), 1, 4096},
    {"--cpu", NULL, FOR_ALL, OPT_STR, FIELD(cpu), 0, 0},
    {"--precision", NULL, FOR_ALL, OPT_STR, FIELD(precision), 0, 0},
    {"--prepack", NULL, FOR_ALL, OPT_FLAG, FIELD(prepack), 0, 0},
    {"-g", "--gpu", FOR_ALL, OPT_INT, FIELD(gpu), 0, 1024},
    {"--repeat", NULL, FOR_EMBED, OPT_INT, FIELD(repeat), 1, 100000},
    {"--batch", NULL, FOR_MANY, OPT_INT, FIELD(batch), 1, 65536},
    {"--time", NULL, FOR_ALL, OPT_FLAG, FIELD(timing), 0, 0},
    {"-q", "--quiet", FOR_ALL, OPT_QUIET, FIELD(quiet), 0, 0},
    {"-v", "--verbose", FOR_ALL, OPT_FLAG, FIELD(verbose), 0, 0},
    {"--pool", NULL, FOR_EMBED, OPT_POOL, FIELD(pool), 0, 0},
    {"--hier", NULL, FOR_EMBED, OPT_FLAG, FIELD(hier), 0, 0},
    {"--ctx", NULL, FOR_PREDICT, OPT_STR, FIELD(ctx), 0, 0},
    {"--tgt", NULL, FOR_PREDICT, OPT_STR, FIELD(tgt), 0, 0},
    {"--ctx-out", NULL, FOR_PREDICT, OPT_STR, FIELD(ctx_out), 0, 0},
    {"--mask-index", NULL, FOR_PREDICT, OPT_INT, FIELD(mask_index), 0, 1 << 24},
    {"--modality", NULL, FOR_PREDICT, OPT_MODALITY, FIELD(modality), 0, 0},
    {"-k", NULL, FOR_CLASSIFY, OPT_INT, FIELD(topk), 1, 1 << 20},
    {"--logits-out", NULL, FOR_CLASSIFY, OPT_STR, FIELD(logits_out), 0, 0},
    {"--out-dir", NULL, FOR_MANY, OPT_STR, FIELD(out_dir), 0, 0},
    {"--inputs", NULL, FOR_MANY, OPT_STR, FIELD(inputs_list), 0, 0},
    {"--resume", NULL, FOR_MANY, OPT_FLAG, FIELD(resume), 0, 0},
    {"--json", NULL, FOR_MANY, OPT_FLAG, FIELD(json), 0, 0},
    {"--recursive", "-r", FOR_MANY, OPT_FLAG, FIELD(recursive), 0, 0},
};

static const struct run_option *find_option(enum run_cmd c, const char *a) {
    for (size_t k = 0; k < sizeof run_options / sizeof *run_options; k++) {
        const struct run_option *p = &run_options[k];
        if ((p->cmds & (1u << c)) && (!strcmp(a, p->flag) || (p->alias && !strcmp(a, p->alias)))) return p;
    }
    return NULL;
}

static int parse_pool(const char *name, const char *v, struct run_opts *o) {
    if (strcmp(v, "mean") && strcmp(v, "cls") && strcmp(v, "lewm") && strcmp(v, "none"))
        return cli_usage_error(name, "--pool takes mean, cls, lewm or none, not '%s'", v);
    o->pool = v;
    return 0;
}

static int parse_modality(const char *name, const char *v, struct run_opts *o) {
    if (!strcmp(v, "auto")) o->modality = JEPA_MODALITY_AUTO;
    else if (!strcmp(v, "video")) o->modality = JEPA_MODALITY_VIDEO;
    else if (!strcmp(v, "image")) o->modality = JEPA_MODALITY_IMAGE;
    else return cli_usage_error(name, "--modality takes auto, video or image, not '%s'", v);
    return 0;
}

/* Option argv[*i] into o, and its value (argv[*i + 1], *i advanced past it). 0 or
 * CLI_EXIT_USAGE after printing. */
static int set_option(enum run_cmd c, const struct run_option *opt, int argc, char **argv, int *i,
                      struct run_opts *o) {
    const char *name = cmd_name(c), *a = argv[*i];
    char *field = (char *)o + opt->field;
    if (opt->kind == OPT_FLAG) *(int *)field = 1;
    if (opt->kind == OPT_QUIET) o->verbose = 0, o->quiet = 1;
    if (opt->kind == OPT_FLAG || opt->kind == OPT_QUIET) return 0;
    if (*i + 1 >= argc) return cli_usage_error(name, "option %s needs a value", a);
    const char *v = argv[++*i];
    long long num;
    int rc = 0;
    switch (opt->kind) {
    case OPT_STR: *(const char **)field = v; break;
    case OPT_INT:
        if (!(rc = cli_parse_int(name, a, v, opt->lo, opt->hi, &num))) *(int *)field = (int)num;
        break;
    case OPT_POOL: rc = parse_pool(name, v, o); break;
    case OPT_MODALITY: rc = parse_modality(name, v, o); break;
    default: break;
    }
    return rc;
}

/* One argument (and its value): -h, an option, an input option or a positional one.
 * 0, -1 after the help, or CLI_EXIT_USAGE after printing. */
static int parse_arg(enum run_cmd c, int argc, char **argv, int *i, struct run_opts *o) {
    const char *a = argv[*i], *name = cmd_name(c);
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
        run_usage(c);
        return -1;
    }
    const struct run_option *opt = find_option(c, a);
    if (opt) return set_option(c, opt, argc, argv, i, o);
    const int rc = inputs_parse(&o->in, name, c != RUN_PREDICT, argc, argv, i);
    if (rc) return rc == 1 ? 0 : rc;
    if (a[0] == '-') return cli_usage_error(name, "unknown option '%s'", a);
    o->pos[o->n_pos++] = a;
    return 0;
}

/* A DIR argument means many inputs. */
static bool has_dir_arg(const struct run_opts *o) {
    for (int k = 0; k < o->n_pos; k++) {
        struct stat st;
        if (!stat(o->pos[k], &st) && S_ISDIR(st.st_mode)) return true;
    }
    return false;
}

/* Many inputs: one file each into --out-dir D, or stacked into -o / --logits-out
 * (run_many checks the rest). */
static int check_many(enum run_cmd c, struct run_opts *o) {
    const char *name = cmd_name(c);
    const char *stack = c == RUN_EMBED ? o->out : o->logits_out;
    if (!o->out_dir && !stack)
        return cli_usage_error(name, "many inputs (--inputs, a DIR, --resume) write into --out-dir D or, stacked, "
                                     "into %s", c == RUN_EMBED ? "-o FEATS.npy" : "--logits-out LOGITS.npy");
    if (o->out_dir && stack)
        return cli_usage_error(name, "--out-dir writes one file per input; %s stacks them into one: not both",
                               c == RUN_EMBED ? "-o" : "--logits-out");
    if (stack && !strcmp(stack, "-"))
        return cli_usage_error(name, "many inputs stack into a file beside its parts (FEATS.npy.parts/), not "
                                     "stdout: name a file for %s, or use --out-dir D",
                               c == RUN_EMBED ? "-o" : "--logits-out");
    if (o->input_tensor || o->test_pattern || o->in.n_images || o->in.frames_npy || o->in.images_npy ||
        o->in.as_clip || (c == RUN_EMBED && o->logits_out) || (c == RUN_CLASSIFY && o->out) || o->repeat)
        return cli_usage_error(name, "many inputs come as FILE / DIR arguments or --inputs LIST.txt (images, "
                                     "videos, uint8 frame arrays .npy), one output each: not with "
                                     "--input-tensor, --test-pattern, -i, --images-npy, --frames-npy, --as-clip or "
                                     "--repeat%s", c == RUN_EMBED ? ", --logits-out" : ", -o");
    if (!o->n_pos && !o->inputs_list) return cli_usage_error(name, "many inputs: give FILE, DIR or --inputs");
    o->many = true;
    return 0;
}

/* One input: exactly one of the input options, what the command needs besides, and no
 * output that replaces an input, nor two outputs one file. */
static int check_one_input(enum run_cmd c, struct run_opts *o) {
    const char *name = cmd_name(c);
    int rc;
    for (int k = 0; k < o->n_pos; k++)
        if ((rc = inputs_positional(&o->in, name, o->pos[k]))) return rc;
    if ((rc = inputs_check(&o->in, name))) return rc;
    if (c == RUN_CLASSIFY && o->batch && !inputs_are_items(&o->in))
        return cli_usage_error(name, "--batch N groups items (several images) or many inputs (--out-dir, --inputs, "
                                     "a DIR); one input's clips run together already");
    if (!!o->input_tensor + !!o->test_pattern + !!inputs_given(&o->in) != 1)
        return cli_usage_error(name, "give one input: --input-tensor X.npy, --test-pattern TxHxW, images (-i "
                                     "IMAGE, FILE), --images-npy, --frames-npy F.npy or a VIDEO");
    if (c == RUN_PREDICT && (!o->ctx || !o->tgt || !o->out))
        return cli_usage_error(name, "predict needs --ctx, --tgt and -o");
    const char *outs[] = {o->out, o->ctx_out, o->logits_out};
    const char *ins[CLIPS_MAX_IMAGES + 7] = {o->model, o->input_tensor, o->ctx, o->tgt, o->in.frames_npy,
                                              o->in.video, o->in.images_npy};
    for (int k = 0; k < o->in.n_images; k++) ins[7 + k] = o->in.images[k];
    return cli_check_outputs(name, ins, 7 + o->in.n_images, outs, 3);
}

/* The command line into o (o->pos allocated: the caller frees it). 0, -1 after the help,
 * or the exit status after printing the reason. */
static int parse(enum run_cmd c, int argc, char **argv, struct run_opts *o) {
    memset(o, 0, sizeof *o);
    o->pos = malloc(sizeof(char *) * (size_t)(argc > 0 ? argc : 1));
    if (!o->pos) return cli_fail(NULL, "out of memory");
    o->gpu = -1;
    o->pool = "none";
    o->topk = 5;
    o->mask_index = 1;
    for (int i = 1; i < argc; i++) {
        const int rc = parse_arg(c, argc, argv, &i, o);
        if (rc) return rc;
    }
    if (!o->model) return cli_usage_error(cmd_name(c), "missing -m MODEL");
    const int mrc = cli_resolve_model(cmd_name(c), &o->model);   /* -m REPO: the cached file */
    if (mrc) return mrc;
    const bool many = c != RUN_PREDICT && (o->out_dir || o->inputs_list || o->resume || o->recursive ||
                                           (has_dir_arg(o) && !o->in.as_clip));
    const int rc = many ? check_many(c, o) : check_one_input(c, o);
    if (!rc && o->hier && strcmp(o->pool, "none"))
        return cli_usage_error(cmd_name(c), "--hier writes every token of every level; drop --pool");
    return rc;
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

/* One input through the model: the request, its clips, the buffers, the times (ms). */
struct run {
    enum run_cmd cmd;
    const struct run_command *ops;
    const struct run_opts *o;
    const jepa_model *m;
    jepa_ctx *c;
    const jepa_model_info *info;
    struct clip_source src;
    int nb, T, H, W;                   /* the source's clips */
    int gt, gh, gw, n;                 /* the token grid of one clip: n tokens */
    int G;                             /* clips per forward pass */
    bool pool_mean, pool_cls, pool_lewm;   /* embed --pool */
    size_t per;                        /* embed: floats of one clip's requested output */
    struct npy ctx_ids, tgt_ids;       /* predict */
    struct run_bufs b;
    struct cli_progress pg;            /* a video's clips */
    double t_load, t_in, t_enc, t_cls;
    struct run_result *res;
};

/* What each command adds to the one loop of run_input (NULL: nothing). Each returns 0,
 * or the exit status after printing the reason. */
struct run_command {
    int (*check)(struct run *r);                /* what the request needs of the model */
    int (*alloc)(struct run *r);                /* its buffers: 0, or -1 (out of memory) */
    int (*clip)(struct run *r, int j, int k);   /* clip k, j-th of its pass, as the pass ends */
    int (*finish)(struct run *r);               /* what it writes */
};

static double encoder_flops(const struct run *r) {
    return jepa_encoder_flops(r->info, r->n, r->T == 1 ? 1 : r->info->tubelet_size);
}

/* The first and last source frames of clip k; false (and 0, 0) for clips in memory. */
static bool clip_frames(const struct run *r, int k, long long *f0, long long *f1) {
    const int64_t *fr = source_frames(&r->src, k);
    *f0 = fr ? (long long)fr[0] : 0, *f1 = fr ? (long long)fr[r->T - 1] : 0;
    return fr != NULL;
}

/* An output's rows for cli_check_finite_output: rows_per rows of each clip (tokens, or
 * levels x tokens with --hier), the first of them clip `base`. */
struct out_rows_of {
    const struct run *r;
    int base;
    size_t rows_per;
};

static size_t append(char *buf, size_t size, size_t w, const char *fmt, ...) {
    if (w >= size) return w;
    va_list ap;
    va_start(ap, fmt);
    const int k = vsnprintf(buf + w, size - w, fmt, ap);
    va_end(ap);
    return k < 0 ? w : w + (size_t)k;
}

/* Row `row` in the user's units: "row 3 (item 3 b.jpg, token 5)", "row 7 (clip 1, token 2)",
 * "" for the only row of a single output. */
static const char *out_row_name(const void *user, size_t row, char *buf, size_t size) {
    const struct out_rows_of *u = user;
    const struct run *r = u->r;
    const int k = u->base + (int)(row / u->rows_per);
    const size_t t = row % u->rows_per, n = (size_t)(r->n > 0 ? r->n : 1);
    const bool items = inputs_are_items(&r->o->in);
    char path[4 * 4096 + 1];
    buf[0] = '\0';
    if (!items && !r->src.stacked && u->rows_per == 1) return buf;
    size_t w = append(buf, size, 0, "row %zu", (size_t)u->base * u->rows_per + row);
    const char *sep = " (";
    if (items) {
        w = append(buf, size, w, "%sitem %d %s", sep, k, cli_escape(inputs_item_name(&r->o->in, k), path, sizeof path));
        sep = ", ";
    } else if (r->src.stacked) {
        w = append(buf, size, w, "%sclip %d", sep, k);
        sep = ", ";
    }
    if (u->rows_per > 1 && r->o->hier && r->cmd == RUN_EMBED)
        w = append(buf, size, w, "%slevel %zu, token %zu", sep, t / n, t % n), sep = ", ";
    else if (u->rows_per > 1)
        w = append(buf, size, w, "%stoken %zu", sep, t), sep = ", ";
    if (*sep == ',') append(buf, size, w, ")");
    return buf;
}

/* ---- the clips, and what any command refuses of them ---- */

/* -v: what the patch embedding leaves out, as the reference's does. */
static void note_dropped_edges(const struct run *r) {
    const int P = r->info->patch_size, T = r->T, H = r->H, W = r->W;
    const int tf = T == 1 ? 1 : T - T % r->info->tubelet_size;
    if (tf != T || r->gh * P != H || r->gw * P != W)
        fprintf(stderr, "jepa: %s: note: the last %d frame(s), %d row(s) and %d column(s) of the %dx%dx%d "
                "input do not fill a tubelet / patch and are dropped, as the reference patch "
                "embedding drops them\n", r->src.name, T - tf, H - r->gh * P, W - r->gw * P, T, H, W);
}

/* A model of still images (modality "image") takes a video's frames one by one, and only
 * when the command line says which: its default sampling would be one frame, the first,
 * taken silently. 0, or CLI_EXIT_USAGE after printing. */
static int check_image_model_video(const struct run *r) {
    const struct run_opts *o = r->o;
    if (!o->in.video || strcmp(r->info->modality, "image")) return 0;
    if (!o->in.sampling_given)
        return cli_usage_error(cmd_name(r->cmd), "%s is a video and this model (family '%s') takes still images: "
                               "say which frames, one output row each: --frames-per-clip 1 --num-clips C (C "
                               "frames spread over the video) or --frames-per-clip 1 --dense --frame-step S (every "
                               "S-th frame)", o->in.video, r->info->family);
    if (o->in.fpc > 1)
        return cli_usage_error(cmd_name(r->cmd), "--frames-per-clip %d: this model (family '%s') takes still images, "
                               "one frame per clip", o->in.fpc, r->info->family);
    return 0;
}

/* The input's clips (r->src) and the token grid of one clip. */
static int open_clips(struct run *r) {
    const struct run_opts *o = r->o;
    struct clip_source *s = &r->src;
    int rc = check_image_model_video(r);
    if (rc) return rc;
    if (o->pre) {   /* encoded already: only its geometry is needed */
        source_open_encoded(s, inputs_name(&o->in), o->pre->T, o->pre->H, o->pre->W);
    } else {
        const struct clip_request rq = {.in = &o->in, .input_tensor = o->input_tensor,
                                        .test_pattern = o->test_pattern, .batch = o->batch,
                                        .batch_ok = r->cmd == RUN_EMBED, .verbose = o->verbose};
        if ((rc = source_open(s, &rq, r->m, r->info->in_chans))) return rc;
    }
    r->nb = s->nb, r->T = s->T, r->H = s->H, r->W = s->W;
    if (o->batch > 1 && !s->stacked && !o->test_pattern)
        return cli_usage_error("embed", "--batch %d: %s is one clip; batches come from --test-pattern, a "
                               "5-D --input-tensor [B, C, T, H, W], a video's clips (--num-clips, --dense) or "
                               "several images", o->batch, s->name);
    if (inputs_given(&o->in) && r->T > 1 && !strcmp(r->info->modality, "image"))
        return cli_usage_error(cmd_name(r->cmd), "%s: a clip of %d frames, and this model (family '%s') takes still "
                               "images: give %s (one output row each)", s->name, r->T, r->info->family,
                               o->in.frames_npy ? "the array as --images-npy" : "the images without --as-clip");
    if (o->repeat > 0 && s->rdr)
        return cli_usage_error("embed", "--repeat times clips held in memory; %s streams %d clips", s->name, r->nb);
    if (jepa_model_grid(r->m, r->T, r->H, r->W, &r->gt, &r->gh, &r->gw, &r->n)) {
        const int P = r->info->patch_size, tub = r->info->tubelet_size;
        return cli_fail(s->name, "a %dx%dx%d input does not fit this model (patch %d, tubelet %d): %s", r->T, r->H,
                        r->W, P, tub, r->H < P || r->W < P ? "smaller than one patch"
                        : r->T > 1 && r->T < tub ? "fewer frames than one tubelet (1 frame is a still image)"
                                                 : "more tokens than one clip may have");
    }
    if (o->verbose) note_dropped_edges(r);
    return 0;
}

/* Buffers for G clips per forward pass (embed --batch; in memory: all at once). */
static int alloc_bufs(struct run *r) {
    const int nb = r->nb, batch = r->o->batch;
    const bool items = inputs_are_items(&r->o->in);
    /* items: one per forward unless --batch says (batching moves the last bits on the CPU),
     * 8 on a GPU, as for many inputs */
    const int g = (r->cmd == RUN_EMBED || items) && batch > 0 ? batch : items ? (r->o->gpu >= 0 ? 8 : 1)
                : r->src.rdr ? 1 : nb;
    r->G = g < nb ? g : nb;
    const size_t clip_floats = (size_t)r->info->in_chans * r->T * r->H * r->W;
    const int enc_failed = enc_outs_alloc(&r->b.enc, r->cmd, r->o, r->info, r->G, r->n);
    r->b.xs = r->src.rdr ? malloc(sizeof(float) * (size_t)r->G * clip_floats) : NULL;
    if (enc_failed || (r->src.rdr && !r->b.xs) || (r->ops->alloc && r->ops->alloc(r)))
        return cli_fail(NULL, "out of memory for %d clip%s", nb, nb > 1 ? "s" : "");
    return 0;
}

/* A single clip made now (source_load): encoded once, it is written into the context's
 * arena, where the encoder's blocks reuse its memory; where that cannot be (--repeat
 * encodes it again), or the call cannot be planned, into its own memory. */
static int make_pending_clip(struct run *r) {
    if (!r->src.pending) return 0;
    float *room = NULL;
    if (!r->o->repeat && r->nb == 1) {
        const jepa_embed_params ep = {.batch = 1};
        const jepa_embed_out eo = enc_outs_embed_out(&r->b.enc);
        if (jepa_ctx_embed_input(r->c, r->T, r->H, r->W, &ep, &eo, &room)) room = NULL;
    }
    return source_load(&r->src, room);
}

/* ---- the one loop: clips in passes of G; each clip's outputs as its pass ends ---- */

/* One clip's outputs from the batch of many inputs that encoded it (many_prefetch). */
static void copy_encoded(const struct run *r, const jepa_embed_out *eo) {
    const struct encoded *p = r->o->pre;
    const size_t D = (size_t)r->info->embed_dim, n = (size_t)r->n;
    if (eo->tokens) memcpy(eo->tokens, p->tokens, sizeof(float) * n * D);
    memcpy(eo->pooled, p->pooled, sizeof(float) * D);
    if (eo->cls) memcpy(eo->cls, p->cls, sizeof(float) * D);
    if (eo->emb) memcpy(eo->emb, p->emb, sizeof(float) * (size_t)r->info->emb_dim);
    if (eo->hier) memcpy(eo->hier, p->hier, sizeof(float) * (size_t)r->info->n_hier * n * D);
}

/* Clips k0 .. k0 + g - 1 encoded into r->b.enc. */
static int encode_pass(struct run *r, int k0, int g) {
    const struct run_opts *o = r->o;
    double t0 = now_ms();
    const float *x = o->pre ? NULL : source_clips(&r->src, k0, g, r->b.xs, o->verbose);
    if (!x && !o->pre) {
        cli_progress_clear(&r->pg);
        return CLI_EXIT_FAIL;
    }
    r->t_in += now_ms() - t0;
    jepa_embed_out eo = enc_outs_embed_out(&r->b.enc);
    jepa_embed_params ep = {.batch = g};
    struct cli_progress lp;   /* -v on one long clip: the encoder's blocks */
    cli_progress_start(&lp, o->verbose && r->nb == 1 && !o->results_quiet, "layers");
    if (lp.on) ep.on_layer = layer_progress, ep.user = &lp;
    t0 = now_ms();
    if (o->pre) {
        copy_encoded(r, &eo);
    } else if (jepa_ctx_embed(r->c, x, r->T, r->H, r->W, &ep, &eo)) {
        cli_progress_clear(&r->pg), cli_progress_clear(&lp);
        if (r->nb == 1) return cli_fail(r->src.name, "%s", jepa_ctx_error(r->c));
        if (g == 1) return cli_fail(r->src.name, "clip %d: %s", k0, jepa_ctx_error(r->c));
        return cli_fail(r->src.name, "clips %d..%d: %s", k0, k0 + g - 1, jepa_ctx_error(r->c));
    }
    r->t_enc += now_ms() - t0;
    return 0;
}

/* A video's clips show progress where nothing else is printed per clip. */
static bool clip_progress_wanted(const struct run *r) {
    const struct run_opts *o = r->o;
    if (r->nb < 2 || o->quiet || o->results_quiet) return false;
    return (r->cmd == RUN_EMBED && r->b.all) || (r->cmd == RUN_CLASSIFY && !o->in.dense && !inputs_are_items(&o->in));
}

/* Every clip encoded, G at a time, and handed to the command as its pass ends. */
static int run_clips(struct run *r) {
    cli_progress_start(&r->pg, clip_progress_wanted(r), inputs_are_items(&r->o->in) ? "items" : "clips");
    for (int k0 = 0; k0 < r->nb; k0 += r->G) {
        const int g = r->nb - k0 < r->G ? r->nb - k0 : r->G;
        cli_progress_show(&r->pg, k0, r->nb, false);
        int rc = encode_pass(r, k0, g);
        if (rc) return rc;
        r->pg.done_run += g;
        for (int j = 0; j < g && r->ops->clip; j++)
            if ((rc = r->ops->clip(r, j, k0 + j))) return rc;
    }
    cli_progress_show(&r->pg, r->nb, r->nb, true);
    return 0;
}

/* ---- timing (--repeat, --time) and -v ---- */

/* --repeat: the same encodes again (clips in memory), timed; the median on stderr. */
static int run_repeat(struct run *r) {
    const int nb = r->nb, G = r->G, repeat = r->o->repeat;
    const size_t clip_floats = (size_t)r->info->in_chans * r->T * r->H * r->W;
    double *ms = malloc(sizeof(double) * (size_t)repeat);
    if (!ms) return cli_fail(NULL, "out of memory");
    jepa_status st = JEPA_OK;
    for (int i = 0; i < repeat && st == JEPA_OK; i++) {
        const double tr = now_ms();
        for (int k0 = 0; k0 < nb && st == JEPA_OK; k0 += G) {
            jepa_embed_params ep = {.batch = nb - k0 < G ? nb - k0 : G};
            jepa_embed_out ek = enc_outs_embed_out(&r->b.enc);   /* what the first pass asked for */
            const float *x = (const float *)r->src.mem.data + (size_t)k0 * clip_floats;
            st = jepa_ctx_embed(r->c, x, r->T, r->H, r->W, &ep, &ek);
        }
        ms[i] = now_ms() - tr;
    }
    if (st) {
        free(ms);
        return cli_fail(r->src.name, "%s", jepa_ctx_error(r->c));
    }
    qsort(ms, (size_t)repeat, sizeof *ms, cmp_double);
    const double med = ms[repeat / 2];
    free(ms);
    fprintf(stderr, "time: repeat %d: median %.3f ms (%.3f ms per clip, %.0f tokens/s, %.1f GFLOP/s)\n", repeat,
            med, med / nb, (double)nb * r->n / (med / 1e3), nb * encoder_flops(r) / (med * 1e6));
    return 0;
}

/* -v: the run described; --time: where the time went. */
static void report_run(const struct run *r) {
    const struct run_opts *o = r->o;
    const int nb = r->nb;
    if (o->verbose)
        fprintf(stderr, "jepa: %s %s: %d%s tokens (%dx%dx%d grid) x %d dims, %s kernels on %s, %d threads\n",
                r->info->family, cmd_name(r->cmd), r->n, nb > 1 ? " x B" : "", r->gt, r->gh, r->gw,
                r->info->embed_dim, jepa_ctx_isa(r->c), jepa_ctx_device(r->c), jepa_ctx_threads(r->c));
    if (o->verbose && strcmp(jepa_ctx_precision(r->c), "exact"))
        fprintf(stderr, "jepa: precision %s: the matmuls run the %s kernels, the attention the %s ones\n",
                jepa_ctx_precision(r->c), jepa_ctx_matmul_isa(r->c), jepa_ctx_attn_isa(r->c));
    if (o->verbose && r->src.stacked) fprintf(stderr, "jepa: B = %d clips, %d per forward pass\n", nb, r->G);
    if (o->verbose && o->prepack)
        fprintf(stderr, "jepa: --prepack: %.1f MiB of weights held packed\n",
                jepa_ctx_prepacked_bytes(r->c) / 1048576.0);
    if (o->timing) {
        fprintf(stderr, "time: load %.1f ms, input %.1f ms, encode %.1f ms (%d clip%s, %.0f tokens/s, %.1f GFLOP/s)\n",
                r->t_load, r->t_in, r->t_enc, nb, nb > 1 ? "s" : "", (double)nb * r->n / (r->t_enc / 1e3),
                nb * encoder_flops(r) / (r->t_enc * 1e6));
        if (r->cmd == RUN_CLASSIFY) fprintf(stderr, "time: classify %.1f ms\n", r->t_cls);
    }
}

/* ---- embed: tokens, a pooled vector, LeWM's state or the hierarchical levels ---- */

static int embed_check(struct run *r) {
    const struct run_opts *o = r->o;
    const jepa_model_info *in = r->info;
    r->pool_mean = !strcmp(o->pool, "mean"), r->pool_cls = !strcmp(o->pool, "cls");
    r->pool_lewm = !strcmp(o->pool, "lewm");
    if (r->pool_cls && !in->has_cls)
        return cli_usage_error("embed", "--pool cls: family '%s' has no CLS token", in->family);
    if (r->pool_lewm && !in->emb_dim)
        return cli_usage_error("embed", "--pool lewm: family '%s' has no LeWM projector", in->family);
    if (o->hier && !in->n_hier)
        return cli_usage_error("embed", "--hier: family '%s' has no hierarchical outputs", in->family);
    const size_t D = (size_t)in->embed_dim, n = (size_t)r->n;
    r->per = o->hier ? (size_t)in->n_hier * n * D : r->pool_lewm ? (size_t)in->emb_dim
           : (r->pool_mean || r->pool_cls) ? D : n * D;
    return 0;
}

static int embed_alloc(struct run *r) {
    r->b.all = r->o->out ? malloc(sizeof(float) * r->per * (size_t)r->nb) : NULL;
    return r->o->out && !r->b.all ? -1 : 0;
}

/* Without -o, clip k's line: the norm and first values of its mean-pooled vector; with
 * --json, one object: {"input", "clip", "frames": [first, last] (a video's clips),
 * "norm", "pooled_mean": [D floats, %.9g: the float32 value exactly]}. */
static void print_clip_summary(const struct run *r, int j, int k) {
    const int D = r->info->embed_dim;
    const float *pv = r->b.enc.pooled + (size_t)j * D;
    double nrm = 0;
    for (int q = 0; q < D; q++) nrm += (double)pv[q] * pv[q];
    long long f0, f1;
    char path[4 * 4096 + 1];
    const bool items = inputs_are_items(&r->o->in);
    if (r->o->json) {
        printf("{\"input\": ");
        cli_json_str(stdout, items ? inputs_item_name(&r->o->in, k) : r->src.name);
        printf(items ? ", \"item\": %d" : ", \"clip\": %d", k);
        if (clip_frames(r, k, &f0, &f1)) printf(", \"frames\": [%lld, %lld]", f0, f1);
        printf(", \"norm\": %.9g, \"pooled_mean\": [", sqrt(nrm));
        for (int q = 0; q < D; q++) printf("%s%.9g", q ? ", " : "", (double)pv[q]);
        printf("]}\n");
        return;
    }
    if (items) printf("item %d %s ", k, cli_escape(inputs_item_name(&r->o->in, k), path, sizeof path));
    else if (r->src.stacked) printf("clip %d ", k);
    if (clip_frames(r, k, &f0, &f1)) printf("frames %lld..%lld ", f0, f1);
    printf("pooled mean: |v| = %.6g, v[0..3] = %.6g %.6g %.6g %.6g\n", sqrt(nrm), pv[0], pv[1 % D], pv[2 % D],
           pv[3 % D]);
}

static int embed_clip(struct run *r, int j, int k) {
    const struct enc_outs *e = &r->b.enc;
    if (r->b.all) {
        const float *out = r->o->hier ? e->hier : r->pool_lewm ? e->emb : r->pool_mean ? e->pooled
                         : r->pool_cls ? e->cls : e->tokens;
        memcpy(r->b.all + r->per * (size_t)k, out + r->per * (size_t)j, sizeof(float) * r->per);
    } else if (!r->o->results_quiet) {   /* nothing written: a summary */
        print_clip_summary(r, j, k);
    }
    return 0;
}

/* The shape of embed's output (into shape[5]) and what it holds (into what[160]): its
 * number of dimensions. */
static int describe_embed_file(const struct run *r, int64_t *shape, char *what, size_t size) {
    const int n = r->n, D = r->info->embed_dim;
    int nd = 0;
    if (r->src.stacked) shape[nd++] = r->nb;
    if (r->o->hier) shape[nd++] = r->info->n_hier, shape[nd++] = n, shape[nd++] = D;
    else if (r->pool_lewm) shape[nd++] = r->info->emb_dim;
    else if (r->pool_mean || r->pool_cls) shape[nd++] = D;
    else shape[nd++] = n, shape[nd++] = D;
    if (r->o->hier) snprintf(what, size, "%d hierarchical outputs of %d tokens", r->info->n_hier, n);
    else if (r->pool_lewm) snprintf(what, size, "the LeWM embedding");
    else if (r->pool_cls) snprintf(what, size, "the CLS token");
    else if (r->pool_mean) snprintf(what, size, "the mean of %d patch tokens", n - (r->info->has_cls ? 1 : 0));
    else snprintf(what, size, "%d tokens", n);
    if (r->src.stacked) {
        const size_t k = strlen(what);
        snprintf(what + k, size - k, ", for each of %d %s", r->nb, inputs_are_items(&r->o->in) ? "items" : "clips");
    }
    return nd;
}

static int embed_write(struct run *r) {
    if (!r->b.all) return 0;
    int64_t shape[5] = {0};
    char what[160];
    const int nd = describe_embed_file(r, shape, what, sizeof what);
    const size_t width = (size_t)shape[nd - 1];
    const struct out_rows_of u = {r, 0, r->per / width};
    const struct cli_out_rows rows = {width, NULL, "dim", out_row_name, &u};
    if (cli_check_finite_output(r->src.name, r->b.all, r->per * (size_t)r->nb, &rows) ||
        save(r->o->out, r->b.all, nd, shape))
        return CLI_EXIT_FAIL;
    if (!r->o->quiet && !r->o->results_quiet) report_written(r->o->out, nd, shape, what);
    return 0;
}

/* ---- predict: the target tokens from the context tokens ---- */

static int predict_check(struct run *r) {
    const struct run_opts *o = r->o;
    if (!r->info->has_predictor) return cli_fail(o->model, "this model file has no predictor");
    if (r->nb != 1)
        return cli_usage_error("predict", "predict takes one clip: one image, --as-clip IMAGE..., --frames-npy or "
                                          "one clip of a video, not %d", r->nb);
    if (load_ids(o->ctx, &r->ctx_ids, r->n) || load_ids(o->tgt, &r->tgt_ids, r->n)) return CLI_EXIT_FAIL;
    return 0;
}

/* The predictor on the encoder's tokens at the context ids: r->b.pred [ntg, od], and
 * r->b.ctx_out [nc, od] with --ctx-out. */
static int predict_tokens(struct run *r, int nc, int ntg, int od) {
    const struct run_opts *o = r->o;
    const int D = r->info->embed_dim;
    float *ctx_tok = malloc(sizeof(float) * (size_t)nc * D);
    r->b.pred = malloc(sizeof(float) * (size_t)ntg * od);
    if (o->ctx_out) r->b.ctx_out = malloc(sizeof(float) * (size_t)nc * od);
    if (!ctx_tok || !r->b.pred || (o->ctx_out && !r->b.ctx_out)) {
        free(ctx_tok);
        return cli_fail(NULL, "out of memory");
    }
    const int32_t *ids = r->ctx_ids.data;
    for (int i = 0; i < nc; i++)
        memcpy(ctx_tok + (size_t)i * D, r->b.enc.tokens + (size_t)ids[i] * D, sizeof(float) * (size_t)D);
    jepa_modality mod = o->modality;
    if (mod == JEPA_MODALITY_AUTO) mod = r->T == 1 ? JEPA_MODALITY_IMAGE : JEPA_MODALITY_VIDEO;
    const jepa_predict_params pp = {.ctx_ids = r->ctx_ids.data, .n_ctx = nc, .tgt_ids = r->tgt_ids.data,
                                    .n_tgt = ntg, .mask_index = o->mask_index, .modality = mod};
    const double t0 = now_ms();
    const jepa_status st = jepa_ctx_predict(r->c, ctx_tok, &pp, r->b.pred, r->b.ctx_out);
    free(ctx_tok);
    if (st) return cli_fail(o->model, "predict: %s", jepa_ctx_error(r->c));
    if (o->timing) fprintf(stderr, "time: predict %.1f ms\n", now_ms() - t0);
    return 0;
}

/* Two 2-D outputs, both or neither (path2 NULL: the first alone): each written to its
 * temporary, then both renamed. */
static int save_pair(const char *path1, const float *x1, const int64_t *shape1, const char *path2,
                     const float *x2, const int64_t *shape2) {
    struct jr_outfile f1, f2 = {0};
    struct jerr e = {0};
    if (npy_write_f32(&f1, path1, x1, 2, shape1, &e)) return cli_fail(NULL, "%s", e.msg);
    if (path2 && npy_write_f32(&f2, path2, x2, 2, shape2, &e)) {
        jr_outfile_abort(&f1);
        return cli_fail(NULL, "%s", e.msg);
    }
    if (jr_outfile_commit(&f1, &e)) {
        jr_outfile_abort(&f2);
        return cli_fail(NULL, "%s", e.msg);
    }
    if (path2 && jr_outfile_commit(&f2, &e)) return cli_fail(NULL, "%s", e.msg);
    return 0;
}

static int predict_write(struct run *r) {
    const struct run_opts *o = r->o;
    const int nc = (int)r->ctx_ids.count, ntg = (int)r->tgt_ids.count, od = r->info->pred_out_dim;
    int rc = predict_tokens(r, nc, ntg, od);
    if (rc) return rc;
    const struct cli_out_rows tr = {(size_t)od, "target row", "dim", NULL, NULL};
    const struct cli_out_rows cr = {(size_t)od, "context row", "dim", NULL, NULL};
    if (cli_check_finite_output(r->src.name, r->b.pred, (size_t)ntg * od, &tr) ||
        (r->b.ctx_out && cli_check_finite_output(r->src.name, r->b.ctx_out, (size_t)nc * od, &cr)))
        return CLI_EXIT_FAIL;
    const int64_t sp[2] = {ntg, od}, sc[2] = {nc, od};
    if ((rc = save_pair(o->out, r->b.pred, sp, o->ctx_out, r->b.ctx_out, sc))) return rc;
    if (!o->quiet) {
        report_written(o->out, 2, sp, "predicted target tokens");
        if (o->ctx_out) report_written(o->ctx_out, 2, sc, "predictor's context tokens");
    }
    return 0;
}

/* ---- classify: the head on each clip, the mean of the per-clip softmax ---- */

static int classify_check(struct run *r) {
    if (!r->info->has_head) return cli_fail(r->o->model, "this model file has no classifier head");
    return 0;
}

static int classify_alloc(struct run *r) {
    const size_t K = (size_t)r->info->n_classes;
    r->b.logits = malloc(sizeof(float) * K * (size_t)r->nb);
    r->b.prob = calloc(K, sizeof(double));
    r->b.mean = calloc(K, sizeof(double));
    r->b.order = malloc(sizeof(int) * K);
    return !r->b.logits || !r->b.prob || !r->b.mean || !r->b.order ? -1 : 0;
}

/* The -k best classes of p as ranked in r->b.order, one line each, tab-separated: class,
 * probability, label; with clip >= 0 led by the item and its path (items), or by the clip
 * and its first and last frames (--dense). With --json, one object: {"input", "item"
 * (items) or "clip" and "frames" (--dense), "topk": [{"class", "p", "label"}, ...]}. */
static void print_topk(const struct run *r, const double *p, int clip) {
    const int K = r->info->n_classes, shown = r->o->topk < K ? r->o->topk : K;
    const bool items = clip >= 0 && inputs_are_items(&r->o->in);
    long long f0 = 0, f1 = 0;
    char path[4 * 4096 + 1];
    if (clip >= 0) clip_frames(r, clip, &f0, &f1);
    if (r->o->json) {
        printf("{\"input\": ");
        cli_json_str(stdout, items ? inputs_item_name(&r->o->in, clip) : r->src.name);
        if (items) printf(", \"item\": %d", clip);
        else if (clip >= 0) printf(", \"clip\": %d, \"frames\": [%lld, %lld]", clip, f0, f1);
        printf(", \"topk\": [");
        for (int q = 0; q < shown; q++) {
            printf("%s{\"class\": %d, \"p\": %.9g, \"label\": ", q ? ", " : "", r->b.order[q], p[r->b.order[q]]);
            cli_json_str(stdout, jepa_model_label(r->m, r->b.order[q]));
            printf("}");
        }
        printf("]}\n");
        return;
    }
    if (items) cli_escape(inputs_item_name(&r->o->in, clip), path, sizeof path);
    for (int q = 0; q < shown; q++) {
        const int cls = r->b.order[q];
        char lb[4 * 256 + 1];
        const char *label = cli_escape(jepa_model_label(r->m, cls), lb, sizeof lb);
        if (items) printf("%d\t%s\t%d\t%.4f\t%s\n", clip, path, cls, p[cls], label);
        else if (clip >= 0) printf("%d\t%lld\t%lld\t%d\t%.4f\t%s\n", clip, f0, f1, cls, p[cls], label);
        else printf("%d\t%.4f\t%s\n", cls, p[cls], label);
    }
}

static int classify_clip(struct run *r, int j, int k) {
    const int K = r->info->n_classes, D = r->info->embed_dim;
    float *lg = r->b.logits + (size_t)K * k;
    const double t0 = now_ms();
    if (jepa_ctx_classify(r->c, r->b.enc.tokens + (size_t)j * r->n * D, r->n, lg)) {
        cli_progress_clear(&r->pg);
        if (r->nb == 1) return cli_fail(r->o->model, "classify: %s", jepa_ctx_error(r->c));
        return cli_fail(r->src.name, "clip %d: classify: %s", k, jepa_ctx_error(r->c));
    }
    r->t_cls += now_ms() - t0;
    const struct out_rows_of u = {r, k, 1};
    const struct cli_out_rows rows = {(size_t)K, NULL, "class", out_row_name, &u};
    if (cli_check_finite_output(r->src.name, lg, (size_t)K, &rows)) {
        cli_progress_clear(&r->pg);
        return CLI_EXIT_FAIL;
    }
    topk_softmax(lg, K, r->b.prob);
    for (int i = 0; i < K; i++) r->b.mean[i] += r->b.prob[i] / r->nb;
    if ((r->o->in.dense || inputs_are_items(&r->o->in)) && !r->o->results_quiet) {   /* one top-k per clip */
        topk_rank(r->b.prob, K, r->b.order);
        print_topk(r, r->b.prob, k);
    }
    return 0;
}

static int classify_write(struct run *r) {
    const struct run_opts *o = r->o;
    const int K = r->info->n_classes, nb = r->nb;
    const struct out_rows_of u = {r, 0, 1};
    const struct cli_out_rows rows = {(size_t)K, NULL, "class", out_row_name, &u};
    if (cli_check_finite_output(r->src.name, r->b.logits, (size_t)K * nb, &rows)) return CLI_EXIT_FAIL;
    topk_rank(r->b.mean, K, r->b.order);
    if (r->res) r->res->top1 = r->b.order[0], r->res->p1 = r->b.mean[r->b.order[0]];
    if (!o->in.dense && !inputs_are_items(&o->in) && !o->results_quiet)
        print_topk(r, r->b.mean, -1);   /* one top-k: of the mean of the per-clip softmax (Meta's evaluation) */
    if (!o->logits_out) return 0;
    const int64_t shape[2] = {nb, K};
    const int nd = r->src.stacked ? 2 : 1;
    const int64_t *sh = r->src.stacked ? shape : shape + 1;
    if (save(o->logits_out, r->b.logits, nd, sh)) return CLI_EXIT_FAIL;
    if (!o->quiet && !o->results_quiet) report_written(o->logits_out, nd, sh, "logits");
    return 0;
}

static const struct run_command run_commands[] = {
    [RUN_EMBED] = {embed_check, embed_alloc, embed_clip, embed_write},
    [RUN_PREDICT] = {predict_check, NULL, NULL, predict_write},
    [RUN_CLASSIFY] = {classify_check, classify_alloc, classify_clip, classify_write},
};

/* One input (the options' input) through the loaded model m and context c, its outputs
 * written as the options say. 0, or the exit status after printing the reason. */
static int run_input(enum run_cmd cmd, const struct run_opts *o, const jepa_model *m, jepa_ctx *c,
                     const jepa_model_info *info, double t_load, struct run_result *res) {
    struct run r = {.cmd = cmd, .ops = &run_commands[cmd], .o = o, .m = m, .c = c, .info = info,
                    .t_load = t_load, .res = res};
    if (res) res->clips = 0, res->top1 = -1, res->p1 = 0, res->stacked = false;
    const double t0 = now_ms();
    int rc = open_clips(&r);
    if (!rc) rc = r.ops->check(&r);
    if (!rc) rc = alloc_bufs(&r);
    if (!rc) rc = make_pending_clip(&r);
    r.t_in = now_ms() - t0;
    if (!rc) rc = run_clips(&r);
    if (!rc && o->repeat > 0) rc = run_repeat(&r);
    if (!rc) report_run(&r);
    if (!rc) rc = r.ops->finish(&r);
    if (!rc && !o->quiet && !o->results_quiet && info->name && !strncmp(info->name, "random-", 7))
        fprintf(stderr, "jepa: note: %s has RANDOM weights (written by jepa synth): the numbers show "
                "that the engine runs, not what a trained model sees\n", o->model);
    if (!rc && res) res->clips = r.nb, res->stacked = r.src.stacked;
    bufs_free(&r.b);
    npy_free(&r.ctx_ids);
    npy_free(&r.tgt_ids);
    source_close(&r.src);
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
        inputs_free(&o.in);
        return rc < 0 ? 0 : rc;
    }
    const char *name = cmd_name(cmd);
    char err[JEPA_ERR_LEN];
    jepa_model *m = NULL;
    jepa_ctx *c = NULL;
    rc = CLI_EXIT_FAIL;
    const double t0 = now_ms();
    if (jepa_model_load(&m, o.model, err)) {
        cli_fail(strstr(err, o.model) ? NULL : o.model, "%s", err);   /* the path once */
    } else if (!(rc = cli_ctx_new(name, m, o.threads, o.cpu, o.precision, o.gpu, &c)) && o.prepack &&
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
                .prefetch = many_prefetch, .recursive = o.recursive, .ctx = c, .json = o.json,
                .numbers = {.cmd = name, .model = o.model, .pool = o.pool, .hier = o.hier,
                            .precision = jepa_ctx_precision(c), .in = &o.in}};
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
    inputs_free(&o.in);
    return rc;
}

int cmd_embed(int argc, char **argv) {
    return cli_stream_requested(argc, argv) ? cmd_embed_stream(argc, argv) : run(RUN_EMBED, argc, argv);
}
int cmd_predict(int argc, char **argv) {
    return cli_is_world_predict(argc, argv) ? cmd_world_predict(argc, argv) : run(RUN_PREDICT, argc, argv);
}
int cmd_classify(int argc, char **argv) { return run(RUN_CLASSIFY, argc, argv); }
