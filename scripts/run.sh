#!/usr/bin/env bash
# Quick start: installs what is missing, builds, starts a private PostgreSQL (state in var/pg),
# migrates, loads a demo organization with a demo API key (kept in var/demo-key), prints curl
# examples and serves on 127.0.0.1:8080 in the foreground. Ctrl-C stops walklistd and then
# PostgreSQL; the data stays for the next run.
#
# Environment: WALKLIST_LISTEN (default 127.0.0.1:8080), WALKLIST_BUILD_DIR (default build),
# WALKLIST_BUILD_TYPE (RelWithDebInfo).
set -euo pipefail

# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$WL_ROOT"

PG_STATE=$WL_ROOT/var/pg
KEY_FILE=$WL_ROOT/var/demo-key
LISTEN=${WALKLIST_LISTEN:-127.0.0.1:8080}
DEMO_ORG=demo
DEMO_SCOPES=lists:write,stock:read,scanner
DB_URL= # conninfo of the walklist database, set by start_postgres
BIN=    # build/bin, set by main
WALKLISTD_PID=

# --- PostgreSQL ----------------------------------------------------------------------------

# A new private dir for the cluster: var/pg itself, unless we are root (PostgreSQL then runs as
# walklist-pg, who may not reach the checkout) or the socket path would be too long for a Unix
# socket; then a dir under /var/tmp, recorded in var/pg/cluster.
new_cluster_dir() {
  local socket=$PG_STATE/.s.PGSQL.$WL_PG_PORT
  if ((EUID != 0 && ${#socket} < 100)); then
    mkdir -p "$PG_STATE"
    chmod 700 "$PG_STATE"
    touch "$PG_STATE/.walklist-pg"
    printf '%s\n' "$PG_STATE"
  else
    pg_private_dir_new /var/tmp
  fi
}

start_postgres() {
  local dir
  if dir=$(pg_cluster_dir "$PG_STATE") && [[ -f $dir/data/PG_VERSION ]]; then
    log "using the PostgreSQL cluster in $dir"
  else
    dir=$(new_cluster_dir)
    log "creating a PostgreSQL cluster in $dir"
    if ! pg_cluster_init "$PG_STATE" "$dir" durable; then
      pg_cluster_log_tail "$PG_STATE"
      die "could not create the PostgreSQL cluster"
    fi
  fi
  if ! pg_cluster_start "$PG_STATE"; then
    pg_cluster_log_tail "$PG_STATE"
    die "could not start PostgreSQL"
  fi

  local conninfo
  conninfo=$(pg_cluster_conninfo "$PG_STATE")
  if [[ -z $(pg_psql "$conninfo" -tAc "SELECT 1 FROM pg_database WHERE datname = 'walklist'") ]]; then
    pg_psql "$conninfo" -c 'CREATE DATABASE walklist'
  fi
  DB_URL=$(pg_cluster_conninfo "$PG_STATE" walklist)
}

# shellcheck disable=SC2317 # (run by the EXIT trap)
stop_all() {
  local status=$?
  if [[ -n $WALKLISTD_PID ]] && kill -0 "$WALKLISTD_PID" 2>/dev/null; then
    kill -TERM "$WALKLISTD_PID" 2>/dev/null || true
    wait "$WALKLISTD_PID" 2>/dev/null || true
  fi
  if pg_cluster_running "$PG_STATE"; then
    log "stopping PostgreSQL (its data stays in $(pg_cluster_dir "$PG_STATE")/data)"
    pg_cluster_stop "$PG_STATE" fast
  fi
  exit "$status"
}

# --- Demo organization and key ---------------------------------------------------------------

# Runs one query on the walklist database and prints its value; a failed query is fatal.
sql_value() {
  pg_psql "$DB_URL" -tA "$@" || die "query failed on $DB_URL"
}

demo_org_exists() {
  local found
  found=$(sql_value -v org="$DEMO_ORG" <<<"SELECT 1 FROM organizations WHERE slug = :'org';")
  [[ -n $found ]]
}

# Is the token in KEY_FILE a live key of the demo organization? (Only its SHA-256 is stored.)
demo_key_is_live() {
  local token found
  [[ -s $KEY_FILE ]] || return 1
  token=$(<"$KEY_FILE")
  found=$(sql_value -v token="$token" -v org="$DEMO_ORG" <<'SQL'
SELECT 1 FROM api_keys k JOIN organizations o USING (org_id)
 WHERE o.slug = :'org' AND k.revoked_at IS NULL
   AND k.token_hash = sha256(convert_to(:'token', 'UTF8'));
SQL
  )
  [[ -n $found ]]
}

walklistctl() {
  "$BIN/walklistctl" "$@" --database-url "$DB_URL"
}

create_demo_key() {
  local token
  token=$(walklistctl key create --org "$DEMO_ORG" --scopes "$DEMO_SCOPES" --name demo)
  [[ $token == wlk_* ]] || die "walklistctl key create printed no key"
  (umask 077 && printf '%s\n' "$token" >"$KEY_FILE.new")
  chmod 600 "$KEY_FILE.new"
  mv -f "$KEY_FILE.new" "$KEY_FILE"
}

ensure_demo() {
  if ! demo_org_exists; then
    log "loading the demo organization \"$DEMO_ORG\""
    walklistctl org create "$DEMO_ORG" --name "Demo Warehouse"
    walklistctl demo --org "$DEMO_ORG"
    create_demo_key
  elif ! demo_key_is_live; then
    log "var/demo-key is missing or no longer valid; creating a new demo key"
    create_demo_key
  fi
}

# --- Serving ---------------------------------------------------------------------------------

print_examples() {
  local key base host=${LISTEN%:*} port=${LISTEN##*:}
  key=$(<"$KEY_FILE")
  case $host in '' | 0.0.0.0 | '[::]' | '::') host=127.0.0.1 ;; esac
  base="http://$host:$port"
  cat <<EOF

Demo API key (organization "$DEMO_ORG", scopes $DEMO_SCOPES; kept in var/demo-key):

  $key

Try it:

  # create a walk list
  curl -sS -X POST '$base/api/v1/locate-lists' \\
    -H 'Authorization: Bearer $key' -H 'Content-Type: application/json' \\
    -d '{"name":"Aisle 3 recount","codes":["SKU-1001","4006381333931","NOPE-1"]}'

  # the same from a plain URL (key in the query; codes split on , or |)
  curl -sS '$base/api/v1/locate-lists?api_key=$key&name=Aisle+3+recount&codes=SKU-1001,4006381333931%7CNOPE-1'

  # read a list back: put the "id" from one of the answers above in place of LIST_ID
  curl -sS -H 'Authorization: Bearer $key' '$base/api/v1/locate-lists/LIST_ID'

  # the stock export
  curl -sS -H 'Authorization: Bearer $key' '$base/api/v1/stock-export'

Database: $DB_URL
Serving on $base (Ctrl-C stops walklistd and PostgreSQL)

EOF
}

# walklistd runs as a child rather than through exec, so that this script is still there to
# stop PostgreSQL when walklistd ends; INT and TERM are passed on to it as TERM.
serve() {
  local status=0
  "$BIN/walklistd" --database-url "$DB_URL" --listen "$LISTEN" &
  WALKLISTD_PID=$!
  trap 'kill -TERM "$WALKLISTD_PID" 2>/dev/null || true' INT TERM
  while kill -0 "$WALKLISTD_PID" 2>/dev/null; do
    status=0
    wait "$WALKLISTD_PID" || status=$?
  done
  WALKLISTD_PID=
  return "$status"
}

main() {
  ensure_packages
  build
  BIN=$(build_dir)/bin
  [[ -x $BIN/walklistd && -x $BIN/walklistctl ]] || die "the build made no $BIN/walklistd or $BIN/walklistctl"

  trap stop_all EXIT
  start_postgres
  walklistctl migrate
  ensure_demo
  print_examples
  serve
}

main "$@"
