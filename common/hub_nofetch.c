/*
 * hub_nofetch.c — jh_pull in a build without libcurl, libcrypto or cJSON: it says so.
 * The cache (hub.c) works the same, so `-m REPO` resolves files already downloaded.
 */
#include "common/hub.h"

#include <stdio.h>

int jh_can_pull(void) { return 0; }

int jh_pull(const struct jh_ref *r, const struct jh_pull_opts *o, char *path, size_t n, char *err) {
    (void)o, (void)path, (void)n;
    snprintf(err, JH_ERR_LEN, "%s: this build cannot download (built without libcurl; install "
             "libcurl4-openssl-dev libssl-dev libcjson-dev and reconfigure)", r->repo);
    return JH_ERR_FAIL;
}

int jh_list(const struct jh_ref *r, const struct jh_pull_opts *o, char *dir, size_t n, char **names, char *err) {
    *names = NULL;
    return jh_pull(r, o, dir, n, err);
}
