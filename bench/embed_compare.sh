#!/usr/bin/env bash
# minilm-int against onnxruntime (dynamic int8, MatMulInteger) on the same chunks, in
# one run, alternating:
#   bench/embed_compare.sh SRC [CHUNKS] [ROUNDS]
# Builds embed_bench, writes SRC's first CHUNKS (2000) distinct chunks with their ids and
# minilm-int vectors, then runs embed_bench (2 threads and 1) and bench/embed_peer.py (2
# threads, then 1) ROUNDS (2) times each, one after the other, so both see the same
# machine (the first round also measures the cosine of both to the float model). Prints
# each run's JSON.
set -euo pipefail
cd "$(dirname "$0")"
src=$1; n=${2:-2000}; rounds=${3:-2}
source ../scripts/python-env
cargo build --release --quiet --bin embed_bench
chunks=$(mktemp --suffix=.jsonl)
trap 'rm -f "$chunks"' EXIT
for round in $(seq "$rounds"); do
  echo "== round $round: cfs minilm-int"
  ./target/release/embed_bench "$src" --chunks "$n" --scalar 20 --out "$chunks"
  echo "== round $round: onnxruntime int8 and the float model"
  # The float model's fidelity once; later rounds time onnxruntime only.
  if [ "$round" = 1 ]; then "$PY" embed_peer.py "$chunks"; else "$PY" embed_peer.py "$chunks" --no-float; fi
  "$PY" embed_peer.py "$chunks" --no-float --threads 1
done
