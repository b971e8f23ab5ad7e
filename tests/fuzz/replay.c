/*
 * replay.c — feed every file of a directory (or the files named) to the fuzz target's
 * LLVMFuzzerTestOneInput, without libFuzzer: the corpus in tests/fuzz/corpus runs as a
 * plain test in every build (meson test fuzz_replay, suite gguf), and under
 * -Db_sanitize=address,undefined it catches what the fuzzer would.
 * usage: replay DIR_OR_FILE...   (exit 1 if nothing was replayed)
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? 2 * cap : 4096;
            uint8_t *b = realloc(buf, cap);
            if (!b) {
                free(buf);
                fclose(f);
                return -1;
            }
            buf = b;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    fclose(f);
    /* an exact-size copy, so a read past the end is caught by ASan */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) {
        free(buf);
        return -1;
    }
    if (n) memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

int main(int argc, char **argv) {
    int done = 0, failed = 0;
    for (int a = 1; a < argc; a++) {
        struct stat sb;
        if (stat(argv[a], &sb) != 0) {
            fprintf(stderr, "replay: no such file or directory: %s\n", argv[a]);
            failed++;
            continue;
        }
        if (!S_ISDIR(sb.st_mode)) {
            if (replay_file(argv[a]) == 0) done++; else failed++;
            continue;
        }
        DIR *d = opendir(argv[a]);
        if (!d) {
            failed++;
            continue;
        }
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            char path[4096];
            if (e->d_name[0] == '.') continue;
            snprintf(path, sizeof path, "%s/%s", argv[a], e->d_name);
            if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
            if (replay_file(path) == 0) done++; else failed++;
        }
        closedir(d);
    }
    printf("replay: %d inputs replayed, %d unreadable\n", done, failed);
    return done > 0 && failed == 0 ? 0 : 1;
}
