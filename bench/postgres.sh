#!/usr/bin/env bash
# Publishing into PostgreSQL (docs/benchmarks.md, "PostgreSQL"), on a loopback cluster
# that scripts/pg makes in a temporary folder:
#   bench/postgres.sh TREE CFS [EMBEDDER]     (EMBEDDER: hash, the default, or minilm-int)
# 1. `cfs index` of a copy of TREE (not timed: the store is the input);
# 2. the first `cfs publish` of it (wall, rows a second), then `cfs verify --db` (wall);
# 3. one source file changed and indexed again, then `cfs publish` (wall, bytes sent);
# 4. storage: each cfs table's size with its indexes and TOAST, per chunk;
# 5. sharing: each top-level folder of TREE published as a repository of its own with
#    one common folder (the first one) vendored into each under vendor/: the rows the
#    repositories hold against the rows stored, and the content bytes either way
#    (SHARING=0 skips it).
set -euo pipefail
tree=$1 cfs=$2 embedder=${3:-hash}
root="$(cd "$(dirname "$0")/.." && pwd)"
work=$(mktemp -d)
chmod 755 "$work"  # the servers run as another user when this one is root
trap '"$root/scripts/pg" stop "$work/pg" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
urls=$("$root/scripts/pg" start "$work/pg")
admin=$(sed -n 's/^primary=//p' <<<"$urls")
psql="$work/pg/pg/pgserver/pginstall/bin/psql"
as_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u cfs-pg -- "$@"; else "$@"; fi; }
sql() { as_pg "$psql" "$1" -qAt -v ON_ERROR_STOP=1 -c "$2"; }
sql "$admin" "CREATE DATABASE big" >/dev/null
sql "$admin" "CREATE DATABASE shared" >/dev/null
big=${admin%/postgres}/big
shared=${admin%/postgres}/shared
secs() { date +%s.%N; }
field() { grep -o "\"$2\": *[0-9.]*" "$1" | head -1 | grep -o '[0-9.]*$'; }

cp -r "$tree" "$work/tree"
rm -rf "$work/tree/.cfs"
"$cfs" index "$work/tree" --embedder "$embedder" --json >/dev/null
"$cfs" status --store "$work/tree/.cfs" --json >"$work/status.json"
chunks=$(field "$work/status.json" chunks)
t0=$(secs)
/usr/bin/time -f "%M" -o "$work/publish.rss" \
  "$cfs" publish "$big" --repo big --store "$work/tree/.cfs" --json >"$work/publish.json"
t1=$(secs)
"$cfs" verify --db "$big" --repo big --json >"$work/verify.json"
t2=$(secs)
rows=$(field "$work/publish.json" rows_added)
first=$(echo "$t1 - $t0" | bc)
echo "$chunks chunks ($embedder); first publish $first s: $rows rows, $(echo "$rows / $first" | bc) rows a second, $(field "$work/publish.json" bytes_sent) bytes of values, peak $(cat "$work/publish.rss") KB"
echo "verify --db $(echo "$t2 - $t1" | bc) s: $(field "$work/verify.json" rows_checked) rows re-hashed"

file=$(cd "$work/tree" && find . -type f \( -name '*.py' -o -name '*.rs' -o -name '*.go' \
  -o -name '*.java' -o -name '*.cs' -o -name '*.ts' -o -name '*.js' -o -name '*.c' \) \
  ! -path './.cfs/*' | sort | sed -n 1p)
echo "// one more line" >>"$work/tree/$file"
"$cfs" index "$work/tree" --json >/dev/null
t3=$(secs)
"$cfs" publish "$big" --repo big --store "$work/tree/.cfs" --json >"$work/publish2.json"
t4=$(secs)
echo "one file ($file) changed: publish $(echo "($t4 - $t3) * 1000" | bc | cut -d. -f1) ms (process included), $(field "$work/publish2.json" buckets) buckets, $(field "$work/publish2.json" rows_added) rows added, $(field "$work/publish2.json" rows_removed) removed, $(field "$work/publish2.json" bytes_sent) bytes of values"

echo "storage (bytes with indexes and TOAST; per chunk):"
sql "$big" "VACUUM ANALYZE" >/dev/null
sql "$big" "SELECT c.relname, pg_total_relation_size(c.oid), round(pg_total_relation_size(c.oid)::numeric / $chunks) FROM pg_class c WHERE c.relkind = 'r' AND c.relname LIKE 'cfs_%' ORDER BY 2 DESC" | tr '|' ' ' | sed 's/^/  /'
echo "  total $(sql "$big" "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c WHERE c.relkind = 'r' AND c.relname LIKE 'cfs_%'") bytes, $(sql "$big" "SELECT round(sum(pg_total_relation_size(c.oid))::numeric / $chunks) FROM pg_class c WHERE c.relkind = 'r' AND c.relname LIKE 'cfs_%'") a chunk"

# Sharing: every top-level folder a repository, with the first folder vendored in each.
[ "${SHARING:-1}" = 0 ] && exit 0
folders=$(cd "$tree" && find . -mindepth 1 -maxdepth 1 -type d ! -name '.*' | sort | sed 's|^\./||')
common=$(echo "$folders" | head -1)
for f in $(echo "$folders" | tail -n +2); do
  mkdir -p "$work/repos/$f/vendor"
  cp -r "$tree/$f/." "$work/repos/$f/"
  cp -r "$tree/$common" "$work/repos/$f/vendor/$common"
  rm -rf "$work/repos/$f/.cfs"
  "$cfs" index "$work/repos/$f" --embedder "$embedder" --json >/dev/null
  "$cfs" publish "$shared" --repo "$f" --store "$work/repos/$f/.cfs" --json >"$work/p-$f.json"
  echo "  $f with vendor/$common: $(field "$work/p-$f.json" rows_added) rows, $(field "$work/p-$f.json" rows_shared) already stored"
done
held=$(sql "$shared" "SELECT count(*) FROM cfs_members")
stored=$(sql "$shared" "SELECT (SELECT count(*) FROM cfs_paths) + (SELECT count(*) FROM cfs_documents) + (SELECT count(*) FROM cfs_chunks) + (SELECT count(*) FROM cfs_embeddings) + (SELECT count(*) FROM cfs_edges)")
unshared=$(sql "$shared" "SELECT sum(pg_column_size(c.*)) FROM cfs_members m JOIN cfs_chunks c ON c.leaf = m.leaf")
once=$(sql "$shared" "SELECT sum(pg_column_size(c.*)) FROM cfs_chunks c")
echo "sharing: the repositories hold $held rows, $stored are stored ($(echo "scale=1; 100 - 100 * $stored / $held" | bc)% saved); chunk content $once bytes stored against $unshared unshared ($(echo "scale=1; 100 - 100 * $once / $unshared" | bc)% saved)"
