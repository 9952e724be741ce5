#!/usr/bin/env python3
"""Two or more `cfs` binaries' cold index of one tree, alternating (the order reversed
every other round, so that neither always runs first), each into a new store:

    bench/cold_ab.py TREE ROUNDS CFS_A CFS_B [CFS_C ...]

Prints each binary's median, mean and fastest wall time. The machine's noise between
runs of one binary is 1-3%: compare changes of that size over 10 rounds or more.
Standard library only.
"""
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def main() -> None:
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    tree, rounds, binaries = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    times = {b: [] for b in binaries}
    with tempfile.TemporaryDirectory() as scratch:
        store = f"{scratch}/store"
        for r in range(rounds):
            for binary in binaries if r % 2 == 0 else binaries[::-1]:
                shutil.rmtree(store, ignore_errors=True)
                start = time.perf_counter()
                subprocess.run(
                    [binary, "index", tree, "--store", store, "--no-wait", "--json"],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    check=True,
                )
                times[binary].append(time.perf_counter() - start)
    for binary, xs in times.items():
        print(
            f"{binary}: median {statistics.median(xs) * 1000:.1f} ms, "
            f"mean {statistics.mean(xs) * 1000:.1f}, fastest {min(xs) * 1000:.1f} "
            f"({len(xs)} runs)"
        )


if __name__ == "__main__":
    main()
