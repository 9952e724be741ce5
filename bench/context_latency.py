#!/usr/bin/env python3
"""What `cfs context` costs over the file answer it packs: `cfs search --files` and
`cfs context` at two budgets on one store, alternating, RUNS times each per query;
prints the median milliseconds of each (whole processes: opening the index file,
ranking, and for a context reading and packing the chunks' text).

    bench/context_latency.py CFS STORE RUNS
"""
import statistics
import subprocess
import sys
import time

QUERIES = [
    "parse a configuration file",
    "Deserializer",
    "how does the runtime schedule tasks on worker threads",
    "Error",
]
WAYS = [
    ("search --files", ["search", "--files"]),
    ("context 4000", ["context", "--tokens", "4000"]),
    ("context 32000", ["context", "--tokens", "32000"]),
]


def timed(cmd):
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - t) * 1000


def main():
    cfs, store, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    print("| query | " + " | ".join(name for name, _ in WAYS) + " |")
    print("|---|" + "---:|" * len(WAYS))
    for query in QUERIES:
        times = {name: [] for name, _ in WAYS}
        for _ in range(runs):
            for name, args in WAYS:
                times[name].append(timed([cfs, args[0], query, *args[1:], "--store", store]))
        cells = " | ".join(f"{statistics.median(times[name]):.1f}" for name, _ in WAYS)
        print(f"| {query} | {cells} |")


if __name__ == "__main__":
    main()
