"""jepa_c.hub — a Hugging Face checkpoint repository (config.json and safetensors, no GGUF)
pulled and converted into the cache: what jepa_c.pull does for such a repository, and what
`jepa pull REPO` runs (`python3 -m jepa_c.hub REPO [--type T]`, printing the GGUF's path).

The files come through the same downloader as a GGUF (common/hub_fetch.c): the safetensors
checked by the hub's sha256, the small JSON files (no sha256: not stored with LFS) by the
size the hub announces, at most 4 MiB each. The GGUF is CACHE/hub/OWNER/NAME/NAME-TYPE.gguf,
written by jepa_c.convert (in a private folder beside it, renamed into place); once there
it is returned without asking the hub for anything but the file list. docs/pull.md."""
import json
import os
import sys
from typing import Optional

from . import _jepa
from .convert import ConvertError, convert

TYPES = ("f32", "f16", "bf16")
_PROCESSORS = ("video_preprocessor_config.json", "preprocessor_config.json")
_INDEX = "model.safetensors.index.json"
_INDEX_MAX = 4 << 20


def pull_checkpoint(repo: str, type: Optional[str] = None, *, endpoint: Optional[str] = None,
                    retries: int = -1, stall_timeout: int = 0, progress: bool = False) -> str:
    """Convert the checkpoint of repo ("OWNER/NAME") into the cache as a GGUF of type (f32,
    f16 or bf16; default f16) and return its path. Raises ValueError for a bad name or
    type, jepa_c.Error for a download that failed, convert.ConvertError for a checkpoint
    the converter refuses."""
    ftype = type or "f16"
    if ftype not in TYPES:
        raise ValueError(f"{repo}: a checkpoint converts to f32, f16 or bf16, not {ftype!r} "
                         "(quantize the f16 GGUF with `jepa quantize`)")
    folder, listing = _jepa.hub_list(repo, endpoint, retries, stall_timeout)
    names = set(listing.split("\n")) if listing else set()
    out = os.path.join(folder, repo.split("/")[1] + "-" + ftype + ".gguf")
    if os.path.isfile(out):
        return out

    def get(name: str, small: bool) -> str:
        return _jepa.pull(repo + ":" + name, None, endpoint, retries, stall_timeout, progress, small)

    get("config.json", True)
    for p in _PROCESSORS:
        if p in names:
            get(p, True)
            break
    if "model.safetensors" in names:
        get("model.safetensors", False)
    else:
        index = get(_INDEX, True)
        with open(index, "rb") as f:
            text = f.read(_INDEX_MAX + 1)
        try:
            wm = json.loads(text).get("weight_map") if len(text) <= _INDEX_MAX else None
        except (ValueError, AttributeError):
            wm = None
        if not isinstance(wm, dict) or not all(isinstance(v, str) for v in wm.values()):
            raise ConvertError(f"{repo}: {_INDEX} has no weight_map of tensor names to shard files")
        for shard in sorted(set(wm.values())):
            if os.path.basename(shard) != shard or shard not in names:
                raise ConvertError(f"{repo}: {_INDEX} names a shard {shard!r} the repository does not hold")
            get(shard, False)
    convert(folder, out, ftype)
    return out


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="python -m jepa_c.hub",
                                 description="Pull a Hugging Face checkpoint repository and convert it into "
                                             "the cache; print the GGUF's path (docs/pull.md).")
    ap.add_argument("repo", help="OWNER/NAME")
    ap.add_argument("--type", default="f16", choices=TYPES)
    ap.add_argument("--retries", type=int, default=-1)
    ap.add_argument("--stall-timeout", type=int, default=0)
    ap.add_argument("-q", "--quiet", action="store_true")
    a = ap.parse_args(argv)
    try:
        path = pull_checkpoint(a.repo, a.type, retries=a.retries, stall_timeout=a.stall_timeout,
                               progress=not a.quiet and sys.stderr.isatty())
    except ValueError as e:
        print(f"jepa pull: {e}", file=sys.stderr)
        return 2
    except (_jepa.Error, ConvertError, OSError) as e:
        print(f"jepa pull: {e}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
