"""minilm-int from docs/spec.md ("The minilm-int embedder"), written again from the spec.

Everything here is integer arithmetic on Python ints and numpy int64 arrays: the
tokenizer (BERT basic tokenisation and WordPiece), the model file reader and the
forward pass. No float enters the path from text to vector. verify.py uses it to
recompute the vectors of test-vectors/minilm.json; scripts/model/convert.py uses its
tokenizer to calibrate.
"""

import struct
import unicodedata

import numpy as np

MAGIC = b"CFSMINT\0"
VERSION = 1
MAX_TOKENS = 128
MAX_WORD_CHARS = 100
CLS, SEP, UNK = "[CLS]", "[SEP]", "[UNK]"
DTYPES = {1: "<i1", 2: "<i2", 3: "<i4", 4: "<i8", 5: "<u1", 6: "<u4"}
CJK = [
    (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F),
]


# ---- the model file ----

def read_model(path):
    """name -> numpy array; strict: magic, version, no duplicate name, no trailing byte."""
    data = open(path, "rb").read()
    if data[:8] != MAGIC:
        raise ValueError(f"{path}: not a minilm-int model file")
    version, n = struct.unpack_from("<II", data, 8)
    if version != VERSION:
        raise ValueError(f"{path}: model file version {version}, expected {VERSION}")
    pos, out = 16, {}
    for _ in range(n):
        (name_len,) = struct.unpack_from("<H", data, pos)
        name = data[pos + 2 : pos + 2 + name_len].decode()
        pos += 2 + name_len
        dtype, ndim = data[pos], data[pos + 1]
        dims = struct.unpack_from(f"<{ndim}I", data, pos + 2)
        pos += 2 + 4 * ndim
        dt = np.dtype(DTYPES[dtype])
        count = int(np.prod(dims, dtype=np.int64))
        arr = np.frombuffer(data, dtype=dt, count=count, offset=pos).reshape(dims)
        pos += count * dt.itemsize
        if name in out:
            raise ValueError(f"{path}: tensor {name} twice")
        out[name] = arr
    if pos != len(data):
        raise ValueError(f"{path}: {len(data) - pos} trailing bytes")
    return out


# ---- the tokenizer ----

def is_whitespace(c):
    return c in " \t\n\r" or unicodedata.category(c) == "Zs"


def is_control(c):
    return c not in "\t\n\r" and unicodedata.category(c).startswith("C")


def is_punctuation(c):
    cp = ord(c)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(c).startswith("P")


def basic_tokens(text):
    chars = []
    for c in text:
        cp = ord(c)
        if cp == 0 or cp == 0xFFFD or is_control(c):
            continue
        if is_whitespace(c):
            chars.append(" ")
        elif any(a <= cp <= b for a, b in CJK):
            chars.extend((" ", c, " "))
        else:
            chars.append(c)
    words = []
    for word in "".join(chars).split(" "):
        if not word:
            continue
        word = unicodedata.normalize("NFD", word.lower())
        word = "".join(c for c in word if unicodedata.category(c) != "Mn")
        current = ""
        for c in word:
            if is_punctuation(c):
                if current:
                    words.append(current)
                words.append(c)
                current = ""
            else:
                current += c
        if current:
            words.append(current)
    return words


def wordpiece(word, vocab):
    if len(word) > MAX_WORD_CHARS:
        return [vocab[UNK]]
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start:
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                pieces.append(vocab[piece])
                break
            end -= 1
        if end == start:
            return [vocab[UNK]]
        start = end
    return pieces


def tokenize(text, vocab):
    ids = [vocab[CLS]]
    for word in basic_tokens(text):
        ids.extend(wordpiece(word, vocab))
        if len(ids) >= MAX_TOKENS - 1:
            break
    return ids[: MAX_TOKENS - 1] + [vocab[SEP]]


def vocab_of(model):
    tokens = bytes(model["vocab"]).decode().split("\n")
    return {t: i for i, t in enumerate(tokens)}


# ---- integer arithmetic ----

def rshift_round(x, sh):
    """floor((x + 2^(sh-1)) / 2^sh), elementwise on int64 arrays or Python ints."""
    return (x + (1 << (sh - 1))) >> sh


def sat(x, bits):
    lo, hi = -(1 << (bits - 1)) + 1, (1 << (bits - 1)) - 1
    return np.clip(x, lo, hi)


def isqrt(n):
    import math
    return math.isqrt(n)


def requant(acc, m, sh, bits=None):
    y = rshift_round(acc.astype(object) * np.asarray(m, dtype=object), int(sh))
    y = np.array(y, dtype=np.int64)
    return sat(y, bits) if bits else y


def layer_norm(x, g, b):
    """x: [T, C] int64 -> int16 values in int64, per the spec."""
    out = np.empty_like(x)
    n = x.shape[1]
    for t in range(x.shape[0]):
        row = [int(v) for v in x[t]]
        mean = (sum(row) + n // 2) // n
        d = [v - mean for v in row]
        std = isqrt(sum(v * v for v in d) // n)
        inv = ((1 << 47) + std // 2) // std if std > 0 else 0
        for c in range(n):
            norm = rshift_round(d[c] * inv, 32)
            y = rshift_round(norm * int(g[c]) + int(b[c]), 31)
            out[t, c] = max(-32767, min(32767, y))
    return out


def linear(x, w, b):
    """x [T, K] times w [N, K], plus b: exact int64."""
    return x.astype(np.int64) @ w.astype(np.int64).T + b.astype(np.int64)


def scalar(model, name):
    return int(model[name].reshape(-1)[0])


def attention(m, p, q, k, v, exp2):
    T = q.shape[0]
    heads = 12
    hd = q.shape[1] // heads
    ctx = np.zeros((T, q.shape[1]), dtype=np.int64)
    att_m, att_sh = scalar(m, p + "att.m"), scalar(m, p + "att.sh")
    for h in range(heads):
        cols = slice(h * hd, (h + 1) * hd)
        acc = q[:, cols] @ k[:, cols].T
        y = rshift_round(acc * att_m, att_sh)
        t = y.max(axis=1, keepdims=True) - y
        n, f = t >> 10, t & 1023
        e = np.where(n < 31, exp2[f] >> np.minimum(n, 31), 0)
        total = e.sum(axis=1, keepdims=True)
        factor = (1 << 62) // total
        probs = np.minimum(rshift_round(e * factor, 47), 32767)
        ctx[:, cols] = probs @ v[:, cols]
    return requant(ctx, scalar(m, p + "ctx.m"), scalar(m, p + "ctx.sh"), 8)


def encoder_layer(m, l, x):
    p = f"l{l}."
    lin = lambda v, n, bits: requant(
        linear(v, m[p + n + ".w"], m[p + n + ".b"]), m[p + n + ".m"], scalar(m, p + n + ".sh"), bits
    )
    q, k, v = lin(x, "q", 8), lin(x, "k", 8), lin(x, "v", 8)
    ctx = attention(m, p, q, k, v, m["exp2"].astype(np.int64))
    r1 = lin(ctx, "o", None) + requant(x, scalar(m, p + "res1.m"), scalar(m, p + "res1.sh"))
    h1 = layer_norm(sat(r1, 32), m[p + "ln1.g"], m[p + "ln1.b"])
    f1 = lin(h1, "f1", 16)
    g = m[p + "gelu"].astype(np.int64)[f1 + 32768]
    r2 = lin(g, "f2", None) + requant(h1, scalar(m, p + "res2.m"), scalar(m, p + "res2.sh"))
    return layer_norm(sat(r2, 32), m[p + "ln2.g"], m[p + "ln2.b"])


def normalize(acc):
    """The fixed-point L2 normalisation of the hash embedder (spec section 19, step 4)."""
    norm2 = sum(int(v) * int(v) for v in acc)
    r = isqrt(norm2 << 32)
    if r == 0:
        return [0] * len(acc)
    out = []
    for v in acc:
        scaled = (int(v) * 32767) << 16
        sign = (scaled > 0) - (scaled < 0)
        num, den = 2 * scaled + sign * r, 2 * r
        q = abs(num) // den * (1 if num >= 0 else -1)  # truncation toward zero
        out.append(max(-32767, min(32767, q)))
    return out


def embed_ids(m, ids):
    ids = np.asarray(ids, dtype=np.int64)
    T = len(ids)
    word = m["emb.word"][ids].astype(np.int64) * m["emb.word.m"][ids].astype(np.int64)[:, None]
    pos = m["emb.pos"][:T].astype(np.int64) * m["emb.pos.m"][:T].astype(np.int64)[:, None]
    x = layer_norm(word + pos, m["emb.ln.g"], m["emb.ln.b"])
    for l in range(6):
        x = encoder_layer(m, l, x)
    return normalize(x.sum(axis=0))


def embed(m, vocab, text):
    ids = tokenize(text, vocab)
    return ids, embed_ids(m, ids)
