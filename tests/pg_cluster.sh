#!/usr/bin/env bash
# A private PostgreSQL of one test's own, for tests that stop, kill and restart the database
# (the shared "pg" fixture cannot be touched: other tests run against it in parallel).
#
#   pg_cluster.sh create STATE WALKLISTCTL   new cluster, database "walklist" migrated;
#                                            STATE/conninfo names that database
#   pg_cluster.sh start STATE | stop STATE [fast|immediate] | kill STATE | remove STATE
set -euo pipefail

# shellcheck source-path=SCRIPTDIR/../scripts
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"

usage() {
  printf 'usage: %s create STATE WALKLISTCTL | start|stop|kill|remove STATE\n' "$0" >&2
  exit 2
}

create() {
  local state=$1 walklistctl=$2 dir conninfo
  pg_cluster_remove "$state"
  dir=$(pg_private_dir_new /tmp)
  # Durable settings: the test checks that acknowledged commits survive a crash.
  pg_cluster_init "$state" "$dir" durable
  pg_cluster_start "$state"
  conninfo=$(<"$state/conninfo")
  pg_psql "$conninfo" -c 'CREATE DATABASE walklist' >/dev/null
  pg_cluster_conninfo "$state" walklist >"$state/conninfo"
  "$walklistctl" migrate --database-url "$(<"$state/conninfo")" 2>/dev/null
}

# kill -9 of the postmaster: a crash, not a shutdown.
crash() {
  local dir pid
  dir=$(pg_cluster_dir "$1") || return 0
  pid=$(head -n 1 "$dir/data/postmaster.pid" 2>/dev/null || true)
  [[ $pid =~ ^[0-9]+$ ]] && kill -KILL "$pid" 2>/dev/null || true
  for _ in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
}

case ${1:-} in
create) (($# == 3)) || usage; create "$2" "$3" ;;
start) (($# == 2)) || usage; pg_cluster_start "$2" ;;
stop) (($# >= 2)) || usage; pg_cluster_stop "$2" "${3:-fast}" ;;
kill) (($# == 2)) || usage; crash "$2" ;;
remove) (($# == 2)) || usage; pg_cluster_remove "$2" ;;
*) usage ;;
esac
