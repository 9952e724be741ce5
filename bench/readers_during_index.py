"""Readers beside a writer: `cfs status` and `cfs search` run again and again in other
processes while a cold `cfs index` of a large tree runs into a new store.

    bench/readers_during_index.py CFS TREE [--embedder hash|minilm-int] [--every 0.25]

Prints one JSON object: the index's own time, and for each read command the number of
runs during the index, their p50 and max latency (process start to exit), and the state
roots they answered from with how often (each must be a committed one: the empty store's
root, then the text commit, then the vector commits).
"""

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time


def timed(cmd, cwd):
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    ms = (time.perf_counter() - t0) * 1e3
    return ms, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cfs")
    ap.add_argument("tree")
    ap.add_argument("--embedder", default="hash")
    ap.add_argument("--every", type=float, default=0.25)
    args = ap.parse_args()
    binary = os.path.abspath(args.cfs)
    tree = os.path.abspath(args.tree)
    work = tempfile.mkdtemp(prefix="cfs-readers-")
    store = os.path.join(work, "store.redb")
    reads = {
        "status": [binary, "status", "--store", store, "--json"],
        "search": [binary, "search", "parse config file", "--mode", "text", "--store", store,
                   "--json"],
    }
    seen = {name: [] for name in reads}
    t0 = time.perf_counter()
    # The writer's report goes to a file: a pipe nobody reads until the end would fill
    # and stop it.
    report_file = open(os.path.join(work, "index.json"), "w+")
    writer = subprocess.Popen([binary, "index", tree, "--store", store, "--embedder",
                               args.embedder, "--json"], stdout=report_file, text=True)
    while not os.path.exists(store):
        time.sleep(0.01)
    while writer.poll() is None:
        for name, cmd in reads.items():
            ms, out = timed(cmd, work)
            if writer.poll() is not None:
                break
            if out.returncode != 0:
                seen[name].append((ms, "error: " + out.stderr.strip()[:200]))
                continue
            v = json.loads(out.stdout)
            root = v["state_root"] if name == "status" else (v[0]["root"] if v else "no hits")
            seen[name].append((ms, root))
        time.sleep(args.every)
    index_s = time.perf_counter() - t0
    report_file.seek(0)
    final = json.load(report_file)
    report = {"tree": tree, "embedder": args.embedder, "index_s": round(index_s, 1),
              "final_root": final["state_root"]}
    for name, runs in seen.items():
        ms = sorted(r[0] for r in runs)
        roots = {}
        for _, root in runs:
            roots[root[:16]] = roots.get(root[:16], 0) + 1
        report[name] = {
            "runs": len(runs),
            "p50_ms": round(ms[len(ms) // 2], 1) if ms else None,
            "max_ms": round(ms[-1], 1) if ms else None,
            "roots": roots,
        }
    print(json.dumps(report, indent=1))
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
