#!/usr/bin/env bash
# How cfs's token estimate (cfs_search::estimate_tokens, which `cfs context` keeps to its
# budget with) compares with three real tokenizers on real chunks: the share of chunks,
# and of sums of 20 chunks, whose estimate is at least the real count, and the estimate's
# total over the real total.
#
# usage: bench/token_estimate.sh SUITE_CHECKOUTS [CFS]
# Installs the npm packages gpt-tokenizer and @anthropic-ai/tokenizer into
# bench/.cache/node (they carry their vocabularies; nothing is fetched at run time).
set -euo pipefail
cd "$(dirname "$0")"
suite=$1
cfs=${2:-../target/release/cfs}
node_dir=.cache/node
if [ ! -d "$node_dir/node_modules/@anthropic-ai/tokenizer" ]; then
  echo "token_estimate: installing gpt-tokenizer@4.0.0 and @anthropic-ai/tokenizer@0.0.4 into bench/$node_dir" >&2
  mkdir -p "$node_dir"
  npm install --silent --prefix "$node_dir" gpt-tokenizer@4.0.0 @anthropic-ai/tokenizer@0.0.4 >&2
fi
cargo build --release --quiet --bin token_check
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for sample in main holdout; do
  python3 token_estimate/sample.py "$suite" "$cfs" "$work/$sample.jsonl" "$sample"
  NODE_PATH="$node_dir/node_modules" node token_estimate/count.js "$work/$sample.jsonl" "$work/$sample.counted.jsonl"
  echo "## $sample sample"
  ./target/release/token_check "$work/$sample.counted.jsonl"
done
