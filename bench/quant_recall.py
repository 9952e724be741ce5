#!/usr/bin/env python3
#   .venv/bin/python bench/quant_recall.py .cfs/index.cache QUERIES
# Recall of quantised scans (codes scanned, the best C re-scored exactly) against the
# exact integer dot-product search, on the vectors of a cfs index file (format 2).
import struct, sys, time
import numpy as np
path, nq = sys.argv[1], int(sys.argv[2])
b = open(path, 'rb').read()
assert b[:8] == b'CFSINDEX'
hl = struct.unpack_from('<Q', b, 24)[0]
o = 32 + 32
dim = struct.unpack_from('<I', b, o)[0]; o += 4 + 32 + 8 + 160
for _ in range(2):
    n = struct.unpack_from('<I', b, o)[0]; o += 4 + 32 * n
n_chunks, total = struct.unpack_from('<QQ', b, o); o += 16
ns = struct.unpack_from('<I', b, o)[0]; o += 4
secs = [struct.unpack_from('<QQ', b, o + 48 * i) for i in range(ns)]
VEC, MISSING = 13, 12  # section order: Docs..PathIds (8), Ids, Records, Lens, Norms, Missing, Vectors
off, ln = secs[VEC]
V = np.frombuffer(b, dtype='<i2', count=ln // 2, offset=off).reshape(n_chunks, dim).astype(np.int64)
moff, mln = secs[MISSING]
miss = np.unpackbits(np.frombuffer(b, dtype='<u8', count=mln // 8, offset=moff).view(np.uint8), bitorder='little')[:n_chunks].astype(bool)
keep = np.where(~miss)[0]
V = V[keep]
norms = np.sqrt((V * V).sum(1)).astype(np.float64)
# dedup identical vectors (repeated texts) so recall is about distinct answers
_, uniq = np.unique(V, axis=0, return_index=True)
V, norms = V[np.sort(uniq)], norms[np.sort(uniq)]
N = len(V)
print(f"{N} distinct vectors of {dim} (of {n_chunks} chunks)")
rng = np.random.default_rng(7)
qs = rng.choice(N, nq, replace=False)
def exact(qi, k=10):
    q = V[qi]
    s = (V @ q) / norms
    s[qi] = -np.inf
    return set(np.argsort(-s, kind='stable')[:k])
truth = [exact(qi) for qi in qs]
bits = (V > 0)
packed = np.packbits(bits, axis=1)
pop = np.array([bin(i).count('1') for i in range(256)], dtype=np.int32)
def recall(score_fn, C):
    hit = 0
    for qi, t in zip(qs, truth):
        s = score_fn(qi)
        s[qi] = -10**18
        cand = np.argpartition(-s, C)[:C]
        ex = (V[cand] @ V[qi]) / norms[cand]
        ex[cand == qi] = -np.inf
        top = set(cand[np.argsort(-ex, kind='stable')[:10]])
        hit += len(top & t)
    return hit / (10 * len(qs))
ham = lambda qi: -pop[np.bitwise_xor(packed, packed[qi])].sum(1)
asym = lambda qi: (np.where(bits, 1, -1) @ V[qi])
V8 = np.clip(np.round(V / (np.abs(V).max(0) / 127.0 + 1e-9)), -127, 127).astype(np.int64)
i8 = lambda qi: (V8 @ V8[qi]) / np.sqrt((V8 * V8).sum(1) + 1)
for C in (100, 200, 500, 1000, 2000):
    print(f"C={C}: hamming {recall(ham, C):.3f}  sign-asym {recall(asym, C):.3f}  int8 {recall(i8, C):.3f}")
