"""Damaged stores: flip random bytes of copies of a real store file and run every
reading command (and index) on each copy.

    bench/damage_fuzz.py CFS TREE [--copies 500] [--timeout 30]

TREE is indexed once (hash embedder) into a store beside a copy of it; each copy flips
1 or 8 bytes (seeded, so a run is repeatable) of that store file. Outcomes per command:
ok (exit 0), error (exit 1 with a message on stderr, or verify's report), panic (exit 101 or a message
saying the process panicked; "error (a panic caught)" when cfs turned one into an
error), hang (killed at the timeout), other. Prints one JSON
object with the counts and the seeds of every panic and hang; exits 1 if there was one.
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import tempfile

COMMANDS = [
    ["status", "--json"],
    ["log", "--json"],
    ["verify", "--json"],
    ["search", "store commit", "--json"],
    ["show", "Cargo.toml", "--json"],
    ["gc", "--compact", "--json"],
    ["index", "--json"],
]


def outcome(cmd, cwd, timeout):
    try:
        out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "hang"
    if out.returncode == 101 or "panicked" in out.stderr:
        return "panic"
    if out.returncode == 0:
        return "ok"
    if out.returncode == 1 and "internal failure" in out.stderr:
        return "error (a panic caught)"
    # Exit 1 with a message (stderr), or verify's report of what is wrong (stdout).
    if out.returncode == 1 and (out.stderr.strip() or out.stdout.strip()):
        return "error"
    return f"other:{out.returncode}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cfs")
    ap.add_argument("tree")
    ap.add_argument("--copies", type=int, default=500)
    ap.add_argument("--timeout", type=float, default=30)
    args = ap.parse_args()
    binary = os.path.abspath(args.cfs)
    work = tempfile.mkdtemp(prefix="cfs-damage-")
    base = os.path.join(work, "base")
    shutil.copytree(args.tree, base, ignore=shutil.ignore_patterns(".cfs", ".git", "target"))
    subprocess.run([binary, "index", base, "--embedder", "hash", "--json"], check=True,
                   capture_output=True)
    store = os.path.join(base, ".cfs", "store.redb")
    size = os.path.getsize(store)
    counts = {" ".join(c[:1]): {} for c in COMMANDS}
    bad = []
    for seed in range(args.copies):
        rng = random.Random(seed)
        tree = os.path.join(work, "copy")
        shutil.rmtree(tree, ignore_errors=True)
        shutil.copytree(base, tree)
        path = os.path.join(tree, ".cfs", "store.redb")
        with open(path, "r+b") as f:
            for _ in range(rng.choice([1, 8])):
                at = rng.randrange(size)
                f.seek(at)
                byte = f.read(1)[0]
                f.seek(at)
                f.write(bytes([byte ^ (1 << rng.randrange(8))]))
        os.remove(os.path.join(tree, ".cfs", "index.cache")) if os.path.exists(
            os.path.join(tree, ".cfs", "index.cache")) else None
        for cmd in COMMANDS:
            got = outcome([binary, *cmd], tree, args.timeout)
            name = cmd[0]
            counts[name][got] = counts[name].get(got, 0) + 1
            if got in ("panic", "hang") or got.startswith("other"):
                bad.append({"seed": seed, "command": name, "outcome": got})
    shutil.rmtree(work)
    print(json.dumps({"store_bytes": size, "copies": args.copies, "counts": counts,
                      "panics_hangs_others": bad[:50]}, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
