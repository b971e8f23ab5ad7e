#!/usr/bin/env bash
# tools/release.sh — the release files of the checked-out commit, in dist/:
#   jepa.c-VERSION.tar.gz                the source (git archive of HEAD; its
#                                        tools/archive-commit.txt names the commit, so a
#                                        build from it reports that commit)
#   jepa-VERSION-linux-x86_64.tar.gz     the static x86-64 `jepa` (-Dstatic=true), with
#   jepa-VERSION-linux-aarch64.tar.gz    the static aarch64 one (cross/aarch64-linux-gnu.ini),
#                                        each with LICENSE, README.md, CHANGELOG.md, the man
#                                        page and the bash completion
#   SHA256SUMS                           sha256sum of each, checked with `sha256sum -c`
# Each binary is checked by tests/check_static.sh (statically linked, runs without a loader:
# the aarch64 one under qemu-aarch64-static) and stripped. The builds are made from the
# source archive itself, unpacked in a temporary folder (outside the tree, removed at the
# end), so the binaries are what anyone gets from the tarball.
#
#   bash tools/release.sh [--allow-dirty] [--no-aarch64] [-j N]
#
# A tree with uncommitted changes is refused (the archive is HEAD and would not hold them)
# unless --allow-dirty. --no-aarch64 leaves the cross build out (it needs
# gcc-aarch64-linux-gnu, libc6-dev-arm64-cross, libgomp1-arm64-cross and qemu-user-static).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

allow_dirty=0 arm=1 jobs=$(nproc)
while [ $# -gt 0 ]; do
    case $1 in
        --allow-dirty) allow_dirty=1 ;;
        --no-aarch64) arm=0 ;;
        -j) jobs=${2:?-j takes a number}; shift ;;
        -j*) jobs=${1#-j} ;;
        -h|--help) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "release.sh: unknown option '$1' (--help)" >&2; exit 2 ;;
    esac
    shift
done
fail() { echo "release.sh: $*" >&2; exit 1; }

git rev-parse --git-dir >/dev/null 2>&1 || fail "$root is not a git checkout"
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
    [ $allow_dirty = 1 ] || fail "uncommitted changes; commit them (the archive is HEAD) or pass --allow-dirty"
    echo "release.sh: uncommitted changes are NOT in the release (the archive is HEAD)" >&2
fi
version=$(sed -n "s/^  version: '\([^']*\)',$/\1/p" meson.build | head -1)
[ -n "$version" ] || fail "no version: in meson.build's project()"
commit=$(git rev-parse HEAD | cut -c1-12)   # as meson.build reads tools/archive-commit.txt
[ "$(uname -m)" = x86_64 ] || fail "the x86-64 binary is built natively: run this on an x86-64 machine"
if [ $arm = 1 ]; then
    for tool in aarch64-linux-gnu-gcc qemu-aarch64-static; do
        command -v $tool >/dev/null || fail "$tool not found: install the cross tools or pass --no-aarch64"
    done
fi

dist=$root/dist
rm -rf "$dist"
mkdir -p "$dist"
src=jepa.c-$version
echo "=== $src.tar.gz (git archive of $commit)"
git archive --format=tar.gz --prefix="$src/" -o "$dist/$src.tar.gz" HEAD

# The builds run from the unpacked archive: what is released is what the tarball builds.
work=$(mktemp -d "${TMPDIR:-/tmp}/jepa-release.XXXXXX")
trap 'rm -rf "$work"' EXIT
tar -xzf "$dist/$src.tar.gz" -C "$work"
grep -qx "$(git rev-parse HEAD)" "$work/$src/tools/archive-commit.txt" ||
    fail "the archive's tools/archive-commit.txt does not name HEAD (export-subst in .gitattributes?)"

# build ARCH [CROSS-FILE]: the static jepa of ARCH, checked and packed with its documents
build() {
    local arch=$1 cross=${2:-} dir=$work/$1 name=jepa-$version-linux-$1
    echo "=== $name.tar.gz (static)"
    local setup=(--buildtype=release -Dstatic=true -Dtests=false -Dcuda=disabled -Dpython=false)
    [ -n "$cross" ] && setup+=(--cross-file "$work/$src/$cross")
    meson setup "$dir" "$work/$src" "${setup[@]}" >"$work/$arch.setup.log" 2>&1 ||
        { tail -20 "$work/$arch.setup.log"; fail "meson setup for $arch failed"; }
    ninja -C "$dir" -j "$jobs" cli/jepa >"$work/$arch.build.log" 2>&1 ||
        { tail -20 "$work/$arch.build.log"; fail "the $arch build failed"; }
    local runner=()
    [ -n "$cross" ] && runner=(qemu-aarch64-static)
    bash "$work/$src/tests/check_static.sh" "$dir/cli/jepa" -- "${runner[@]}" ||
        fail "the static $arch jepa failed its check"
    local out=$work/$name strip_tool=strip
    [ -n "$cross" ] && strip_tool=aarch64-linux-gnu-strip
    rm -rf "$out"
    mkdir -p "$out"
    "$strip_tool" -o "$out/jepa" "$dir/cli/jepa"
    "${runner[@]}" "$out/jepa" --version >"$out/VERSION.txt" || fail "the stripped $arch jepa does not run"
    grep -qx "commit: $commit" "$out/VERSION.txt" || fail "the $arch jepa reports $(sed -n 2p "$out/VERSION.txt")"
    cp "$work/$src/LICENSE" "$work/$src/README.md" "$work/$src/CHANGELOG.md" "$out/"
    # the man page and the completion come from the x86-64 build, which can run its jepa
    # at build time (the help is the same on both)
    ninja -C "$work/x86_64" tools/jepa.1 tools/jepa >/dev/null 2>&1 &&
        cp "$work/x86_64/tools/jepa.1" "$out/jepa.1" && cp "$work/x86_64/tools/jepa" "$out/jepa.bash-completion" ||
        fail "no man page or completion from the x86-64 build"
    tar -czf "$dist/$name.tar.gz" -C "$work" --owner=0 --group=0 --numeric-owner "$name"
}
build x86_64
[ $arm = 1 ] && build aarch64 cross/aarch64-linux-gnu.ini

(cd "$dist" && sha256sum -- *.tar.gz >SHA256SUMS && sha256sum --quiet -c SHA256SUMS)
echo "=== dist/ ($version, commit $commit)"
(cd "$dist" && ls -l --time-style=+ -- * | awk '{print "  " $5 "\t" $NF}')
