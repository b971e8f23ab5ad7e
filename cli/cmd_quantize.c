/*
 * cmd_quantize.c — `jepa quantize IN.gguf OUT.gguf --type TYPE` (or IN OUT TYPE): rewrite a
 * model with its matmul weights in another type (the loaded model's weight list says
 * which tensors: models/quantize.h), then load the result once to prove it is a valid
 * schema-v1 file.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "gguf/gguf.h"
#include "jepa.h"
#include "kernels/kernels.h"

int cmd_quantize(int argc, char **argv) {
    const char *in = NULL, *out = NULL, *type = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: jepa quantize IN.gguf OUT.gguf --type TYPE   (or jepa.cpp's IN.gguf OUT.gguf TYPE)\n"
                   "TYPE: f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1 (blocks as gguf-py's\n"
                   "gguf.quants.quantize writes them), q4_K, q5_K, q6_K (as ggml's reference quantizer,\n"
                   "no importance matrix). Converts the matmul weights of the schema's quantization set\n"
                   "(docs/gguf-schema.md); patch and action embeddings keep their type; norms, biases,\n"
                   "tokens and tables stay F32. Per tensor, rows not a multiple of 256 take q4_0, q5_0\n"
                   "or q8_0 for q4_K, q5_K, q6_K, and rows not a multiple of 32 take f16.\n"
                   "general.file_type and general.name (suffix -TYPE) are updated.\n"
                   "IN.gguf may be OWNER/NAME[:FILE] from the cache (`jepa pull`).\n"
                   CLI_PULL_HELP);
            return 0;
        }
        if (!strcmp(argv[i], "--type")) {
            if (++i >= argc) return cli_usage_error("quantize", "--type needs a value");
            if (type) return cli_usage_error("quantize", "the type is given twice");
            type = argv[i];
        } else if (!strcmp(argv[i], "-") && in && !out) {
            return cli_usage_error("quantize", "OUT is a model file; '-' (stdout) is for .npy outputs: name a file");
        } else if (argv[i][0] == '-') {
            return cli_usage_error("quantize", "unknown option '%s'", argv[i]);
        } else if (!in) in = argv[i];
        else if (!out) out = argv[i];
        else if (!type) type = argv[i];   /* jepa.cpp's positional form: IN OUT TYPE */
        else return cli_usage_error("quantize", "unexpected argument '%s'", argv[i]);
    }
    if (!in || !out || !type) return cli_usage_error("quantize", "needs IN.gguf OUT.gguf --type TYPE");
    const int mrc = cli_resolve_model("quantize", &in);   /* a repository name: the cached file */
    if (mrc) return mrc;
    const int t = jk_dtype_by_name(type);
    if (t < 0) {
        char types[160];
        jk_dtype_list(types, sizeof types, " or ");
        return cli_usage_error("quantize", "--type takes %s, not '%s'", types, type);
    }
    const uint32_t target = jk_dtype_gguf((enum jk_dtype)t);
    const char *ins[] = {in}, *outs[] = {out};
    int urc = cli_check_outputs("quantize", ins, 1, outs, 1);
    if (urc) return urc;

    int rc = CLI_EXIT_FAIL;
    char err[JEPA_ERR_LEN];
    jepa_model *m = NULL, *check = NULL;
    if (jepa_model_load(&m, in, err)) { cli_fail(in, "%s", err); goto done; }
    jepa_status st = jepa_model_quantize(m, out, target, err);
    if (st) { cli_fail(st == JEPA_ERR_IO ? out : in, "%s", err); goto done; }
    if (jepa_model_load(&check, out, err)) { cli_fail(out, "written file does not load: %s", err); goto done; }
    jepa_model_free(check);
    printf("wrote %s (matmul weights %s)\n", out, type);
    rc = 0;
done:
    jepa_model_free(m);
    return rc;
}
