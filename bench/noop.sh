#!/usr/bin/env bash
# A no-op `cfs index` against `git status --porcelain` on the same tree, alternating:
#   bench/noop.sh TREE RUNS CFS
# TREE is a git work tree with everything committed and a current store (run
# `CFS index` in it once, and wait 2 s: files modified within 2 s of a sync are hashed
# again). Prints the medians and their ratio.
set -euo pipefail
tree=$1 runs=$2 cfs=$(realpath "$3")
cd "$tree"
c=() g=()
for _ in $(seq "$runs"); do
  a=$(date +%s%N); "$cfs" index --json >/dev/null
  b=$(date +%s%N); git status --porcelain >/dev/null
  e=$(date +%s%N)
  c+=($(((b - a) / 1000))) g+=($(((e - b) / 1000)))
done
median() { printf '%s\n' "$@" | sort -n | sed -n "$((($# + 1) / 2))p"; }
mc=$(median "${c[@]}") mg=$(median "${g[@]}")
echo "cfs index p50 ${mc} us, git status p50 ${mg} us, ratio $(awk "BEGIN { printf \"%.2f\", $mc / $mg }")"
