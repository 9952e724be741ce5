#!/usr/bin/env bash
# Writes out every repository of the code suite at the commit bench/suite/repos.json
# names, from bare clones or snapshots already on this machine:
#
#   bench/suite/checkout.sh MIRRORS OUT
#
# MIRRORS holds one git directory per repository, `<owner>+<name>/repo` (the layout
# of the session's `fetch` snapshots, bare or with a work tree; plain `git clone
# --bare` clones named that way work too); OUT gets one folder per suite name
# (`OUT/axum`, ...), the layout `code_suite OUT` reads. A folder that exists is left as
# it is. Files whose blobs the mirror lacks (snapshots leave out some large binaries)
# are skipped and named on stderr; nothing is fetched from a network. The checkouts are
# for measurement only and are never committed.
set -euo pipefail
mirrors=${1:?usage: checkout.sh MIRRORS OUT}
out=${2:?usage: checkout.sh MIRRORS OUT}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
python3 - "$here/repos.json" <<'PY' | while read -r github commit name; do
import json, sys
for r in json.load(open(sys.argv[1]))["repos"]:
    print(r["github"], r["commit"], r["name"])
PY
  git_dir="$mirrors/${github/\//+}/repo"
  if [[ -d $git_dir/.git ]]; then
    git_dir=$git_dir/.git # a snapshot with a work tree
  fi
  dest="$out/$name"
  if [[ -e "$dest" ]]; then
    continue
  fi
  if ! git --git-dir="$git_dir" cat-file -e "$commit^{commit}" 2>/dev/null; then
    echo "checkout.sh: $github: commit $commit is not in $git_dir" >&2
    exit 1
  fi
  mkdir -p "$dest.part"
  if ! git --git-dir="$git_dir" archive "$commit" | tar -x -C "$dest.part" 2>/dev/null; then
    # Some blob is absent: write the commit's files one by one, skipping those.
    rm -rf "$dest.part" && mkdir -p "$dest.part"
    git --git-dir="$git_dir" ls-tree -r -z "$commit" |
      while IFS= read -r -d '' entry; do
        read -r mode type blob <<<"${entry%%$'\t'*}"
        path=${entry#*$'\t'}
        [[ $type == blob ]] || continue
        mkdir -p "$dest.part/$(dirname "$path")"
        if [[ $mode == 120000 ]]; then
          ln -s "$(git --git-dir="$git_dir" cat-file blob "$blob")" "$dest.part/$path"
        elif ! git --git-dir="$git_dir" cat-file blob "$blob" >"$dest.part/$path" 2>/dev/null; then
          rm -f "$dest.part/$path"
          echo "checkout.sh: $name: $path skipped (its blob is not in the mirror)" >&2
        fi
      done
  fi
  mv "$dest.part" "$dest"
  echo "checkout.sh: $name at ${commit:0:10}"
done
