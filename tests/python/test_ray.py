"""examples/ray_embed.py on a local Ray instance (2 CPUs): a folder of 50 PNG images, a
video and a broken file, embedded into Parquet; every row against `jepa embed` on the
same file (the CLI's many-input mode)."""
import os
import struct
import subprocess
import sys
import zlib

import numpy as np
import pytest

from conftest import ROOT, data, media

ray = pytest.importorskip("ray", reason="the Ray test needs ray[data] and pyarrow (pip install .[ray])")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("PIL", reason="ray.data.read_images decodes with Pillow")

V2 = data("vjepa2_tiny", "model.gguf")


def write_png(path, rgb):
    """An 8-bit RGB PNG (zlib, filter 0): lossless, so every decoder gives these pixels."""
    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[y].tobytes() for y in range(h))

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def test_ray_pipeline_matches_the_cli(tmp_path, cli):
    rng = np.random.default_rng(17)
    folder = tmp_path / "corpus"
    folder.mkdir()
    yy, xx = np.mgrid[0:1.0:96j, 0:1.0:128j]
    for k in range(50):
        h, w = [(96, 128), (64, 64), (80, 72)][k % 3]
        base = np.stack([np.sin(6 * yy * (1 + k % 5) + k), np.cos(5 * xx * (1 + k % 7)), yy * xx], -1)[:h, :w]
        img = np.clip(127.5 * (base + 1) + rng.normal(0, 12, (h, w, 3)), 0, 255).astype(np.uint8)
        write_png(folder / f"img_{k:02d}.png", img)
    os.symlink(media("video_601.mp4"), folder / "clip.mp4")
    (folder / "broken.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42 not a video")

    out = tmp_path / "parquet"
    env = dict(os.environ, RAY_DEDUP_LOGS="0", RAY_USAGE_STATS_ENABLED="0")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "ray_embed.py"), V2, str(folder), str(out),
                        "--actors", "2", "--num-cpus", "2", "--batch-size", "8"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    print(r.stdout.strip().splitlines()[-1])

    import ray.data  # noqa: F401  (registers Ray's tensor extension type for the Parquet columns)
    table = pq.read_table(str(out)).to_pydict()
    rows = {os.path.basename(p): (np.asarray(e, np.float32).reshape(-1), err)
            for p, e, err in zip(table["path"], table["embedding"], table["error"])}
    assert len(rows) == 52, sorted(rows)
    assert rows["broken.mp4"][1], "the broken file's row has no error"
    assert np.isnan(rows["broken.mp4"][0]).all()

    ref_dir = tmp_path / "cli"
    try:
        cli("embed", "-q", "-t", "2", "-m", V2, "--pool", "mean", "--out-dir", str(ref_dir), str(folder))
    except AssertionError:
        pass   # the broken file makes the many-input run exit 1; the others are written
    worst_cos, worst_rel, same = 1.0, 0.0, 0
    for name, (e, err) in sorted(rows.items()):
        if name == "broken.mp4":
            continue
        assert err == "", (name, err)
        ref = np.load(ref_dir / f"{name}.npy").reshape(-1).astype(np.float64)
        e = e.astype(np.float64)
        cos = float(e @ ref / (np.linalg.norm(e) * np.linalg.norm(ref)))
        rel = float(np.abs(e - ref).max() / np.abs(ref).max())
        worst_cos, worst_rel = min(worst_cos, cos), max(worst_rel, rel)
        same += bool(np.array_equal(e, ref))   # float64 copies of the float32 rows: equal iff the bits are
    print(f"51 rows against the CLI: {same} bit-identical, worst cosine {worst_cos:.9f}, worst rel {worst_rel:.2e}")
    # batched forward passes agree with one-at-a-time ones within test_batch's bar
    assert worst_cos >= 0.9999999 and worst_rel <= 1e-5


def test_embedder_prepack_gives_the_same_rows():
    """Embedder(prepack=True) keeps the actor's weights packed: the same embeddings, bit for bit."""
    from jepa_c.ray import Embedder
    rng = np.random.default_rng(5)
    batch = {"image": rng.integers(0, 256, (8, 72, 80, 3), dtype=np.uint8)}   # 8 x 16 tokens: 128 rows
    plain, packed = Embedder(V2, threads=2), Embedder(V2, threads=2, prepack=True)
    a, b = plain(batch), packed(batch)
    assert packed.model.prepacked_bytes > 0 and plain.model.prepacked_bytes == 0
    assert a["embedding"].shape == (8, 128) and np.array_equal(a["embedding"], b["embedding"])
