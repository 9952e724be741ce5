#!/usr/bin/env python3
"""Two `cfs` binaries' incremental sync of one tree, alternating: each binary indexes a
copy of TREE into a store of its own, then every round appends a line to FILES of the
copy's files (another twelfth each round) and times each binary's `cfs index --no-wait`:

    bench/incremental_ab.py TREE ROUNDS FILES CFS_A CFS_B

Prints each binary's median and mean. The copy and the stores are removed at the end.
Standard library only.
"""
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def index(binary: str, tree: Path, store: Path) -> float:
    start = time.perf_counter()
    subprocess.run(
        [binary, "index", str(tree), "--store", str(store), "--no-wait", "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    return time.perf_counter() - start


def main() -> None:
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    tree, rounds, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    binaries = sys.argv[4:]
    if binaries[0] == binaries[1]:
        sys.exit("incremental_ab.py: give two different binaries (copy one to compare it)")
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "tree"
        shutil.copytree(tree, copy, ignore=shutil.ignore_patterns(".cfs", ".git"))
        files = sorted(p for p in copy.rglob("*") if p.is_file())
        stores = {b: Path(scratch) / f"store{i}" for i, b in enumerate(binaries)}
        for binary, store in stores.items():
            index(binary, copy, store)
        times = {b: [] for b in binaries}
        for r in range(rounds):
            for f in files[r % 12 :: 12][:count]:
                with open(f, "a", encoding="utf-8") as out:
                    out.write(f"\n# edit {r}\n")
            # Files modified within 2 s of a sync are hashed again by the next: wait.
            time.sleep(2.1)
            for binary in binaries if r % 2 == 0 else binaries[::-1]:
                times[binary].append(index(binary, copy, stores[binary]))
    for binary, xs in times.items():
        print(
            f"{binary}: median {statistics.median(xs) * 1000:.0f} ms, "
            f"mean {statistics.mean(xs) * 1000:.0f} ({len(xs)} rounds)"
        )


if __name__ == "__main__":
    main()
