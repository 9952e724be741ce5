#!/usr/bin/env bash
# One cold `cfs index` of TREE into a new store with the hash embedder: wall time, peak
# RSS, store and chunk log bytes and state root (run it alternately with another build to compare):
#   bench/cold_memory.sh TREE CFS [cfs index options, e.g. --memory 256]
set -euo pipefail
tree=$1 cfs=$2
shift 2
store=$(mktemp -d)
trap 'rm -rf "$store"' EXIT
/usr/bin/time -f "%e %M" -o "$store/time" "$cfs" index "$tree" --store "$store" \
  --embedder hash --json "$@" >"$store/report.json"
read -r wall rss <"$store/time"
root=$(grep -o '"state_root": *"[0-9a-f]*"' "$store/report.json" | grep -o '[0-9a-f]\{64\}')
log=0
[ -f "$store/store.redb.chunks" ] && log=$(stat -c %s "$store/store.redb.chunks")
echo "wall ${wall} s, peak RSS $((rss / 1024)) MB, store $(stat -c %s "$store/store.redb") bytes + chunk log ${log} bytes, root ${root:0:16}"
