"""Inputs are items (issue 45): every image path, PIL image, uint8 image row or float
batch row gives one output row, equal to what that item alone gives; PIL images of any mode
are converted as Hugging Face's convert_to_rgb converts them; as_clip=True says the frames of
one clip."""
import numpy as np
import pytest

import jepa_c as jepa
from conftest import data, media, parity

Image = pytest.importorskip("PIL.Image", reason="PIL (pip install pillow) is missing: the PIL image tests skip")

V2 = data("vjepa2_tiny", "model.gguf")
VIT = data("hf_vit", "model.gguf")
# images of different sizes and formats (PNG, baseline and progressive JPEG, WebP with alpha)
FILES = ["e2e.png", "jpeg/q90_420.jpg", "jpeg/gray_progressive.jpg", "webp/lossless_alpha.webp", "e2e.png"]


@pytest.fixture(scope="module", params=[V2, VIT], ids=["vjepa2", "hf_vit"])
def model(request):
    return jepa.Model(request.param, threads=2)


def hf_convert_to_rgb(img):
    """transformers.image_transforms.convert_to_rgb (v5), written out here as the reference:
    transparency composited over opaque white, every other mode PIL's convert("RGB")."""
    if "A" in img.getbands() or img.info.get("transparency") is not None:
        img = img.convert("RGBA")
        bg = Image.new("RGBA", img.size, (255, 255, 255, 255))
        return np.array(Image.alpha_composite(bg, img).convert("RGB"))
    return np.array(img.convert("RGB"))


# ---- lists of paths --------------------------------------------------------------------------

def test_a_list_of_paths_gives_each_path_alone_bit_for_bit(model):
    paths = [media(f) for f in FILES]
    alone = [model.embed(p) for p in paths]
    rows = model.embed(paths)
    assert rows.shape == (len(paths),) + alone[0].shape
    for k in range(len(paths)):
        assert np.array_equal(rows[k], alone[k]), FILES[k]
    pooled = model.embed(paths, pool="mean")
    assert pooled.shape == (len(paths), model.info.embed_dim)
    assert all(np.array_equal(pooled[k], model.embed(p, pool="mean")) for k, p in enumerate(paths))
    assert model.embed(paths[:1]).shape == (1,) + alone[0].shape   # a list of one: still a row axis


def test_items_of_one_shape_share_a_forward_pass(model):
    """batch=3: the five images go in passes of 3 and 2, each one forward over the stacked
    preprocessed images (the same bits as that stack given as a float batch); within
    rounding of one at a time (a pass of several may sum in another order)."""
    paths = [media(f) for f in FILES]
    frames = np.stack([_read(model, p) for p in paths])
    got = model.embed(paths, pool="mean", batch=3)
    ref = np.concatenate([model.embed(frames[:3], pool="mean"), model.embed(frames[3:], pool="mean")])
    assert np.array_equal(got, ref)
    parity(got, model.embed(paths, pool="mean"), cos_bar=0.99999, rel_bar=1e-5)


def _read(model, path):
    """One image file's preprocessed clip [3, 1, H, W], read by its own reader."""
    c = model._clips(path, None, 0, 0, 0, False, 0, True, 0, "fused")
    x = np.empty((3, c.T, c.H, c.W), np.float32)
    c.reader.read_into(x)
    return x


def test_videos_and_images_in_one_list():
    m = jepa.Model(V2, threads=2)
    v, a = media("video_601.mp4"), media("e2e.png")
    rows = m.embed([v, a, v], pool="mean")
    assert rows.shape == (3, 128)
    assert np.array_equal(rows[0], m.embed(v, pool="mean")) and np.array_equal(rows[1], m.embed(a, pool="mean"))
    assert np.array_equal(m.embed([v, v], frames_per_clip=4, num_clips=2, pool="mean"),
                          np.stack([m.embed(v, frames_per_clip=4, num_clips=2, pool="mean")] * 2))
    with pytest.raises(jepa.Error, match="different shapes"):     # token maps of a clip and of an image
        m.embed([v, a])
    with pytest.raises(jepa.Error, match="sample a video"):
        m.embed([v, a], num_clips=2)


def test_as_clip_makes_one_clip():
    m = jepa.Model(V2, threads=2)
    a, b = media("e2e.png"), media("jpeg/q90_420.jpg")
    clip = np.concatenate([_read(m, a), _read(m, b)], axis=1)
    assert np.array_equal(m.embed([a, b], as_clip=True), m.embed(clip))
    with pytest.raises(jepa.Error, match="not one"):
        m.embed([a, media("video_601.mp4")], as_clip=True)


# ---- PIL images --------------------------------------------------------------------------------

def _pil_images():
    rng = np.random.default_rng(45)
    rgb = rng.integers(0, 256, (37, 53, 3), dtype=np.uint8)
    alpha = rng.integers(0, 256, (37, 53), dtype=np.uint8)
    base = Image.fromarray(rgb)
    rgba = Image.fromarray(np.dstack([rgb, alpha]))
    p_trns = base.convert("P")
    p_trns.info["transparency"] = 3
    return {
        "RGBA": rgba, "LA": rgba.convert("LA"), "L": base.convert("L"), "P": base.convert("P"),
        "P+transparency": p_trns, "PA": rgba.convert("PA"), "CMYK": base.convert("CMYK"),
        "I;16": Image.fromarray(rng.integers(0, 65536, (37, 53), dtype=np.uint16)).convert("I;16"),
        "1": base.convert("1"),
    }


@pytest.mark.parametrize("mode", list(_pil_images()))
def test_pil_images_of_every_mode_as_convert_to_rgb(model, mode):
    img = _pil_images()[mode]
    ref = hf_convert_to_rgb(img)
    assert ref.dtype == np.uint8 and ref.shape == (37, 53, 3)
    assert np.array_equal(model.embed(img), model.embed(ref))
    assert np.array_equal(model.embed([img, img], pool="mean"), np.stack([model.embed(ref, pool="mean")] * 2))


def test_transparency_goes_over_white(model):
    clear = Image.fromarray(np.zeros((40, 40, 4), np.uint8))      # black, fully transparent
    assert np.array_equal(model.embed(clear), model.embed(np.full((40, 40, 3), 255, np.uint8)))


def test_a_pil_image_of_a_file_equals_its_path(model):
    path = media("e2e.png")   # PNG: PIL and jepa decode the same pixels
    with Image.open(path) as img:
        assert np.array_equal(model.embed(img), model.embed(path))


# ---- arrays ------------------------------------------------------------------------------------

def test_uint8_nhwc_is_n_images(model):
    rng = np.random.default_rng(7)
    imgs = rng.integers(0, 256, (3, 45, 61, 3), dtype=np.uint8)
    rows = model.embed(imgs)
    assert rows.shape[0] == 3
    for k in range(3):
        assert np.array_equal(rows[k], model.embed(imgs[k]))
    assert model.embed(imgs[:1]).shape == rows[:1].shape
    if model.path == V2:                                           # a video model: one clip of 2 frames
        assert np.array_equal(model.embed(imgs[:2], as_clip=True), model.embed(model.preprocess(imgs[:2])))


def test_bchw_is_hf_pixel_values(model):
    """layout="BCHW": B preprocessed images, as Hugging Face's pixel_values; one forward of
    B (the same bits as the [B, C, 1, H, W] batch), each row within rounding of its image
    alone, and the same bits with batch=1."""
    paths = [media(f) for f in FILES[:3]]
    pv = np.stack([_read(model, p)[:, 0] for p in paths])         # [3, 3, H, W]
    got = model.embed(pv, layout="BCHW")
    assert got.shape[0] == 3
    assert np.array_equal(got, model.embed(pv[:, :, None], layout="BCTHW"))
    one = model.embed(pv, layout="BCHW", batch=1)
    for k, p in enumerate(paths):
        assert np.array_equal(one[k], model.embed(p))
    parity(got, one, cos_bar=0.99999, rel_bar=1e-5)


def test_classify_gives_one_classification_per_item():
    m = jepa.Model(V2, threads=2)
    paths = [media(f) for f in FILES[:3]]
    got = m.classify(paths, top_k=3)
    assert isinstance(got, list) and len(got) == 3
    for c, p in zip(got, paths):
        alone = m.classify(p, top_k=3)
        assert np.array_equal(c.logits, alone.logits) and c.top == alone.top
    x = np.load(data("vjepa2_tiny", "input.npy"))
    batch = m.classify(np.stack([x, -x]), batch=1)                 # a float batch: one per item
    assert [np.array_equal(b.logits, m.classify(y).logits) for b, y in zip(batch, (x, -x))] == [True, True]


@pytest.mark.parametrize("call, message", [
    (lambda m: m.embed([]), "empty list"),
    (lambda m: m.embed([media("e2e.png"), 3]), "item 1"),
    (lambda m: m.embed([media("e2e.png"), "/nonexistent.png"]), "no such file"),
    (lambda m: m.embed([media("e2e.png")], layout="BCHW"), "layout"),
    (lambda m: m.embed(np.zeros((2, 3, 64, 64), np.float32), as_clip=True), "as_clip"),
    (lambda m: m.embed([Image.new("RGB", (64, 64)), Image.new("RGB", (32, 64))], as_clip=True), "of one size"),
])
def test_bad_items_raise(call, message):
    m = jepa.Model(V2, threads=1)
    with pytest.raises(jepa.Error) as e:
        call(m)
    assert message in str(e.value) and "\n" not in str(e.value)
