#!/usr/bin/env bash
# Benchmarks against the floor (issue 6): builds in release mode, starts a private, durable
# PostgreSQL and walklistd, and prints one table of figures, each beside what PostgreSQL alone
# does with the same work; the table also goes to BENCHMARKS.md (or --out FILE) with the
# machine's cores and memory and every command run. Figures, not pass/fail: a script, not a
# test.
#
#   scripts/bench.sh                 100,000 and 1,000,000 SKUs (about 15 minutes on 2 cores)
#   scripts/bench.sh --quick         2,000 and 10,000 SKUs, short runs (about a minute)
#   options: --no-install (use what is there), --out FILE, --keep (leave the cluster running)
#
# Environment: WALKLIST_BUILD_DIR (default build-release), WALKLIST_JOBS (2).
set -euo pipefail

# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$WL_ROOT"

QUICK=0 INSTALL=1 KEEP=0 OUT=$WL_ROOT/BENCHMARKS.md
while (($#)); do
  case $1 in
  --quick) QUICK=1 ;;
  --no-install) INSTALL=0 ;;
  --keep) KEEP=1 ;;
  --out) OUT=$2; shift ;;
  *) die "unknown option $1 (--quick, --no-install, --out FILE, --keep)" ;;
  esac
  shift
done

if ((QUICK)); then
  SIZES=(2000 10000) DURATION=3 ORGS=300 LOADS=10
else
  SIZES=(100000 1000000) DURATION=15 ORGS=3000 LOADS=100
fi
CONNECTIONS=64
SEED=42
BENCH_DIR=$WL_ROOT/scripts/bench
export WALKLIST_BUILD_DIR=${WALKLIST_BUILD_DIR:-build-release}
BUILD=$(build_dir)
STATE=$BUILD/benchpg
WORK=$(mktemp -d "${TMPDIR:-/tmp}/walklist-bench.XXXXXX")
PORT=0 WALKLISTD_PID= DB= ADMIN=
declare -a COMMANDS=() ROWS=()

# --- Helpers ---------------------------------------------------------------------------------

# Runs a command and records it for the report.
record() {
  COMMANDS+=("$*")
  "$@"
}

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
mbps() { awk -v bytes="$1" -v s="$2" 'BEGIN { if (s > 0) printf "%.1f", bytes / s / 1e6; else print "-" }'; }
row() {
  local line='|' field
  for field in "$@"; do line+=" $field |"; done
  ROWS+=("$line")
}

sql() { pg_psql "$DB" -tA "$@"; }

# shellcheck disable=SC2317 # (run by the EXIT trap)
cleanup() {
  local status=$?
  stop_walklistd
  if ((KEEP)); then
    log "cluster left running: $(<"$STATE/conninfo")"
  else
    pg_cluster_remove "$STATE" || true
  fi
  rm -rf -- "$WORK"
  exit "$status"
}

start_walklistd() {
  local log_file=$WORK/walklistd.log
  # High limits (CONTRACT section 8 keeps 30/min by default): the figures are the service's,
  # not the limiter's. Requests still rotate over many organizations (setup_orgs.sql), so the
  # limiter's per-organization rows stay small, as they are in production.
  # As many worker threads (and pooled connections) as wrk has connections, as pgbench has
  # backends: libmicrohttpd's workers wait for the database, so threads bound concurrency.
  "$BUILD/bin/walklistd" --database-url "$DB" --listen 127.0.0.1:0 \
    --threads "$CONNECTIONS" --db-pool-size "$((CONNECTIONS + 2))" \
    --rate-limit-locate-lists 1000000 --rate-limit-stock-export 1000000 \
    --rate-limit-shared 1000000 2>"$log_file" &
  WALKLISTD_PID=$!
  for _ in $(seq 100); do
    PORT=$(sed -n 's/.*"msg":"listening".*"port":\([0-9]*\).*/\1/p' "$log_file" | head -n 1)
    [[ -n $PORT ]] && break
    sleep 0.1
  done
  [[ -n $PORT ]] || die "walklistd did not start: $(tail -n 5 "$log_file")"
}

stop_walklistd() {
  if [[ -n $WALKLISTD_PID ]] && kill -0 "$WALKLISTD_PID" 2>/dev/null; then
    kill -TERM "$WALKLISTD_PID" 2>/dev/null || true
    wait "$WALKLISTD_PID" 2>/dev/null || true
  fi
  WALKLISTD_PID=
}

rss_kib() { awk -v key="$1:" '$1 == key { print $2 }' "/proc/$WALKLISTD_PID/status"; }

# Best of 3 wall-clock seconds of a command (output to /dev/null).
best_of_3() {
  local best= start end t
  for _ in 1 2 3; do
    start=$(now)
    "$@" >/dev/null
    end=$(now)
    t=$(elapsed "$start" "$end")
    if [[ -z $best ]] || awk -v a="$t" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$t; fi
  done
  printf '%s\n' "$best"
}

# wrk's summary: requests/s, p50 and p99 in ms (from --latency).
wrk_figures() {
  awk '
    function ms(v) {
      if (v ~ /us$/) { sub(/us$/, "", v); return v / 1000 }
      if (v ~ /ms$/) { sub(/ms$/, "", v); return v + 0 }
      if (v ~ /s$/) { sub(/s$/, "", v); return v * 1000 }
      return v
    }
    $1 == "50%" { p50 = ms($2) }
    $1 == "99%" { p99 = ms($2) }
    $1 == "Requests/sec:" { rps = $2 }
    $1 == "Transfer/sec:" { transfer = $2 }
    /Non-2xx or 3xx responses:/ { bad = $NF }
    END { printf "%.0f %.2f %.2f %s %s\n", rps, p50, p99, transfer, bad + 0 }' "$1"
}

run_wrk() {
  local out=$1
  shift
  record wrk --latency "$@" >"$out" 2>&1 || true
}

# --- Steps ------------------------------------------------------------------------------------

install_tools() {
  ensure_packages
  local -a missing
  mapfile -t missing < <(missing_packages wrk postgresql-contrib curl)
  if ((${#missing[@]})); then
    WL_PACKAGES=("${missing[@]}")
    required_packages() { printf '%s\n' "${WL_PACKAGES[@]}"; }
    ensure_packages
  fi
}

start_postgres() {
  pg_cluster_remove "$STATE"
  local dir
  dir=$(pg_private_dir_new /tmp)
  # Durable: fsync and synchronous_commit on, as in production. Memory sized for a
  # 24 GiB machine; the floors run on the same server with the same settings.
  pg_cluster_init "$STATE" "$dir" durable || die "initdb failed"
  cat >>"$dir/data/postgresql.conf" <<'CONF'
shared_buffers = 2GB
work_mem = 64MB
maintenance_work_mem = 512MB
max_wal_size = 8GB
checkpoint_timeout = 30min
CONF
  pg_cluster_start "$STATE" || { pg_cluster_log_tail "$STATE"; die "PostgreSQL did not start"; }
  ADMIN=$(<"$STATE/conninfo")
  pg_psql "$ADMIN" -c 'CREATE DATABASE walklist' >/dev/null
  DB=$(pg_cluster_conninfo "$STATE" walklist)
  "$BUILD/bin/walklistctl" migrate --database-url "$DB" 2>/dev/null
}

# The catalogue of SIZE SKUs for organization cat-SIZE: written as CSV by `generate --csv`,
# then imported file by file (the import is timed), as an operator would load it.
load_catalogue() {
  local size=$1 org=cat-$1 csv=$WORK/csv-$1 start end total=0 kind t rows=0
  mkdir -p "$csv"
  "$BUILD/bin/walklistctl" org create "$org" --database-url "$DB" 2>/dev/null
  record "$BUILD/bin/walklistctl" generate --csv "$csv" --skus "$size" --seed "$SEED" 2>/dev/null
  for kind in warehouses locations products stock location-stock reservations; do
    rows=$((rows + $(wc -l <"$csv/$kind.csv") - 1))
  done
  start=$(now)
  for kind in warehouses locations products stock location-stock reservations; do
    record "$BUILD/bin/walklistctl" import "$kind" "$csv/$kind.csv" --org "$org" \
      --database-url "$DB" 2>>"$WORK/import.log"
  done
  end=$(now)
  total=$(elapsed "$start" "$end")
  rm -rf -- "$csv"
  row "import, $size SKUs ($rows rows, six files)" "$total s" "-" "-" "-"
  IMPORT_SECONDS[$size]=$total
  # As autovacuum would soon after a load this size: the export reads settled pages.
  sql -c 'VACUUM ANALYZE' >/dev/null
}

bench_export() {
  local size=$1 org_id key curl_out seconds bytes rss0 hwm floor narrow ratio_sql ratio_narrow
  org_id=$(sql -c "SELECT org_id FROM organizations WHERE slug = 'cat-$size'")
  key=$("$BUILD/bin/walklistctl" key create --org "cat-$size" --scopes stock:read,scanner \
    --name bench --database-url "$DB" 2>/dev/null)
  KEY[$size]=$key

  # The floors: the service's own export SQL, and a plain table of the same rows.
  sql -c 'SET client_min_messages = warning' -c 'DROP TABLE IF EXISTS bench_narrow' \
    -c "CREATE TABLE bench_narrow AS
          SELECT sku, qty, location FROM stock_availability WHERE org_id = $org_id ORDER BY sku" \
    -c 'VACUUM ANALYZE bench_narrow' >/dev/null
  COMMANDS+=("psql -c '\\copy (SELECT sku, qty, location FROM stock_availability WHERE org_id = $org_id ORDER BY sku) to /dev/null'")
  floor=$(best_of_3 pg_psql "$DB" -c "\\copy (SELECT sku, qty, location FROM stock_availability WHERE org_id = $org_id ORDER BY sku) to /dev/null")
  COMMANDS+=("psql -c '\\copy bench_narrow to /dev/null'")
  narrow=$(best_of_3 pg_psql "$DB" -c '\copy bench_narrow to /dev/null')

  # Cold: a fresh walklistd, nothing cached.
  stop_walklistd
  start_walklistd
  rss0=$(rss_kib VmRSS)
  COMMANDS+=("curl -sS -o /dev/null -w '%{http_code} %{time_total} %{size_download}' -H 'Authorization: Bearer KEY' http://127.0.0.1:PORT/api/v1/stock-export")
  curl_out=$(curl -sS -o /dev/null -w '%{http_code} %{time_total} %{size_download}' \
    -H "Authorization: Bearer $key" "http://127.0.0.1:$PORT/api/v1/stock-export")
  read -r code seconds bytes <<<"$curl_out"
  [[ $code == 200 ]] || die "cold export answered $code"
  hwm=$(rss_kib VmHWM)
  ratio_sql=$(ratio "$seconds" "$floor")
  ratio_narrow=$(ratio "$seconds" "$narrow")
  row "cold export, $size SKUs" "$seconds s, $(mbps "$bytes" "$seconds") MB/s, $((bytes / 1000000)) MB" \
    "SQL floor $floor s; narrow floor $narrow s" "x$ratio_sql; x$ratio_narrow (narrow)" \
    "peak RSS $((hwm / 1024)) MiB, +$(((hwm - rss0) / 1024)) MiB"
  EXPORT_RATIO[$size]=$ratio_narrow
  RSS_GROWTH[$size]=$(((hwm - rss0) / 1024))

  # Unchanged: the same export again (cached body), and conditional (304).
  local etag
  etag=$(curl -sS -D - -o /dev/null -H "Authorization: Bearer $key" \
    "http://127.0.0.1:$PORT/api/v1/stock-export" | sed -n 's/^ETag: *\(.*\)\r$/\1/Ip')
  run_wrk "$WORK/full-$size.txt" -t 2 -c 4 -d "${DURATION}s" -H "Authorization: Bearer $key" \
    "http://127.0.0.1:$PORT/api/v1/stock-export"
  read -r rps p50 p99 transfer bad <<<"$(wrk_figures "$WORK/full-$size.txt")"
  row "unchanged export, full body, $size SKUs (wrk 4 connections)" \
    "$rps req/s, $transfer, p50 $p50 ms, p99 $p99 ms" "-" "-" "non-2xx: $bad"
  FULL_BODY[$size]=$transfer
  run_wrk "$WORK/304-$size.txt" -t 2 -c "$CONNECTIONS" -d "${DURATION}s" \
    -H "Authorization: Bearer $key" -H "If-None-Match: $etag" \
    "http://127.0.0.1:$PORT/api/v1/stock-export"
  read -r rps p50 p99 transfer bad <<<"$(wrk_figures "$WORK/304-$size.txt")"
  row "unchanged export, If-None-Match (304), $size SKUs (wrk $CONNECTIONS connections)" \
    "$rps req/s, p50 $p50 ms, p99 $p99 ms" "-" "-" "non-3xx: $bad"
  NOT_MODIFIED[$size]=$rps
}

bench_create() {
  local keys=$WORK/keys.txt rps p50 p99 transfer bad floor_rps sync
  record pg_psql "$DB" -tA -F ' ' -v orgs="$ORGS" -f "$BENCH_DIR/setup_orgs.sql" |
    grep '^wlk_' >"$keys"
  export WALKLIST_BENCH_KEYS=$keys WALKLIST_BENCH_DIR=$BENCH_DIR
  # The organizations rotate, but one organization per request: a second round of 304s over
  # the empty exports of every benchmark organization measures the key check plus the cache.
  run_wrk "$WORK/304-rotating.txt" -t 2 -c "$CONNECTIONS" -d "${DURATION}s" \
    -s "$BENCH_DIR/not_modified.lua" "http://127.0.0.1:$PORT"
  read -r rps p50 p99 transfer bad <<<"$(wrk_figures "$WORK/304-rotating.txt")"
  row "unchanged export, 304, rotating over $ORGS organizations" \
    "$rps req/s, p50 $p50 ms, p99 $p99 ms" "-" "-" "non-3xx: $bad"

  run_wrk "$WORK/create.txt" -t 2 -c "$CONNECTIONS" -d "${DURATION}s" \
    -s "$BENCH_DIR/create.lua" "http://127.0.0.1:$PORT"
  read -r rps p50 p99 transfer bad <<<"$(wrk_figures "$WORK/create.txt")"
  local org_min org_max
  org_min=$(sql -c "SELECT min(org_id) FROM organizations WHERE slug LIKE 'bench-%'")
  org_max=$(sql -c "SELECT max(org_id) FROM organizations WHERE slug LIKE 'bench-%'")
  sync=$(sql -c 'SHOW synchronous_commit')
  record pgbench -n -M prepared -c "$CONNECTIONS" -j 2 -T "$DURATION" -D org_min="$org_min" \
    -D org_max="$org_max" -f "$BENCH_DIR/create_floor.sql" "$DB" >"$WORK/pgbench.txt" 2>&1 || true
  floor_rps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$WORK/pgbench.txt" | head -n 1)
  local floor_lat
  floor_lat=$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' "$WORK/pgbench.txt")
  row "create walk list, POST, 20 codes (wrk $CONNECTIONS connections)" \
    "$rps req/s, p50 $p50 ms, p99 $p99 ms" \
    "pgbench INSERT, $CONNECTIONS connections, synchronous_commit=$sync: ${floor_rps%.*} tps (avg $floor_lat ms)" \
    "x$(ratio "$rps" "$floor_rps")" "non-2xx: $bad"
  CREATE_RATIO=$(ratio "$rps" "$floor_rps")
  CREATE_P99=$p99

  run_wrk "$WORK/create-get.txt" -t 2 -c "$CONNECTIONS" -d "${DURATION}s" \
    -s "$BENCH_DIR/create_get.lua" "http://127.0.0.1:$PORT"
  read -r rps p50 p99 transfer bad <<<"$(wrk_figures "$WORK/create-get.txt")"
  row "create walk list, GET form, 20 codes (wrk $CONNECTIONS connections)" \
    "$rps req/s, p50 $p50 ms, p99 $p99 ms" "-" "-" "non-2xx: $bad"
}

# LoadList of 200-code lists (codes of the largest catalogue) on the device transport, one at
# a time, each list loaded once (a loaded list cannot be loaded again).
bench_load_list() {
  local size=${SIZES[-1]} org_id key=${KEY[${SIZES[-1]}]} ids i id times=$WORK/load-times.txt
  org_id=$(sql -c "SELECT org_id FROM organizations WHERE slug = 'cat-$size'")
  ids=$(sql -c "INSERT INTO locate_lists (org_id, id, name, codes)
                SELECT $org_id, 'bench' || lpad(n::text, 5, '0'), 'Bench walk ' || n,
                       ARRAY(SELECT sku FROM products WHERE org_id = $org_id
                              ORDER BY md5(sku || n) LIMIT 200)
                  FROM generate_series(1, $LOADS) AS n RETURNING id")
  : >"$times"
  for id in $ids; do
    # LoadListRequest { string id = 1; }: tag 0x0a, length, bytes.
    printf "\\x0a\\x$(printf %02x ${#id})%s" "$id" >"$WORK/load.bin"
    curl -sS -o /dev/null -w '%{http_code} %{time_total}\n' -X POST \
      -H "Authorization: Bearer $key" -H 'Content-Type: application/proto' \
      --data-binary "@$WORK/load.bin" \
      "http://127.0.0.1:$PORT/walklist.scanner.v1.DeviceService/LoadList" >>"$times"
  done
  COMMANDS+=("curl -X POST -H 'Content-Type: application/proto' --data-binary @LoadListRequest http://127.0.0.1:PORT/walklist.scanner.v1.DeviceService/LoadList   ($LOADS lists of 200 codes, one at a time)")
  local bad p50 p99
  bad=$(awk '$1 != 200' "$times" | wc -l)
  read -r p50 p99 <<<"$(awk '{ print $2 * 1000 }' "$times" | sort -n |
    awk '{ v[NR] = $1 } END { printf "%.2f %.2f\n", v[int((NR + 1) * 0.5)], v[int(NR * 0.99 + 0.99)] }')"
  row "LoadList, 200 codes, device transport, $size-SKU catalogue ($LOADS loads, sequential)" \
    "p50 $p50 ms, p99 $p99 ms" "-" "-" "non-200: $bad"
}

write_report() {
  local cores mem commit
  cores=$(nproc)
  mem=$(awk '$1 == "MemTotal:" { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
  commit=$(git -C "$WL_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
  {
    printf '# Benchmarks\n\n'
    printf 'Written by `scripts/bench.sh%s` on %s (commit %s, plus the working tree).\n\n' \
      "$( ((QUICK)) && echo ' --quick')" "$(date -u +%Y-%m-%dT%H:%MZ)" "$commit"
    printf 'Machine: %s cores (%s), %s memory, load average before the run: %s.\n' "$cores" \
      "$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)" "$mem" "$LOAD_BEFORE"
    printf 'PostgreSQL %s, private cluster, durable (fsync on, synchronous_commit on),\n' \
      "$(pg_psql "$DB" -tAc 'SHOW server_version')"
    printf 'shared_buffers 2GB, work_mem 64MB; walklistd %s build, default threads and pool.\n\n' \
      "$(grep -s '^CMAKE_BUILD_TYPE' "$BUILD/CMakeCache.txt" | cut -d= -f2)"
    printf '| measurement | walklistd | floor | ratio | notes |\n|---|---|---|---|---|\n'
    printf '%s\n' "${ROWS[@]}"
    printf '\n## Commands\n\n```sh\n'
    printf '%s\n' "${COMMANDS[@]}" | sed "s#$WL_ROOT/##g; s#$WORK#\$WORK#g"
    printf '```\n'
  } >"$OUT.tmp"
  mv -f "$OUT.tmp" "$OUT"
}

main() {
  trap cleanup EXIT
  LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
  ((INSTALL)) && install_tools
  command -v wrk >/dev/null || die "wrk is missing (apt-get install wrk)"
  command -v pgbench >/dev/null || die "pgbench is missing (apt-get install postgresql-contrib)"
  # Release, and only the two programs: the benchmark needs no test binaries.
  cmake -S "$WL_ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DWL_BUILD_TESTS=OFF >/dev/null
  cmake --build "$BUILD" -j "${WALKLIST_JOBS:-2}" --target walklistd walklistctl >/dev/null
  start_postgres
  declare -gA IMPORT_SECONDS=() EXPORT_RATIO=() RSS_GROWTH=() FULL_BODY=() NOT_MODIFIED=() KEY=()
  local size
  for size in "${SIZES[@]}"; do
    log "catalogue of $size SKUs"
    load_catalogue "$size"
    bench_export "$size"
  done
  log "walk lists"
  bench_create
  bench_load_list
  write_report
  cat "$OUT"
}

main "$@"
