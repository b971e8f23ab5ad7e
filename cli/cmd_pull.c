/*
 * cmd_pull.c — `jepa pull REPO[:FILE] [--type T]`: a model file from the Hugging Face hub
 * into the cache (common/hub.h; docs/pull.md), its path on stdout. And the `-m REPO[:FILE]`
 * every command takes: cli_resolve_model() finds the file in the cache, downloading it
 * only when the command line has --pull. Tests: tests/pull/.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/hub.h"

static int pull_missing;   /* --pull on the command line (cli_take_pull_flag) */

int cli_take_pull_flag(int argc, char **argv) {
    int k = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--")) {   /* the rest is not options */
            while (i < argc) argv[k++] = argv[i++];
            break;
        }
        if (!strcmp(argv[i], "--pull")) pull_missing = 1;
        else argv[k++] = argv[i];
    }
    argv[k] = NULL;
    return k;
}

static int hub_error(const char *cmd, int rc, const char *err) {
    return rc == JH_ERR_USAGE ? cli_usage_error(cmd, "%s", err) : cli_fail(NULL, "%s", err);
}

/* Run argv (python3 ...), its stdout into out (n bytes, the first line kept) unless out is
 * NULL (then discarded, with its stderr); its exit status, or -1 when it could not run. */
static int run_python(char *const argv[], char *out, size_t n) {
    int fd[2];
    if (pipe(fd)) return -1;
    fflush(NULL);
    const pid_t pid = fork();
    if (pid < 0) { close(fd[0]), close(fd[1]); return -1; }
    if (pid == 0) {
        dup2(fd[1], 1);
        if (!out) dup2(fd[1], 2);
        close(fd[0]), close(fd[1]);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(fd[1]);
    size_t k = 0;
    char buf[512];
    for (ssize_t got; (got = read(fd[0], buf, sizeof buf)) != 0;) {
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) break;
        for (ssize_t i = 0; out && i < got && k + 1 < n; i++) out[k++] = buf[i];
    }
    close(fd[0]);
    if (out) out[k] = 0, out[strcspn(out, "\n")] = 0;
    int st;
    while (waitpid(pid, &st, 0) < 0) {}
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A checkpoint repository (JH_CHECKPOINT): converted into the cache by the Python package
 * (python3 -m jepa_c.hub), which prints the GGUF's path into path; where the package is
 * not importable, one line says how to get it. */
static int convert_checkpoint(const struct jh_ref *r, const struct jh_pull_opts *o, char *path, size_t n) {
    char *probe[] = {"python3", "-c", "import jepa_c.hub", NULL};
    if (run_python(probe, NULL, 0) != 0)
        return cli_fail(NULL, "%s holds a checkpoint (safetensors), not a GGUF: converting it needs the Python "
                        "package (pip install jepa-c), then jepa_c.pull(\"%s\") or python3 -m jepa_c.convert",
                        r->repo, r->repo);
    char retries[16], stall[16];
    snprintf(retries, sizeof retries, "%d", o->retries);
    snprintf(stall, sizeof stall, "%ld", o->stall_timeout_s);
    char *argv[] = {"python3", "-m", "jepa_c.hub", (char *)r->repo, "--type", (char *)(o->type ? o->type : "f16"),
                    "--retries", retries, "--stall-timeout", stall, o->progress ? NULL : "-q", NULL};
    const int st = run_python(argv, path, n);
    if (st == 0 && path[0]) return 0;
    return st == 2 ? CLI_EXIT_USAGE : st < 0 ? cli_fail(NULL, "%s: python3 -m jepa_c.hub did not run", r->repo)
                                             : CLI_EXIT_FAIL;   /* it printed its one line */
}

static int pull_ref(const char *cmd, const struct jh_ref *r, const struct jh_pull_opts *o, char *path, size_t n) {
    char err[JH_ERR_LEN];
    const int rc = jh_pull(r, o, path, n, err);
    if (rc == JH_CHECKPOINT) return convert_checkpoint(r, o, path, n);
    return rc ? hub_error(cmd, rc, err) : 0;
}

int cli_resolve_model(const char *cmd, const char **model) {
    static char path[JH_PATH_LEN];   /* one model per command */
    struct jh_ref r;
    char err[JH_ERR_LEN];
    if (!*model || !jh_is_ref(*model) || jh_ref_parse(*model, &r, err)) return 0;
    int rc = jh_cache_find(&r, NULL, path, sizeof path, err);
    if (rc == JH_NOT_CACHED && pull_missing) {
        const struct jh_pull_opts o = {.retries = -1, .progress = isatty(2) ? jh_progress_stderr : NULL};
        if ((rc = pull_ref(cmd, &r, &o, path, sizeof path))) return rc;
    } else if (rc) {
        return hub_error(cmd, rc, err);
    }
    *model = path;
    return 0;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: jepa pull REPO[:FILE] [--type TYPE] [--retries N] [--stall-timeout S] [-q]\n"
            "\n"
            "Download a GGUF model file from the Hugging Face hub into the cache and print its path.\n"
            "A repository holding a checkpoint (config.json, safetensors) is converted into the cache\n"
            "as NAME-TYPE.gguf (--type f32, f16 or bf16; default f16) by the Python package\n"
            "(pip install jepa-c; python3 -m jepa_c.hub), when python3 can import it.\n"
            "  REPO             a repository, OWNER/NAME (e.g. jepacpp/vjepa2-vitl-fpc64-256-GGUF)\n"
            "  :FILE            the file to take; without it, the repository's only GGUF, or the\n"
            "                   one --type names, or of several the f16 one\n"
            "  --type TYPE      the quantization suffix of the file name: f32, f16, q8_0, q4_k, ...\n"
            "  --retries N      further attempts after a network failure, 408, 429 or 5xx (default 4,\n"
            "                   waiting 1, 2, 4, 8 s; a partial file is resumed)\n"
            "  --stall-timeout S  give an attempt up below 1 KiB/s for S seconds (default 30)\n"
            "  -q, --quiet      no progress bar (it is drawn only when stderr is a terminal)\n"
            "\n"
            "The cache is $JEPA_CACHE, else $XDG_CACHE_HOME/jepa, else ~/.cache/jepa; the hub is\n"
            "$HF_ENDPOINT (default https://huggingface.co); HF_TOKEN is sent to the hub (gated repos);\n"
            "proxies come from http_proxy / https_proxy / no_proxy. The file's sha256 is checked\n"
            "against the hub's before it is put in place. A cached file with the hub's sha256 is\n"
            "not downloaded again.\n"
            "\n"
            "Every command takes -m REPO[:FILE] in place of a file: it is found in the cache, and\n"
            "downloaded first when missing only if the command line has --pull. docs/pull.md.\n");
}

int cmd_pull(int argc, char **argv) {
    const char *ref = NULL;
    struct jh_pull_opts o = {.retries = -1};
    int quiet = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long x;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) quiet = 1;
        else if (!strcmp(a, "--type")) {
            if (!v || !*v || strlen(v) > 32) return cli_usage_error("pull", "--type takes a type such as f16 or q8_0");
            o.type = v, i++;
        } else if (!strcmp(a, "--retries")) {
            if (cli_parse_int("pull", a, v, 0, 10, &x)) return CLI_EXIT_USAGE;
            o.retries = (int)x, i++;
        } else if (!strcmp(a, "--stall-timeout")) {
            if (cli_parse_int("pull", a, v, 1, 3600, &x)) return CLI_EXIT_USAGE;
            o.stall_timeout_s = (long)x, i++;
        } else if (a[0] == '-' && a[1]) return cli_usage_error("pull", "unknown option '%s'", a);
        else if (ref) return cli_usage_error("pull", "one repository at a time ('%s' and '%s')", ref, a);
        else ref = a;
    }
    if (!ref) return cli_usage_error("pull", "which repository? jepa pull OWNER/NAME[:FILE]");
    struct jh_ref r;
    char err[JH_ERR_LEN], path[JH_PATH_LEN];
    if (jh_ref_parse(ref, &r, err)) return cli_usage_error("pull", "%s", err);
    if (!jh_can_pull()) {
        jh_pull(&r, &o, path, sizeof path, err);
        return cli_fail(NULL, "%s", err);
    }
    o.progress = !quiet && isatty(2) ? jh_progress_stderr : NULL;
    const int rc = pull_ref("pull", &r, &o, path, sizeof path);
    if (rc) return rc;
    printf("%s\n", path);
    return 0;
}
