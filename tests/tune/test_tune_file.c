/*
 * test_tune_file.c — the tuning file (kernels/tuning.c): a file that jk_tune_format writes
 * parses back to the same sets; every hostile variant is refused with a reason and leaves
 * the output untouched: another version, another CPU, every truncation, every one-byte
 * corruption, values outside the limits (signed with a valid checksum, so that the limits
 * and not the checksum refuse them), huge numbers, junk, repeated kinds and keys; and the
 * reader (jk_tune_read) refuses a FIFO without blocking, a directory, a missing file and a
 * file past JK_TUNE_FILE_MAX. Also: the built-in table's sets are valid and Zen 4's entry
 * is today's constants (the generic defaults), and the candidates `jepa tune` may choose
 * are valid and distinct.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernels/tuning.h"
#include "tests/check.h"

static const struct jr_cpu_id zen4 = {"AuthenticAMD", 25, 17, 1, "avx512"};

static uint64_t fnv(const char *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
    return h;
}

/* body + a valid sum line, into buf */
static size_t sign(char *buf, size_t size, const char *body) {
    const int n = snprintf(buf, size, "%s", body);
    return (size_t)n + (size_t)snprintf(buf + n, size - (size_t)n, "sum %016llx\n",
                                        (unsigned long long)fnv(buf, (size_t)n));
}

/* The parse of buf must fail with a reason and leave out untouched. */
static int refused(const char *buf, size_t n, const struct jr_cpu_id *id, char *why) {
    struct jk_tuning base, out;
    memset(&base, 0, sizeof base);
    memset(&out, 0x77, sizeof out);
    const struct jk_tuning before = out;
    why[0] = '\0';
    const int rc = jk_tune_parse(buf, n, id, &base, &out, NULL, NULL, why, 200);
    return rc == -1 && why[0] && !memcmp(&out, &before, sizeof out);
}

int main(void) {
    char buf[JK_TUNE_FILE_MAX + 64], why[200];
    const int have512 = jk_gemm_kind(JK_GK_AVX512)->mr > 0;

    /* the table and the candidates */
    int nt = jk_tune_table_gemm(0, &(enum jk_gemm_kind){0}, &(struct jk_gemm_tuning){0});
    for (int i = 0; i < nt; i++) {
        enum jk_gemm_kind k;
        struct jk_gemm_tuning t;
        jk_tune_table_gemm(i, &k, &t);
        if (jk_gemm_kind(k)->mr > 0) CHECK(jk_gemm_tuning_valid(&t, k), "table entry %d is valid", i);
    }
    if (have512) {
        struct jk_tuning t;
        const char *e = jk_tune_table_entry(&zen4, &t);
        CHECK(e && !strcmp(e, "zen4"), "Zen 4 (25/17) finds the zen4 entry: %s", e ? e : "none");
        CHECK(!memcmp(&t.gemm[JK_GK_AVX512], &jk_gemm_kind(JK_GK_AVX512)->def, sizeof t.gemm[0]),
              "zen4's avx512 blocking is the compiled default (same bits as before)");
        const struct jr_cpu_id other = {"GenuineIntel", 6, 0x1234, 0, "avx512"};
        CHECK(jk_tune_table_entry(&other, NULL) == NULL, "an unknown CPU takes the generic fallback");
        const struct jr_cpu_id emr = {"GenuineIntel", 6, 0xcf, 2, "avx512"};
        e = jk_tune_table_entry(&emr, &t);
        CHECK(e && !strcmp(e, "emeraldrapids") && t.gemm[JK_GK_AVX512].kc == 512, "Emerald Rapids' entry");
    }
    for (int k = 0; k < JK_NGK; k++) {
        struct jk_gemm_tuning c[256];
        const int n = jk_gemm_candidates((enum jk_gemm_kind)k, c, 256);
        if (jk_gemm_kind((enum jk_gemm_kind)k)->mr <= 0) {
            CHECK(n == 0, "no candidates for a kind this build lacks");
            continue;
        }
        int bad = 0, dup = 0;
        for (int i = 0; i < n; i++) {
            bad += !jk_gemm_tuning_valid(&c[i], (enum jk_gemm_kind)k);
            for (int j = 0; j < i; j++) dup += !memcmp(&c[i], &c[j], sizeof c[i]);
        }
        CHECK(n > 1 && n <= 256 && !bad && !dup, "%s: %d candidates, %d invalid, %d repeated",
              jk_gemm_kind((enum jk_gemm_kind)k)->name, n, bad, dup);
        CHECK(!memcmp(&c[0], &jk_gemm_kind((enum jk_gemm_kind)k)->def, sizeof c[0]),
              "the first candidate is the default");
    }

    if (!have512) {   /* the file cases below name the avx512 kind */
        printf("test_tune_file: no avx512 kind in this build: the file cases use avx2\n");
    }
    const char *kind = have512 ? "avx512" : jk_gemm_kind(JK_GK_NEON)->mr > 0 ? "neon" : "avx2";
    const int ki = jk_gemm_kind_by_name(kind);
    const int mr = jk_gemm_kind((enum jk_gemm_kind)ki)->mr, nr = jk_gemm_kind((enum jk_gemm_kind)ki)->nr;

    /* the round trip */
    struct jk_tuning t, back;
    memset(&t, 0, sizeof t);
    t.gemm[ki] = (struct jk_gemm_tuning){256, 2 * mr, 8 * nr, 0, 2, 8};
    t.attn[JK_AK_AVX2] = (struct jk_attn_tuning){2048, 700};
    const size_t n = jk_tune_format(buf, sizeof buf, &zen4, &t, 1u << ki, 1u << JK_AK_AVX2);
    CHECK(n > 0, "format");
    struct jk_tuning base;
    memset(&base, 0x11, sizeof base);
    unsigned gs = 0, as = 0;
    int rc = jk_tune_parse(buf, n, &zen4, &base, &back, &gs, &as, why, sizeof why);
    CHECK(rc == 0, "the written file parses: %s", rc ? why : "ok");
    CHECK(gs == 1u << ki && as == 1u << JK_AK_AVX2, "it names what was written");
    CHECK(!memcmp(&back.gemm[ki], &t.gemm[ki], sizeof t.gemm[ki]) &&
              !memcmp(&back.attn[JK_AK_AVX2], &t.attn[JK_AK_AVX2], sizeof t.attn[0]),
          "the same values back");
    CHECK(!memcmp(&back.gemm[(ki + 1) % JK_NGK], &base.gemm[(ki + 1) % JK_NGK], sizeof base.gemm[0]),
          "the kinds it does not name keep the base's values");

    /* a record per kernel build: every matmul kind of this build (the tiers' among them)
     * and every attention kind, each at a set of its own, back as written */
    unsigned gall = 0, aall = (1u << JK_NAK) - 1;
    struct jk_tuning ta = t;
    for (int k = 0; k < JK_NGK; k++) {
        const struct jk_gemm_kind_info *gi = jk_gemm_kind((enum jk_gemm_kind)k);
        if (gi->mr <= 0) continue;
        gall |= 1u << k;
        ta.gemm[k] = (struct jk_gemm_tuning){512 - 8 * k, gi->mr * (k + 1), gi->nr * (k + 2), k & 1, 1 + k, 2 + k};
    }
    for (int k = 0; k < JK_NAK; k++) ta.attn[k] = (struct jk_attn_tuning){1024 * (k + 1), 512 + k};
    const size_t nall = jk_tune_format(buf, sizeof buf, &zen4, &ta, gall, aall);
    rc = nall ? jk_tune_parse(buf, nall, &zen4, &base, &back, &gs, &as, why, sizeof why) : -1;
    int same_all = !memcmp(back.attn, ta.attn, sizeof ta.attn);
    for (int k = 0; k < JK_NGK; k++)
        same_all &= !memcmp(&back.gemm[k], gall >> k & 1 ? &ta.gemm[k] : &base.gemm[k], sizeof ta.gemm[k]);
    CHECK(rc == 0 && gs == gall && as == aall && same_all,
          "every build's record (gemm kinds 0x%x, attn kinds 0x%x) back as written: %s", gall, aall, rc ? why : "ok");
    CHECK(!have512 || (strstr(buf, "\ngemm avx512_bf16 ") && strstr(buf, "\ngemm amx_high ")),
          "the precision tiers' records are in the file");
    int trunc_all = 1;
    for (size_t len = 0; len < nall; len++) trunc_all &= refused(buf, len, &zen4, why);
    CHECK(trunc_all, "every truncation of the file of every record is refused");
    CHECK(jk_tune_format(buf, sizeof buf, &zen4, &t, 1u << ki, 1u << JK_AK_AVX2) == n, "the first file again");

    /* every truncation and every one-byte change is refused */
    int trunc_ok = 1, flip_ok = 1;
    for (size_t len = 0; len < n; len++) trunc_ok &= refused(buf, len, &zen4, why);
    CHECK(trunc_ok, "every truncation of the file is refused");
    for (size_t i = 0; i < n; i++) {
        char c = buf[i];
        buf[i] = (char)(c == '7' ? '8' : c == '\n' ? ' ' : c ^ 1);
        flip_ok &= refused(buf, n, &zen4, why);
        buf[i] = c;
    }
    CHECK(flip_ok, "every one-byte corruption is refused");

    /* stale, foreign */
    const struct jr_cpu_id stepping2 = {"AuthenticAMD", 25, 17, 2, "avx512"};
    CHECK(refused(buf, n, &stepping2, why) && strstr(why, "another CPU"), "another stepping: %s", why);
    char body[1024];
    snprintf(body, sizeof body, "jepa-tune 1\ncpu AuthenticAMD 25 17 1 avx512\ngemm avx512 kc=384 mc=168 "
             "nc=1024 ahead=1 colp=4 rowt=4\n");
    size_t m = sign(buf, sizeof buf, body);
    CHECK(refused(buf, m, &zen4, why) && strstr(why, "version 1"), "a version-1 file (the old format): %s", why);
    snprintf(body, sizeof body, "jepa-tune 3\ncpu AuthenticAMD 25 17 1 avx512\n");
    m = sign(buf, sizeof buf, body);
    CHECK(refused(buf, m, &zen4, why) && strstr(why, "version 3"), "a later version: %s", why);

    /* hostile values, each signed correctly */
    static const char *const lines[] = {
        "gemm %s kc=1032 mc=%d nc=%d ahead=1 colp=4 rowt=4\n",   /* kc above the limit */
        "gemm %s kc=0 mc=%d nc=%d ahead=1 colp=4 rowt=4\n",
        "gemm %s kc=12 mc=%d nc=%d ahead=1 colp=4 rowt=4\n",     /* not a multiple of 8 */
        "gemm %s kc=999999999 mc=%d nc=%d ahead=1 colp=4 rowt=4\n",
        "gemm %s kc=4294967680 mc=%d nc=%d ahead=1 colp=4 rowt=4\n",   /* wraps to 384 in 32 bits */
        "gemm %s kc=-384 mc=%d nc=%d ahead=1 colp=4 rowt=4\n",
        "gemm %s kc=384 mc=%d nc=%d ahead=2 colp=4 rowt=4\n",
        "gemm %s kc=384 mc=%d nc=%d ahead=1 colp=0 rowt=4\n",
        "gemm %s kc=384 mc=%d nc=%d ahead=1 colp=4 rowt=65\n",
        "gemm %s kc=384 mc=%d nc=%d ahead=1 colp=4\n",            /* a key missing */
        "gemm %s kc=384 mc=%d nc=%d ahead=1 colp=4 rowt=4 rowt=4\n",
        "gemm %s kc=384 mc=%d nc=%d ahead=1 colp=4 rowt=4 xx=1\n",
        "gemm %s kc=0x180 mc=%d nc=%d ahead=1 colp=4 rowt=4\n",
        "gemm %s kc=384 mc=%d nc=%d ahead=1 colp=4 rowt=4\ngemm %s kc=384 mc=%d nc=%d ahead=1 colp=4 rowt=4\n",
        "gemm nosuch kc=384 mc=%d nc=%d ahead=1 colp=4 rowt=4\n",
        "attn avx2 bk=100 pack=1536\n",
        "attn avx2 bk=4096 pack=2000000\n",
        "attn avx2 bk=4096 pack=63\n",
        "attn avx2 bk=4096\n",
        "attn avx2 bk=4096 pack=1536\nattn avx2 bk=2048 pack=1536\n",   /* a record twice */
        "attn avx512_bf16 bk=4096 pack=1536\n",   /* no such attention build */
        /* the precision tiers' records: out of range, or a build of another architecture */
        "gemm avx512_bf16 kc=1032 mc=168 nc=1024 ahead=1 colp=4 rowt=4\n",
        "gemm avx512_bf16 kc=384 mc=167 nc=1024 ahead=1 colp=4 rowt=4\n",
        "gemm amx_bf16 kc=384 mc=256 nc=5000 ahead=1 colp=4 rowt=4\n",
        "gemm amx_high kc=384 mc=256 nc=1024 ahead=3 colp=4 rowt=4\n",
        "gemm neon_bf16 kc=512 mc=96 nc=1536 ahead=1 colp=4 rowt=0\n",
        "frobnicate 1\n",
    };
    int hostile_ok = 1;
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
        char line[512];
        if (strstr(lines[i], "nosuch"))
            snprintf(line, sizeof line, lines[i], mr, nr);
        else if (!strstr(lines[i], "%s"))
            snprintf(line, sizeof line, "%s", lines[i]);
        else snprintf(line, sizeof line, lines[i], kind, mr * 3, nr * 3, kind, mr, nr);
        snprintf(body, sizeof body, "jepa-tune 2\ncpu AuthenticAMD 25 17 1 avx512\n%s", line);
        m = sign(buf, sizeof buf, body);
        const int r = refused(buf, m, &zen4, why);
        if (!r) printf("  accepted: %s", line);
        hostile_ok &= r;
    }
    CHECK(hostile_ok, "every out-of-range or malformed value is refused");
    /* an mc not a multiple of MR, an nc above the limit */
    snprintf(body, sizeof body, "jepa-tune 2\ncpu AuthenticAMD 25 17 1 avx512\ngemm %s kc=384 mc=%d nc=%d ahead=1 "
             "colp=4 rowt=4\n", kind, mr + 1, nr);
    m = sign(buf, sizeof buf, body);
    CHECK(refused(buf, m, &zen4, why), "mc not a multiple of MR: %s", why);
    snprintf(body, sizeof body, "jepa-tune 2\ncpu AuthenticAMD 25 17 1 avx512\ngemm %s kc=384 mc=%d nc=%d ahead=1 "
             "colp=4 rowt=4\n", kind, mr, (JK_TUNE_NC_MAX / nr + 1) * nr);
    m = sign(buf, sizeof buf, body);
    CHECK(refused(buf, m, &zen4, why), "nc above the limit: %s", why);

    /* junk: binary, NUL, no newline, after the sum, oversized */
    for (int i = 0; i < 256; i++) buf[i] = (char)i;
    CHECK(refused(buf, 256, &zen4, why), "binary junk: %s", why);
    m = sign(buf, sizeof buf, "jepa-tune 2\ncpu AuthenticAMD 25 17 1 avx512\n");
    CHECK(!refused(buf, m, &zen4, why), "a file that names no kind is valid");
    memcpy(buf + m, "# more\n", 7);
    CHECK(refused(buf, m + 7, &zen4, why), "text after the sum line: %s", why);
    buf[20] = '\0';
    CHECK(refused(buf, m, &zen4, why), "a NUL byte: %s", why);
    memset(buf, '#', sizeof buf);
    CHECK(refused(buf, JK_TUNE_FILE_MAX + 1, &zen4, why), "a buffer past the limit: %s", why);
    CHECK(refused("", 0, &zen4, why), "an empty file: %s", why);

    /* the reader */
    char dir[] = "/tmp/jepa_tune_XXXXXX", path[300];
    CHECK(mkdtemp(dir) != NULL, "a temporary directory");
    snprintf(path, sizeof path, "%s/fifo", dir);
    if (mkfifo(path, 0600) == 0) {
        CHECK(jk_tune_read(path, buf, sizeof buf, why, sizeof why) < 0 && strstr(why, "regular"),
              "a FIFO is refused without waiting for a writer: %s", why);
        unlink(path);
    }
    CHECK(jk_tune_read(dir, buf, sizeof buf, why, sizeof why) < 0, "a directory: %s", why);
    snprintf(path, sizeof path, "%s/missing", dir);
    CHECK(jk_tune_read(path, buf, sizeof buf, why, sizeof why) < 0, "a missing file: %s", why);
    snprintf(path, sizeof path, "%s/huge", dir);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
    CHECK(fd >= 0 && ftruncate(fd, (off_t)1 << 32) == 0, "a sparse 4 GiB file");
    if (fd >= 0) close(fd);
    CHECK(jk_tune_read(path, buf, sizeof buf, why, sizeof why) < 0 && strstr(why, "larger"),
          "a huge file is refused before reading: %s", why);
    unlink(path);
    snprintf(path, sizeof path, "%s/ok", dir);
    FILE *f = fopen(path, "w");
    if (f) fwrite("jepa-tune 2\n", 1, 12, f), fclose(f);
    CHECK(jk_tune_read(path, buf, sizeof buf, why, sizeof why) == 12, "a small regular file is read whole");
    unlink(path);
    rmdir(dir);
    return check_finish("test_tune_file");
}
