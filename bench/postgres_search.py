"""Search from PostgreSQL under load (docs/benchmarks.md, "PostgreSQL"): query latency
across 20 repositories on the primary and on the standby, several clients at once.

    bench/postgres_search.py TREE CFS [--embedder hash|minilm-int] [--clients 4]
                             [--rounds 2] [--repos 20] [--stores DIR]
                             [--tool search|context]

TREE holds projects (folders); their largest subfolders (by bytes of files, at most
`--repos`) become repositories of their own, each indexed with EMBEDDER and published
into a new database of a loopback primary and standby (scripts/pg, in a temporary
folder; `--stores DIR` keeps the indexed copies there and reuses them). The queries are the labelled suite's (bench/suite/queries) for the projects of
TREE, as written. Then, on the primary and then on the standby, `--clients` client
processes each drive their own `cfs serve --mcp --db` (the official Python MCP client),
one call at a time, every query `--rounds` times in its own order after one unmeasured
pass: once searching every repository (k 10), once searching the one repository that
holds the most of the query's relevant files. Prints one JSON object: repositories and
chunks, publish times, storage per chunk, and latency p50/p99 (ms, client-side) per
target and scope, with the searches a second. `--tool context` calls the `context`
tool (4,000 tokens) instead of `search`.

Needs the project's .venv (scripts/python-env installs `mcp`).
"""

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(*args, cwd=None):
    out = subprocess.run(list(args), cwd=cwd, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {out.stderr}")
    return out.stdout


def cfs(binary, *args, cwd=None):
    out = run(binary, *args, cwd=cwd)
    return json.loads(out) if "--json" in args else out


def with_db(url, name):
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(path="/" + name))


def size_of(path):
    total = 0
    for dirpath, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        total += sum(os.path.getsize(os.path.join(dirpath, f)) for f in files
                     if os.path.isfile(os.path.join(dirpath, f)))
    return total


def repositories(tree, n):
    """(name, project, subfolder path) of the `n` largest subfolders of TREE's projects."""
    found = []
    for project in sorted(os.listdir(tree)):
        top = os.path.join(tree, project)
        if project.startswith(".") or not os.path.isdir(top):
            continue
        for sub in sorted(os.listdir(top)):
            path = os.path.join(top, sub)
            if not sub.startswith(".") and os.path.isdir(path):
                found.append((size_of(path), f"{project}-{sub}", project, path))
    found.sort(key=lambda f: (-f[0], f[1]))
    return [(name, project, path) for _, name, project, path in found[:n]]


def suite_queries(projects, repos):
    """The suite's queries of `projects`, each with the repository holding the most of
    its relevant files (None when no repository holds one)."""
    out = []
    for project in sorted(projects):
        file = os.path.join(ROOT, "bench", "suite", "queries", f"{project}.jsonl")
        if not os.path.exists(file):
            continue
        for line in open(file):
            q = json.loads(line)
            best, most = None, 0
            for name, proj, path in repos:
                if proj != project:
                    continue
                sub = os.path.basename(path) + "/"
                held = sum(1 for rel in q["relevant"] if rel.startswith(sub))
                if held > most:
                    best, most = name, held
            out.append((q["query"], best))
    return out


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


async def client_session(cfs_bin, url, work, rounds, scope, seed, tool):
    params = StdioServerParameters(command=cfs_bin, args=["serve", "--mcp", "--db", url])
    latencies = []
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            order = list(work)
            for r in range(rounds + 1):
                random.Random(seed * 100 + r).shuffle(order)
                for query, repo in order:
                    args = {"query": query, "k": 10}
                    if tool == "context":
                        args["tokens"] = 4000
                    if scope == "one":
                        args["repos"] = [repo]
                    started = time.perf_counter()
                    answer = await session.call_tool(tool, args)
                    elapsed = time.perf_counter() - started
                    if answer.is_error:
                        raise RuntimeError(f"{tool} {args}: {answer.content}")
                    if r > 0:
                        latencies.append(elapsed * 1e3)
    return latencies


def client(args):
    cfs_bin, url, work, rounds, scope, seed, tool, out = args
    lat = asyncio.run(client_session(cfs_bin, url, work, rounds, scope, seed, tool))
    out.put(lat)


def load(cfs_bin, url, queries, clients, rounds, scope, tool):
    work = [(q, r) for q, r in queries if scope == "all" or r is not None]
    out = mp.Queue()
    procs = [mp.Process(target=client,
                        args=((cfs_bin, url, work, rounds, scope, i, tool, out),))
             for i in range(clients)]
    started = time.perf_counter()
    for p in procs:
        p.start()
    lats = [out.get() for _ in procs]
    for p in procs:
        p.join()
    wall = time.perf_counter() - started
    every = [x for lat in lats for x in lat]
    return {
        "searches": len(every),
        "p50_ms": round(percentile(every, 50), 1),
        "p99_ms": round(percentile(every, 99), 1),
        "per_client_p50_ms": [round(percentile(lat, 50), 1) for lat in lats],
        "searches_a_second": round(len(every) * (rounds + 1) / rounds / wall, 1),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tree")
    ap.add_argument("cfs")
    ap.add_argument("--embedder", default="hash")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--repos", type=int, default=20)
    ap.add_argument("--stores", help="keep the indexed repositories here and reuse them")
    ap.add_argument("--tool", default="search", choices=["search", "context"])
    a = ap.parse_args()
    cfs_bin = os.path.abspath(a.cfs)
    work = tempfile.mkdtemp()
    os.chmod(work, 0o755)
    stores = a.stores or os.path.join(work, "repos")
    pg = os.path.join(work, "pg")
    psql = os.path.join(pg, "pg", "pgserver", "pginstall", "bin", "psql")
    try:
        urls = dict(line.split("=", 1) for line in
                    run(os.path.join(ROOT, "scripts", "pg"), "start", pg).split())
        run(psql, urls["primary"], "-qc", "CREATE DATABASE search")
        primary, standby = with_db(urls["primary"], "search"), with_db(urls["standby"], "search")
        repos = repositories(a.tree, a.repos)
        result = {"embedder": a.embedder, "tool": a.tool, "repositories": len(repos), "chunks": 0,
                  "index_s": 0.0, "publish_s": 0.0}
        for name, _, path in repos:
            copy = os.path.join(stores, name)
            t = time.perf_counter()
            if not os.path.exists(os.path.join(copy, ".cfs")):
                shutil.copytree(path, copy, ignore=shutil.ignore_patterns(".cfs"))
                cfs(cfs_bin, "index", copy, "--embedder", a.embedder, "--json")
            t1 = time.perf_counter()
            report = cfs(cfs_bin, "publish", primary, "--repo", name, "--store",
                         os.path.join(copy, ".cfs"), "--json")
            result["index_s"] += t1 - t
            result["publish_s"] += time.perf_counter() - t1
            result["chunks"] += report["search_rows"]
        result["index_s"] = round(result["index_s"], 1)
        result["publish_s"] = round(result["publish_s"], 1)
        print(json.dumps(result), file=sys.stderr, flush=True)
        run(psql, primary, "-qc", "VACUUM ANALYZE")
        sizes = run(psql, primary, "-qAtc",
                    "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c "
                    "WHERE c.relkind = 'r' AND c.relname LIKE 'cfs_%'")
        sizes = {line.split("|")[0]: int(line.split("|")[1]) for line in sizes.split()}
        search_bytes = sum(v for k, v in sizes.items() if k.startswith("cfs_search"))
        result["bytes_a_chunk"] = round(sum(sizes.values()) / result["chunks"])
        result["search_rows_bytes_a_chunk"] = round(search_bytes / result["chunks"])
        queries = suite_queries({p for _, p, _ in repos}, repos)
        result["queries"] = len(queries)
        lsn = run(psql, primary, "-qAtc", "SELECT pg_current_wal_lsn()").strip()
        for _ in range(600):
            done = run(psql, standby, "-qAtc", f"SELECT pg_last_wal_replay_lsn() >= '{lsn}'")
            if done.strip() == "t":
                break
            time.sleep(0.1)
        for target, url in (("primary", primary), ("standby", standby)):
            for scope in ("all", "one"):
                result[f"{target}_{scope}"] = load(cfs_bin, url, queries, a.clients,
                                                   a.rounds, scope, a.tool)
                print(target, scope, json.dumps(result[f"{target}_{scope}"]),
                      file=sys.stderr, flush=True)
        print(json.dumps(result, indent=1))
    finally:
        subprocess.run([os.path.join(ROOT, "scripts", "pg"), "stop", pg], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
