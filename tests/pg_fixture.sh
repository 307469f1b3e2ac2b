#!/usr/bin/env bash
# The tests' private PostgreSQL (the CTest fixture "pg", see tests/CMakeLists.txt).
#
#   pg_fixture.sh start DIR WALKLISTCTL
#       Throws away any cluster recorded in DIR, creates and starts a fresh one (Unix socket
#       only, fsync off), writes DIR/conninfo (the "postgres" database), creates the database
#       walklist_template and migrates it with WALKLISTCTL. Tests then make their own databases
#       with CREATE DATABASE x TEMPLATE walklist_template.
#   pg_fixture.sh stop DIR
#       Stops the cluster, deletes it and DIR's files. Fine when nothing runs.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR/../scripts
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"

usage() {
  printf 'usage: %s start DIR WALKLISTCTL | stop DIR\n' "$0" >&2
  exit 2
}

absolute() {
  if [[ $1 == /* ]]; then printf '%s\n' "$1"; else printf '%s/%s\n' "$PWD" "$1"; fi
}

STATE=
start_ok=0

# On a failed start: show why, and leave no server behind.
on_start_exit() {
  local status=$?
  if ((status != 0 && start_ok == 0)); then
    log "start failed (exit $status)"
    pg_cluster_log_tail "$STATE"
    pg_cluster_remove "$STATE" || true
  fi
  exit "$status"
}

start() {
  local walklistctl=$2 dir conninfo template
  STATE=$(absolute "$1")
  [[ -x $walklistctl ]] || die "WALKLISTCTL is not an executable file: $walklistctl"

  pg_cluster_remove "$STATE" # a stale cluster from an interrupted run
  trap on_start_exit EXIT

  dir=$(pg_private_dir_new /tmp)
  pg_cluster_init "$STATE" "$dir" test
  pg_cluster_start "$STATE"

  conninfo=$(<"$STATE/conninfo")
  template=$(pg_cluster_conninfo "$STATE" walklist_template)
  pg_psql "$conninfo" -c 'CREATE DATABASE walklist_template'
  if ! "$walklistctl" migrate --database-url "$template"; then
    log "$walklistctl migrate failed"
    exit 1
  fi
  start_ok=1
  log "PostgreSQL ready: $conninfo"
}

stop() {
  pg_cluster_remove "$(absolute "$1")"
}

case ${1:-} in
start) (($# == 3)) || usage; start "$2" "$3" ;;
stop) (($# == 2)) || usage; stop "$2" ;;
*) usage ;;
esac
