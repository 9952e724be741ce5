#!/usr/bin/env bash
# Replication against a cold index, on one tree (docs/benchmarks.md, "Replication"):
#   bench/remote.sh TREE CFS [EMBEDDER]     (EMBEDDER: minilm-int, the default, or hash)
#   PREBUILT=STORE_FILE bench/remote.sh TREE CFS   (a store of TREE made before, copied
#                                                   instead of step 1's cold index)
# 1. a cold `cfs index` of a copy of TREE (wall time);
# 2. `cfs push` of that store to a folder remote (wall, bytes);
# 3. `cfs clone` of the remote and the clone's first `cfs search` (wall; the clone's
#    rows checked per second and peak memory);
# 4. one file of the tree changed and indexed again, then push and pull: bytes sent and
#    read by the push and fetched by the pull against the store's bytes (store file and
#    chunk log).
set -euo pipefail
tree=$1 cfs=$2 embedder=${3:-minilm-int}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$tree" "$work/tree"
rm -rf "$work/tree/.cfs"
secs() { date +%s.%N; }
t0=$(secs)
if [ -n "${PREBUILT:-}" ]; then
  mkdir -p "$work/tree/.cfs"
  cp "$PREBUILT" "$work/tree/.cfs/store.redb"
  cp "$PREBUILT.chunks" "$work/tree/.cfs/store.redb.chunks"
else
  "$cfs" index "$work/tree" --embedder "$embedder" --json >/dev/null
fi
t1=$(secs)
"$cfs" push "$work/remote" --store "$work/tree/.cfs" --json >"$work/push.json"
t2=$(secs)
/usr/bin/time -f "%M" -o "$work/clone.rss" "$cfs" clone "$work/remote" "$work/clone" --json >"$work/clone.json"
t2b=$(secs)
(cd "$work/clone" && "$cfs" search "open a connection and retry" --json >"$work/search.json")
t3=$(secs)
field() { grep -o "\"$2\": *[0-9]*" "$1" | head -1 | grep -o '[0-9]*$'; }
"$cfs" status --store "$work/tree/.cfs" --json >"$work/status.json"
chunks=$(field "$work/status.json" chunks)
store_bytes=$(( $(stat -c %s "$work/tree/.cfs/store.redb") + $(stat -c %s "$work/tree/.cfs/store.redb.chunks") ))
cold=$(echo "$t1 - $t0" | bc)
clone=$(echo "$t3 - $t2" | bc)
rows=$(field "$work/clone.json" rows_checked)
echo "chunks $chunks, store $store_bytes bytes"
[ -n "${PREBUILT:-}" ] && cold="(prebuilt)"
echo "cold index ${cold} s; push $(echo "$t2 - $t1" | bc) s, $(field "$work/push.json" bytes_sent) bytes"
ratio=""
[ -z "${PREBUILT:-}" ] && ratio="$(echo "scale=1; $cold / $clone" | bc)x faster; "
clone_alone=$(echo "$t2b - $t2" | bc)
echo "clone and first search ${clone} s: ${ratio}clone ${clone_alone} s ($rows rows checked, $(echo "$rows / $clone_alone" | bc) a second, peak $(cat "$work/clone.rss") KB), first search $(echo "$t3 - $t2b" | bc) s"
# One file changed: the first source file in path order, a line appended.
file=$(cd "$work/tree" && find . -type f \( -name '*.py' -o -name '*.rs' -o -name '*.go' \
  -o -name '*.java' -o -name '*.cs' -o -name '*.ts' -o -name '*.js' -o -name '*.c' \) \
  ! -path './.cfs/*' | sort | sed -n 1p)
echo "// one more line" >>"$work/tree/$file"
"$cfs" index "$work/tree" --json >/dev/null
"$cfs" push "$work/remote" --store "$work/tree/.cfs" --json >"$work/push2.json"
t4=$(secs)
(cd "$work/clone" && "$cfs" pull "$work/remote" --json >"$work/pull2.json")
t5=$(secs)
sent=$(field "$work/push2.json" bytes_sent)
read=$(field "$work/push2.json" bytes_fetched)
fetched=$(field "$work/pull2.json" bytes_fetched)
echo "one file ($file) changed: push sent $sent bytes ($(echo "scale=3; 100 * $sent / $store_bytes" | bc)% of the store, manifest $(field "$work/push2.json" manifest_bytes), $(field "$work/push2.json" rows_sent) rows) and read $read ($(echo "scale=3; 100 * $read / $store_bytes" | bc)%); pull fetched $fetched bytes ($(echo "scale=3; 100 * $fetched / $store_bytes" | bc)%, $(field "$work/pull2.json" rows_checked) rows) in $(echo "$t5 - $t4" | bc) s"
