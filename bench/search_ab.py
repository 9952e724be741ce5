#!/usr/bin/env python3
"""`cfs search` of two builds on the same store, alternating, RUNS times each per case;
prints the median milliseconds of each.

    bench/search_ab.py OLD_CFS OLD_STORE NEW_CFS NEW_STORE RUNS

Each build keeps its own copy of the store folder (`.cfs`), since each writes an index
file of its own format beside it.
"""
import statistics
import subprocess
import sys
import time

CASES = [
    ("parse a configuration file", []),
    ("parse a configuration file", ["--files"]),
    ("parse a configuration file", ["--mode", "text"]),
    ("Deserializer", []),
    ("Deserializer", ["--files"]),
    # Names that thousands of chunks define: the definition list's widest ties.
    ("new", []),
    ("Error", ["--files"]),
    ("how does the runtime schedule tasks on worker threads", []),
    ("how does the runtime schedule tasks on worker threads", ["--files"]),
]


def timed(cmd):
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - t) * 1000


def main():
    old, old_store, new, new_store, runs = sys.argv[1:6]
    for query, extra in CASES:
        o, n = [], []
        for _ in range(int(runs)):
            o.append(timed([old, "search", query, "--store", old_store, *extra]))
            n.append(timed([new, "search", query, "--store", new_store, *extra]))
        print(f"{query[:40]:40} {' '.join(extra):12} old {statistics.median(o):6.1f} ms"
              f"  new {statistics.median(n):6.1f} ms")


if __name__ == "__main__":
    main()
