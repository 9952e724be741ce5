#!/usr/bin/env bash
# `cfs search` end to end (process start to exit) against `git grep -i WORD` on the
# same tree, alternating, RUNS times each; prints the medians, their ratio and the
# peak RSS of the search processes.
#
#   bench/search_cli.sh TREE RUNS CFS [QUERY] [WORD] [-- extra cfs search args]
#
# TREE is indexed (`cfs index TREE`) and a git repository (for git grep). The first
# search writes the index file if it is missing; it is run once before timing.
set -euo pipefail
tree=$1 runs=$2 cfs=$3
query=${4:-parse a configuration file}
word=${5:-configuration}
shift $(($# < 5 ? $# : 5))
[[ ${1:-} == -- ]] && shift
cd "$tree"
"$cfs" search "$query" "$@" >/dev/null
python3 - "$runs" "$cfs" "$query" "$word" "$@" <<'EOF'
import resource, statistics, subprocess, sys, time
runs, cfs, query, word, extra = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
def timed(cmd):
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=False)
    return (time.perf_counter() - t) * 1000
cfs_ms, grep_ms = [], []
for _ in range(runs):
    cfs_ms.append(timed([cfs, "search", query, *extra]))
    grep_ms.append(timed(["git", "grep", "-i", word]))
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
c, g = statistics.median(cfs_ms), statistics.median(grep_ms)
print(f"cfs search {' '.join(extra) or '(hybrid)'}: median {c:.1f} ms (min {min(cfs_ms):.1f}, max {max(cfs_ms):.1f})")
print(f"git grep -i {word}: median {g:.1f} ms (min {min(grep_ms):.1f}, max {max(grep_ms):.1f})")
print(f"ratio {c / g:.2f}x; peak RSS of any child {rss:.0f} MB")
EOF
