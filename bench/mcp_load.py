"""Load test of `cfs serve --mcp`: several server processes on one store, each driven by
its own client process (the official Python MCP client) issuing searches, while a
writer commits edits with `cfs refresh` in another process. With `--http`, one server
(`--http 127.0.0.1:0`) serves every client, a session each, over HTTP.

    bench/mcp_load.py CFS TREE [--clients 4] [--searches 1000] [--edits 100]
                      [--sample 24] [--embedder minilm-int|hash] [--http]

TREE is copied first (the edits go to the copy). Prints one JSON object: search
latency p50/p99 per client and overall (client-side, one call at a time), the writer's
commits, how many distinct roots the answers came from, whether every answer's root is
one the writer (or the first index) committed, and a sample of answers recomputed
exactly: the base store is brought to that answer's root by replaying the edits in
order (the replayed root must equal the committed one), then `cfs search` with the same
query must return the same chunks in the same order.

Needs the project's .venv (scripts/python-env installs `mcp`).
"""

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import random
import re
import shutil
import subprocess
import tempfile
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


def cfs(binary, *args, cwd=None):
    out = subprocess.run([binary, *args], cwd=cwd, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"cfs {' '.join(args)}: {out.stderr}")
    return json.loads(out.stdout) if "--json" in args else out.stdout


def text_files(tree, limit):
    """Relative paths of up to `limit` text files to edit, in a fixed order."""
    found = []
    for dirpath, dirs, files in os.walk(tree):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for f in sorted(files):
            if f.endswith((".rs", ".md", ".py", ".txt")):
                found.append(os.path.relpath(os.path.join(dirpath, f), tree))
    random.Random(7).shuffle(found)
    return found[:limit]


def queries_of(tree, files, n):
    """`n` queries: identifiers and word pairs taken from the tree's files."""
    rng = random.Random(11)
    words = []
    for rel in files:
        with open(os.path.join(tree, rel), errors="replace") as f:
            words += re.findall(r"[A-Za-z_][A-Za-z0-9_]{3,}", f.read())
    qs = []
    while len(qs) < n and words:
        qs.append(rng.choice(words) if rng.random() < 0.5
                  else f"{rng.choice(words)} {rng.choice(words)}")
    return qs


def edit(tree, files, i):
    """The i-th edit: appends a line naming it to one of the files."""
    rel = files[i % len(files)]
    with open(os.path.join(tree, rel), "a") as f:
        f.write(f"\nload edit {i} marker{i}\n")
    return rel


def connect(binary, tree, url):
    """The client's transport: its own server on stdio, or the shared one at `url`."""
    if url:
        return streamable_http_client(url)
    return stdio_client(StdioServerParameters(command=binary, args=["serve", "--mcp", tree]))


async def drive(binary, tree, url, queries, searches, k, start, out):
    answers = []
    async with connect(binary, tree, url) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            await session.call_tool("search", {"query": "warm up", "k": k})
            start.wait()
            for j in range(searches):
                q = queries[j % len(queries)]
                t0 = time.perf_counter()
                r = await session.call_tool("search", {"query": q, "k": k})
                ms = (time.perf_counter() - t0) * 1e3
                a = r.structured_content
                if r.is_error:
                    raise RuntimeError(f"search {q!r}: {r.content}")
                answers.append((ms, a["root"], j % len(queries),
                                [x["chunk_id"] for x in a["results"]]))
    out.put(answers)


def client(binary, tree, url, queries, searches, k, start, out):
    asyncio.run(drive(binary, tree, url, queries, searches, k, start, out))


def pct(xs, p):
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(p / 100 * len(xs)))], 2)


def recompute(binary, base, files, roots, sample, queries, k):
    """Brings a copy of the base tree and store forward edit by edit; at each sampled
    root, checks the replayed root and compares `cfs search` with the served answer."""
    checked, equal, root_mismatch = 0, 0, 0
    by_edit = {}
    for (_, root, qi, ids) in sample:
        by_edit.setdefault(roots.index(root), []).append((qi, ids))
    replay = base + "-replay"
    shutil.copytree(base, replay)
    for n in range(len(roots)):
        if n > 0:
            rel = edit(replay, files, n - 1)
            got = cfs(binary, "refresh", rel, "--json", cwd=replay)["state_root"]
            root_mismatch += got != roots[n]
        for qi, ids in by_edit.get(n, []):
            hits = cfs(binary, "search", queries[qi], "-k", str(k), "--json", cwd=replay)
            checked += 1
            equal += [h["chunk_id"] for h in hits] == ids
    return checked, equal, root_mismatch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cfs")
    ap.add_argument("tree")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--searches", type=int, default=1000)
    ap.add_argument("--edits", type=int, default=100)
    ap.add_argument("--sample", type=int, default=24)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--embedder", default="minilm-int")
    ap.add_argument("--http", action="store_true")
    args = ap.parse_args()
    binary = os.path.abspath(args.cfs)
    work = tempfile.mkdtemp(prefix="cfs-mcp-load-")
    tree = os.path.join(work, "tree")
    shutil.copytree(args.tree, tree, ignore=shutil.ignore_patterns(".cfs", ".git", "target"))
    first = cfs(binary, "index", tree, "--embedder", args.embedder, "--json")
    chunks = cfs(binary, "status", "--json", cwd=tree)["chunks"]
    base = os.path.join(work, "base")
    shutil.copytree(tree, base)
    files = text_files(tree, 20)
    queries = queries_of(tree, files, 200)

    server, url = None, None
    if args.http:
        server = subprocess.Popen([binary, "serve", "--mcp", tree, "--http", "127.0.0.1:0"],
                                  stderr=subprocess.PIPE, text=True)
        url = re.search(r"http://\S+/mcp", server.stderr.readline()).group(0)
    start, out = mp.Event(), mp.Queue()
    procs = [mp.Process(target=client, args=(binary, tree, url, queries, args.searches,
                                             args.k, start, out))
             for _ in range(args.clients)]
    for p in procs:
        p.start()
    time.sleep(3)  # servers up and warmed (each waits on `start` after its first search)
    roots = [first["state_root"]]
    start.set()
    t0 = time.perf_counter()
    for i in range(args.edits):
        rel = edit(tree, files, i)
        roots.append(cfs(binary, "refresh", rel, "--json", cwd=tree)["state_root"])
    writer_s = time.perf_counter() - t0
    results = [out.get() for _ in procs]
    for p in procs:
        p.join()
    wall_s = time.perf_counter() - t0
    if server:
        server.send_signal(2)
        server.wait(timeout=30)

    flat = [a for r in results for a in r]
    committed = set(roots)
    sample = random.Random(5).sample(flat, min(args.sample, len(flat)))
    checked, equal, root_mismatch = recompute(binary, base, files, roots, sample, queries,
                                              args.k)
    print(json.dumps({
        "chunks": chunks,
        "embedder": args.embedder,
        "clients": args.clients,
        "transport": "http" if args.http else "stdio",
        "searches_per_client": args.searches,
        "p50_ms": pct([a[0] for a in flat], 50),
        "p99_ms": pct([a[0] for a in flat], 99),
        "per_client_p50_p99_ms": [(pct([a[0] for a in r], 50), pct([a[0] for a in r], 99))
                                  for r in results],
        "edits_committed": len(roots) - 1,
        "writer_s": round(writer_s, 2),
        "wall_s": round(wall_s, 2),
        "distinct_roots_answered": len({a[1] for a in flat}),
        "answers_at_a_committed_root": sum(a[1] in committed for a in flat),
        "answers": len(flat),
        "sample_recomputed": checked,
        "sample_equal": equal,
        "replayed_roots_differing": root_mismatch,
    }, indent=1))
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
