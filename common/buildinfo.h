/*
 * buildinfo.h — what this build of jepa.c is, for `jepa --version` and jepa.build_info():
 * the git commit it came from and the features configure found. Generated at build time
 * from common/buildinfo.c.in (meson.build: configure_file, then vcs_tag for the commit).
 */
#ifndef JEPA_COMMON_BUILDINFO_H
#define JEPA_COMMON_BUILDINFO_H

/* `git describe --always --dirty --abbrev=12` of the source tree when the build ran, the
 * commit a `git archive` or `meson dist` tarball (pip's sdist) was made from
 * (tools/archive-commit.txt, export-subst), else "unknown". */
extern const char cli_build_commit[];
/* One "key: value\n" line per feature, in a fixed order: kernels (the ISA levels compiled;
 * `jepa cpu` says which this CPU runs), cuda, openmp, openblas, images (the still-image
 * formats decoded), video, server, pull, static, compiler. Values are "yes" / "no" or
 * words separated by spaces. */
extern const char cli_build_features[];

#endif
