#!/usr/bin/env bash
# Benchmarks against the floor: builds in release mode, starts a private, durable
# PostgreSQL and walklistd, and prints one table of figures, each beside what PostgreSQL alone
# does with the same work; the table also goes to BENCHMARKS.md (or --out FILE) with the
# machine's cores and memory and every command run. Figures, not pass/fail: a script, not a
# test.
#
#   scripts/bench.sh                 100,000 and 1,000,000 SKUs (about 15 minutes on 2 cores)
#   scripts/bench.sh --quick         2,000 and 10,000 SKUs, short runs (about a minute)
#   scripts/bench.sh --tiny          300 and 1,000 SKUs, 1 s runs: keeps the script working (ctest)
#   scripts/bench.sh --writes        only the small writes: the generated catalogue of
#                                    each size, then one bin's staging flag and a 5-row file of
#                                    each import kind, WRITE_REPS times each (median); prints the
#                                    table, and writes it only with --out FILE (a few minutes)
#   scripts/bench.sh --tenants       only the rows at the specified limits (creation, GET by id,
#                                    304s over 20,000 and 100,000 organizations), --runs times
#                                    (default 3); prints the table, and writes it only with --out
#   scripts/bench.sh --rpc-export    only the streamed export (StreamExportStock) over gRPC and
#                                    Connect, binary and gzip, against the REST export in the
#                                    same run, each cold from a fresh walklistd: time and
#                                    walklistd's RSS growth (with --quick or --tiny: the small
#                                    sizes); prints the table, and writes it only with --out
#   options: --no-install (use what is there), --no-build (use the binaries in the build dir),
#            --out FILE, --keep (leave the cluster running), --skip-if-missing (exit 77 when
#            wrk, h2load or pgbench is missing, for ctest), --runs N (rows at the specified limits)
#
# Every row at the specified limits starts from a database of its own, created and migrated just
# before it, holding only the organizations made for it and never analyzed: what a new deployment
# runs, whose plans must not wait for statistics. Each such row reports, per request, the CPU time
# of walklistd and of PostgreSQL and the WAL written, beside the same figures of the floor.
#
# Environment: WALKLIST_BUILD_DIR (default build-release), WALKLIST_JOBS (2).
set -euo pipefail

# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$WL_ROOT"

QUICK=0 TINY=0 WRITES=0 TENANTS=0 RPC_EXPORT=0 RUNS= INSTALL=1 BUILD_IT=1 KEEP=0 SKIP_IF_MISSING=0 OUT=$WL_ROOT/BENCHMARKS.md
OUT_GIVEN=0
while (($#)); do
  case $1 in
  --quick) QUICK=1 ;;
  --writes) WRITES=1 ;;
  --tenants) TENANTS=1 ;;
  --rpc-export) RPC_EXPORT=1 ;;
  --runs) RUNS=$2; shift ;;
  --tiny) TINY=1 ;;
  --no-install) INSTALL=0 ;;
  --no-build) BUILD_IT=0 ;;
  --skip-if-missing) SKIP_IF_MISSING=1 ;;
  --keep) KEEP=1 ;;
  --out) OUT=$2 OUT_GIVEN=1; shift ;;
  *) die "unknown option $1 (--quick, --tiny, --writes, --tenants, --rpc-export, --runs N, --no-install, --no-build, --out FILE, --keep)" ;;
  esac
  shift
done

# SPEC_ORGS: the organizations of the rows at the specified limits; the smaller count runs
# SPEC_SHORT seconds (30 requests a minute per organization bound what a run may send: 5,000
# organizations for 3 s stay under it up to 50,000 requests a second).
if ((TINY)); then
  SIZES=(300 1000) DURATION=1 WARMUP=1 ORGS=40 LOADS=3 SPEC_ORGS=(1000 3000) SPEC_SHORT=1
elif ((QUICK)); then
  SIZES=(2000 10000) DURATION=3 WARMUP=2 ORGS=300 LOADS=10 SPEC_ORGS=(5000 20000) SPEC_SHORT=2
else
  SIZES=(100000 1000000) DURATION=15 WARMUP=5 ORGS=3000 LOADS=100 SPEC_ORGS=(5000 20000 100000)
  SPEC_SHORT=3
fi
# The one-organization 304 rows send this many requests (h2load -n), not DURATION seconds' worth:
# with the limits raised to their maximum, 1,000,000 a minute, a fast machine answers more than
# that in 15 s, and the rest would be 429s.
ONE_ORG_REQUESTS=$((DURATION * 60000 < 900000 ? DURATION * 60000 : 900000))
# The rows at the specified limits are run RUNS times (each from new databases).
((TENANTS)) && SPEC_ORGS=("${SPEC_ORGS[@]:1}")
RUNS=${RUNS:-$( ((TENANTS)) && echo 3 || echo 1)}
CONNECTIONS=64
SEED=42
# Repetitions of each small write (bench_writes); its row shows the median.
WRITE_REPS=${WALKLIST_BENCH_WRITE_REPS:-7}
BENCH_DIR=$WL_ROOT/scripts/bench
# The wrk scripts find keys.lua through it.
export WALKLIST_BENCH_DIR=$BENCH_DIR
export WALKLIST_BUILD_DIR=${WALKLIST_BUILD_DIR:-build-release}
BUILD=$(build_dir)
STATE=$BUILD/benchpg
WORK=$(mktemp -d "${TMPDIR:-/tmp}/walklist-bench.XXXXXX")
PORT=0 WALKLISTD_PID= DB= ADMIN= WALKLISTD_RECORDED=0 SPEC_RECORDED=0 SETTLE_RECORDED=0 SETTLE_LOAD_RECORDED=0
FRESH_RECORDED=0 ORGS_RECORDED=0 LISTS_RECORDED=0 FLOOR_IMPORT_RECORDED=0
declare -a COMMANDS=() ROWS=()

# --- Helpers ---------------------------------------------------------------------------------

# Runs a command and records it for the report.
record() {
  COMMANDS+=("$(printf '%q ' "$@")")
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

# start_walklistd [specified]: with the rate limits raised to 1,000,000 a minute (the rows of
# the export and of "limits raised"), or with the specified limits (30/30/60 a minute, the
# defaults) when the argument is given.
start_walklistd() {
  local log_file=$WORK/walklistd.log
  local -a limits=(--rate-limit-locate-lists 1000000 --rate-limit-stock-export 1000000
    --rate-limit-shared 1000000)
  [[ ${1:-} == specified ]] && limits=()
  # As many request threads (and pooled connections) as wrk has connections, as pgbench has
  # backends: libmicrohttpd's workers wait for the database, so threads bound concurrency.
  if [[ ${1:-} == specified ]]; then
    ((SPEC_RECORDED++)) || COMMANDS+=("walklistd --database-url \$DB --listen 127.0.0.1:0 --threads $CONNECTIONS --db-pool-size $((CONNECTIONS + 2)) --max-connections-per-ip 1000   (the specified limits; restarted before each row below)")
  else
    ((WALKLISTD_RECORDED++)) ||
      COMMANDS+=("walklistd --database-url \$DB --listen 127.0.0.1:0 --threads $CONNECTIONS --db-pool-size $((CONNECTIONS + 2)) --max-connections-per-ip 1000 --rate-limit-locate-lists 1000000 --rate-limit-stock-export 1000000 --rate-limit-shared 1000000   (restarted before each cold export)")
  fi
  # Emptied here, not only by the redirection in the child: until the child runs, the port
  # below would be read from the previous walklistd's log.
  : >"$log_file"
  "$BUILD/bin/walklistd" --database-url "$DB" --listen 127.0.0.1:0 \
    --threads "$CONNECTIONS" --db-pool-size "$((CONNECTIONS + 2))" \
    --max-connections-per-ip 1000 "${limits[@]}" 2>"$log_file" &
  WALKLISTD_PID=$!
  for _ in $(seq 100); do
    PORT=$(sed -n 's/.*"msg":"listening".*"port":\([0-9]*\).*/\1/p' "$log_file" | head -n 1)
    [[ -n $PORT ]] && break
    sleep 0.1
  done
  [[ -n $PORT ]] || die "walklistd did not start: $(tail -n 5 "$log_file")"
}

# After a warm-up, a measured run of LUA (in scripts/bench/, rotating over the benchmark
# organizations) as one row; RUN_RPS holds its requests per second.
rotating_run() {
  local name=$1 lua=$2 expected=$3 label=$4 p50 p99 transfer bad
  warm_up "$BENCH_DIR/$lua"
  run_wrk "$WORK/$name.txt" -t 2 -c "$CONNECTIONS" -d "${DURATION}s" -s "$BENCH_DIR/$lua" \
    "http://127.0.0.1:$PORT"
  read -r RUN_RPS p50 p99 transfer bad <<<"$(wrk_figures "$WORK/$name.txt")"
  row "$label" "$RUN_RPS req/s, p50 $p50 ms, p99 $p99 ms" "-" "-" "non-$expected: $bad"
}

# The same load as the run that follows, for WARMUP seconds, figures thrown away.
warm_up() {
  wrk -t 2 -c "$CONNECTIONS" -d "${WARMUP}s" -s "$1" "http://127.0.0.1:$PORT" >/dev/null 2>&1 || true
}

stop_walklistd() {
  if [[ -n $WALKLISTD_PID ]] && kill -0 "$WALKLISTD_PID" 2>/dev/null; then
    kill -TERM "$WALKLISTD_PID" 2>/dev/null || true
    wait "$WALKLISTD_PID" 2>/dev/null || true
  fi
  WALKLISTD_PID=
}

metric_value() {
  curl -sS "http://127.0.0.1:$PORT/metrics" | awk -v name="$1" '$1 == name { print $2 }'
}

# Answers walklistd gave on /api/v1 with a status other than STATUS so far (its metrics count
# every answer by route and status; the wrk scripts check none, to cost what pgbench costs).
answers_other_than() {
  curl -sS "http://127.0.0.1:$PORT/metrics" | awk -v status="status=\"$1\"" '
    $1 ~ /^walklist_http_requests_total[{]/ && $1 !~ /route="\/(metrics|healthz|readyz)"/ &&
      index($1, status) == 0 { n += $2 }
    END { print n + 0 }'
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
  grep -q '^Requests/sec' "$out" ||
    log "wrk measured nothing: $(tail -n 2 "$out" | tr '\n' ' ') walklistd: $(tail -n 3 "$WORK/walklistd.log" 2>/dev/null | tr '\n' ' ')"
  if grep -q '\.lua:[0-9]*:' "$out"; then die "a wrk script failed: $(grep -m 1 '\.lua:[0-9]*:' "$out")"; fi
}

# h2load (nghttp2) in HTTP/1.1: out.txt is its report, out.log one line per request (start,
# status, microseconds).
run_h2load() {
  local out=$1
  shift
  record h2load --h1 "$@" --log-file="$out.log" >"$out.txt" 2>&1 || true
  grep -q '^finished in' "$out.txt" || log "h2load measured nothing: $(tail -n 2 "$out.txt" | tr '\n' ' ')"
}

# "req/s p50-ms p99-ms non-3xx" of a run_h2load run.
h2load_figures() {
  local rps bad
  rps=$(sed -n 's/^finished in [^,]*, \([0-9.]*\) req\/s.*/\1/p' "$1.txt")
  bad=$(awk '$1 == "requests:" { done = $6 } $1 == "status" { gsub(",", ""); three = $5 }
    END { print done - three }' "$1.txt")
  sort -n -k3,3 "$1.log" | awk -v rps="${rps:-0}" -v bad="${bad:-0}" '{ v[NR] = $3 / 1000 }
    END { p99 = int(NR * 0.99 + 0.5); if (p99 < 1) p99 = 1
          printf "%.0f %.2f %.2f %s\n", rps, v[int((NR + 1) / 2)] + 0, v[p99] + 0, bad }'
}

# Before a measured walk-list run (and the floor): no checkpoint left to run in the middle of
# it, so that every run of the same work starts from the same state of the server.
settle() {
  ((SETTLE_RECORDED++)) || COMMANDS+=("psql -c CHECKPOINT   (before the floor, each specified-limit row and the small writes)")
  sql -c CHECKPOINT >/dev/null
}

# Before a timed import and its floor: what autovacuum owes the loads before it done first
# (VACUUM ANALYZE), then settle. The generated catalogue and each import leave millions of
# rows for autovacuum, which otherwise vacuums them beside the next timed load on the same two
# cores, whenever its worker happens to wake (by hand, the six files of 1,000,000 SKUs as one
# catalogue just after the same files one by one: 24.1 and 27.3 s after a VACUUM ANALYZE, 28.5
# and 30.1 s without, autovacuum vacuuming the files' tables meanwhile).
settle_load() {
  ((SETTLE_LOAD_RECORDED++)) || COMMANDS+=("psql -c 'VACUUM ANALYZE' -c CHECKPOINT   (before each timed import and its floor)")
  sql -c 'VACUUM ANALYZE' >/dev/null
  settle
}

# CPU time (clock ticks, user + system) used so far by walklistd, and by the cluster: its live
# processes plus the children the postmaster has reaped (pgbench's backends exit with it).
cpu_ticks_walklistd() { awk '{ print $14 + $15 }' "/proc/$WALKLISTD_PID/stat"; }
cpu_ticks_postgres() {
  local postmaster pid total
  postmaster=$(head -n 1 "$(pg_cluster_dir "$STATE")/data/postmaster.pid")
  total=$(awk '{ print $16 + $17 }' "/proc/$postmaster/stat")
  for pid in "$postmaster" $(pgrep -P "$postmaster"); do
    total=$((total + $(awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null || echo 0)))
  done
  echo "$total"
}
# Microseconds of CPU per request: TICKS over REQUESTS.
# Sets VAR to the CPU seconds (user + system) of the children this shell waited for so far:
# the load generator's own cost (bash's times, through a file: in a command substitution it
# would describe a subshell's children).
children_cpu() {
  local user sys
  times >"$WORK/times.txt"
  read -r user sys < <(sed -n 2p "$WORK/times.txt")
  printf -v "$1" '%s' "$(awk -v u="$user" -v s="$sys" '
    function seconds(v, minutes) { minutes = v; sub(/m.*/, "", minutes); sub(/^[0-9]+m/, "", v); sub(/s$/, "", v); return minutes * 60 + v }
    BEGIN { printf "%.3f", seconds(u) + seconds(s) }')"
}
client_us() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN { if (n > 0) printf "%.0f", (b - a) * 1e6 / n; else print "-" }'; }
cpu_us() { awk -v t="$1" -v n="$2" -v hz="$(getconf CLK_TCK)" 'BEGIN { if (n > 0) printf "%.0f", t * 1e6 / hz / n; else print "-" }'; }
requests_done() { awk '/requests in/ { print $1 }' "$1"; }

# --- The streamed export over gRPC and Connect (--rpc-export) --------------------------------

# walklistd with the export's rate limit raised and a gRPC listener too: PORT and GRPC_PORT.
# At the specified limits: each row is one export, a few a minute per organization.
start_walklistd_rpc() {
  local log_file=$WORK/walklistd.log
  : >"$log_file"
  "$BUILD/bin/walklistd" --database-url "$DB" --listen 127.0.0.1:0 --grpc-listen 127.0.0.1:0 \
    2>"$log_file" &
  WALKLISTD_PID=$!
  PORT= GRPC_PORT=
  for _ in $(seq 100); do
    PORT=$(sed -n 's/.*"msg":"listening".*"port":\([0-9]*\).*/\1/p' "$log_file" | head -n 1)
    GRPC_PORT=$(sed -n 's/.*"msg":"listening".*"grpcPort":\([0-9]*\).*/\1/p' "$log_file" | head -n 1)
    [[ -n $PORT && -n $GRPC_PORT ]] && break
    sleep 0.1
  done
  [[ -n $PORT && -n $GRPC_PORT ]] || die "walklistd did not start: $(tail -n 5 "$log_file")"
}

# One cold export of KIND (rest, rest-gzip, grpc, grpc-gzip, connect, connect-gzip) from a fresh
# walklistd, read by curl into /dev/null: sets RPC_SECONDS, RPC_BYTES and RPC_GROWTH (MiB of
# walklistd's peak RSS over its RSS before the export).
rpc_export_once() {
  local kind=$1 key=$2 rss0 hwm out status trace=$WORK/curl-$1.txt
  local -a args=(-sS -o /dev/null -w '%{http_code} %{time_total} %{size_download}')
  # An empty request message, enveloped (gRPC and Connect share the 5-byte frame).
  printf '\0\0\0\0\0' >"$WORK/empty-request"
  case $kind in
  rest | rest-gzip)
    args+=(-H "Authorization: Bearer $key" "http://127.0.0.1:PORT/api/v1/stock-export")
    [[ $kind == rest-gzip ]] && args+=(-H 'Accept-Encoding: gzip') ;;
  grpc | grpc-gzip)
    args+=(-v --http2-prior-knowledge --data-binary "@$WORK/empty-request"
      -H 'content-type: application/grpc' -H 'te: trailers' -H "authorization: Bearer $key"
      -H "grpc-accept-encoding: $([[ $kind == grpc-gzip ]] && echo gzip || echo identity)"
      "http://127.0.0.1:GRPC/walklist.v1.StockService/StreamExportStock") ;;
  connect | connect-gzip)
    args+=(--data-binary "@$WORK/empty-request" -H 'Content-Type: application/connect+proto'
      -H 'Connect-Protocol-Version: 1' -H "Authorization: Bearer $key"
      "http://127.0.0.1:PORT/walklist.v1.StockService/StreamExportStock")
    [[ $kind == connect-gzip ]] && args+=(-H 'Connect-Accept-Encoding: gzip') ;;
  esac
  stop_walklistd
  start_walklistd_rpc
  args=("${args[@]//127.0.0.1:PORT/127.0.0.1:$PORT}")
  args=("${args[@]//127.0.0.1:GRPC/127.0.0.1:$GRPC_PORT}")
  rss0=$(rss_kib VmRSS)
  COMMANDS+=("curl $(printf '%q ' "${args[@]}")")
  out=$(curl "${args[@]}" 2>"$trace")
  read -r status RPC_SECONDS RPC_BYTES <<<"$out"
  hwm=$(rss_kib VmHWM)
  RPC_GROWTH=$(((hwm - rss0) / 1024))
  [[ $status == 200 ]] || die "$kind export answered $status"
  if [[ $kind == grpc* ]] && ! grep -q '^< grpc-status: 0' "$trace"; then
    die "$kind export did not end with grpc-status 0: $(grep -m 2 'grpc-' "$trace" | tr '\n' ' ')"
  fi
}

bench_rpc_export() {
  local size=$1 key kind base rest_seconds
  key=$("$BUILD/bin/walklistctl" key create --org "cat-$size" --scopes stock:read --name rpc \
    --database-url "$DB" 2>/dev/null)
  for kind in rest grpc connect rest-gzip grpc-gzip connect-gzip; do
    rpc_export_once "$kind" "$key"
    case $kind in
    rest | rest-gzip)
      rest_seconds=$RPC_SECONDS base=$kind
      row "cold export, $size SKUs, $kind (REST)" "$RPC_SECONDS s, $((RPC_BYTES / 1000)) kB" "-" "-" \
        "peak RSS +$RPC_GROWTH MiB" ;;
    *)
      row "cold StreamExportStock, $size SKUs, $kind" "$RPC_SECONDS s, $((RPC_BYTES / 1000)) kB" \
        "$base: $rest_seconds s" "x$(ratio "$RPC_SECONDS" "$rest_seconds")" "peak RSS +$RPC_GROWTH MiB"
      RPC_RATIOS[$size]+="${RPC_RATIOS[$size]:+ }$(ratio "$RPC_SECONDS" "$rest_seconds")"
      RPC_GROWTHS[$size]+="${RPC_GROWTHS[$size]:+ }$RPC_GROWTH" ;;
    esac
  done
  stop_walklistd
}

rpc_export_targets() {
  local large=${SIZES[-1]}
  printf '| StreamExportStock (gRPC, Connect; binary, gzip) at most 1.3 x the REST export of the same coding, %s SKUs | x%s | %s |\n' \
    "$large" "${RPC_RATIOS[$large]// /, x}" "$(verdict_each "${RPC_RATIOS[$large]}" 1.3 max)"
  printf '| walklistd RSS grows by under 32 MiB during each stream | +%s MiB | %s |\n' \
    "${RPC_GROWTHS[$large]// /, +}" "$(verdict_each "${RPC_GROWTHS[$large]}" 31.99 max)"
}

# --- Steps ------------------------------------------------------------------------------------

install_tools() {
  ensure_packages
  local -a missing
  mapfile -t missing < <(missing_packages wrk nghttp2-client postgresql-contrib curl)
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

# The catalogue of SIZE SKUs: made by `walklistctl generate` straight into organization
# cat-SIZE (timed; the exports read it), and the same catalogue written as the six CSV files,
# imported file by file into organization imp-SIZE (timed), as an operator would load it, then as
# one catalogue (walklistctl import catalogue) into organization whole-SIZE (timed).
load_catalogue() {
  local size=$1 csv=$WORK/csv-$1 start end seconds kind rows=0
  "$BUILD/bin/walklistctl" org create "cat-$size" --database-url "$DB" 2>/dev/null
  "$BUILD/bin/walklistctl" org create "imp-$size" --database-url "$DB" 2>/dev/null
  start=$(now)
  record "$BUILD/bin/walklistctl" generate --org "cat-$size" --skus "$size" --seed "$SEED" \
    --database-url "$DB" 2>>"$WORK/generate.log"
  end=$(now)
  seconds=$(elapsed "$start" "$end")
  row "generate, $size SKUs, into the database" "$seconds s" "-" "-" "-"
  GENERATE_SECONDS[$size]=$seconds

  mkdir -p "$csv"
  record "$BUILD/bin/walklistctl" generate --csv "$csv" --skus "$size" --seed "$SEED" 2>/dev/null
  for kind in warehouses locations products stock location-stock reservations; do
    rows=$((rows + $(wc -l <"$csv/$kind.csv") - 1))
  done
  # The generated catalogue leaves gigabytes of WAL and millions of rows to vacuum: neither
  # is the import's.
  settle_load
  start=$(now)
  for kind in warehouses locations products stock location-stock reservations; do
    record "$BUILD/bin/walklistctl" import "$kind" "$csv/$kind.csv" --org "imp-$size" \
      --database-url "$DB" 2>>"$WORK/import.log"
  done
  end=$(now)
  seconds=$(elapsed "$start" "$end")
  # The same six files as one catalogue: one transaction, the export rows computed once.
  "$BUILD/bin/walklistctl" org create "whole-$size" --database-url "$DB" 2>/dev/null
  settle_load
  start=$(now)
  record "$BUILD/bin/walklistctl" import catalogue "$csv" --org "whole-$size" \
    --database-url "$DB" 2>>"$WORK/import.log"
  end=$(now)
  CATALOGUE_SECONDS[$size]=$(elapsed "$start" "$end")
  rm -rf -- "$csv"
  import_floor "$size"
  row "import, $size SKUs ($rows rows, six CSV files)" "$seconds s" \
    "COPY of the rows it wrote into the same tables and indexes: ${IMPORT_FLOOR[$size]} s" \
    "x$(ratio "$seconds" "${IMPORT_FLOOR[$size]}")" "walklistctl import of each file, after a checkpoint"
  row "import, $size SKUs, the six files as one catalogue" "${CATALOGUE_SECONDS[$size]} s" \
    "the same COPY: ${IMPORT_FLOOR[$size]} s" \
    "x$(ratio "${CATALOGUE_SECONDS[$size]}" "${IMPORT_FLOOR[$size]}")" \
    "walklistctl import catalogue DIR into another organization, after a checkpoint"
  IMPORT_SECONDS[$size]=$seconds
  # As autovacuum would soon after a load this size: the export reads settled pages.
  COMMANDS+=("psql -c 'VACUUM ANALYZE'")
  sql -c 'VACUUM ANALYZE' >/dev/null
}

# The tables an import writes, the export rows it computes among them.
IMPORT_TABLES=(warehouses locations products product_eans stock location_stock reservations
  stock_availability)

# The import's floor: PostgreSQL alone writing the rows the import of SIZE SKUs wrote, into the
# same tables with the same indexes and the same other catalogues in them. Each table's rows of
# organization imp-SIZE are copied out, then COPYed in as those of a new organization, one COPY
# per table in one psql session, after a checkpoint, timed together. Sets IMPORT_FLOOR[SIZE].
import_floor() {
  local size=$1 imp floor table columns dir=$WORK/floor-$1 start end
  mkdir -p "$dir"
  "$BUILD/bin/walklistctl" org create "floor-$size" --database-url "$DB" 2>/dev/null
  imp=$(sql -c "SELECT org_id FROM organizations WHERE slug = 'imp-$size'")
  floor=$(sql -c "SELECT org_id FROM organizations WHERE slug = 'floor-$size'")
  : >"$dir/in.sql"
  for table in "${IMPORT_TABLES[@]}"; do
    columns=$(sql -c "SELECT string_agg(column_name, ', ' ORDER BY ordinal_position)
                        FROM information_schema.columns
                       WHERE table_name = '$table' AND column_name <> 'org_id'")
    sql -c "\copy (SELECT $floor, $columns FROM $table WHERE org_id = $imp) to '$dir/$table'" >/dev/null
    printf '\\copy %s (org_id, %s) from %s\n' "$table" "$columns" "'$dir/$table'" >>"$dir/in.sql"
  done
  ((FLOOR_IMPORT_RECORDED++)) || COMMANDS+=("psql -c '\\copy (SELECT FLOOR_ORG, columns FROM TABLE WHERE org_id = IMPORTED_ORG) to FILE' for each of ${IMPORT_TABLES[*]}; VACUUM ANALYZE; CHECKPOINT; then, timed, one psql with '\\copy TABLE (org_id, columns) from FILE' for each   (the import's floor)")
  settle_load
  start=$(now)
  pg_psql "$DB" -q -v ON_ERROR_STOP=1 -f "$dir/in.sql" >/dev/null
  end=$(now)
  IMPORT_FLOOR[$size]=$(elapsed "$start" "$end")
  rm -rf -- "$dir"
}

bench_export() {
  local size=$1 org_id key curl_out seconds bytes rss0 hwm floor narrow ratio_sql ratio_narrow
  org_id=$(sql -c "SELECT org_id FROM organizations WHERE slug = 'cat-$size'")
  key=$("$BUILD/bin/walklistctl" key create --org "cat-$size" --scopes stock:read,scanner \
    --name bench --database-url "$DB" 2>/dev/null)
  KEY[$size]=$key

  # The floors: the service's own export SQL, and a plain table of the same rows.
  COMMANDS+=("psql -c 'CREATE TABLE bench_narrow AS SELECT sku, qty, location FROM stock_availability WHERE org_id = $org_id ORDER BY sku' -c 'VACUUM ANALYZE bench_narrow'")
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
  # h2load, not wrk: this 304 carries the Content-Length of the 200 walklistd holds (RFC 9110
  # 8.6), which wrk's HTTP parser takes for a body to wait for (it read 0 requests a second).
  run_h2load "$WORK/304-$size" -t 2 -c "$CONNECTIONS" -n "$ONE_ORG_REQUESTS" \
    -H "Authorization: Bearer $key" -H "If-None-Match: $etag" \
    "http://127.0.0.1:$PORT/api/v1/stock-export"
  read -r rps p50 p99 bad <<<"$(h2load_figures "$WORK/304-$size")"
  row "unchanged export, If-None-Match (304), $size SKUs, one organization (h2load, HTTP/1.1, $CONNECTIONS connections, $ONE_ORG_REQUESTS requests)" \
    "$rps req/s, p50 $p50 ms, p99 $p99 ms" "-" "-" \
    "non-3xx: $bad; one organization: its permits leased by this process"
  NOT_MODIFIED[$size]=$rps
}

# GET /api/v1/stock-export?QUERY with KEY into FILE, waiting out a 429's Retry-After (up to
# twice); prints curl's -w FORMAT of the last answer (FORMAT starts with %{http_code}).
export_waiting() {
  local key=$1 query=$2 file=$3 format=$4 out wait attempt
  for attempt in 1 2 3; do
    out=$(curl -sS -o "$file" -D "$WORK/export-headers" -w "$format" \
      -H "Authorization: Bearer $key" "http://127.0.0.1:$PORT/api/v1/stock-export$query")
    [[ ${out%% *} == 429 && $attempt -lt 3 ]] || break
    wait=$(sed -n 's/^Retry-After: *\([0-9]*\).*/\1/Ip' "$WORK/export-headers")
    sleep "$((${wait:-1} + 1))"
  done
  printf '%s\n' "$out"
}

# The delta export: 1,000 SKUs changed by one stock file after a full export, then
# the delta from that export's cursor, cold (no cache holds deltas). Its cost follows the
# changes: the same 1,000 SKUs cost about the same in every catalogue size.
bench_delta() {
  local size=$1 key=${KEY[$1]} org_id cursor csv=$WORK/delta-$1.csv curl_out code seconds bytes
  org_id=$(sql -c "SELECT org_id FROM organizations WHERE slug = 'cat-$size'")
  # The one-organization 304 row before may have spent this organization's raised limit (a
  # fast machine answers over 1,000,000 in its 15 s): wait as a client told 429 would.
  code=$(export_waiting "$key" "" "$WORK/delta-base-$size.json" '%{http_code}')
  cursor=$(sed -n 's/.*"cursor":"\([^"]*\)".*/\1/p' "$WORK/delta-base-$size.json")
  [[ -n $cursor ]] ||
    die "no cursor in the export of $size SKUs (HTTP $code): $(head -c 300 "$WORK/delta-base-$size.json")"
  { echo 'sku,warehouse,on_hand'
    sql -c "SELECT sku || ',' || warehouse || ',' || (on_hand + 1) FROM stock s
            JOIN warehouses w ON w.org_id = s.org_id AND w.code = s.warehouse AND w.kind = 'own'
            WHERE s.org_id = $org_id ORDER BY sku, warehouse LIMIT 1000"
  } >"$csv"
  COMMANDS+=("walklistctl import stock delta.csv --org cat-$size   (1,000 rows: on_hand + 1 of the first 1,000 own stock records)")
  "$BUILD/bin/walklistctl" import stock "$csv" --org "cat-$size" --database-url "$DB" \
    >/dev/null 2>>"$WORK/generate.log"
  COMMANDS+=("curl -sS -o /dev/null -w '%{http_code} %{time_total} %{size_download}' -H 'Authorization: Bearer KEY' 'http://127.0.0.1:PORT/api/v1/stock-export?since=CURSOR'")
  curl_out=$(export_waiting "$key" "?since=$cursor" /dev/null \
    '%{http_code} %{time_total} %{size_download}')
  read -r code seconds bytes <<<"$curl_out"
  [[ $code == 200 ]] || die "delta export answered $code"
  row "delta export, 1,000 changed SKUs in $size SKUs" "$seconds s, $bytes bytes" "-" "-" "-"
}

# Small writes into the generated catalogue of SIZE SKUs (a write costs what it
# changes): one bin's staging flag, and a 5-row file of each import kind, each imported with
# walklistctl WRITE_REPS times, alternating two versions of the file so that every import
# changes what it names. Each row: the median wall time of the import (process start and
# connection included), min and max, and the export rows the last import changed.
bench_writes() {
  local size=$1 org_id dir=$WORK/writes-$1
  org_id=$(sql -c "SELECT org_id FROM organizations WHERE slug = 'cat-$size'")
  mkdir -p "$dir"
  q() { sql -c "$1"; }
  # The own, non-staging bins holding the most SKUs: the first is the flipped one.
  local -a bins
  mapfile -t bins < <(q "SELECT ls.warehouse || ',' || ls.location FROM location_stock ls
      JOIN warehouses w ON w.org_id = ls.org_id AND w.code = ls.warehouse AND w.kind = 'own'
      JOIN locations l ON l.org_id = ls.org_id AND l.warehouse = ls.warehouse
       AND l.code = ls.location AND NOT l.staging
      WHERE ls.org_id = $org_id AND ls.warehouse = 'WH-NORTH'
      GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 6")
  printf 'warehouse,code,staging\n%s,true\n' "${bins[0]}" >"$dir/bin-a.csv"
  printf 'warehouse,code,staging\n%s,false\n' "${bins[0]}" >"$dir/bin-b.csv"
  { echo 'warehouse,code,staging'; printf '%s,true\n' "${bins[@]:1:5}"; } >"$dir/locations-a.csv"
  { echo 'warehouse,code,staging'; printf '%s,false\n' "${bins[@]:1:5}"; } >"$dir/locations-b.csv"
  # Warehouses: the four renamed, and a fifth holding 5 SKUs whose kind flips (own, supplier).
  "$BUILD/bin/walklistctl" import warehouses /dev/stdin --org "cat-$size" --database-url "$DB" \
    >/dev/null 2>&1 <<<$'code,name,kind\nWH-BENCH,Bench shelf,supplier'
  { echo 'sku,warehouse,on_hand'
    q "SELECT sku || ',WH-BENCH,' || (10 + n) FROM (SELECT sku, row_number() OVER (ORDER BY sku) n
         FROM products WHERE org_id = $org_id ORDER BY sku OFFSET $((size * 4 / 10)) LIMIT 5) p"
  } >"$dir/bench-stock.csv"
  "$BUILD/bin/walklistctl" import stock "$dir/bench-stock.csv" --org "cat-$size" \
    --database-url "$DB" >/dev/null 2>&1
  local v
  for v in a b; do
    { echo 'code,name,kind'
      q "SELECT code || ',' || split_part(name, ' (', 1) || ' ($v)' || ',' || kind FROM warehouses
          WHERE org_id = $org_id AND code <> 'WH-BENCH' ORDER BY code"
      echo "WH-BENCH,Bench shelf,$([[ $v == a ]] && echo own || echo supplier)"
    } >"$dir/warehouses-$v.csv"
    { echo 'sku,name,eans'
      q "SELECT sku || ',Product ' || sku || ' ($v),' || '41' || lpad(n::text, 10, '0')
                || CASE WHEN '$v' = 'a' THEN '|42' || lpad(n::text, 10, '0') ELSE '' END
           FROM (SELECT sku, row_number() OVER (ORDER BY sku) n FROM products
                  WHERE org_id = $org_id ORDER BY sku OFFSET $((size * 3 / 10)) LIMIT 5) p"
    } >"$dir/products-$v.csv"
    { echo 'sku,warehouse,on_hand'
      q "SELECT s.sku || ',' || s.warehouse || ',' || (s.on_hand + ('$v' = 'a')::int)
           FROM stock s JOIN warehouses w ON w.org_id = s.org_id AND w.code = s.warehouse
            AND w.kind = 'own' WHERE s.org_id = $org_id
          ORDER BY s.sku, s.warehouse OFFSET $((size * 5 / 10)) LIMIT 5"
    } >"$dir/stock-$v.csv"
    { echo 'sku,warehouse,location,quantity'
      q "SELECT sku || ',' || warehouse || ',' || location || ','
                || CASE WHEN '$v' = 'a' THEN quantity + 200 ELSE quantity END
           FROM location_stock WHERE org_id = $org_id
          ORDER BY sku, warehouse, location OFFSET $((size * 6 / 10)) LIMIT 5"
    } >"$dir/location-stock-$v.csv"
    { echo 'ref,sku,warehouse,quantity,status'
      q "SELECT ref || ',' || sku || ',' || warehouse || ',' || (quantity + ('$v' = 'a')::int)
                || ',' || status
           FROM reservations WHERE org_id = $org_id AND status = 'active'
          ORDER BY ref OFFSET $((size / 10)) LIMIT 5"
    } >"$dir/reservations-$v.csv"
  done
  COMMANDS+=("walklistctl import KIND FILE --org cat-$size   ($WRITE_REPS times each, the two versions of each file alternating: one bin's staging flag; 5 rows of each kind, see bench_writes)")
  # The catalogue's load leaves gigabytes of WAL: its checkpoint, not the writes, would set
  # their commit times.
  settle

  local label kind file times i start end version changed median low high
  for label in "bin:locations:bin" "locations:locations:locations" "warehouses:warehouses:warehouses" \
    "products:products:products" "stock:stock:stock" "location-stock:location-stock:location-stock" \
    "reservations:reservations:reservations"; do
    IFS=: read -r label kind file <<<"$label"
    times=$dir/$label.times
    : >"$times"
    for ((i = 0; i < WRITE_REPS; i++)); do
      local variant=a
      ((i % 2)) && variant=b
      version=$(q "SELECT coalesce(max(version), 0) FROM export_versions WHERE org_id = $org_id")
      start=$EPOCHREALTIME
      "$BUILD/bin/walklistctl" import "$kind" "$dir/$file-$variant.csv" --org "cat-$size" \
        --database-url "$DB" >/dev/null 2>>"$WORK/writes.log" ||
        die "walklistctl import $kind $file-$variant.csv failed: $(tail -n 2 "$WORK/writes.log")"
      end=$EPOCHREALTIME
      echo "$(elapsed "$start" "$end")" >>"$times"
    done
    changed=$(q "SELECT count(*) FROM export_changes WHERE org_id = $org_id AND version > $version")
    read -r median low high <<<"$(sort -n "$times" |
      awk '{ v[NR] = $1 * 1000 } END { printf "%.1f %.1f %.1f\n", v[int((NR + 1) / 2)], v[1], v[NR] }')"
    case $label in
    bin) label="one bin's staging flag (${bins[0]/,/ }), locations file of 1 row" ;;
    warehouses) label="warehouses file of 5 rows (4 renamed, one 5-SKU warehouse own <-> supplier)" ;;
    *) label="$label file of 5 rows" ;;
    esac
    row "small write, $label, $size SKUs" "median $median ms (min $low, max $high; $WRITE_REPS imports)" \
      "-" "-" "export rows changed by the last: $changed; walklistctl wall time, start and connection included"
    WRITE_MEDIANS+=("$size|$label|$median")
    # An odd number of imports leaves the first version: the second puts the catalogue back.
    if ((WRITE_REPS % 2)); then
      "$BUILD/bin/walklistctl" import "$kind" "$dir/$file-b.csv" --org "cat-$size" \
        --database-url "$DB" >/dev/null 2>>"$WORK/writes.log"
    fi
  done
}

bench_create() {
  local keys=$WORK/keys.txt rps p50 p99 transfer bad floor_rps sync
  COMMANDS+=("psql -tA -F ' ' -v orgs=$ORGS -v set=bk -f scripts/bench/setup_orgs.sql \$DB > keys.txt")
  pg_psql "$DB" -tA -F ' ' -v orgs="$ORGS" -v set=bk -f "$BENCH_DIR/setup_orgs.sql" |
    grep '^wlk_' >"$keys"
  COMMANDS+=("export WALKLIST_BENCH_KEYS=keys.txt WALKLIST_BENCH_DIR=scripts/bench")
  export WALKLIST_BENCH_KEYS=$keys WALKLIST_BENCH_DIR=$BENCH_DIR
  # The organizations rotate, but one organization per request: 304s over the empty exports of
  # every benchmark organization measure the key check, the rate limit and the cache. Each run
  # follows a warm-up with the same load: the first requests of each organization check its key
  # and ask for rate-limit permits in the database, as they do once per process in production.
  COMMANDS+=("wrk -t 2 -c $CONNECTIONS -d ${WARMUP}s -s LUA ...   (warm-up before each run below)")
  rotating_run 304-rotating not_modified.lua 3xx \
    "unchanged export, 304, rotating over $ORGS organizations, limits raised"

  # Again reading each organization's version in the database on every request
  # (WALKLIST_EXPORT_CACHE_TRUST_NOTIFY=0), for comparison.
  stop_walklistd
  export WALKLIST_EXPORT_CACHE_TRUST_NOTIFY=0
  start_walklistd
  unset WALKLIST_EXPORT_CACHE_TRUST_NOTIFY
  COMMANDS+=("WALKLIST_EXPORT_CACHE_TRUST_NOTIFY=0 walklistd ...   (then the warm-up and:)")
  rotating_run 304-reading not_modified.lua 3xx \
    "unchanged export, 304, rotating, version read on every request, limits raised"
  stop_walklistd
  start_walklistd

  warm_up "$BENCH_DIR/create.lua"
  local w0 p0 w1 p1 commits0 lists0 per_commit
  local lsn0 lsn1 k0 k1
  w0=$(cpu_ticks_walklistd) p0=$(cpu_ticks_postgres) lsn0=$(wal_lsn)
  commits0=$(metric_value walklist_admission_commits_total)
  lists0=$(metric_value walklist_admission_requests_total)
  children_cpu k0
  run_wrk "$WORK/create.txt" -t 2 -c "$CONNECTIONS" -d "${DURATION}s" \
    -s "$BENCH_DIR/create.lua" "http://127.0.0.1:$PORT"
  children_cpu k1
  w1=$(cpu_ticks_walklistd) p1=$(cpu_ticks_postgres) lsn1=$(wal_lsn)
  per_commit=$(ratio "$(($(metric_value walklist_admission_requests_total) - lists0))" \
    "$(($(metric_value walklist_admission_commits_total) - commits0))")
  local served create_walklistd_us create_postgres_us
  served=$(requests_done "$WORK/create.txt")
  create_walklistd_us=$(cpu_us $((w1 - w0)) "$served")
  create_postgres_us=$(cpu_us $((p1 - p0)) "$served")
  read -r rps p50 p99 transfer bad <<<"$(wrk_figures "$WORK/create.txt")"
  sync=$(sql -c 'SHOW synchronous_commit')
  floor_run
  local floor_rps=$RUN_FLOOR_RPS floor_postgres_us=$RUN_FLOOR_PG_US floor_lat=$RUN_FLOOR_LAT
  row "create walk list, POST, 20 codes, $ORGS organizations, limits raised (wrk $CONNECTIONS connections)" \
    "$rps req/s, p50 $p50 ms, p99 $p99 ms" \
    "pgbench INSERT, $CONNECTIONS connections, synchronous_commit=$sync: ${floor_rps%.*} tps, $floor_lat" \
    "x$(ratio "$rps" "$floor_rps")" \
    "non-2xx: $bad; $per_commit requests per durable commit (group commit), the floor 1"
  row "CPU time and WAL per walk list created (the POST run above, limits raised)" \
    "wrk $(client_us "$k0" "$k1" "$served") µs, walklistd ${create_walklistd_us} µs, PostgreSQL ${create_postgres_us} µs, WAL $(wal_bytes_per "$lsn0" "$lsn1" "$served") bytes" \
    "pgbench $RUN_FLOOR_CLIENT_US µs, PostgreSQL ${floor_postgres_us} µs, WAL $RUN_FLOOR_WAL bytes per pgbench INSERT" "-" \
    "user + system time over the run / requests; independent of other load; the clients share the two cores"

  rotating_run create-get create_get.lua 2xx \
    "create walk list, GET form, 20 codes, limits raised (wrk $CONNECTIONS connections)"
}

# WAL position of the cluster now (for WAL bytes per request).
wal_lsn() { sql -c 'SELECT pg_current_wal_lsn()'; }
wal_bytes_per() {
  awk -v b="$(sql -c "SELECT pg_wal_lsn_diff('$2', '$1')")" -v n="$3" \
    'BEGIN { if (n > 0) printf "%.0f", b / n; else print "-" }'
}

# The floor: pgbench INSERTs the rows a creation inserts (the organizations whose slugs match
# PATTERN, default those of the limits-raised rows), at the same concurrency, with
# synchronous_commit as configured, after a checkpoint. Sets RUN_FLOOR_RPS, RUN_FLOOR_LAT (its own
# p50 and p99, from -l's one line per transaction), RUN_FLOOR_PG_US (PostgreSQL's CPU per INSERT)
# and RUN_FLOOR_WAL (WAL bytes per INSERT).
floor_run() {
  local pattern=${1:-bk-%} org_min org_max p0 p1 lsn0 lsn1 done_count k0 k1
  org_min=$(sql -c "SELECT min(org_id) FROM organizations WHERE slug LIKE '$pattern'")
  org_max=$(sql -c "SELECT max(org_id) FROM organizations WHERE slug LIKE '$pattern'")
  rm -f "$WORK"/pgbench_log.*
  settle
  p0=$(cpu_ticks_postgres) lsn0=$(wal_lsn)
  children_cpu k0
  record pgbench -n -M prepared -c "$CONNECTIONS" -j 2 -T "$DURATION" -D org_min="$org_min" \
    -D org_max="$org_max" -l --log-prefix="$WORK/pgbench_log" -f "$BENCH_DIR/create_floor.sql" \
    "$DB" >"$WORK/pgbench.txt" 2>&1 || true
  children_cpu k1
  sleep 1 # the postmaster reaps pgbench's backends (their CPU time) after they exit
  p1=$(cpu_ticks_postgres) lsn1=$(wal_lsn)
  RUN_FLOOR_RPS=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$WORK/pgbench.txt" | head -n 1)
  done_count=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$WORK/pgbench.txt")
  RUN_FLOOR_PG_US=$(cpu_us $((p1 - p0)) "$done_count")
  RUN_FLOOR_CLIENT_US=$(client_us "$k0" "$k1" "$done_count")
  RUN_FLOOR_WAL=$(wal_bytes_per "$lsn0" "$lsn1" "$done_count")
  RUN_FLOOR_LAT=$(cat "$WORK"/pgbench_log.* 2>/dev/null | awk '{ print $3 / 1000 }' | sort -n |
    awk '{ v[NR] = $1 } END { if (NR) printf "p50 %.2f ms, p99 %.2f ms", v[int((NR + 1) * 0.5)], v[int(NR * 0.99 + 0.99)] }')
}

# A database of its own for the next row, DB from then on: created and migrated now, never
# analyzed (autovacuum runs as it would in production).
fresh_database() {
  local name=$1
  ((FRESH_RECORDED++)) || COMMANDS+=("psql -c 'CREATE DATABASE NAME' && walklistctl migrate   (a new database before each row at the specified limits)")
  pg_psql "$ADMIN" -q -c 'SET client_min_messages = warning' \
    -c "DROP DATABASE IF EXISTS $name WITH (FORCE)" -c "CREATE DATABASE $name" >/dev/null
  DB=$(pg_cluster_conninfo "$STATE" "$name")
  "$BUILD/bin/walklistctl" migrate --database-url "$DB" 2>/dev/null
}

# COUNT organizations named SET-000001.. with one key each, into KEYS (scripts/bench/setup_orgs.sql).
make_organizations() {
  local count=$1 set=$2 keys=$3
  ((ORGS_RECORDED++)) || COMMANDS+=("psql -tA -F ' ' -v orgs=N -v set=SET -f scripts/bench/setup_orgs.sql \$DB > keys.txt   (just before each row at the specified limits, in its new database)")
  pg_psql "$DB" -tA -F ' ' -v orgs="$count" -v set="$set" -f "$BENCH_DIR/setup_orgs.sql" |
    grep '^wlk_' >"$keys"
}

# One row at the specified limits: LUA for SECONDS against a fresh walklistd, over the
# organizations of KEYS, seen for the first time (no warm-up: each key's first request checks
# it in the database, in the same grouped statement as its rate-limit decision). With "bracket"
# and the organizations' slug pattern, the ratio is to the mean of pgbench floors over the same
# organizations just before and just after the row. Sets RUN_RPS, RUN_P99, RUN_BAD, RUN_RATIO.
specified_run() {
  local name=$1 lua=$2 keys=$3 seconds=$4 expected=$5 label=$6 w0 p0 w1 p1 served per_commit c0 r0
  local rps p50 p99 transfer bad lsn0 lsn1 o0 k0 k1 before=
  if [[ ${7:-} == bracket ]]; then
    floor_run "$8"
    before=$RUN_FLOOR_RPS
  fi
  stop_walklistd
  settle
  start_walklistd specified
  export WALKLIST_BENCH_KEYS=$keys
  w0=$(cpu_ticks_walklistd) p0=$(cpu_ticks_postgres) lsn0=$(wal_lsn) o0=$(answers_other_than "$expected")
  c0=$(metric_value walklist_admission_commits_total)
  r0=$(metric_value walklist_admission_requests_total)
  children_cpu k0
  run_wrk "$WORK/$name.txt" -t 2 -c "$CONNECTIONS" -d "${seconds}s" -s "$BENCH_DIR/$lua" \
    "http://127.0.0.1:$PORT"
  children_cpu k1
  w1=$(cpu_ticks_walklistd) p1=$(cpu_ticks_postgres) lsn1=$(wal_lsn)
  per_commit=$(ratio "$(($(metric_value walklist_admission_requests_total) - r0))" \
    "$(($(metric_value walklist_admission_commits_total) - c0))")
  served=$(requests_done "$WORK/$name.txt")
  read -r rps p50 p99 transfer bad <<<"$(wrk_figures "$WORK/$name.txt")"
  # Answers other than the expected one, as walklistd counted them, or wrk's count of those not
  # 2xx or 3xx (should walklistd's metrics have missed some).
  local unexpected
  unexpected=$(($(answers_other_than "$expected") - o0))
  ((unexpected > bad)) && bad=$unexpected
  local floor_column=- ratio_column=- after mean costs
  costs="CPU per request: wrk $(client_us "$k0" "$k1" "$served") µs, walklistd $(cpu_us $((w1 - w0)) "$served") µs, PostgreSQL $(cpu_us $((p1 - p0)) "$served") µs; WAL $(wal_bytes_per "$lsn0" "$lsn1" "$served") bytes per request"
  RUN_RATIO=
  if [[ -n $before ]]; then
    stop_walklistd
    floor_run "$8"
    after=$RUN_FLOOR_RPS
    mean=$(awk -v a="$before" -v b="$after" 'BEGIN { printf "%.0f", (a + b) / 2 }')
    floor_column="pgbench INSERT over the same organizations just before and just after this row: ${before%.*} and ${after%.*} tps (mean $mean), $RUN_FLOOR_LAT; pgbench $RUN_FLOOR_CLIENT_US µs, PostgreSQL $RUN_FLOOR_PG_US µs, WAL $RUN_FLOOR_WAL bytes per INSERT"
    RUN_RATIO=$(ratio "$rps" "$mean")
    ratio_column="x$RUN_RATIO"
  fi
  row "$label" "$rps req/s, p50 $p50 ms, p99 $p99 ms" "$floor_column" "$ratio_column" \
    "non-$expected: $bad; $costs; $per_commit requests per durable commit"
  RUN_RPS=$rps RUN_P99=$p99 RUN_BAD=$bad
}

# The organization counts whose creation row has floors of its own and targets: 10,000 or
# more, and the largest of the run (so that --tiny keeps that code working).
headline_orgs() { (($1 >= 10000 || $1 == SPEC_ORGS[-1])); }

# Creation, GET by id and 304s at the specified limits (30/30/60 a minute per organization),
# over enough organizations to stay under them, one key each, keys round-robin: as a
# multi-tenant deployment runs. Every row starts from a new database holding only its own
# organizations, made just before it (fresh_database, make_organizations), so no bucket starts
# partly spent and no plan or statistics come from an earlier row; runs of fewer than 10,000
# organizations are shorter, to stay under 30 a minute. Creation over 10,000 organizations or
# more (headline_orgs) is compared with pgbench floors over the same organizations just before
# and after it.
bench_specified_limits() {
  local orgs seconds keys codes run label
  codes=$(printf '"SKU-%07d",' $(seq 37 37 740))
  for ((run = 1; run <= RUNS; run++)); do
    for orgs in "${SPEC_ORGS[@]}"; do
      seconds=$DURATION
      ((orgs < 10000)) && seconds=$SPEC_SHORT
      label=
      if ((RUNS > 1)); then label=", run $run"; fi

      fresh_database bench_create
      keys=$WORK/keys-c-$orgs.txt
      make_organizations "$orgs" c1 "$keys"
      local bracket=
      headline_orgs "$orgs" && bracket=bracket
      specified_run "spec-create-$orgs" create.lua "$keys" "$seconds" 201 \
        "create walk list, POST, 20 codes, specified limits, $orgs organizations, ${seconds} s, new database$label (wrk $CONNECTIONS connections)" \
        "$bracket" "c1-%"
      SPEC_CREATE_RATIO[$orgs]+="${SPEC_CREATE_RATIO[$orgs]:+ }$RUN_RATIO"
      SPEC_CREATE_P99[$orgs]+="${SPEC_CREATE_P99[$orgs]:+ }$RUN_P99"
      SPEC_CREATE_BAD[$orgs]+="${SPEC_CREATE_BAD[$orgs]:+ }$RUN_BAD"

      fresh_database bench_get
      keys=$WORK/keys-g-$orgs.txt
      make_organizations "$orgs" g1 "$keys"
      # One pending list per organization, with the id get_list.lua asks for.
      ((LISTS_RECORDED++)) || COMMANDS+=("psql -c \"INSERT INTO locate_lists (org_id, id, name, codes) SELECT org_id, 'bench-' || org_id, 'Bench walk', '{20 codes}' FROM organizations\"   (before each GET-by-id row)")
      sql -c "INSERT INTO locate_lists (org_id, id, name, codes)
                SELECT org_id, 'bench-' || org_id, 'Bench walk', '{${codes%,}}' FROM organizations" \
        >/dev/null
      specified_run "spec-get-$orgs" get_list.lua "$keys" "$seconds" 200 \
        "read walk list, GET by id, specified limits, $orgs organizations, ${seconds} s, new database$label"

      fresh_database bench_304
      keys=$WORK/keys-e-$orgs.txt
      make_organizations "$orgs" e1 "$keys"
      specified_run "spec-304-$orgs" not_modified.lua "$keys" "$seconds" 304 \
        "unchanged export, 304, specified limits, $orgs organizations, ${seconds} s, new database$label"
      SPEC_304_RPS[$orgs]+="${SPEC_304_RPS[$orgs]:+ }$RUN_RPS"
    done
  done
  stop_walklistd
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

# "met" or "missed", and by how much, for VALUE against a LIMIT that is a maximum or minimum.
verdict() {
  awk -v v="$1" -v limit="$2" -v kind="$3" 'BEGIN {
    if (v == "" || v == "-") { print "not measured"; exit }
    if (kind == "max") ok = v + 0 <= limit + 0; else ok = v + 0 >= limit + 0
    if (ok) { print "met"; exit }
    if (limit + 0 == 0) { printf "missed (%s)\n", v; exit }
    if (kind == "max") printf "missed by %.0f%% (%.2f over)\n", (v / limit - 1) * 100, v - limit
    else printf "missed by %.0f%% (%.2f short)\n", (1 - v / limit) * 100, limit - v
  }'
}

# wrk's Transfer/sec ("1.23GB", "512.00MB", "900KB") in MB/s.
to_mb() {
  awk -v t="$1" 'BEGIN {
    n = t + 0
    if (t ~ /GB$/) n *= 1024; else if (t ~ /KB$/) n /= 1024; else if (t ~ /B$/ && t !~ /MB$/) n /= 1048576
    printf "%.0f", n
  }'
}

# The small writes' target at the largest size: each under 50 ms.
write_targets() {
  local entry size label median
  for entry in "${WRITE_MEDIANS[@]}"; do
    IFS='|' read -r size label median <<<"$entry"
    [[ $size == "${SIZES[-1]}" ]] || continue
    printf '| %s, %s SKUs, under 50 ms | %s ms | %s |\n' "$label" "$size" "$median" \
      "$(verdict "$median" 49.99 max)"
  done
}

# VERDICT for each of VALUES (separated by spaces): "met" when every one is.
verdict_each() {
  local v one out= all=1
  for v in $1; do
    one=$(verdict "$v" "$2" "$3")
    [[ $one == met ]] || all=0
    out+="${out:+; }$one"
  done
  if [[ -n $out ]] && ((all)); then echo met; else echo "${out:-not measured}"; fi
}

# The targets of the rows at the specified limits, each run's figure (new databases each time).
tenant_targets() {
  local orgs runs
  runs=
  if ((RUNS > 1)); then runs=", each of $RUNS runs"; fi
  for orgs in "${SPEC_ORGS[@]}"; do
    headline_orgs "$orgs" || continue
    printf '| creation at the specified limits over %s organizations, new database%s: at least 1.0 x the pgbench floor over the same organizations (the mean of the floors just before and after it) | x%s | %s |\n' \
      "$orgs" "$runs" "${SPEC_CREATE_RATIO[$orgs]// /, x}" "$(verdict_each "${SPEC_CREATE_RATIO[$orgs]}" 1.0 min)"
    printf '| ... p99 under 25 ms at %s connections | %s ms | %s |\n' "$CONNECTIONS" \
      "${SPEC_CREATE_P99[$orgs]// /, }" "$(verdict_each "${SPEC_CREATE_P99[$orgs]}" 24.99 max)"
    printf '| ... no answer but 201 | %s others | %s |\n' "${SPEC_CREATE_BAD[$orgs]// /, }" \
      "$(verdict_each "${SPEC_CREATE_BAD[$orgs]}" 0 max)"
    printf '| unchanged export, 304, at the specified limits over %s organizations, new database: over 10,000 requests/s | %s req/s | %s |\n' \
      "$orgs" "${SPEC_304_RPS[$orgs]// /, }" "$(verdict_each "${SPEC_304_RPS[$orgs]}" 10000 min)"
  done
}

targets() {
  local large=${SIZES[-1]} full_mb
  full_mb=$(to_mb "${FULL_BODY[$large]:-}")
  printf '\n## Targets (measured in this run, largest size %s SKUs)\n\n' "$large"
  printf '| target | measured | verdict |\n|---|---|---|\n'
  printf '| cold export at most 2.5 x the narrow floor | x%s | %s |\n' "${EXPORT_RATIO[$large]}" \
    "$(verdict "${EXPORT_RATIO[$large]}" 2.5 max)"
  printf '| walklistd RSS grows by under 32 MiB during the cold export | +%s MiB | %s |\n' \
    "${RSS_GROWTH[$large]}" "$(verdict "${RSS_GROWTH[$large]}" 31.99 max)"
  printf '| unchanged export, full body, over 500 MB/s | %s MB/s | %s |\n' "$full_mb" \
    "$(verdict "$full_mb" 500 min)"
  tenant_targets
  printf '| generate %s SKUs in under 2 minutes | %s s | %s |\n' "$large" \
    "${GENERATE_SECONDS[$large]}" "$(verdict "${GENERATE_SECONDS[$large]}" 120 max)"
  printf '| import of the %s-SKU catalogue under 25 s (walklistctl import catalogue) | %s s (COPY of what it wrote: %s s; file by file: %s s) | %s |\n' \
    "$large" "${CATALOGUE_SECONDS[$large]}" "${IMPORT_FLOOR[$large]}" \
    "${IMPORT_SECONDS[$large]}" "$(verdict "${CATALOGUE_SECONDS[$large]}" 25 max)"
  write_targets
}

write_report() {
  local cores mem commit
  cores=$(nproc)
  mem=$(awk '$1 == "MemTotal:" { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
  commit=$(git -C "$WL_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
  {
    printf '# Benchmarks\n\n'
    printf 'Written by `scripts/bench.sh%s` on %s (commit %s, plus the working tree).\n\n' \
      "$( ((TINY)) && echo ' --tiny'; ((QUICK)) && echo ' --quick'; ((WRITES)) && echo ' --writes'; ((TENANTS)) && echo " --tenants --runs $RUNS"; ((RPC_EXPORT)) && echo ' --rpc-export')" \
      "$(date -u +%Y-%m-%dT%H:%MZ)" "$commit"
    printf 'Machine: %s cores (%s), %s memory, load average before the run: %s.\n' "$cores" \
      "$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)" "$mem" "$LOAD_BEFORE"
    printf 'PostgreSQL %s, private cluster, durable (fsync on, synchronous_commit on),\n' \
      "$(pg_psql "$DB" -tAc 'SHOW server_version')"
    printf 'shared_buffers 2GB, work_mem 64MB; walklistd %s build, %s request threads, %s pooled\n' \
      "$(grep -s '^CMAKE_BUILD_TYPE' "$BUILD/CMakeCache.txt" | cut -d= -f2)" "$CONNECTIONS" \
      "$((CONNECTIONS + 2))"
    printf 'connections. Rows that say "specified limits" run walklistd as shipped (30/30/60 requests\n'
    printf 'a minute per organization); rows that say "limits raised" and the export rows raise them\n'
    printf 'to 1,000,000 a minute (requests still rotate over organizations).\n\n'

    printf '| measurement | walklistd | floor | ratio | notes |\n|---|---|---|---|---|\n'
    printf '%s\n' "${ROWS[@]}"
    if ((WRITES)); then
      printf '\n## Targets (measured in this run, largest size %s SKUs)\n\n' "${SIZES[-1]}"
      printf '| target | measured | verdict |\n|---|---|---|\n'
      write_targets
    elif ((TENANTS)); then
      printf '\n## Targets (measured in this run)\n\n| target | measured | verdict |\n|---|---|---|\n'
      tenant_targets
    elif ((RPC_EXPORT)); then
      printf '\n## Targets (measured in this run, largest size %s SKUs)\n\n' "${SIZES[-1]}"
      printf '| target | measured | verdict |\n|---|---|---|\n'
      rpc_export_targets
    else
      targets
    fi
    if ((!WRITES && !TENANTS && !RPC_EXPORT)) && [[ -f $BENCH_DIR/analysis.md ]]; then
      printf '\n'
      cat "$BENCH_DIR/analysis.md"
    fi
    printf '\n## Commands\n\n```sh\n'
    # Keys and the cluster's socket path are of this run only: placeholders instead.
    printf '%s\n' "${COMMANDS[@]}" | sed "s#$WL_ROOT/##g; s#$WORK#\$WORK#g; s#$DB#\$DB#g;
      s#wlk_[A-Za-z0-9]*_[A-Za-z0-9]*#KEY#g; s#127.0.0.1:[0-9][0-9]*#127.0.0.1:PORT#g;
      s#host=[^ ]*\\\\ port=[0-9]*\\\\ user=[^ ]*\\\\ dbname=[A-Za-z0-9_]*#\$DB#g"
    printf '```\n'
  } >"$OUT.tmp"
  mv -f "$OUT.tmp" "$OUT"
}

main() {
  trap cleanup EXIT
  LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
  if ((SKIP_IF_MISSING)) && ! { command -v wrk && command -v h2load && command -v pgbench; } >/dev/null; then
    log "wrk, h2load or pgbench is missing: skipped (scripts/bench.sh installs them)"
    trap - EXIT
    rm -rf -- "$WORK"
    exit 77
  fi
  ((INSTALL)) && install_tools
  command -v wrk >/dev/null || die "wrk is missing (apt-get install wrk)"
  command -v h2load >/dev/null || die "h2load is missing (apt-get install nghttp2-client)"
  command -v pgbench >/dev/null || die "pgbench is missing (apt-get install postgresql-contrib)"
  if ((BUILD_IT)); then
    # Release, and only the two programs: the benchmark needs no test binaries.
    cmake -S "$WL_ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DWL_BUILD_TESTS=OFF >/dev/null
    cmake --build "$BUILD" -j "${WALKLIST_JOBS:-2}" --target walklistd walklistctl >/dev/null
  fi
  [[ -x $BUILD/bin/walklistd && -x $BUILD/bin/walklistctl ]] || die "no walklistd in $BUILD/bin"
  start_postgres
  declare -gA GENERATE_SECONDS=() IMPORT_SECONDS=() CATALOGUE_SECONDS=() IMPORT_FLOOR=() EXPORT_RATIO=() RSS_GROWTH=() FULL_BODY=() NOT_MODIFIED=() KEY=()
  declare -gA SPEC_CREATE_RATIO=() SPEC_CREATE_P99=() SPEC_CREATE_BAD=() SPEC_304_RPS=()
  declare -ga WRITE_MEDIANS=()
  local size
  if ((WRITES)); then
    for size in "${SIZES[@]}"; do
      log "small writes, catalogue of $size SKUs"
      "$BUILD/bin/walklistctl" org create "cat-$size" --database-url "$DB" 2>/dev/null
      record "$BUILD/bin/walklistctl" generate --org "cat-$size" --skus "$size" --seed "$SEED" \
        --database-url "$DB" 2>>"$WORK/generate.log"
      COMMANDS+=("psql -c 'VACUUM ANALYZE'")
      sql -c 'VACUUM ANALYZE' >/dev/null
      bench_writes "$size"
    done
    ((OUT_GIVEN)) || OUT=$WORK/writes.md
    write_report
    cat "$OUT"
    return
  fi
  if ((RPC_EXPORT)); then
    declare -gA RPC_RATIOS=() RPC_GROWTHS=()
    for size in "${SIZES[@]}"; do
      log "streamed export, catalogue of $size SKUs"
      "$BUILD/bin/walklistctl" org create "cat-$size" --database-url "$DB" 2>/dev/null
      record "$BUILD/bin/walklistctl" generate --org "cat-$size" --skus "$size" --seed "$SEED" \
        --database-url "$DB" 2>>"$WORK/generate.log"
      COMMANDS+=("psql -c 'VACUUM ANALYZE'")
      sql -c 'VACUUM ANALYZE' >/dev/null
      bench_rpc_export "$size"
    done
    ((OUT_GIVEN)) || OUT=$WORK/rpc-export.md
    write_report
    cat "$OUT"
    return
  fi
  if ((TENANTS)); then
    log "the specified rate limits, $RUNS runs"
    bench_specified_limits
    ((OUT_GIVEN)) || OUT=$WORK/tenants.md
    write_report
    cat "$OUT"
    return
  fi
  for size in "${SIZES[@]}"; do
    log "catalogue of $size SKUs"
    load_catalogue "$size"
    bench_export "$size"
    bench_delta "$size"
    bench_writes "$size"
  done
  log "walk lists"
  bench_create
  bench_load_list
  log "the specified rate limits"
  bench_specified_limits
  write_report
  cat "$OUT"
}

main "$@"
