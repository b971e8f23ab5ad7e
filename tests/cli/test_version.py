#!/usr/bin/env python3
"""`jepa --version` (and -V) against meson's own record of the build it came from.

    test_version.py JEPA BUILD_DIR SOURCE_DIR

The expected facts are read from files meson writes for every build, not from the generated
buildinfo.c: the project's version (meson-info/intro-projectinfo.json), the kernel ISA
libraries and the CUDA library among the targets (intro-targets.json), the -DJEPA_HAVE_*
flags each source file is compiled with and the download's source file
(compile_commands.json), the static option (intro-buildoptions.json), and the commit from
git itself (`git describe --always --dirty --abbrev=12` where the source is a git tree).
MESON_EXE_WRAPPER runs a cross-built JEPA.
"""
import json
import os
import subprocess
import sys

jepa, build, src = sys.argv[1:4]
runner = os.environ.get("MESON_EXE_WRAPPER", "").split()
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL", what)


def info(name):
    with open(os.path.join(build, "meson-info", name)) as f:
        return json.load(f)


out = subprocess.run(runner + [jepa, "--version"], capture_output=True, text=True, timeout=60)
short = subprocess.run(runner + [jepa, "-V"], capture_output=True, text=True, timeout=60)
check(out.returncode == 0 and out.stderr == "", "--version: exit 0, nothing on stderr (%d, %r)" %
      (out.returncode, out.stderr))
check(short.stdout == out.stdout, "-V prints what --version prints")
lines = out.stdout.splitlines()
version = info("intro-projectinfo.json")["version"]
check(lines[:1] == ["jepa.c " + version], "first line 'jepa.c %s', not %r" % (version, lines[:1]))
facts = {}
for line in lines[1:]:
    key, sep, value = line.partition(": ")
    check(sep and key and key not in facts, "a 'key: value' line, each key once: %r" % line)
    facts[key] = value
keys = ["commit", "kernels", "cuda", "openmp", "openblas", "images", "video", "server", "pull", "static",
        "compiler"]
check(list(facts) == keys, "the facts in order %s, not %s" % (keys, list(facts)))

# the commit: git's own answer about the source tree
if os.path.exists(os.path.join(src, ".git")):
    git = subprocess.run(["git", "-C", src, "describe", "--always", "--dirty", "--abbrev=12"],
                         capture_output=True, text=True)
    if git.returncode == 0:
        # the commit itself must match; -dirty only says whether the tree had changes when
        # the build ran, which edits since then can change
        clean = [c.removesuffix("-dirty") for c in (facts.get("commit", ""), git.stdout.strip())]
        check(clean[0] == clean[1], "commit %r, git describe says %r" % (facts.get("commit"), git.stdout.strip()))
    else:
        print("git describe failed here (%s): the commit is not compared" % git.stderr.strip())
else:
    check(facts.get("commit") not in (None, ""), "a commit line outside git (a tarball's, or unknown)")

# the kernels: the ISA libraries kernels/meson.build defines, and the scalar reference
targets = info("intro-targets.json")
isa = ["scalar"] + [t["name"][3:] for t in targets if t["name"].startswith("jk_") and
                    t["defined_in"].replace(os.sep, "/").endswith("/kernels/meson.build")]
check(facts.get("kernels", "").split() == isa, "kernels %r, the build's ISA libraries %r" %
      (facts.get("kernels"), isa))
cuda = any(t["name"] == "jepa_cuda" for t in targets)
check(facts.get("cuda") == ("yes" if cuda else "no"), "cuda %r, jepa_cuda target %s" % (facts.get("cuda"), cuda))

# the features each source file is compiled with
with open(os.path.join(build, "compile_commands.json")) as f:
    commands = json.load(f)


def flags_of(path):
    for c in commands:
        if c["file"].replace(os.sep, "/").endswith(path):
            return c["command"]
    return None


image_c = flags_of("input/image.c") or ""
check(image_c != "", "input/image.c is compiled")
formats = []
for flag, names in (("STB", ["png", "bmp", "tga"]), ("JPEG", ["jpeg"]), ("WEBP", ["webp"]), ("GIF", ["gif"]),
                    ("TIFF", ["tiff"])):
    if "-DJEPA_HAVE_%s=1" % flag in image_c:
        formats += names
check(facts.get("images") == (" ".join(formats) or "none"), "images %r, input/image.c's flags say %r" %
      (facts.get("images"), formats))
yes = {True: "yes", False: "no"}
check(facts.get("video") == yes["-DJEPA_HAVE_VIDEO=1" in image_c], "video %r against input/image.c's flags" %
      facts.get("video"))
serve_c = flags_of("cli/cmd_serve.c") or ""
check(facts.get("server") == yes["-DJEPA_HAVE_SERVER=1" in serve_c], "server %r against cli/cmd_serve.c's flags" %
      facts.get("server"))
check(facts.get("pull") == yes[flags_of("common/hub_fetch.c") is not None],
      "pull %r, common/hub_fetch.c compiled: %s" % (facts.get("pull"), flags_of("common/hub_fetch.c") is not None))
models_c = flags_of("models/api.c") or ""
check(facts.get("openmp") == yes["-DJEPA_HAVE_OPENMP=1" in models_c], "openmp %r against the flags" %
      facts.get("openmp"))
check(facts.get("openblas") == yes["-DJEPA_HAVE_OPENBLAS=1" in models_c], "openblas %r against the flags" %
      facts.get("openblas"))
static = [o["value"] for o in info("intro-buildoptions.json") if o["name"] == "static"]
check(facts.get("static") == yes[static == [True]], "static %r, the option is %r" % (facts.get("static"), static))
check(facts.get("compiler", "").split()[:1] in (["gcc"], ["clang"]), "compiler %r" % facts.get("compiler"))

# what the build says it lacks, it refuses in one line
if facts.get("server") == "no":
    r = subprocess.run(runner + [jepa, "serve", "-m", "none.gguf"], capture_output=True, text=True, timeout=60)
    check(r.returncode != 0 and len(r.stderr.splitlines()) == 1, "server: no, and jepa serve refuses (%d, %r)" %
          (r.returncode, r.stderr))

print("jepa --version: %d facts checked against the build (%s)" % (len(facts), ", ".join(
    "%s=%s" % kv for kv in facts.items() if kv[0] not in ("compiler",))))
sys.exit(1 if failures else 0)
