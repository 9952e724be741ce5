#!/usr/bin/env python3
"""Independent verifier of the cfs test vectors.

Recomputes every case in test-vectors/*.json from docs/spec.md alone: it never calls
the Rust code. Needs the `blake3`, `regex` and `numpy` packages (scripts/python-env
installs them) and, for minilm.json, the model file scripts/fetch-model makes.
Prints one line per failure and ends with 'N passed, N failed'; exits non-zero on any
failure.
"""

import hashlib
import json
import struct
import sys
import uuid
from pathlib import Path

try:
    import blake3
except ImportError:  # pragma: no cover - the test script installs it
    sys.exit("verify.py needs the blake3 package: pip install blake3")

SPEC_VERSION = 1

# Section 2: contexts.
CTX = {
    "LEAF_PATH": "cfs v1 2026-11-22 leaf path",
    "LEAF_DOCUMENT": "cfs v1 2026-11-22 leaf document",
    "LEAF_CHUNK": "cfs v1 2026-11-22 leaf chunk",
    "LEAF_EMBEDDING": "cfs v1 2026-11-22 leaf embedding",
    "LEAF_EDGE": "cfs v1 2026-11-22 leaf edge",
    "NODE": "cfs v1 2026-11-22 merkle node",
    "EMPTY": "cfs v1 2026-11-22 merkle empty",
    "STATE_ROOT": "cfs v1 2026-11-22 state root",
    "PARSE_PROFILE": "cfs v1 2026-11-22 parse profile",
    "MODEL": "cfs v1 2026-11-22 embedding model",
}

# Section 3: namespaces.
NAMESPACE = {
    "path": uuid.UUID("4e83bbb9-3b92-54b4-aa3b-02f8fcda6fa8"),
    "document": uuid.UUID("eee15cb3-ea93-5620-987c-902405b9fa52"),
    "chunk": uuid.UUID("f7009ce4-badb-5371-be38-658e3dd17834"),
    "embedding": uuid.UUID("2ee7d442-d547-5450-b018-6348aee37b25"),
}

SYMBOL_KINDS = ["function", "method", "class", "interface", "type", "const", "var",
                "impl", "trait", "module", "struct", "enum", "macro"]
TABLES = ["paths", "documents", "chunks", "embeddings", "edges"]
N_BUCKETS = 1024
BUCKET_BITS = 10


class Invalid(Exception):
    pass


def H(data: bytes) -> bytes:
    return blake3.blake3(data).digest()


def DK(context: str, data: bytes) -> bytes:
    return blake3.blake3(data, derive_key_context=context).digest()


def uuid5(namespace: uuid.UUID, name: bytes) -> uuid.UUID:
    """RFC 9562 UUIDv5 of binary name bytes (section 1)."""
    digest = hashlib.sha1(namespace.bytes + name).digest()
    return uuid.UUID(bytes=digest[:16], version=5)


def node(left: bytes, right: bytes) -> bytes:
    return DK(CTX["NODE"], left + right)


EMPTY_ROOT = DK(CTX["EMPTY"], b"")


# Section 4: canonical encoding.
def u8(v): return struct.pack("<B", v)
def u16(v): return struct.pack("<H", v)
def u32(v): return struct.pack("<I", v)
def u64(v): return struct.pack("<Q", v)
def i16(v): return struct.pack("<h", v)


def string(s: str) -> bytes:
    raw = s.encode("utf-8")
    return u32(len(raw)) + raw


def vec(items, encode) -> bytes:
    return u32(len(items)) + b"".join(encode(x) for x in items)


def option(value, encode) -> bytes:
    return b"\x00" if value is None else b"\x01" + encode(value)


def uid(text: str) -> bytes:
    return uuid.UUID(text).bytes


def hx(text: str) -> bytes:
    raw = bytes.fromhex(text)
    return raw


def h32(text: str) -> bytes:
    raw = bytes.fromhex(text)
    if len(raw) != 32:
        raise Invalid(f"{text} is not 32 bytes")
    return raw


def enc_profile(p) -> bytes:
    return (string(p["mime_type"]) + string(p["parser"]) + string(p["chunker"])
            + u32(p["target_bytes"]) + u32(p["max_bytes"]) + u32(p["overlap_bytes"]))


def enc_path_entry(e) -> bytes:
    return (string(e["path"]) + uid(e["document_id"]) + vec(e["collections"], string)
            + string(e["context"]))


def enc_document(d) -> bytes:
    return (uid(d["id"]) + h32(d["content_hash"]) + u64(d["size_bytes"])
            + enc_profile(d["profile"]) + u64(d["text_length_bytes"]) + u32(d["n_chunks"])
            + h32(d["hierarchical_hash"])
            + vec(d["metadata"], lambda kv: string(kv[0]) + string(kv[1])))


def enc_window(w) -> bytes:
    return u32(w["index"]) + u32(w["count"])


def enc_symbol(s) -> bytes:
    return (u8(SYMBOL_KINDS.index(s["kind"])) + string(s["name"])
            + option(s["parent"], string) + string(s["signature"])
            + string(s["doc_comment"]) + option(s["window"], enc_window))


def enc_kind(k) -> bytes:
    t = k["type"]
    if t == "text":
        return u8(0)
    if t == "section":
        return u8(1) + vec(k["heading_path"], string)
    if t == "code":
        return u8(2) + string(k["language"]) + option(k["symbol"], enc_symbol)
    if t == "page":
        return u8(3) + u32(k["page"])
    raise Invalid(f"unknown chunk kind {t}")


def enc_chunk(c) -> bytes:
    return (uid(c["id"]) + uid(c["document_id"]) + u32(c["sequence"]) + u64(c["byte_offset"])
            + u32(c["byte_length"]) + u32(c["start_line"]) + u32(c["end_line"])
            + h32(c["text_hash"]) + enc_kind(c["kind"]) + string(c["text"]))


def enc_embedding(e) -> bytes:
    return (uid(e["id"]) + uid(e["chunk_id"]) + h32(e["model_hash"])
            + vec(e["vector"], i16))


def enc_edge(e) -> bytes:
    return uid(e["source"]) + uid(e["target"]) + u16(e["kind"])


def enc_roots(r) -> bytes:
    return b"".join(h32(r[t]) for t in TABLES)


def enc_record(r) -> bytes:
    summary = b"".join(u64(r["summary"][t][0]) + u64(r["summary"][t][1])
                       + u64(r["summary"][t][2]) for t in TABLES)
    return (u64(r["sequence"]) + h32(r["parent"]) + h32(r["root"])
            + enc_roots(r["table_roots"]) + u64(r["timestamp_ms"]) + summary)


def enc_path(steps) -> bytes:
    return vec(steps, lambda s: u8(1 if s["left"] else 0) + h32(s["sibling"]))


def enc_chunk_proof(p) -> bytes:
    return (enc_chunk(p["chunk"]) + u8(TABLES.index(p["table"])) + u16(p["bucket"])
            + enc_path(p["path"]) + vec(p["bucket_siblings"], h32)
            + enc_roots(p["table_roots"]))


# Section 5: invariants of a chunk (what proof checking needs).
def validate_chunk(c):
    text = c["text"].encode("utf-8")
    if not text or len(text) > 16 << 20:
        raise Invalid("chunk text empty or too long")
    if c["byte_length"] != len(text):
        raise Invalid("byte_length differs from the text")
    if not 1 <= c["start_line"] <= c["end_line"]:
        raise Invalid("bad line range")
    if h32(c["text_hash"]) != H(text):
        raise Invalid("text hash mismatch")
    expected = chunk_id(c["document_id"], c["sequence"], H(text))
    if c["id"] != expected:
        raise Invalid("chunk id mismatch")
    k = c["kind"]
    if k["type"] == "code":
        if not k["language"]:
            raise Invalid("code chunk without language")
        sym = k["symbol"]
        if sym and sym["window"]:
            w = sym["window"]
            if w["count"] < 2 or w["index"] >= w["count"]:
                raise Invalid("window out of range")
    if k["type"] == "page" and k["page"] < 1:
        raise Invalid("page 0")


# Section 3: ids.
def path_id(path: str) -> str:
    return str(uuid5(NAMESPACE["path"], path.encode("utf-8")))


def profile_hash(p) -> bytes:
    return DK(CTX["PARSE_PROFILE"], enc_profile(p))


def document_id(content_hash: bytes, prof_hash: bytes) -> str:
    return str(uuid5(NAMESPACE["document"], content_hash + prof_hash))


def chunk_id(doc_id: str, sequence: int, text_hash: bytes) -> str:
    return str(uuid5(NAMESPACE["chunk"], uid(doc_id) + u32(sequence) + text_hash))


def embedding_id(chunk: str, model_hash: bytes) -> str:
    return str(uuid5(NAMESPACE["embedding"], uid(chunk) + model_hash))


def model_hash(model_id: str) -> bytes:
    return DK(CTX["MODEL"], model_id.encode("utf-8"))


# Section 6: Merkle trees.
def merkle_root(leaves):
    if not leaves:
        return EMPTY_ROOT
    layer = list(leaves)
    while len(layer) > 1:
        nxt = [node(layer[i], layer[i + 1]) for i in range(0, len(layer) - 1, 2)]
        if len(layer) % 2 == 1:
            nxt.append(layer[-1])
        layer = nxt
    return layer[0]


def merkle_path(leaves, index):
    steps = []
    layer = list(leaves)
    i = index
    while len(layer) > 1:
        w = len(layer)
        if i % 2 == 1:
            steps.append({"left": True, "sibling": layer[i - 1].hex()})
        elif i + 1 < w:
            steps.append({"left": False, "sibling": layer[i + 1].hex()})
        nxt = [node(layer[j], layer[j + 1]) for j in range(0, w - 1, 2)]
        if w % 2 == 1:
            nxt.append(layer[-1])
        layer = nxt
        i //= 2
    return steps


def root_from_path(leaf: bytes, steps) -> bytes:
    cur = leaf
    for s in steps:
        sib = h32(s["sibling"])
        cur = node(sib, cur) if s["left"] else node(cur, sib)
    return cur


# Section 8: buckets and table roots.
def bucket_of(key: bytes) -> int:
    return ((key[0] << 8) | key[1]) >> (16 - BUCKET_BITS)


def bucket_roots(entries):
    """entries: (key bytes, leaf bytes). Returns the 1024 bucket roots."""
    buckets = [[] for _ in range(N_BUCKETS)]
    for key, leaf in sorted(entries):
        buckets[bucket_of(key)].append(leaf)
    return [merkle_root(b) for b in buckets]


def table_root(entries) -> bytes:
    return merkle_root(bucket_roots(entries))


def top_siblings(roots, bucket):
    steps = merkle_path(roots, bucket)
    return [s["sibling"] for s in steps]


def state_root(roots) -> bytes:
    return DK(CTX["STATE_ROOT"], b"".join(roots[t] for t in TABLES))


# Section 10 and the state description of state.json.
def generated_state(n):
    docs, paths = [], []
    for i in range(n):
        content = f"document {i}\nsecond line of {i}\n"
        first = f"document {i}\n"
        docs.append({
            "content": content,
            "profile": {"mime_type": "text/plain", "parser": "text/1", "chunker": "text/1",
                        "target_bytes": 1024, "max_bytes": 2048, "overlap_bytes": 128},
            "metadata": [],
            "chunks": [
                {"byte_offset": 0, "byte_length": len(first.encode()), "start_line": 1,
                 "end_line": 1, "kind": {"type": "text"}},
                {"byte_offset": len(first.encode()),
                 "byte_length": len(content.encode()) - len(first.encode()),
                 "start_line": 2, "end_line": 2, "kind": {"type": "text"}},
            ],
            "embeddings": [{"chunk": 0, "model_id": "cfs-hash-embed/1 dim=2",
                            "vector": [i % 100, -i]}],
            "window_edges": [],
        })
        paths.append({"path": f"dir{i % 7}/file{i}.txt", "document": i, "collections": [],
                      "context": ""})
    return {"documents": docs, "paths": paths, "user_edges": []}


def build_state(desc):
    """Returns (tables, per-document rows): tables maps table name -> {key: (leaf, row)}."""
    if "generated" in desc:
        desc = generated_state(desc["generated"])
    built = []
    for d in desc["documents"]:
        content = d["content"].encode("utf-8")
        c_hash = H(content)
        doc_id = document_id(c_hash, profile_hash(d["profile"]))
        chunks = []
        for seq, c in enumerate(d["chunks"]):
            text = content[c["byte_offset"]:c["byte_offset"] + c["byte_length"]].decode("utf-8")
            t_hash = H(text.encode("utf-8"))
            chunks.append({
                "id": chunk_id(doc_id, seq, t_hash), "document_id": doc_id, "sequence": seq,
                "byte_offset": c["byte_offset"], "byte_length": c["byte_length"],
                "start_line": c["start_line"], "end_line": c["end_line"],
                "text_hash": t_hash.hex(), "kind": c["kind"], "text": text,
            })
        hier = merkle_root([DK(CTX["LEAF_CHUNK"], enc_chunk(c)) for c in chunks])
        document = {
            "id": doc_id, "content_hash": c_hash.hex(), "size_bytes": len(content),
            "profile": d["profile"], "text_length_bytes": len(content),
            "n_chunks": len(chunks), "hierarchical_hash": hier.hex(), "metadata": d["metadata"],
        }
        embeddings = []
        for e in d["embeddings"]:
            cid = chunks[e["chunk"]]["id"]
            m = model_hash(e["model_id"])
            embeddings.append({"id": embedding_id(cid, m), "chunk_id": cid,
                               "model_hash": m.hex(), "vector": e["vector"]})
        edges = [{"source": doc_id, "target": c["id"], "kind": 1} for c in chunks]
        edges += [{"source": e["chunk_id"], "target": e["id"], "kind": 2} for e in embeddings]
        edges += [{"source": chunks[a]["id"], "target": chunks[b]["id"], "kind": 3}
                  for a, b in d["window_edges"]]
        built.append((document, chunks, embeddings, edges))

    bindings = {}  # path -> entry; later bindings replace earlier ones
    for p in desc["paths"]:
        bindings[p["path"]] = {"path": p["path"], "document_id": built[p["document"]][0]["id"],
                               "collections": p["collections"], "context": p["context"]}
    live = {e["document_id"] for e in bindings.values()}

    def ref(r):
        if "document" in r:
            return built[r["document"]][0]["id"]
        if "chunk" in r:
            return built[r["chunk"][0]][1][r["chunk"][1]]["id"]
        return built[r["embedding"][0]][2][r["embedding"][1]]["id"]

    tables = {t: {} for t in TABLES}
    for entry in bindings.values():
        tables["paths"][uid(path_id(entry["path"]))] = (
            DK(CTX["LEAF_PATH"], enc_path_entry(entry)), entry)
    present = set()
    for document, chunks, embeddings, edges in built:
        if document["id"] not in live:
            continue  # reference counting: a document without paths is removed whole
        tables["documents"][uid(document["id"])] = (
            DK(CTX["LEAF_DOCUMENT"], enc_document(document)), document)
        present.add(document["id"])
        for c in chunks:
            tables["chunks"][uid(c["id"])] = (DK(CTX["LEAF_CHUNK"], enc_chunk(c)), c)
            present.add(c["id"])
        for e in embeddings:
            tables["embeddings"][uid(e["id"])] = (DK(CTX["LEAF_EMBEDDING"], enc_embedding(e)), e)
            present.add(e["id"])
        for e in edges:
            key = uid(e["source"]) + uid(e["target"]) + struct.pack(">H", e["kind"])
            tables["edges"][key] = (DK(CTX["LEAF_EDGE"], enc_edge(e)), e)
    for e in desc["user_edges"]:
        edge = {"source": ref(e["source"]), "target": ref(e["target"]), "kind": e["kind"]}
        if edge["source"] not in present or edge["target"] not in present:
            raise Invalid("user edge to an absent entity")
        key = uid(edge["source"]) + uid(edge["target"]) + struct.pack(">H", edge["kind"])
        tables["edges"][key] = (DK(CTX["LEAF_EDGE"], enc_edge(edge)), edge)
    return tables, built


def roots_of(tables):
    return {t: table_root([(k, leaf) for k, (leaf, _) in tables[t].items()]) for t in TABLES}


def hex_roots(roots):
    return {t: roots[t].hex() for t in TABLES}


# Section 11: proofs.
def prove(tables, cid: str):
    key = uid(cid)
    bucket = bucket_of(key)
    entries = sorted((k, leaf) for k, (leaf, _) in tables["chunks"].items())
    in_bucket = [(k, leaf) for k, leaf in entries if bucket_of(k) == bucket]
    index = [k for k, _ in in_bucket].index(key)
    roots_by_bucket = bucket_roots(entries)
    roots = roots_of(tables)
    return {
        "chunk": tables["chunks"][key][1],
        "table": "chunks",
        "bucket": bucket,
        "path": merkle_path([leaf for _, leaf in in_bucket], index),
        "bucket_siblings": top_siblings(roots_by_bucket, bucket),
        "table_roots": hex_roots(roots),
    }


def verify_proof(p, trusted: bytes) -> bool:
    try:
        validate_chunk(p["chunk"])
        if p["table"] != "chunks":
            return False
        if p["bucket"] != bucket_of(uid(p["chunk"]["id"])):
            return False
        leaf = DK(CTX["LEAF_CHUNK"], enc_chunk(p["chunk"]))
        bucket_root = root_from_path(leaf, p["path"])
        if len(p["bucket_siblings"]) != BUCKET_BITS:
            return False
        steps = [{"left": (p["bucket"] >> k) & 1 == 1, "sibling": s}
                 for k, s in enumerate(p["bucket_siblings"])]
        roots = {t: h32(p["table_roots"][t]) for t in TABLES}
        if root_from_path(bucket_root, steps) != roots["chunks"]:
            return False
        return state_root(roots) == trusted
    except (Invalid, ValueError, KeyError):
        return False


def generated_entry(i):
    key = H(b"cfs test key " + u32(i))[:16]
    leaf = H(b"cfs test leaf " + u32(i))
    return key, leaf


# Section 14: file types.
EXTENSIONS = {}
def _ext(names, mime, fmt):
    for n in names.split():
        EXTENSIONS[n] = (mime, fmt)

_ext("md markdown mdown mkd mdx", "text/markdown", "markdown")
_ext("txt text rst adoc asciidoc org tex log", "text/plain", "text")
_ext("pdf", "application/pdf", "pdf")
_ext("html htm xhtml", "text/html", "html")
_ext("json jsonc geojson webmanifest", "application/json", "json")
for names, mime, lang in [
    ("rs", "text/x-rust", "rust"), ("go", "text/x-go", "go"),
    ("py pyi pyw", "text/x-python", "python"), ("ts mts cts", "text/typescript", "typescript"),
    ("tsx", "text/tsx", "tsx"), ("js mjs cjs", "text/javascript", "javascript"),
    ("jsx", "text/jsx", "jsx"), ("c h", "text/x-c", "c"),
    ("cc cpp cxx hpp hh hxx", "text/x-c++", "cpp"), ("java", "text/x-java", "java"),
    ("kt kts", "text/x-kotlin", "kotlin"), ("scala", "text/x-scala", "scala"),
    ("swift", "text/x-swift", "swift"), ("rb", "text/x-ruby", "ruby"),
    ("php", "text/x-php", "php"), ("cs", "text/x-csharp", "csharp"), ("lua", "text/x-lua", "lua"),
    ("zig", "text/x-zig", "zig"), ("hs", "text/x-haskell", "haskell"),
    ("ex exs", "text/x-elixir", "elixir"), ("erl hrl", "text/x-erlang", "erlang"),
    ("ml mli", "text/x-ocaml", "ocaml"), ("sh bash zsh fish", "text/x-shellscript", "shell"),
    ("ps1", "text/x-powershell", "powershell"), ("sql", "application/sql", "sql"),
    ("css scss sass less", "text/css", "css"), ("proto", "text/x-protobuf", "protobuf"),
    ("vue", "text/html", "vue"), ("svelte", "text/html", "svelte"),
]:
    _ext(names, mime, "code:" + lang)
_ext("toml", "application/toml", "text")
_ext("yaml yml", "application/yaml", "text")
_ext("xml svg xsd xsl", "application/xml", "text")
_ext("csv tsv", "text/csv", "text")
_ext("ini cfg conf properties env lock", "text/plain", "text")
WHOLE_NAMES = {"makefile": ("text/x-makefile", "code:make"),
               "gnumakefile": ("text/x-makefile", "code:make"),
               "dockerfile": ("text/x-dockerfile", "code:dockerfile"),
               "containerfile": ("text/x-dockerfile", "code:dockerfile")}
for n in ("license licence copying readme changelog authors notice contributing "
          ".gitignore .gitattributes .editorconfig cargo.lock").split():
    WHOLE_NAMES[n] = ("text/plain", "text")
MAGIC = [b"\x89PNG\r\n\x1a\n", b"\xFF\xD8\xFF", b"GIF87a", b"GIF89a", b"PK\x03\x04", b"\x1F\x8B",
         b"\x7FELF", b"MZ", b"\xCF\xFA\xED\xFE", b"\xCA\xFE\xBA\xBE", b"\0asm",
         b"SQLite format 3\0", b"BZh", b"\xFD7zXZ\0", b"7z\xBC\xAF\x27\x1C", b"\x28\xB5\x2F\xFD"]


def by_name(path):
    name = path.rsplit("/", 1)[-1].lower()
    if name in WHOLE_NAMES:
        return WHOLE_NAMES[name]
    if "." not in name:
        return None
    return EXTENSIONS.get(name.rsplit(".", 1)[1])


def utf16_without_bom(data):
    """Returns 'le', 'be' or None (section 15, step 3)."""
    if len(data) < 4 or len(data) % 2:
        return None
    sample = data[:min(len(data), 4096)]
    pairs = len(sample) // 2
    zero_even = sum(1 for b in sample[0::2] if b == 0)
    zero_odd = sum(1 for b in sample[1::2] if b == 0)
    if 10 * zero_odd >= 7 * pairs and 20 * zero_even <= pairs:
        return "le"
    if 10 * zero_even >= 7 * pairs and 20 * zero_odd <= pairs:
        return "be"
    return None


def detect(path, head):
    named = by_name(path)
    if head.startswith(b"%PDF-"):
        return {"mime_type": "application/pdf", "format": "pdf"}
    for magic in MAGIC:
        if head.startswith(magic):
            weak = magic in (b"MZ", b"BZh")
            if not (weak and named):
                return {"skipped": True}
    if named:
        if named[1] == "pdf":
            return {"skipped": True}
        return {"mime_type": named[0], "format": named[1]}
    if 0 in head:
        even = head[:len(head) & ~1]
        if utf16_without_bom(even) is None:
            return {"skipped": True}
    else:
        control = sum(1 for b in head if b < 0x20 and b not in (0x0A, 0x0D, 0x09, 0x0C))
        if control * 10 > len(head):
            return {"skipped": True}
    return {"mime_type": "text/plain", "format": "text"}


# Section 15: canonical text.
def decode_utf16(data, order):
    if len(data) % 2:
        raise Invalid("odd length")
    text = data.decode("utf-16-le" if order == "le" else "utf-16-be")  # strict
    if "\0" in text:
        raise Invalid("NUL character")
    return text


def decode_bytes(data):
    if data.startswith(b"\xEF\xBB\xBF"):
        text = data[3:].decode("utf-8")
    elif data.startswith(b"\xFF\xFE"):
        text = decode_utf16(data[2:], "le")
    elif data.startswith(b"\xFE\xFF"):
        text = decode_utf16(data[2:], "be")
    elif 0 in data:
        order = utf16_without_bom(data)
        if order is None:
            raise Invalid("binary")
        text = decode_utf16(data, order)
    else:
        text = data.decode("utf-8")  # legacy charsets are not covered by the vectors
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")


# Section 16: text chunking (on UTF-8 bytes).
LEVELS = [[b"\n\n"], [b"\n"], [b". ", b"! ", b"? "], [b" ", b"\t"]]


def chunk_spans(text, target, max_, overlap):
    b = text.encode("utf-8")
    n = len(b)

    def boundary(i):
        return i >= n or (b[i] & 0xC0) != 0x80

    def floor_boundary(i):
        i = min(i, n)
        while not boundary(i):
            i -= 1
        return i

    def find_end(start, min_end):
        target_at = start + target
        lo = max(start + max(target // 2, 1), min_end)
        hi = floor_boundary(start + max_)
        for level in LEVELS:
            before = after = None
            for sep in level:
                i = b.find(sep, start)
                while i != -1 and i + len(sep) <= hi:
                    e = i + len(sep)
                    if lo <= e <= target_at:
                        before = e if before is None else max(before, e)
                    elif e > target_at:
                        after = e if after is None else min(after, e)
                    i = b.find(sep, i + 1)
            if before is not None:
                return before
            if after is not None:
                return after
        return hi

    def next_start(start, end):
        if overlap == 0 or end - overlap <= start:
            return end
        space = (0x20, 0x0A, 0x09)
        for p in range(max(end - overlap, start + 1), end):
            if b[p - 1] in space and b[p] not in space and floor_boundary(p + max_) > end:
                return p
        return end

    spans = []
    start, prev_end = 0, 0
    while start < n:
        end = n if n - start <= max_ else find_end(start, prev_end + 1)
        spans.append([start, end, b.count(b"\n", 0, start) + 1, b.count(b"\n", 0, end - 1) + 1])
        if end == n:
            break
        prev_end = end
        start = next_start(start, end)
    return spans


# Section 17: the default embedder.
def is_word_char(c):
    o = ord(c)
    if o < 0x80:
        return c.isascii() and (c.isalnum() or c == "_")
    if 0x80 <= o <= 0xBF or o in (0xD7, 0xF7, 0xFEFF):
        return False
    if 0x2000 <= o <= 0x206F or 0x3000 <= o <= 0x303F:
        return False
    if 0xFE30 <= o <= 0xFE4F or 0xFF00 <= o <= 0xFF0F:
        return False
    return True


def ascii_lower(s):
    return "".join(c.lower() if "A" <= c <= "Z" else c for c in s)


def identifier_parts(word):
    parts, cur = [], ""
    up = lambda c: "A" <= c <= "Z"
    low = lambda c: "a" <= c <= "z"
    dig = lambda c: "0" <= c <= "9"
    alpha = lambda c: up(c) or low(c)
    for i, c in enumerate(word):
        if c == "_":
            if cur:
                parts.append(cur)
                cur = ""
            continue
        if i > 0:
            prev = word[i - 1]
            nxt = word[i + 1] if i + 1 < len(word) else None
            boundary = ((up(c) and (low(prev) or dig(prev))) or (dig(c) and alpha(prev))
                        or (alpha(c) and dig(prev))
                        or (up(c) and up(prev) and nxt is not None and low(nxt)))
            if boundary and cur:
                parts.append(cur)
                cur = ""
        cur += ascii_lower(c)
    if cur:
        parts.append(cur)
    return parts


MASK64 = (1 << 64) - 1


def feature_hash(tag, feature):
    h = 0xcbf29ce484222325
    for byte in tag.encode() + feature.encode("utf-8"):
        h ^= byte
        h = (h * 0x100000001b3) & MASK64
    h ^= h >> 30
    h = (h * 0xbf58476d1ce4e5b9) & MASK64
    h ^= h >> 27
    h = (h * 0x94d049bb133111eb) & MASK64
    return h ^ (h >> 31)


def features(text):
    words, cur = [], ""
    for c in text:
        if is_word_char(c):
            cur += c
        elif cur:
            words.append(cur)
            cur = ""
    if cur:
        words.append(cur)
    for w in words:
        lower = ascii_lower(w)
        yield "w", lower, 2
        parts = identifier_parts(w)
        if len(parts) > 1:
            for p in parts:
                yield "s", p, 2
        if len(lower) >= 3:
            u = "^" + lower + "$"
            for i in range(min(len(u) - 2, 32)):
                yield "g", u[i:i + 3], 1


def embed(text, dim):
    acc = [0] * dim
    for tag, f, weight in features(text):
        h = feature_hash(tag, f)
        acc[h % dim] += -weight if h >> 63 else weight
    import math
    r = math.isqrt((1 << 32) * sum(v * v for v in acc))
    if r == 0:
        return [0] * dim
    out = []
    for v in acc:
        x = v * 32767 * (1 << 16)
        num = 2 * x + (1 if x > 0 else -1 if x < 0 else 0) * r
        q = abs(num) // (2 * r) * (1 if num >= 0 else -1)  # truncate toward zero
        out.append(max(-32767, min(32767, q)))
    return out


# Section 21: search.
def unicode_words(text):
    import regex  # UAX #29 word boundaries with the WORD flag
    segments = [seg for seg in regex.split(r"(?w)\b", text) if seg]
    return [seg for seg in segments if any(c.isalnum() for c in seg)]


def compounds(text):
    out, i, n = [], 0, len(text)
    while i < n:
        if not is_word_char(text[i]):
            i += 1
            continue
        j = i
        while j < n:
            if is_word_char(text[j]):
                j += 1
            elif text[j] == "-" and j + 1 < n and is_word_char(text[j + 1]) and j > i:
                j += 1
            else:
                break
        out.append(text[i:j])
        i = j
    return out


def search_tokens(text):
    out = []
    emit = lambda t: out.append(t) if t and len(t.encode("utf-8")) <= 64 else None
    for compound in compounds(text):
        lower = "".join(c.lower() for c in compound)  # per character, as in the spec
        emit(lower)
        parts = []
        for piece in compound.split("-"):
            if piece.isascii():
                parts += identifier_parts(piece)
            else:
                for word in unicode_words(piece):
                    parts += ["".join(c.lower() for c in p) for p in word.split("_") if p]
        if len(parts) > 1:
            for p in parts:
                emit(p)
        elif len(parts) == 1 and parts[0] != lower:
            emit(parts[0])
    return out


def log2_fixed(n):
    k = n.bit_length() - 1
    x = n << (62 - k) if k <= 62 else n >> (k - 62)
    frac = 0
    for bit in range(15, -1, -1):
        x = (x * x) >> 62
        if x >= 1 << 63:
            x >>= 1
            frac |= 1 << bit
    return (k << 16) | frac


def compute_search(case):
    kind, inp = case["kind"], case["input"]
    if kind == "tokens":
        return {"tokens": search_tokens(inp["text"])}
    if kind == "log2":
        return {"log2": str(log2_fixed(inp["n"]))}
    if kind == "bm25":
        n, df, tf, dl, total = inp["n"], inp["df"], inp["tf"], inp["dl"], inp["total"]
        idf = max(log2_fixed(2 * n + 2) - log2_fixed(2 * df + 1), 0)
        tfp = (22 * tf * total << 16) // (10 * tf * total + 3 * total + 9 * dl * n)
        return {"idf": str(idf), "tfp": str(tfp)}
    if kind == "rrf":
        return {"rrf": str((1 << 32) // (10 + inp["rank"]))}
    raise Invalid(f"unknown case kind {kind}")


def compute_ingest(case):
    kind, inp = case["kind"], case["input"]
    if kind in ("tokens", "log2", "bm25", "rrf"):
        return compute_search(case)
    if kind == "detect":
        return detect(inp["path"], bytes.fromhex(inp["head"]))
    if kind == "decode":
        try:
            return {"text": decode_bytes(bytes.fromhex(inp["bytes"]))}
        except (Invalid, UnicodeDecodeError):
            return {"error": True}
    if kind == "chunk_text":
        return {"spans": chunk_spans(inp["text"], inp["target"], inp["max"], inp["overlap"])}
    if kind == "identifier_parts":
        return {"parts": identifier_parts(inp["word"])}
    if kind == "feature_hash":
        return {"hash": str(feature_hash(inp["tag"], inp["feature"]))}
    if kind == "minilm":
        return compute_minilm(inp["text"])
    if kind == "embed":
        model_id = f"cfs-hash-embed/1 dim={inp['dimension']}"
        return {"model_id": model_id, "model_hash": model_hash(model_id).hex(),
                "vector": embed(inp["text"], inp["dimension"])}
    return None


MINILM = {}


def compute_minilm(text):
    """minilm-int (spec section 22) through minilm_int.py: integer numpy, no float."""
    if not MINILM:
        import os
        import minilm_int
        folder = os.environ.get("CFS_MODEL_DIR") or os.path.join(
            os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share"), "cfs", "models")
        path = os.path.join(folder, "minilm-int-v1.cfsm")
        data = open(path, "rb").read()
        model = minilm_int.read_model(path)
        MINILM.update(module=minilm_int, model=model, vocab=minilm_int.vocab_of(model),
                      hash=H(data).hex())
    mi, model = MINILM["module"], MINILM["model"]
    ids, vector = mi.embed(model, MINILM["vocab"], text)
    return {"model_file_blake3": MINILM["hash"],
            "model_id": f"minilm-int/2 all-MiniLM-L6-v2 blake3:{MINILM['hash']}",
            "ids": ids, "vector": vector}


def compute(case):
    ingest = compute_ingest(case)
    if ingest is not None:
        return ingest
    kind, inp = case["kind"], case["input"]
    if kind == "blake3_official":
        data = bytes(i % 251 for i in range(inp["input_len"]))
        return {"hash": H(data).hex(), "derive_key": DK(inp["context"], data).hex()}
    if kind == "content_hash":
        return {"hash": H(hx(inp["hex"])).hex()}
    if kind == "text_hash":
        return {"hash": H(inp["text"].encode("utf-8")).hex()}
    if kind == "model_hash":
        return {"hash": model_hash(inp["model_id"]).hex()}
    if kind == "profile":
        p = inp["profile"]
        return {"encoding": enc_profile(p).hex(), "hash": profile_hash(p).hex()}
    if kind == "empty_root":
        return {"root": EMPTY_ROOT.hex()}
    if kind == "empty_state":
        empty_table = table_root([])
        return {"table_root": empty_table.hex(),
                "state_root": state_root({t: empty_table for t in TABLES}).hex()}
    if kind == "state_root":
        return {"state_root": state_root({t: h32(inp["table_roots"][t]) for t in TABLES}).hex()}
    if kind == "uuid5":
        return {"uuid": str(uuid5(uuid.UUID(inp["namespace"]), inp["name"].encode("utf-8")))}
    if kind == "namespace":
        return {"uuid": str(NAMESPACE[inp["kind"]])}
    if kind == "path_id":
        return {"id": path_id(inp["path"])}
    if kind == "document_id":
        return {"id": document_id(h32(inp["content_hash"]), h32(inp["profile_hash"]))}
    if kind == "chunk_id":
        t = H(inp["text"].encode("utf-8"))
        return {"text_hash": t.hex(), "id": chunk_id(inp["document_id"], inp["sequence"], t)}
    if kind == "embedding_id":
        return {"id": embedding_id(inp["chunk_id"], h32(inp["model_hash"]))}
    if kind == "entity":
        t, f = inp["type"], inp["fields"]
        encoders = {
            "path_entry": (enc_path_entry, "LEAF_PATH"),
            "document": (enc_document, "LEAF_DOCUMENT"),
            "chunk": (enc_chunk, "LEAF_CHUNK"),
            "embedding": (enc_embedding, "LEAF_EMBEDDING"),
            "edge": (enc_edge, "LEAF_EDGE"),
            "state_record": (enc_record, None),
        }
        encode, ctx = encoders[t]
        raw = encode(f)
        out = {"encoding": raw.hex()}
        if ctx:
            out["leaf_hash"] = DK(CTX[ctx], raw).hex()
        return out
    if kind == "merkle":
        leaves = [h32(x) for x in inp["leaves"]]
        return {"root": merkle_root(leaves).hex(),
                "paths": [{"index": i, "path": merkle_path(leaves, i)}
                          for i in range(len(leaves))]}
    if kind == "bucket":
        return {"bucket": bucket_of(hx(inp["key"]))}
    if kind == "table":
        if "generated" in inp:
            entries = [generated_entry(i) for i in range(inp["generated"])]
        else:
            entries = [(hx(k), h32(leaf)) for k, leaf in inp["entries"]]
        return {"root": table_root(entries).hex(),
                "nonempty_buckets": len({bucket_of(k) for k, _ in entries})}
    if kind == "state":
        tables, _ = build_state(inp)
        roots = roots_of(tables)
        return {"table_roots": hex_roots(roots), "state_root": state_root(roots).hex(),
                "counts": {t: len(tables[t]) for t in TABLES}}
    if kind == "proof":
        tables, built = build_state(inp["state"])
        cid = built[inp["document"]][1][inp["sequence"]]["id"]
        p = prove(tables, cid)
        root = state_root(roots_of(tables))
        if not verify_proof(p, root):
            raise Invalid("own proof does not verify")
        return {"proof": p, "encoding": enc_chunk_proof(p).hex(), "state_root": root.hex()}
    if kind == "proof_check":
        return {"valid": verify_proof(inp["proof"], h32(inp["trusted_root"]))}
    raise Invalid(f"unknown case kind {kind}")


def main():
    here = Path(__file__).resolve().parent
    files = sorted(here.glob("*.json"))
    passed = failed = 0
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("spec_version") != SPEC_VERSION:
            print(f"FAIL {path.name}: spec_version {data.get('spec_version')}, "
                  f"verifier implements {SPEC_VERSION}")
            failed += 1
            continue
        for case in data["cases"]:
            try:
                actual = compute(case)
                ok = actual == case["expected"]
                detail = f"expected {case['expected']!r:.300} got {actual!r:.300}"
            except Exception as e:  # noqa: BLE001 - every failure is reported
                ok, detail = False, f"{type(e).__name__}: {e}"
            if ok:
                passed += 1
            else:
                failed += 1
                print(f"FAIL {path.name} / {case['kind']} / {case['name']}: {detail}")
    if not files:
        print("no vector files found")
        failed += 1
    print(f"test-vectors: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
