#!/usr/bin/env bash
# Deploy helper: builds an archive and ships it to a host.
set -euo pipefail

readonly APP_NAME="widget"
export DEPLOY_ENV="${DEPLOY_ENV:-staging}"
declare -r MAX_RETRIES=3
LOG_FILE=/tmp/deploy.log
local_counter=0

# Write a timestamped line to the log.
log() {
  printf '%s %s\n' "$(date +%T)" "$*" >> "$LOG_FILE"
}

# Package the build output.
function build_archive {
  local out="${APP_NAME}.tar.gz"
  tar -czf "$out" build/
  echo "$out"
}

## Upload with retries.
## Usage: upload FILE HOST
function upload() {
  local file=$1 host=$2
  for ((i = 1; i <= MAX_RETRIES; i++)); do
    scp "$file" "$host:/srv/" && return 0
    log "retry $i"
  done
  return 1
}

usage() {
  cat <<USAGE
Usage: $0 {build|ship HOST}
USAGE
}

case "${1:-}" in
  build) build_archive ;;
  ship)  upload "$(build_archive)" "$2" ;;
  *)     usage; exit 2 ;;
esac
