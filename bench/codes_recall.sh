#!/usr/bin/env bash
# Recall@10 of `cfs search --mode vector` (sign codes re-scored) against `--exact` on an
# indexed tree, queries made from N function names found in it (`def name` -> "name"
# with `_` as spaces), and the median time of each.
#   bench/codes_recall.sh TREE N CFS
set -euo pipefail
tree=$1 n=$2 cfs=$3
cd "$tree"
python3 - "$n" "$cfs" <<'PY'
import json, random, re, statistics, subprocess, sys, time
n, cfs = int(sys.argv[1]), sys.argv[2]
names = sorted(set(re.findall(r"^def ([a-z][a-z0-9_]{6,})", subprocess.run(
    ["git", "grep", "-h", "^def "], capture_output=True, text=True).stdout, re.M)))
random.Random(7).shuffle(names)
queries = [x.replace("_", " ").strip() for x in names[:n]]
def run(q, *extra):
    t = time.perf_counter()
    out = subprocess.run([cfs, "search", q, "--mode", "vector", "--json", *extra],
                         capture_output=True, text=True, check=True).stdout
    return {h["chunk_id"] for h in json.loads(out)}, (time.perf_counter() - t) * 1000
hit, ta, te = 0, [], []
for q in queries:
    a, t1 = run(q)
    e, t2 = run(q, "--exact")
    hit += len(a & e); ta.append(t1); te.append(t2)
print(f"{len(queries)} queries: recall@10 of sign codes vs exact {hit / (10 * len(queries)):.3f}; "
      f"median {statistics.median(ta):.1f} ms vs exact {statistics.median(te):.1f} ms")
PY
