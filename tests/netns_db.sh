#!/usr/bin/env bash
# A PostgreSQL on a host of its own: a network namespace joined to this one by a veth pair,
# for tests of what a network failure between walklistd and its database does.
#
#   netns_db.sh check                        exit 0 when namespaces can be made here
#   netns_db.sh up NAME NET STATE WALKLISTCTL
#       namespace NAME, veth pair on 10.NET.0/30 (this side .1, the database .2), a migrated
#       cluster recorded in STATE listening on 10.NET.2:5432; STATE/conninfo names it over TCP
#   netns_db.sh cut NAME      the database host's link goes down: every packet is lost, both
#                             ways, and nothing is told to either end (a pulled cable)
#   netns_db.sh mend NAME     the link comes back up
#   netns_db.sh down NAME STATE   stops and removes the cluster, deletes the namespace
set -euo pipefail

# shellcheck source-path=SCRIPTDIR/../scripts
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

usage() {
  printf 'usage: %s check | up NAME NET STATE WALKLISTCTL | cut NAME | mend NAME | down NAME STATE\n' "$0" >&2
  exit 2
}

# Everything up needs, tried once: a namespace, entering it (ip netns exec remounts / and /sys,
# which a chroot or an unprivileged container refuses), and a veth pair.
check() {
  local probe=wlc$$ ok=0
  command -v ip >/dev/null || { log "ip (iproute2) is not installed"; return 1; }
  ip netns add "$probe" 2>/dev/null || { log "cannot create a network namespace here"; return 1; }
  if ! ip netns exec "$probe" true 2>/dev/null; then
    log "cannot enter a network namespace here (ip netns exec needs to remount /: not in a chroot)"
    ok=1
  elif ! ip link add "$probe-h" type veth peer name "$probe-d" 2>/dev/null; then
    log "cannot make a veth pair here"
    ok=1
  fi
  ip link delete "$probe-h" 2>/dev/null || true
  ip netns delete "$probe"
  return "$ok"
}

up() {
  local name=$1 net=$2 state=$3 walklistctl=$4 dir
  [[ $net =~ ^[0-9]+$ ]] && ((net >= 1 && net <= 254)) || die "NET must be 1..254"
  ip netns add "$name"
  ip link add "$name-h" type veth peer name "$name-d"
  ip link set "$name-d" netns "$name"
  ip addr add "10.$net.0.1/30" dev "$name-h"
  ip link set "$name-h" up
  ip -n "$name" addr add "10.$net.0.2/30" dev "$name-d"
  ip -n "$name" link set "$name-d" up
  ip -n "$name" link set lo up

  "$HERE/pg_cluster.sh" create "$state" "$walklistctl"
  pg_cluster_stop "$state" fast
  dir=$(pg_cluster_dir "$state")
  # Later lines of postgresql.conf win over pg_cluster_init's Unix-socket-only setting.
  printf "listen_addresses = '10.%s.0.2'\n" "$net" >>"$dir/data/postgresql.conf"
  printf 'host all all 10.%s.0.1/32 trust\n' "$net" >>"$dir/data/pg_hba.conf"
  ip netns exec "$name" "$HERE/pg_cluster.sh" start "$state"
  printf 'host=10.%s.0.2 port=%s user=%s dbname=walklist\n' "$net" "$WL_PG_PORT" \
    "$WL_PG_SUPERUSER" >"$state/conninfo"
}

down() {
  local name=$1 state=$2
  "$HERE/pg_cluster.sh" remove "$state" || true
  ip netns delete "$name" 2>/dev/null || true
  ip link delete "$name-h" 2>/dev/null || true
}

case ${1:-} in
check) (($# == 1)) || usage; check ;;
up) (($# == 5)) || usage; up "$2" "$3" "$4" "$5" ;;
cut) (($# == 2)) || usage; ip -n "$2" link set "$2-d" down ;;
mend) (($# == 2)) || usage; ip -n "$2" link set "$2-d" up ;;
down) (($# == 3)) || usage; down "$2" "$3" ;;
*) usage ;;
esac
