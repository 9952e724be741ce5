"""The same chunks and vectors in LanceDB and Chroma, measured as a user would: bulk load,
one-file update, query p50/p99 and recall@10, size on disk, memory of a query process.

    cd bench && ./target/release/export_chunks STORE_FILE DATA     # chunks + vectors of a cfs store
    ../.venv/bin/python vectordb_peers.py DATA WORK [--queries 200]

Installs lancedb and chromadb into the project's .venv with pip if they are missing.
Rows: the store's chunks (id, first path, text) with their stored i16 vectors as float32
(the same directions; a chunk whose vector is zero is left out, as cosine has no answer
for it). Queries: the vectors of `--queries` chunks spread over the rows, top 10; the
reference is the exact top 10 by cosine (numpy, float64). Each peer is loaded in one
process and queried in a fresh one (so its resident memory is a query process's). The
one-file update deletes a file's rows by path and adds them back, then queries for
one of them. Prints one JSON object per peer.
"""

import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = sys.executable


def ensure_packages():
    try:
        import chromadb  # noqa: F401
        import lancedb  # noqa: F401
    except ImportError:
        print("vectordb_peers: installing lancedb and chromadb with pip", file=sys.stderr)
        subprocess.check_call([PY, "-m", "pip", "install", "--quiet", "lancedb", "chromadb"])


def load_rows(data):
    import numpy as np

    meta = json.load(open(os.path.join(data, "meta.json")))
    vectors = np.fromfile(os.path.join(data, "vectors.i16"), dtype="<i2")
    vectors = vectors.reshape(meta["chunks"], meta["dim"]).astype(np.float32)
    rows = [json.loads(line) for line in open(os.path.join(data, "chunks.jsonl"))]
    keep = np.linalg.norm(vectors, axis=1) > 0
    rows = [r for r, k in zip(rows, keep) if k]
    return rows, vectors[keep]


def query_set(vectors, n):
    import numpy as np

    at = np.linspace(0, len(vectors) - 1, n).astype(int)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    exact = []
    for i in at:
        scores = unit.astype(np.float64) @ unit[i].astype(np.float64)
        exact.append(set(np.argsort(-scores, kind="stable")[:10].tolist()))
    return at, exact


def status_mb(field):
    """VmHWM (peak) or VmRSS of this process in MB (reset at exec, unlike ru_maxrss)."""
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def du(path):
    total = 0
    for d, _, files in os.walk(path):
        total += sum(os.path.getsize(os.path.join(d, f)) for f in files)
    return total


# LanceDB -------------------------------------------------------------------------


def lance_table(rows, vectors, lo=0, hi=None):
    import pyarrow as pa

    hi = len(rows) if hi is None else hi
    dim = vectors.shape[1]
    flat = pa.array(vectors[lo:hi].reshape(-1), type=pa.float32())
    return pa.table({
        "row": pa.array(range(lo, hi), type=pa.int64()),
        "id": [r["id"] for r in rows[lo:hi]],
        "path": [r["path"] for r in rows[lo:hi]],
        "text": [r["text"] for r in rows[lo:hi]],
        "vector": pa.FixedSizeListArray.from_arrays(flat, dim),
    })


def lance_load(rows, vectors, work):
    import lancedb

    db = lancedb.connect(work)
    t0 = time.perf_counter()
    tbl = db.create_table("chunks", data=lance_table(rows, vectors))
    t_rows = time.perf_counter() - t0
    tbl.create_fts_index("text")
    t_fts = time.perf_counter() - t0 - t_rows
    tbl.create_index(metric="cosine", vector_column_name="vector")
    t_vec = time.perf_counter() - t0 - t_rows - t_fts
    return {"rows_s": t_rows, "fts_index_s": t_fts, "vector_index_s": t_vec,
            "load_s": time.perf_counter() - t0}


def lance_query(vectors, queries, work, texts):
    import lancedb

    tbl = lancedb.connect(work).open_table("chunks")
    out = {}
    for name, make in [
        ("ivf_pq", lambda v: tbl.search(v).metric("cosine").limit(10)),
        ("ivf_pq_refine10", lambda v: tbl.search(v).metric("cosine").refine_factor(10).limit(10)),
        ("flat", lambda v: tbl.search(v).metric("cosine").bypass_vector_index().limit(10)),
    ]:
        times, found = [], []
        for i in queries:
            t = time.perf_counter()
            res = make(vectors[i]).select(["row"]).to_list()
            times.append(time.perf_counter() - t)
            found.append({r["row"] for r in res})
        out[name] = (times, found)
    times = []
    for i, q in zip(queries, texts):
        t = time.perf_counter()
        tbl.search(query_type="hybrid").vector(vectors[i]).text(q).limit(10).select(["row"]).to_list()
        times.append(time.perf_counter() - t)
    out["hybrid"] = (times, None)
    return out


def lance_update(rows, vectors, work, path):
    import lancedb

    tbl = lancedb.connect(work).open_table("chunks")
    at = [i for i, r in enumerate(rows) if r["path"] == path]
    t = time.perf_counter()
    tbl.delete("path = '" + path.replace("'", "''") + "'")
    tbl.add(lance_table(rows, vectors, at[0], at[-1] + 1))
    res = tbl.search(vectors[at[0]]).metric("cosine").limit(10).select(["row"]).to_list()
    return time.perf_counter() - t, len(at), bool(set(at) & {r["row"] for r in res})


# Chroma --------------------------------------------------------------------------


def chroma_collection(work, create=False):
    import chromadb

    client = chromadb.PersistentClient(path=work)
    if create:
        return client, client.create_collection(
            "chunks", configuration={"hnsw": {"space": "cosine"}}, embedding_function=None)
    return client, client.get_collection("chunks", embedding_function=None)


def chroma_add(col, client, rows, vectors, lo, hi):
    step = client.get_max_batch_size()
    for s in range(lo, hi, step):
        e = min(s + step, hi)
        col.add(ids=[str(i) for i in range(s, e)], embeddings=vectors[s:e],
                documents=[r["text"] for r in rows[s:e]],
                metadatas=[{"path": r["path"]} for r in rows[s:e]])


def chroma_load(rows, vectors, work):
    t0 = time.perf_counter()
    client, col = chroma_collection(work, create=True)
    chroma_add(col, client, rows, vectors, 0, len(rows))
    return {"load_s": time.perf_counter() - t0}


def chroma_query(vectors, queries, work, texts):
    _, col = chroma_collection(work)
    times, found = [], []
    for i in queries:
        t = time.perf_counter()
        res = col.query(query_embeddings=[vectors[i]], n_results=10, include=[])
        times.append(time.perf_counter() - t)
        found.append({int(x) for x in res["ids"][0]})
    return {"hnsw": (times, found)}


def chroma_update(rows, vectors, work, path):
    client, col = chroma_collection(work)
    at = [i for i, r in enumerate(rows) if r["path"] == path]
    t = time.perf_counter()
    col.delete(where={"path": path})
    chroma_add(col, client, rows, vectors, at[0], at[-1] + 1)
    res = col.query(query_embeddings=[vectors[at[0]]], n_results=10, include=[])
    return time.perf_counter() - t, len(at), bool({str(i) for i in at} & set(res["ids"][0]))


PEERS = {
    "lancedb": (lance_load, lance_query, lance_update),
    "chroma": (chroma_load, chroma_query, chroma_update),
}


def pct(times, p):
    s = sorted(times)
    return 1e3 * s[min(len(s) - 1, int(p * len(s)))]


def step(argv):
    """One step in this process: load, query or update; prints its JSON."""
    what, peer, data, work = argv[0], argv[1], argv[2], argv[3]
    if what == "query":
        print(json.dumps(measure_queries(peer, work)))
        return
    rows, vectors = load_rows(data)
    load, query, update = PEERS[peer]
    if what == "load":
        print(json.dumps(load(rows, vectors, work)))
        return
    if what == "update":
        # A file of typical size: the first of median chunk count.
        paths = {}
        for r in rows:
            paths[r["path"]] = paths.get(r["path"], 0) + 1
        median = sorted(paths.values())[len(paths) // 2]
        path = next(p for p, c in paths.items() if c == median)
        secs, n_rows, found = update(rows, vectors, work, path)
        print(json.dumps({"update_ms": 1e3 * secs, "rows": n_rows, "found": found}))
        return


def write_queries(data, work, n):
    """The query vectors, texts and exact answers, for query processes to read."""
    rows, vectors = load_rows(data)
    at, exact = query_set(vectors, n)
    words = [[w for w in rows[i]["text"].split() if w.isalpha() and len(w) > 3][:2] for i in at]
    q = {"rows": at.tolist(), "vectors": vectors[at].tolist(),
         "texts": [" ".join(w) or "parse" for w in words], "exact": [sorted(e) for e in exact]}
    json.dump(q, open(os.path.join(work, "queries.json"), "w"))


def measure_queries(peer, work):
    """Query p50/p99 and recall in a process that holds only the queries."""
    import numpy as np

    q = json.load(open(os.path.join(os.path.dirname(work), "queries.json")))
    vectors = {r: np.array(v, dtype=np.float32) for r, v in zip(q["rows"], q["vectors"])}
    exact = [set(e) for e in q["exact"]]
    rss_before = status_mb("VmRSS")
    out = {}
    for name, (times, found) in PEERS[peer][1](vectors, q["rows"], work, q["texts"]).items():
        r = {"p50_ms": pct(times, 0.5), "p99_ms": pct(times, 0.99)}
        if found is not None:
            r["recall_at_10"] = sum(len(f & e) for f, e in zip(found, exact)) / (10 * len(exact))
        out[name] = r
    out["peak_rss_mb"] = status_mb("VmHWM")
    out["rss_mb_before_open"] = rss_before
    return out


def run(what, peer, data, work, n):
    cmd = [PY, os.path.abspath(__file__), "--step", what, peer, data, work, str(n)]
    t = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1]), time.perf_counter() - t


def main():
    if sys.argv[1] == "--step":
        step(sys.argv[2:])
        return
    ensure_packages()
    data, work = sys.argv[1], sys.argv[2]
    n = int(sys.argv[sys.argv.index("--queries") + 1]) if "--queries" in sys.argv else 200
    os.makedirs(work, exist_ok=True)
    write_queries(data, work, n)
    for peer in sys.argv[sys.argv.index("--peers") + 1].split(",") if "--peers" in sys.argv else PEERS:
        dir_ = os.path.join(work, peer)
        shutil.rmtree(dir_, ignore_errors=True)
        loaded, _ = run("load", peer, data, dir_, n)
        size = du(dir_)
        queried, _ = run("query", peer, data, dir_, n)
        updated, _ = run("update", peer, data, dir_, n)
        print(json.dumps({"peer": peer, "load": loaded, "disk_bytes": size,
                          "query": queried, "update": updated}), flush=True)


if __name__ == "__main__":
    main()
