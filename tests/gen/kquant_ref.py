"""kquant_ref.py - ggml's reference K-quant quantizers (quantize_row_q4_K_ref, q5_K, q6_K:
what ggml's quantizer writes without an importance matrix) in numpy, float32 throughout.

gguf-py cannot make these types, so this is the second implementation jepa.c's writer
(runtime/quant.c) is tested against (tests/gen/gen_quant.py writes its output into the
fixture). Written from the algorithm, not from the C: element-wise steps run on float32
arrays (numpy rounds each element's operation to float32, as C does), and every sum is a
sequential float32 accumulation (np.add.accumulate; np.sum would sum pairwise), in the
reference's order. Operations are never fused (the C is built with -ffp-contract=off).
"""
import numpy as np

F = np.float32
QK_K = 256


def f32(v):
    return np.asarray(v, dtype=F)


def seqsum(a):
    """0 + a[0] + a[1] + ... in float32, left to right."""
    a = f32(a)
    return np.add.accumulate(a, dtype=F)[-1] if a.size else F(0)


def nearest(v):
    """ggml's nearest_int: v + 1.5 * 2^23, the low 23 bits minus 2^22 (ties to even)."""
    s = (f32(v) + F(12582912.0)).astype(F)
    u = np.atleast_1d(s).view(np.uint32).astype(np.int64)
    r = (u & 0x7FFFFF) - 0x400000
    return r if np.ndim(v) else int(r[0])


def f16_round(v):
    return F(np.float16(F(v)))


def fit_affine(x, w, top, rmin, rdelta, nstep):
    """Codes in [0, top], scale and offset with x ~ scale * L - offset (make_qkx2_quants)."""
    x, w = f32(x), f32(w)
    mn, mx = F(x.min()), F(x.max())
    sum_w = seqsum(w)
    sum_x = seqsum(w * x)
    if mn > 0:
        mn = F(0)
    if mx == mn:
        return F(0), -mn, np.zeros(x.size, np.int64)
    iscale = F(F(top) / F(mx - mn))
    scale = F(F(1) / iscale)
    L = np.clip(nearest((iscale * (x - mn)).astype(F)), 0, top)
    diff = ((scale * L.astype(F)).astype(F) + mn).astype(F) - x
    best = seqsum(w * (diff * diff).astype(F))
    for s in range(nstep + 1):
        # mn is the best trial's offset so far, as in ggml (not the data's minimum)
        iscale = F(F(F(rmin + F(F(rdelta) * F(s))) + F(top)) / F(mx - mn))
        t = np.clip(nearest((iscale * (x - mn)).astype(F)), 0, top)
        tl = t.astype(F)
        wl = (w * tl).astype(F)
        sum_l = seqsum(wl)
        sum_l2 = seqsum(wl * tl)
        sum_xl = seqsum(wl * x)
        D = F(F(sum_w * sum_l2) - F(sum_l * sum_l))
        if not D > 0:
            continue
        this_scale = F(F(F(sum_w * sum_xl) - F(sum_x * sum_l)) / D)
        this_min = F(F(F(sum_l2 * sum_x) - F(sum_l * sum_xl)) / D)
        if this_min > 0:
            this_min = F(0)
            this_scale = F(sum_xl / sum_l2)
        diff = ((this_scale * tl).astype(F) + this_min).astype(F) - x
        err = seqsum(w * (diff * diff).astype(F))
        if err < best:
            L, best, scale, mn = t, err, this_scale, this_min
    return scale, F(-mn), L


def fit_symmetric(x, nmax):
    """Codes l + nmax, l in [-nmax, nmax), and a scale with x ~ scale * l (make_qx_quants,
    error weights x^2)."""
    x = f32(x)
    ax = np.abs(x)
    i = int(np.argmax(ax))   # the first of the largest magnitude
    amax, mx = F(ax[i]), F(x[i])
    if amax < F(1e-15):
        return F(0), np.zeros(x.size, np.int64)
    w = (x * x).astype(F)

    def trial(iscale):
        l = np.clip(nearest((iscale * x).astype(F)), -nmax, nmax - 1)
        lf = l.astype(F)
        sumlx = seqsum(((w * x).astype(F) * lf).astype(F))
        suml2 = seqsum(((w * lf).astype(F) * lf).astype(F))
        return l, sumlx, suml2

    l, sumlx, suml2 = trial(F(F(-nmax) / mx))
    scale = F(sumlx / suml2) if suml2 != 0 else F(0)
    best = F(scale * sumlx)
    L = l + nmax
    for s in range(-9, 10):
        if s == 0:
            continue
        iscale = F(F(-F(F(nmax) + F(F(0.1) * F(s)))) / mx)
        l, sumlx, suml2 = trial(iscale)
        if suml2 > 0 and F(sumlx * sumlx) > F(best * suml2):
            L = l + nmax
            scale = F(sumlx / suml2)
            best = F(scale * sumlx)
    return scale, L


def scale_min_k4(sc, s):
    if s < 4:
        return sc[s] & 63, sc[s + 4] & 63
    return (sc[s + 4] & 15) | ((sc[s - 4] >> 6) << 4), (sc[s + 4] >> 4) | ((sc[s] >> 6) << 4)


def block_q45k(x, bits5):
    top = 31 if bits5 else 15
    L = np.zeros(QK_K, np.int64)
    scales, mins = [], []
    for j in range(8):
        xs = f32(x[32 * j:32 * j + 32])
        av = F(np.sqrt(F(seqsum((xs * xs).astype(F)) / F(32))))
        w = (av + np.abs(xs)).astype(F)
        if bits5:
            sc_, mn_, Lj = fit_affine(xs, w, top, -0.5, 0.1, 15)
        else:
            sc_, mn_, Lj = fit_affine(xs, w, top, -1.0, 0.1, 20)
        scales.append(sc_), mins.append(mn_)
        L[32 * j:32 * j + 32] = Lj
    max_scale, max_min = F(0), F(0)
    for j in range(8):
        if scales[j] > max_scale:
            max_scale = scales[j]
        if mins[j] > max_min:
            max_min = mins[j]
    inv_s = F(F(63) / max_scale) if max_scale > 0 else F(0)
    inv_m = F(F(63) / max_min) if max_min > 0 else F(0)
    sc = [0] * 12
    for j in range(8):
        ls = min(63, nearest(F(inv_s * scales[j])) & 0xFF)
        lm = min(63, nearest(F(inv_m * mins[j])) & 0xFF)
        if j < 4:
            sc[j], sc[j + 4] = ls, lm
        else:
            sc[j + 4] = (ls & 15) | ((lm & 15) << 4)
            sc[j - 4] |= (ls >> 4) << 6
            sc[j] |= (lm >> 4) << 6
    d, dmin = f16_round(max_scale / F(63)), f16_round(max_min / F(63))
    for j in range(8):
        s6, m6 = scale_min_k4(sc, j)
        ds = F(d * F(s6))
        if ds == 0:
            continue
        dm = F(dmin * F(m6))
        xs = f32(x[32 * j:32 * j + 32])
        L[32 * j:32 * j + 32] = np.clip(nearest(((xs + dm).astype(F) / ds).astype(F)), 0, top)
    out = bytearray(np.float16(d).tobytes() + np.float16(dmin).tobytes() + bytes(sc))
    qh = [0] * 32
    qs = [0] * 128
    for p in range(4):
        for l in range(32):
            lo, hi = int(L[64 * p + l]), int(L[64 * p + 32 + l])
            qs[32 * p + l] = (lo & 15) | ((hi & 15) << 4)
            qh[l] |= ((lo >> 4) << (2 * p)) | ((hi >> 4) << (2 * p + 1))
    if bits5:
        out += bytes(qh)
    out += bytes(qs)
    return bytes(out)


def block_q6k(x):
    L = np.zeros(QK_K, np.int64)
    scales = []
    max_scale, max_abs = F(0), F(0)
    for s in range(16):
        sc_, Ls = fit_symmetric(x[16 * s:16 * s + 16], 32)
        scales.append(sc_)
        L[16 * s:16 * s + 16] = Ls
        if abs(sc_) > max_abs:
            max_abs, max_scale = F(abs(sc_)), sc_
    if max_abs < F(1e-15):
        return bytes(210)
    iscale = F(F(-128) / max_scale)
    d = f16_round(F(1) / iscale)
    sc = [min(127, nearest(F(iscale * scales[s]))) for s in range(16)]
    for s in range(16):
        ds = F(d * F(sc[s]))
        if ds == 0:
            continue
        xs = f32(x[16 * s:16 * s + 16])
        L[16 * s:16 * s + 16] = np.clip(nearest((xs / ds).astype(F)), -32, 31) + 32
    ql, qh = [0] * 128, [0] * 64
    for h in range(2):
        for l in range(32):
            q = [int(L[128 * h + 32 * g + l]) for g in range(4)]
            ql[64 * h + l] = (q[0] & 15) | ((q[2] & 15) << 4)
            ql[64 * h + 32 + l] = (q[1] & 15) | ((q[3] & 15) << 4)
            qh[32 * h + l] = (q[0] >> 4) | ((q[1] >> 4) << 2) | ((q[2] >> 4) << 4) | ((q[3] >> 4) << 6)
    return bytes(ql) + bytes(qh) + np.array(sc, np.int8).tobytes() + np.float16(d).tobytes()


def quantize_k(rows, kind):
    """rows: float32 [R, K], K % 256 == 0; kind 'q4_k' | 'q5_k' | 'q6_k' -> uint8 [R, bytes]."""
    rows = f32(rows)
    out = []
    for r in rows:
        blocks = []
        for b in range(r.size // QK_K):
            x = r[QK_K * b:QK_K * (b + 1)]
            blocks.append(block_q6k(x) if kind == "q6_k" else block_q45k(x, kind == "q5_k"))
        out.append(np.frombuffer(b"".join(blocks), np.uint8))
    return np.stack(out)
