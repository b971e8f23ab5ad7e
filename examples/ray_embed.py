"""Embed a folder of images and videos with jepa.c on Ray Data and write Parquet.

    python examples/ray_embed.py MODEL.gguf FOLDER OUT_DIR [--actors 2] [--batch-size 16]
                                 [--pool mean] [--address auto] [--num-cpus 2]

Images (PNG, JPEG, WebP) are read and decoded by Ray (ray.data.read_images, RGB) and
preprocessed and encoded by jepa.c in the actors; videos (any other file) are decoded by
jepa.c itself (one row per clip; --num-clips for several). Each actor loads the model
once and runs with one engine thread per CPU it holds. The Parquet rows are (path,
embedding, error). Without --address a local Ray instance starts with --num-cpus CPUs;
with --address auto (or ray://HOST:10001) the same script runs on a cluster (docs/python.md).
"""
import argparse
import os
import sys
import time

import ray

import jepa_c as jepa
import jepa_c.ray

IMAGE_EXT = (".png", ".jpg", ".jpeg", ".webp")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("folder")
    ap.add_argument("out")
    ap.add_argument("--actors", type=int, default=2, help="Embedder actors (default 2)")
    ap.add_argument("--cpus-per-actor", type=int, default=1, help="CPUs (and engine threads) per actor")
    ap.add_argument("--batch-size", type=int, default=16, help="rows per Ray batch")
    ap.add_argument("--pool", default="mean")
    ap.add_argument("--num-clips", type=int, default=0, help="clips per video (default 1)")
    ap.add_argument("--address", default=None, help="a running Ray cluster (auto, ray://...)")
    ap.add_argument("--num-cpus", type=int, default=2, help="CPUs of the local Ray instance")
    a = ap.parse_args(argv)

    files = sorted(os.path.join(r, f) for r, _, fs in os.walk(a.folder) for f in fs)
    images = [f for f in files if f.lower().endswith(IMAGE_EXT)]
    videos = [f for f in files if not f.lower().endswith(IMAGE_EXT)]
    if not files:
        sys.exit(f"{a.folder}: no files")
    if a.address:
        ray.init(address=a.address)
    else:
        ray.init(num_cpus=a.num_cpus, include_dashboard=False, log_to_driver=False)
    # The actors hold the CPUs (one engine thread per CPU); the read and write tasks are
    # light next to the encoder and get a tenth of a CPU each, so that 2 actors on 2 CPUs
    # still leave room for them (with whole CPUs each the pipeline would wait forever).
    light = {"num_cpus": 0.1}
    kw = dict(fn_constructor_kwargs={"model": os.path.abspath(a.model), "pool": a.pool,
                                     "threads": a.cpus_per_actor},
              batch_size=a.batch_size, compute=ray.data.ActorPoolStrategy(size=a.actors),
              num_cpus=a.cpus_per_actor * 0.9)
    t0 = time.perf_counter()
    if images:   # decoded by Ray (Pillow), preprocessed and encoded by jepa.c
        ds = ray.data.read_images(images, mode="RGB", include_paths=True, ray_remote_args=light)
        ds.map_batches(jepa.ray.Embedder, **kw).write_parquet(a.out, ray_remote_args=light)
    if videos:   # decoded by jepa.c in the actors; appended to the same folder
        vkw = dict(kw)
        vkw["fn_constructor_kwargs"] = dict(kw["fn_constructor_kwargs"], column="path",
                                            **({"num_clips": a.num_clips} if a.num_clips else {}))
        ds = ray.data.from_items([{"path": v} for v in videos])
        ds.map_batches(jepa.ray.Embedder, **vkw).write_parquet(a.out, ray_remote_args=light)
    dt = time.perf_counter() - t0
    n = len(files)
    print(f"embedded {n} files ({len(images)} images, {len(videos)} videos) in {dt:.2f} s: "
          f"{n / dt:.1f} files/s with {a.actors} actor(s) x {a.cpus_per_actor} CPU -> {a.out}")
    ray.shutdown()


if __name__ == "__main__":
    main()
