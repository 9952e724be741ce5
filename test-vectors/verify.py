#!/usr/bin/env python3
"""Independent verifier of the cfs test vectors.

Recomputes every case in test-vectors/*.json from docs/spec.md alone: it never calls
the Rust code. Needs the `blake3`, `regex` and `numpy` packages (scripts/python-env
installs them) and, for minilm.json, the model file scripts/fetch-model makes.
Prints one line per failure and ends with 'N passed, N failed'; exits non-zero on any
failure.
"""

import re
import hashlib
import json
import math
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
                "impl", "trait", "module", "struct", "enum", "macro", "section", "key", "rule",
                "table", "index", "trigger"]
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
    ("cc cpp cxx c++ hpp hh hxx h++ ipp tpp inl", "text/x-c++", "cpp"), ("java", "text/x-java", "java"),
    ("kt kts", "text/x-kotlin", "kotlin"), ("scala sc", "text/x-scala", "scala"),
    ("swift", "text/x-swift", "swift"), ("rb rake gemspec ru", "text/x-ruby", "ruby"),
    ("php", "text/x-php", "php"), ("cs", "text/x-csharp", "csharp"), ("lua", "text/x-lua", "lua"),
    ("zig", "text/x-zig", "zig"), ("hs", "text/x-haskell", "haskell"),
    ("ex exs", "text/x-elixir", "elixir"), ("erl hrl", "text/x-erlang", "erlang"),
    ("ml mli", "text/x-ocaml", "ocaml"), ("dart", "text/x-dart", "dart"), ("r", "text/x-r", "r"),
    ("jl", "text/x-julia", "julia"),
    ("m", "text/x-objc", "objc"), ("mm", "text/x-objc++", "objcpp"), ("sh bash zsh ksh bats", "text/x-shellscript", "shell"), ("fish", "text/x-fish", "fish"),
    ("ps1", "text/x-powershell", "powershell"), ("sql", "application/sql", "sql"),
    ("css scss sass less", "text/css", "css"), ("proto", "text/x-protobuf", "protobuf"),
    ("vue", "text/html", "vue"), ("svelte", "text/html", "svelte"),
    ("toml", "application/toml", "toml"), ("yaml yml", "application/yaml", "yaml"),
    ("tf tfvars hcl", "text/x-hcl", "hcl"),
]:
    _ext(names, mime, "code:" + lang)
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


CPP_LINE_STARTS = (b"namespace ", b"template<", b"template <", b"class ", b"enum class ",
                   b"enum struct ", b"public:",
                   b"private:", b"protected:", b"using namespace ")


OBJC_LINE_STARTS = (b"#import", b"@interface", b"@implementation", b"@protocol", b"@class")


def starts_a_line(head, starts):
    return any(line.lstrip(b" \t\r\x0c").startswith(starts) for line in head.split(b"\n"))


def looks_cpp(head):
    """A .h header is C++ when its head holds std:: or a line starting as C++ does."""
    if b"std::" in head:
        return True
    return any(line.lstrip(b" \t\r\x0c").startswith(CPP_LINE_STARTS)
               for line in head.split(b"\n"))


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
        header = path.lower().endswith(".h")
        if named[1] == "code:c" and header and starts_a_line(head, OBJC_LINE_STARTS):
            return {"mime_type": "text/x-objc", "format": "code:objc"}
        if named[1] == "code:c" and header and looks_cpp(head):
            return {"mime_type": "text/x-c++", "format": "code:cpp"}
        if named[0] == "text/x-objc" and not starts_a_line(head, OBJC_LINE_STARTS + (b"#include",)):
            return {"mime_type": "text/x-matlab", "format": "code:matlab"}
        return {"mime_type": named[0], "format": named[1]}
    if 0 in head:
        even = head[:len(head) & ~1]
        if utf16_without_bom(even) is None:
            return {"skipped": True}
    else:
        control = sum(1 for b in head if b < 0x20 and b not in (0x0A, 0x0D, 0x09, 0x0C))
        if control * 10 > len(head):
            return {"skipped": True}
    return by_shebang(head) or {"mime_type": "text/plain", "format": "text"}


SHEBANGS = {}
for names, mime, lang in [
    ("sh bash zsh ksh dash ash", "text/x-shellscript", "shell"),
    ("python pypy", "text/x-python", "python"), ("ruby", "text/x-ruby", "ruby"),
    ("node nodejs deno bun", "text/javascript", "javascript"), ("php", "text/x-php", "php"),
    ("lua luajit", "text/x-lua", "lua"), ("elixir", "text/x-elixir", "elixir"),
    ("perl", "text/x-perl", "perl"), ("fish", "text/x-fish", "fish"), ("Rscript", "text/x-r", "r"),
]:
    for n in names.split():
        SHEBANGS[n] = {"mime_type": mime, "format": "code:" + lang}


def by_shebang(head):
    """Section 14: a file without a known name is typed by its `#!` interpreter."""
    if not head.startswith(b"#!"):
        return None
    try:
        line = head[2:].split(b"\n", 1)[0].decode("utf-8")
    except UnicodeDecodeError:
        return None
    words = [w for w in re.split("[ \t\n\x0c\r]+", line) if w]
    if not words:
        return None
    program = words[0].rsplit("/", 1)[-1]
    if program == "env":
        rest = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        if not rest:
            return None
        program = rest[0]
    return SHEBANGS.get(program.rstrip("0123456789."))


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
    ranking = compute_ranking(case)
    if ranking is not None:
        return ranking
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


# Sections 21.2 and 21.4 to 21.10: ranking for code.
WHITE_SPACE = set("\t\n\x0b\x0c\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000") | {
    chr(c) for c in range(0x2000, 0x200B)}
STOP_WORDS = set("""a an and are as at be by can do does for from how i if in into is it its of on
or our should that the their them then there this to what when where which with why""".split())
SEPARATORS = ["::", "->", ".", "\\", "#"]


def split_white(text):
    out, cur = [], ""
    for c in text:
        if c in WHITE_SPACE:
            if cur:
                out.append(cur)
            cur = ""
        else:
            cur += c
    if cur:
        out.append(cur)
    return out


def lower(s):
    return "".join(c.lower() for c in s)


def utf8_len(s):
    return len(s.encode("utf-8"))


def compound_parts(compound):
    parts = []
    for piece in compound.split("-"):
        if piece.isascii():
            parts += identifier_parts(piece)
        else:
            for word in unicode_words(piece):
                parts += [lower(p) for p in word.split("_") if p]
    return parts


def text_words(text):
    """21.1: the parts of the compounds, each at most 64 bytes."""
    return [p for c in compounds(text) for p in compound_parts(c) if p and utf8_len(p) <= 64]


def segments_of(piece):
    if not piece:
        return None
    out, rest = [], piece
    while True:
        end = 0
        while end < len(rest) and is_word_char(rest[end]):
            end += 1
        if end == 0:
            return None
        out.append(rest[:end])
        rest = rest[end:]
        if not rest:
            return out
        sep = next((s for s in SEPARATORS if rest.startswith(s)), None)
        if sep is None:
            return None
        rest = rest[len(sep):]


def trim_piece(piece):
    """21.6: a piece without the characters at both ends that are not word characters."""
    while piece and not is_word_char(piece[0]):
        piece = piece[1:]
    while piece and not is_word_char(piece[-1]):
        piece = piece[:-1]
    return piece


def analyze(query):
    pieces = split_white(query)
    single = len(pieces) == 1
    idents, shaped = [], 0
    for i, raw in enumerate(pieces):
        piece = trim_piece(raw)
        segs = segments_of(piece)
        if segs is None:
            continue
        shaped += 1
        called = raw
        while called and not is_word_char(called[-1]) and called[-1] not in "()":
            called = called[:-1]
        camel = any((a.isascii() and (a.islower() or a.isdigit())) and (b.isascii() and b.isupper())
                    for a, b in zip(piece, piece[1:]))
        like = (len(segs) > 1 or "_" in piece.strip("_") or camel
                or (i > 0 and any(c.isupper() for c in piece)))
        if not (single or like or called.endswith("()")):
            continue
        key = lower(segs[-1])
        if utf8_len(key) > 64:
            continue
        ident = {"name": segs[-1], "key": key,
                 "qualifier": lower(segs[-2]) if len(segs) > 1 else None}
        if ident not in idents:
            idents.append(ident)
    intent = "name" if single and shaped == 1 else "mixed" if idents else "description"
    words = []
    for w in text_words(query):
        if w not in words:
            words.append(w)
    has = lambda names: any(w in names.split() for w in words)
    mentions = {"test": has("test tests testing spec specs unittest"),
                "example": has("example examples sample samples demo demos"),
                "docs": has("doc docs documentation readme guide install installation tutorial "
                             "changelog faq howto")}
    if intent != "name":
        words = [w for w in words if w not in STOP_WORDS]
    return {"intent": intent, "identifiers": idents, "words": words, "mentions": mentions}


def variants(word):
    n = len(word)
    if n < 4 or not all("a" <= c <= "z" for c in word):
        return []
    if word.endswith("ies") and n - 3 >= 2:
        out = [word[:-3] + "y"]
    elif word.endswith("ing") and n >= 6:
        out = [word[:-3], word[:-3] + "e"]
    elif (word.endswith("ed") or word.endswith("es")) and n >= 5:
        out = [word[:-2], word[:-1]]
    elif word.endswith("s") and not word.endswith("ss"):
        out = [word[:-1]]
    elif word.endswith("e"):
        out = [word + "s", word[:-1] + "ing", word + "d"]
    elif word.endswith("y"):
        out = [word[:-1] + "ies", word + "ing", word + "s"]
    else:
        out = [word + "s", word + "es", word + "ing", word + "ed"]
    kept = []
    for v in out:
        if len(v) >= 3 and v != word and v not in kept:
            kept.append(v)
    return kept


# 21.7: file roles.
R_VENDORED = set("vendor vendors vendored third_party third-party thirdparty 3rdparty external "
                 "externals deps node_modules bower_components pods carthage".split())
R_GENERATED = set("generated __generated__ autogenerated".split())
R_TEST = set("test tests __tests__ testing testdata test-data fixtures __mocks__ spec specs e2e "
             "bench benches benchmark benchmarks".split())
R_EXAMPLE = set("example examples sample samples demo demos docs_src playground tutorial "
                "tutorials cookbook".split())
R_DOCS = set("docs doc documentation".split())
R_CONFIG_DIRS = set(".github .circleci .gitlab .vscode".split())
R_CONFIG_NAMES = set("""cargo.toml cargo.lock package.json package-lock.json yarn.lock
pnpm-lock.yaml makefile gnumakefile cmakelists.txt dockerfile containerfile build.gradle
build.gradle.kts settings.gradle settings.gradle.kts gradle.properties pom.xml gemfile
gemfile.lock rakefile composer.json composer.lock package.swift pyproject.toml setup.cfg
go.mod go.sum build.rs""".split())
R_CONFIG_EXTS = set("toml yaml yml json jsonc ini cfg conf properties env lock xml csproj sln "
                    "props targets gradle cmake".split())
ROLES = ["source", "declaration", "config", "docs", "example", "test", "generated", "vendored"]


def path_role(path):
    dirs, _, name = path.rpartition("/")
    folders_raw = [d for d in dirs.split("/") if d]
    folders = [ascii_lower(d) for d in folders_raw]
    low = ascii_lower(name)
    comps = low.split(".")
    ext = comps[-1] if len(comps) > 1 else ""
    middle = comps[1:-1]
    in_dirs = lambda s: any(f in s for f in folders)
    if in_dirs(R_VENDORED):
        return "vendored"
    if (in_dirs(R_GENERATED) or any(m in ("pb", "generated", "g", "freezed", "designer") for m in middle)
            or (middle and middle[-1] == "min" and ext in ("js", "mjs", "cjs", "css"))
            or comps[0].endswith("_pb2") or comps[0].endswith("_pb2_grpc")):
        return "generated"
    if (middle and middle[-1] == "d" and ext in ("ts", "mts", "cts")) or ext in (
        "pyi", "mli", "rei", "fsi", "hs-boot", "hsig"):
        return "declaration"

    def edge_word(d, words):
        pieces = d.replace("-", ".").replace(" ", ".").split(".")
        all_ = [p for piece in pieces for p in identifier_parts(piece)]
        return len(all_) >= 2 and (all_[0] in words or all_[-1] in words)

    def test_dir(d):
        parts = identifier_parts(d.rsplit(".", 1)[-1])
        least = 1 if "." in d else 2
        return (len(parts) >= least and parts[-1] in ("test", "tests")) or edge_word(
            d, ("test", "tests"))

    def test_name():
        first = name.split(".")[0]
        if any(m in ("test", "tests", "spec", "specs") for m in middle):
            return True
        if ascii_lower(first) == "conftest":
            return True
        parts = identifier_parts(first)
        scripted = ext in ("rb", "js", "mjs", "cjs", "ts", "jsx", "tsx")
        return len(parts) > 1 and (parts[0] in ("test", "tests") or parts[-1] in ("test", "tests")
                                   or (scripted and parts[-1] in ("spec", "specs")))

    if in_dirs(R_TEST) or any(test_dir(d) for d in dirs.split("/")) or test_name():
        return "test"
    named = by_name(path)
    is_code = (named is not None and named[1].startswith("code:")
               and named[1] not in ("code:yaml", "code:toml"))
    example_words = ("example", "examples", "sample", "samples", "demo", "demos")
    if (in_dirs(R_EXAMPLE) or any(edge_word(d, example_words) for d in dirs.split("/"))
            or (in_dirs(R_DOCS) and is_code)):
        return "example"
    if in_dirs(R_DOCS):
        return "docs"
    if (low in R_CONFIG_NAMES or in_dirs(R_CONFIG_DIRS) or ext in R_CONFIG_EXTS
            or (low.startswith("tsconfig") and ext == "json")):
        return "config"
    return "source" if is_code else "docs"


MARKERS = ["@generated", "DO NOT EDIT", "Code generated by", "<auto-generated",
           "This file is automatically generated", "This file was automatically generated",
           "This file is generated", "This file was generated",
           "A Bison parser, made by GNU Bison", "A lexical scanner generated by flex",
           "Generated by re2c", "C code produced by gperf"]


def markers_of(text, code):
    raw = text.encode("utf-8")[:1024]
    head = raw.decode("utf-8", errors="ignore")  # cut down to a character boundary
    n = utf8_len(head)
    lines = head.count("\n") + 1
    return {"generated": any(m in head for m in MARKERS),
            "minified": bool(code and n >= 1000 and n // lines >= 300)}


def document_role(paths, bits):
    best = min((path_role(p) for p in paths), key=ROLES.index, default="source")
    if bits & 3 and best != "vendored":
        return "generated"
    if bits & 4 and best == "source":
        return "declaration"
    return best


HEADER_EXTS = ("h", "hh", "hpp", "hxx")
IMPLEMENTATION_EXTS = ("c", "cc", "cpp", "cxx", "m", "mm")


def implementations_of(path):
    name = path.rsplit("/", 1)[-1]
    if "." not in name or name.startswith(".") and name.count(".") == 1:
        return []
    stem, ext = path.rsplit(".", 1)
    if ascii_lower(ext) not in HEADER_EXTS:
        return []
    return [stem + "." + x for x in IMPLEMENTATION_EXTS]


def beside_implementation(paths, state):
    source = [p for p in paths if path_role(p) == "source"]
    return bool(source) and all(any(i in state for i in implementations_of(p)) for p in source)


# 21.8: the symbol index.
def name_head(name, kind):
    if kind == "impl" and " for " in name:
        name = name[name.rfind(" for ") + 5:]
    name = name.lstrip("&* ")
    cut = next((i for i, c in enumerate(name) if c in "<([" or c in WHITE_SPACE), len(name))
    name = name[:cut]
    starts = [0]
    if "::" in name:
        starts.append(name.rfind("::") + 2)
    dot = max(name.rfind("."), name.rfind("\\"))
    if dot >= 0:
        starts.append(dot + 1)
    name = name[max(starts):].lstrip("$")
    end = 0
    while end < len(name) and is_word_char(name[end]):
        end += 1
    return name[:end]


def name_key(name, kind):
    key = lower(name_head(name, kind))
    return key if key and utf8_len(key) <= 64 else None


MODIFIERS = set("""abstract async const data declare default export extern final fileprivate
implicit inline internal lazy mutating native open override partial private protected pub
public readonly sealed static strictfp suspend synchronized typedef unsafe virtual volatile
constexpr explicit operator""".split())
KEYWORDS = {"class": "class", "struct": "struct", "interface": "interface", "trait": "trait",
            "enum": "enum", "protocol": "interface", "object": "class", "record": "struct",
            "union": "struct", "type": "type", "typealias": "type", "def": "function",
            "fn": "function", "fun": "function", "func": "function", "function": "function",
            "sub": "function", "macro": "macro", "macro_rules": "macro", "define": "macro",
            "module": "module", "namespace": "module", "package": "module"}
STATEMENT_WORDS = set("""return if else while for switch case new throw throws delete sizeof
await yield do goto typeof assert raise not and or""".split())
KIND_TAGS = SYMBOL_KINDS


def word_at(s):
    end = 0
    while end < len(s) and is_word_char(s[end]):
        end += 1
    return (s[:end], s[end:]) if end else None


def lstrip_white(s):
    i = 0
    while i < len(s) and s[i] in WHITE_SPACE:
        i += 1
    return s[i:]


def assigned_function(line):
    if "=" not in line:
        return None
    left, right = line.split("=", 1)
    right = lstrip_white(right)
    if right.startswith("=") or right.startswith(">"):
        return None
    if right.startswith("async "):
        right = lstrip_white(right[len("async "):])
    is_function = ((right.startswith("function") and not (len(right) > 8 and is_word_char(right[8])))
                   or (right.startswith("(") and "=>" in right))
    left = left.rstrip("".join(WHITE_SPACE))
    for p in ("const ", "let ", "var "):
        if left.startswith(p):
            left = left[len(p):]
            break
    left = lstrip_white(left)
    valid = lambda seg: seg != "" and all(is_word_char(c) or c == "$" for c in seg)
    segs = left.split(".")
    if not is_function or not all(valid(s) for s in segs):
        return None
    name, before = segs[-1], segs[:-1]
    if name in ("exports", "prototype"):
        return None
    q = next((b for b in reversed(before) if b not in ("prototype", "exports", "module", "this", "self")), None)
    return {"name": name, "qualifier": q, "kind": "function"}


def keyword_name(after, kind):
    s = lstrip_white(after)
    if s.startswith("("):
        close = s.find(")")
        if close < 0:
            return None
        s = lstrip_white(s[close + 1:])
    s = s.lstrip("*& ")
    segs, rest = [], s
    while True:
        w = word_at(rest)
        if not w:
            return None
        segs.append(w[0])
        after_word = w[1]
        sep = next((x for x in (".", "::") if after_word.startswith(x)), None)
        if sep is None:
            break
        rest = after_word[len(sep):]
    q = segs[-2] if len(segs) > 1 and segs[-2] != "self" else None
    return {"name": segs[-1], "qualifier": q, "kind": kind}


def signature_name(line):
    open_at = line.find("(")
    if open_at < 0:
        return None
    head = line[:open_at].rstrip("".join(WHITE_SPACE))
    if not all(is_word_char(c) or c in " \t*&:<>[]?,." for c in head):
        return None
    first = word_at(head)
    if not first or first[0] in STATEMENT_WORDS:
        return None
    start = len(head)
    while start > 0 and (is_word_char(head[start - 1]) or head[start - 1] == ":"):
        start -= 1
    path = head[start:]
    if start == 0 or not path or head[:start].endswith("."):
        return None
    segs = [s for s in path.split("::") if s]
    if not segs:
        return None
    name = segs[-1]
    if not (name[0].isalpha() or name[0] == "_"):
        return None
    return {"name": name, "qualifier": segs[-2] if len(segs) > 1 else None, "kind": "function"}


def declared(line):
    line = lstrip_white(line)
    if line.startswith("#define"):
        w = word_at(lstrip_white(line[len("#define"):]))
        return {"name": w[0], "qualifier": None, "kind": "macro"} if w else None
    if not line or not (line[0].isascii() and (line[0].isalpha() or line[0] in "_$")):
        return None
    d = assigned_function(line)
    if d:
        return d
    rest = line
    while True:
        w = word_at(rest)
        if not w:
            return None
        word, after = w
        if word in KEYWORDS:
            if after.startswith("!"):
                after = after[1:]
            return keyword_name(after, KEYWORDS[word])
        if word not in MODIFIERS:
            return signature_name(rest)
        if after.startswith("("):
            close = after.find(")")
            if close < 0:
                return None
            after = after[close + 1:]
        rest = lstrip_white(after)


def text_lines(text):
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [l[:-1] if l.endswith("\r") else l for l in lines]


CONFIG_OR_STYLE = ("yaml", "toml", "hcl", "css")


def definition_terms(symbol, window, text, language=None):
    out = []
    if window > 0:
        return out
    own = name_key(symbol[1], symbol[0]) if symbol else None
    if own:
        out.append([f"\x01{own}", 1])
    if language in CONFIG_OR_STYLE:
        return out
    for line in text_lines(text):
        if utf8_len(line) > 400:
            continue
        d = declared(line)
        if not d:
            continue
        key = name_key(d["name"], None)
        if key is None or key == own:
            continue
        value = KIND_TAGS.index(d["kind"]) + 1
        q = name_key(d["qualifier"], None) if d["qualifier"] is not None else own
        if q is not None:
            out.append([f"\x02{q}::{key}", value])
        out.append([f"\x02{key}", value])
    out.sort(key=lambda t: t[0].encode("utf-8"))
    kept = []
    for t in out:
        if not kept or kept[-1][0] != t[0]:
            kept.append(t)
    return kept


def match_level(symbol, path, ident, own, qualified):
    fname = path.rsplit("/", 1)[-1]
    stem_key = name_key(fname.split(".")[0], None)
    q = ident["qualifier"]
    q_is_stem = q is not None and stem_key == q
    if not own:
        if q is not None:
            return 5 if qualified or q_is_stem else 2
        return 3
    kind, name, parent = symbol
    if q is not None:
        parent_key = name_key(parent, None) if parent is not None else None
        return 6 if parent_key == q or q_is_stem else 3
    return 5 if name_head(name, kind) == ident["name"] else 4


# 21.9 and 21.10: paths and files as evidence.
def file_words(path):
    parts = [p for p in path.split("/") if p]
    name = parts.pop() if parts else ""
    stem = name.lstrip(".").split(".")[0]
    if ascii_lower(stem) in ("mod", "index", "__init__") and parts:
        stem = parts.pop()
    return text_words(stem), (text_words(parts[-1]) if parts else [])


def word_names(q, w):
    if q == w:
        return True
    short, long_ = (q, w) if utf8_len(q) <= utf8_len(w) else (w, q)
    if not long_.startswith(short):
        return False
    rest = long_[len(short):]
    return utf8_len(short) >= 4 or (utf8_len(short) >= 3 and rest in ("s", "es"))


def path_points(words, path, intent):
    stem, folder = file_words(path)
    named = lambda w: any(word_names(q, w) for q in words)
    share = lambda lst, scale: scale * sum(1 for w in lst if named(w)) // len(lst) if lst else 0
    points = share(stem, 1024)
    if intent == "name" and points > 0:
        used = sum(1 for q in words if any(word_names(q, w) for w in stem))
        points = points * used // max(len(words), 1)
    return {"stem": stem, "folder": folder, "points": points + share(folder, 256)}


def named_after(path, name):
    # 21.8: the file's stem words are not none and a word of the name names each.
    stem, _ = file_words(path)
    words = text_words(name)
    return bool(stem) and all(any(word_names(q, w) for q in words) for w in stem)


def coverage_points(weights, mask):
    ws = weights[:64]
    total = sum(ws)
    got = sum(w for b, w in enumerate(ws) if mask >> b & 1)
    return got * 1024 // total if total else 0


def file_vector_score(vectors, q):
    if not vectors:
        return None
    s = [sum(v[j] for v in vectors) for j in range(len(q))]
    dot = sum(a * b for a, b in zip(s, q))
    norm = math.isqrt(sum(a * a for a in s))
    if norm == 0:
        return None
    num = dot << 15
    quotient = abs(num) // norm
    return str(quotient if num >= 0 else -quotient)


# 21.4: text, vectors, definitions, path, coverage, file vector, file text.
WEIGHTS = {"name": (100, 25, 300, 100, 0, 0, 0), "mixed": (100, 100, 150, 50, 100, 100, 0),
           "description": (100, 100, 0, 50, 100, 100, 100)}
PRIORS = (100, 60, 20, 20, 25, 25, 15, 15)
FILE_BONUS_CAP = 15  # 21.4: a file's bonus for further chunks, in percent of its best


def rrf(rank):
    return (1 << 32) // (10 + rank)


def tf_part(tf, dl, n, total):
    # 21.2: floor((22 tf T) * 2^16 / (10 tf T + 3 T + 9 dl N)); 0 for an empty collection.
    if total == 0 or n == 0:
        return 0
    return (22 * tf * total << 16) // (10 * tf * total + 3 * total + 9 * dl * n)


def file_text_score(inp):
    """21.10: BM25 of the whole file, its counts and length summed over its chunks."""
    n, total, dl = inp["documents"], inp["tokens"], inp["length"]
    score = sum(((t["idf"] * tf_part(c, dl, n, total)) >> t["shift"]) + 1
                for t, c in zip(inp["terms"], inp["counts"]) if c > 0)
    return str(score) if score > 0 else None


def meaning_below_words(chunks):
    """21.4: when only chunks of demoted roles say the query's words, a chunk found by
    meaning alone scores at most each of them with a better vector rank."""
    if any(c["words"] and not c["demoted"] for c in chunks):
        return
    said = [c for c in chunks if c["words"] and c["vector_rank"] is not None]
    for c in chunks:
        if c["words"] or c["vector_rank"] is None:
            continue
        caps = [s["chunk"] for s in said if s["vector_rank"] < c["vector_rank"]]
        if caps and c["chunk"] > min(caps):
            c["chunk"] = c["score"] = min(caps)
            c["capped"] = True


def rank_case(inp):
    intent = inp["intent"]
    text_w, vec_w, def_w, path_w, cov_w, fv_w, ft_w = WEIGHTS[intent]
    if inp.get("vector_weight") is not None:
        vec_w = inp["vector_weight"]
    mentions = inp.get("mentions", {})
    docs = []
    for d in inp["docs"]:
        role = document_role(d["paths"], d.get("markers", 0))
        named = {"test": mentions.get("test"), "example": mentions.get("example"),
                 "docs": mentions.get("docs")}.get(role, False)
        prior = 100 if named else PRIORS[ROLES.index(role)]
        e = d["evidence"]
        bonus = ((rrf(1) * path_w // 100) * e.get("path", 0) // 1024
                 + (rrf(1) * cov_w // 100) * e.get("coverage", 0) // 1024
                 + (rrf(e["vector_rank"]) * fv_w // 100 if e.get("vector_rank") is not None else 0)
                 + (rrf(e["text_rank"]) * ft_w // 100 if e.get("text_rank") is not None else 0))
        docs.append({"role": role, "prior": prior, "bonus": bonus})
    inf = float("inf")
    chunks = []
    for c in inp["chunks"]:
        fused = 0
        if c["text"]:
            fused += rrf(c["text"][1]) * text_w // 100
        if c["vector"]:
            fused += rrf(c["vector"][1]) * vec_w // 100
        if c["definition"]:
            rank, level = c["definition"]
            fused += (rrf(rank) * def_w // 100) * level // 6
        d = docs[c["doc"]]
        chunk = (fused + d["bonus"]) * d["prior"] // 100
        tie = (c["text"][1] if c["text"] else inf, c["vector"][1] if c["vector"] else inf,
               c["definition"][0] if c["definition"] else inf, uuid.UUID(c["id"]).bytes)
        window = not c.get("symbol", False) or c.get("continued", False)
        chunks.append({"id": c["id"], "doc": c["doc"], "fused": fused, "chunk": chunk,
                       "score": chunk, "tie": tie, "window": window,
                       "words": bool(c["text"] or c["definition"]), "demoted": d["prior"] < 100,
                       "vector_rank": c["vector"][1] if c["vector"] else None})
    meaning_below_words(chunks)
    files = []
    for di in sorted({c["doc"] for c in chunks}):
        mine = sorted((c for c in chunks if c["doc"] == di), key=lambda c: (-c["chunk"], c["tie"]))
        best = mine[0]["chunk"]
        more = sum(c["chunk"] >> j for j, c in enumerate(mine) if j >= 1)
        score = best + min(more, 0 if mine[0].get("capped") else best * FILE_BONUS_CAP // 100)
        windows = 0
        for c in mine:
            if c["window"]:
                c["score"] = c["chunk"] >> windows
                windows += 1
        files.append({"doc": di, "score": score, "chunks": mine})
    files.sort(key=lambda f: (-f["score"], f["chunks"][0]["tie"]))
    order = sorted(chunks, key=lambda c: (-c["score"], c["tie"]))
    return {"files": [{"doc": f["doc"], "role": docs[f["doc"]]["role"], "score": str(f["score"]),
                       "chunks": [{"id": c["id"], "fused": str(c["fused"]), "chunk": str(c["chunk"]),
                                   "score": str(c["score"])} for c in f["chunks"]]}
                      for f in files],
            "chunk_order": [c["id"] for c in order]}


def compute_ranking(case):
    kind, inp = case["kind"], case["input"]
    if kind == "query":
        return analyze(inp["text"])
    if kind == "variants":
        return {"variants": variants(inp["word"])}
    if kind == "role":
        return {"role": path_role(inp["path"])}
    if kind == "markers":
        return markers_of(inp["text"], inp["code"])
    if kind == "document_role":
        return {"role": document_role(inp["paths"], inp["markers"])}
    if kind == "role_in_state":
        beside = beside_implementation(inp["paths"], set(inp["state"]))
        return {"beside": beside, "role": document_role(inp["paths"], 4 if beside else 0)}
    if kind == "name_key":
        return {"head": name_head(inp["name"], inp["symbol_kind"]),
                "key": name_key(inp["name"], inp["symbol_kind"])}
    if kind == "declared":
        return declared(inp["line"]) or {"name": None}
    if kind == "definition_terms":
        return {"terms": definition_terms(inp["symbol"], inp["window"], inp["text"],
                                           inp.get("language"))}
    if kind == "match_level":
        ident = analyze(inp["query"])["identifiers"][0]
        return {"level": match_level(inp["symbol"], inp["path"], ident, inp["own"], inp["qualified"]),
                "named": named_after(inp["path"], ident["name"])}
    if kind == "path_points":
        return path_points(inp["words"], inp["path"], inp["intent"])
    if kind == "coverage":
        return {"points": coverage_points(inp["weights"], inp["mask"])}
    if kind == "file_vector":
        return {"score": file_vector_score(inp["vectors"], inp["query"])}
    if kind == "file_text":
        return {"score": file_text_score(inp)}
    if kind == "rank":
        return rank_case(inp)
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
