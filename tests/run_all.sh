#!/usr/bin/env bash
# tests/run_all.sh — every test of jepa.c, as CI runs them:
#   1. release build (gcc), all suites; where nvcc is found (PATH or /usr/local/cuda/bin) the
#      CUDA build must compile (-Dcuda=enabled): its GPU tests skip without a GPU, the same
#      kernels run under the SIMT emulator (a C++ compiler, no nvcc) either way;
#      then every global symbol of its installed libjepa.a must carry a project prefix
#      (tests/check_symbols.sh, nm); the static x86-64 binary (-Dstatic=true) must be
#      statically linked and write the release binary's bytes (tests/check_static.sh);
#      a program built against the installed tree through pkg-config, linked shared and
#      static, must print jepa embed's embedding (tests/check_install.sh)
#   2. AddressSanitizer + UndefinedBehaviorSanitizer build, all suites (CUDA emulated only)
#   3. clang build with warnings as errors (compile check), all suites (CUDA emulated only)
#   4. aarch64 cross build, static, kernel and model suites under qemu-aarch64 (NEON)
#   5. GGUF byte-compatibility with ggml's own reader (the `gguf` Python package), when
#      a Python venv with it can be made (tests/gguf/README.md)
#   6. `jepa serve`'s API fuzzed by schemathesis (PyPI) from docs/openapi.yaml, against
#      the sanitizer build's binary (tests/server/run_schemathesis.sh); then the world routes
#      with a LeWM model, from the schema narrowed to its shapes
#   7. (run right after 1) the Python package: `pip install .` into a venv and its pytest suites
#      (tests/python), against the release binary
# --quick: stages 1 and 7 only. A stage this machine cannot run says so in one line and counts
# as skipped, never as passed or failed: the CUDA build without nvcc, the stages that install
# from PyPI (5, 6, 7) when PyPI is unreachable, 3 without clang, 4 without the cross tools.
# Ends with one line "N passed, N failed, N skipped" summing every meson run and stage.
# Build folders: build-test-* (reused between runs). Usage: bash tests/run_all.sh [--quick]
set -u
cd "$(dirname "$0")/.."
quick=0
[ "${1:-}" = "--quick" ] && quick=1

passed=0 failed=0 skipped=0
status=0

# run_suite NAME BUILD_DIR [meson setup args...]
run_suite() {
    local name=$1 dir=$2 t0=$SECONDS
    shift 2
    echo "=== $name ($dir)"
    local log=$dir/run_all
    if [ ! -f "$dir/build.ninja" ]; then
        mkdir -p "$dir"
        if ! meson setup "$dir" "$@" >"$dir/setup.log" 2>&1; then
            cat "$dir/setup.log"; echo "setup of $name FAILED"; failed=$((failed + 1)); status=1; return
        fi
    fi
    if ! ninja -C "$dir" >"$log.build.log" 2>&1; then
        tail -40 "$log.build.log"; echo "build of $name FAILED"; failed=$((failed + 1)); status=1; return
    fi
    meson test -C "$dir" --print-errorlogs --num-processes 2 >"$log.test.log" 2>&1
    local rc=$?
    grep -E '^ *[0-9]+/[0-9]+ ' "$log.test.log" | sed 's/^/  /'
    local ok fail skip to
    ok=$(sed -n 's/^Ok: *\([0-9]*\).*/\1/p' "$log.test.log" | tail -1)
    fail=$(sed -n 's/^Fail: *\([0-9]*\).*/\1/p' "$log.test.log" | tail -1)
    skip=$(sed -n 's/^Skipped: *\([0-9]*\).*/\1/p' "$log.test.log" | tail -1)
    to=$(sed -n 's/^Timeout: *\([0-9]*\).*/\1/p' "$log.test.log" | tail -1)
    passed=$((passed + ${ok:-0})); failed=$((failed + ${fail:-0} + ${to:-0})); skipped=$((skipped + ${skip:-0}))
    if [ $rc -ne 0 ]; then
        status=1
        [ -z "$fail" ] && failed=$((failed + 1))
        echo "--- failures of $name:"; grep -E 'FAIL|Error|error' "$log.test.log" | head -40
    fi
    echo "--- $name: $((SECONDS - t0)) s"
}

# skip WHAT: a stage this machine cannot run, in one line, counted as skipped
skip() {
    echo "=== $*"
    skipped=$((skipped + 1))
}

# An executable nvcc where meson looks for one (kernels/cuda/meson.build: PATH, then
# /usr/local/cuda/bin; bash's command -v also names a file without the x bit). With it the
# CUDA build is required (enabled: a broken nvcc fails the run, as in CI); without it the
# release build leaves CUDA out, and the emulated kernel tests still run.
nvcc_path=$(command -v nvcc)
if [ -x "${nvcc_path:-/nonexistent}" ] || [ -x /usr/local/cuda/bin/nvcc ]; then
    cuda=enabled
else
    cuda=disabled
    if command -v "${CXX:-c++}" >/dev/null || command -v g++ >/dev/null || command -v clang++ >/dev/null; then
        skip "no nvcc: the CUDA build is skipped (the SIMT-emulated CUDA tests still run)"
    else
        skip "no nvcc: the CUDA build is skipped (no C++ compiler either: so are the SIMT-emulated CUDA tests)"
    fi
fi
# a release folder kept from a run with the other answer follows this one
[ -f build-test-release/build.ninja ] &&
    meson configure build-test-release -Dcuda=$cuda >build-test-release/configure.log 2>&1

# PyPI, probed once: stages 5, 6 and 7 install from it. pip itself asks (so that a configured
# index, mirror or proxy counts), for one small file, 5 s per connection, no retries, 30 s in
# all: an unreachable index skips those stages instead of failing or hanging them.
pypi=""
if { [ -x .venv-py/bin/python ] || python3 -m venv .venv-py; } >/dev/null 2>&1; then
    probe=$(mktemp -d)
    timeout 30 .venv-py/bin/pip download -q --no-deps --no-cache-dir --timeout 5 --retries 0 \
        -d "$probe" pip >/dev/null 2>&1 || pypi="PyPI is unreachable (pip download pip failed)"
    rm -rf "$probe"
fi

run_suite "release (gcc)" build-test-release --buildtype=release -Dcuda=$cuda
echo "=== exported symbols of the installed libjepa.a (tests/check_symbols.sh)"
rm -rf build-test-release/install-root
if meson install -C build-test-release --destdir install-root >build-test-release/install.log 2>&1 &&
   lib=$(find build-test-release/install-root -name libjepa.a | head -1) && [ -n "$lib" ] &&
   bash tests/check_symbols.sh "$lib"; then
    passed=$((passed + 1))
else
    echo "symbol check FAILED"; failed=$((failed + 1)); status=1
fi
echo "=== the installed tree: a program built through pkg-config, shared and static (tests/check_install.sh)"
if sh tests/check_install.sh build-test-release tests/data/vjepa2_tiny/model.gguf; then
    passed=$((passed + 1))
else
    echo "install check FAILED"; failed=$((failed + 1)); status=1
fi
# The static binary (-Dstatic=true; configure leaves out what cannot link statically):
# built alone (no tests of its own), checked by tests/check_static.sh against the release
# binary: file(1) says statically linked, and it writes the same bytes.
echo "=== static x86-64 jepa (build-test-static, tests/check_static.sh)"
if { [ -f build-test-static/build.ninja ] ||
     meson setup build-test-static --buildtype=release -Dstatic=true >build-test-static.setup.log 2>&1; } &&
   ninja -C build-test-static cli/jepa >build-test-static/build.log 2>&1 &&
   bash tests/check_static.sh build-test-static/cli/jepa build-test-release/cli/jepa; then
    passed=$((passed + 1))
else
    [ -f build-test-static.setup.log ] && tail -20 build-test-static.setup.log
    [ -f build-test-static/build.log ] && tail -20 build-test-static/build.log
    echo "static build check FAILED"; failed=$((failed + 1)); status=1
fi
rm -f build-test-static.setup.log
# The Python package (python/, pyproject.toml): `pip install .` into a venv (meson-python
# builds the extension from this tree, build-test-pip kept between runs), then its pytest
# suites (tests/python): parity with the release binary, the converter, Ray Data.
if [ -n "$pypi" ]; then
    skip "the Python package (pip install . and pytest tests/python) is skipped: $pypi"
else
    echo "=== the Python package: pip install . and pytest tests/python"
    t0=$SECONDS
    pylog=build-test-pip.log
    if { [ -x .venv-py/bin/python ] || python3 -m venv .venv-py; } >"$pylog" 2>&1 &&
       .venv-py/bin/pip install -q numpy pytest gguf "ray[data]" pyarrow pillow >>"$pylog" 2>&1 &&
       .venv-py/bin/pip install -q . -Csetup-args=-Dcuda=disabled -Cbuild-dir=build-test-pip >>"$pylog" 2>&1; then
        (cd tests/python && JEPA_BIN=../../build-test-release/cli/jepa ../../.venv-py/bin/python -m pytest -q \
            -p no:cacheprovider -rs . 2>&1) >build-test-pytest.log
        rc=$?
        grep -E "passed|failed|SKIPPED|Error" build-test-pytest.log | tail -12 | sed 's/^/  /'
        p_ok=$(tail -1 build-test-pytest.log | grep -o '[0-9]* passed' | cut -d' ' -f1)
        p_fail=$(tail -1 build-test-pytest.log | grep -o '[0-9]* failed' | cut -d' ' -f1)
        p_skip=$(tail -1 build-test-pytest.log | grep -o '[0-9]* skipped' | cut -d' ' -f1)
        passed=$((passed + ${p_ok:-0})); failed=$((failed + ${p_fail:-0})); skipped=$((skipped + ${p_skip:-0}))
        if [ $rc -ne 0 ]; then
            tail -60 build-test-pytest.log; echo "pytest tests/python FAILED"; status=1
            [ -z "$p_fail" ] && failed=$((failed + 1))
        fi
    else
        tail -30 "$pylog"; echo "pip install . FAILED"; failed=$((failed + 1)); status=1
    fi
    echo "--- python: $((SECONDS - t0)) s"
fi
[ $quick = 1 ] || run_suite "asan+ubsan (gcc)" build-test-san --buildtype=debugoptimized \
    -Db_sanitize=address,undefined -Db_lundef=false -Dcuda=disabled
if [ $quick = 0 ] && ! command -v clang >/dev/null; then
    skip "no clang: the clang -Werror build is skipped"
elif [ $quick = 0 ]; then
    # the emulated AVX-512 and CUDA tests run in the gcc builds; here the kernels are
    # compiled by clang and tested natively
    CC=clang CXX=clang++ run_suite "clang -Werror" build-test-clang --buildtype=release -Dwerror=true \
        -Dcuda=disabled -Demulated_tests=false
fi
if [ $quick = 0 ] && ! { command -v aarch64-linux-gnu-gcc && command -v qemu-aarch64-static; } >/dev/null; then
    skip "no aarch64-linux-gnu-gcc or qemu-aarch64-static: the aarch64 cross build is skipped"
elif [ $quick = 0 ]; then
    # meson runs test executables through the cross file's exe_wrapper itself; the shell-
    # script tests (CLI) run the cross-built jepa through this variable.
    export MESON_EXE_WRAPPER="qemu-aarch64-static -L /usr/aarch64-linux-gnu"
    # -Dstatic=true: the CLI tests run the static aarch64 jepa (what embedded devices get)
    run_suite "aarch64 cross (qemu)" build-test-arm --cross-file cross/aarch64-linux-gnu.ini \
        --buildtype=release -Dstatic=true
    unset MESON_EXE_WRAPPER
    echo "=== static aarch64 jepa (tests/check_static.sh, under qemu without a sysroot)"
    if bash tests/check_static.sh build-test-arm/cli/jepa -- qemu-aarch64-static; then
        passed=$((passed + 1))
    else
        echo "static aarch64 check FAILED"; failed=$((failed + 1)); status=1
    fi
fi
if [ $quick = 0 ] && [ -n "$pypi" ]; then
    skip "GGUF compatibility with ggml's own reader (gguf-py) is skipped: $pypi"
elif [ $quick = 0 ]; then
    echo "=== GGUF compatibility with ggml's own reader (gguf-py, tests/gguf/README.md)"
    if { [ -x .venv-ci/bin/python ] || python3 -m venv .venv-ci; } >/dev/null 2>&1 &&
       .venv-ci/bin/pip install -q gguf numpy >/dev/null 2>&1 &&
       .venv-ci/bin/python tests/gguf/check_gguf_py.py --build build-test-release; then
        passed=$((passed + 1))
    else
        echo "gguf-py compatibility check FAILED"; failed=$((failed + 1)); status=1
    fi
fi
if [ $quick = 0 ] && [ -n "$pypi" ]; then
    skip "API fuzzing (schemathesis against jepa serve) is skipped: $pypi"
elif [ $quick = 0 ] && [ -x build-test-san/cli/jepa ] &&
   build-test-san/cli/jepa serve --help >/dev/null 2>&1; then
    # the server's API fuzzed from docs/openapi.yaml (schemathesis from PyPI), against the
    # ASan+UBSan binary so that a memory error on a generated request fails the run
    echo "=== API fuzzing: schemathesis against jepa serve (asan+ubsan, tests/server/run_schemathesis.sh)"
    if { [ -x .venv-ci/bin/python ] || python3 -m venv .venv-ci; } >/dev/null 2>&1 &&
       .venv-ci/bin/pip install -q schemathesis >/dev/null 2>&1 &&
       sh tests/server/run_schemathesis.sh build-test-san/cli/jepa tests/data/vjepa2_tiny/model.gguf \
           .venv-ci/bin/schemathesis build-test-san/schemathesis; then
        passed=$((passed + 1))
    else
        echo "schemathesis API fuzzing FAILED"; failed=$((failed + 1)); status=1
    fi
    # the world routes' success paths, with the LeWM fixture (64-wide embeddings, 10-d
    # actions) and the schema narrowed to its shapes (tests/server/world_schema.py)
    if [ -x .venv-ci/bin/schemathesis ] &&
       sh tests/server/run_schemathesis.sh build-test-san/cli/jepa tests/data/lewm_wm/model_a.gguf \
           .venv-ci/bin/schemathesis build-test-san/schemathesis-world 64 10; then
        passed=$((passed + 1))
    else
        echo "schemathesis API fuzzing of the world routes FAILED"; failed=$((failed + 1)); status=1
    fi
fi

echo "(all suites: $SECONDS s)"
# The closing line stands alone, in the plain "N passed, N failed, N skipped" form that CI
# reads as the run's test count.
echo "$passed passed, $failed failed, $skipped skipped"
exit $status
