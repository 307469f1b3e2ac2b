#!/usr/bin/env bash
# Two deployments of walklist measured in turns on one machine, so that both meet the same
# moments of the host: a distributed cluster (Citus) against one PostgreSQL server, or any two
# databases. For each, new organizations with one key each (scripts/bench/setup_orgs.sql, a
# set of its own) and a walklistd at the specified limits; a warm-up on other organizations
# (each walklistd's first connections and plans, not measured); then wrk runs SECS seconds on
# A, SECS on B, and again, the order swapped every pair, SLICES pairs in all. Prints each
# side's rate, the measured turns' answers by status and the share walklistd itself answered in
# over 25 ms (its histogram), the p99 of every turn by wrk, then A's rate as a share of B's.
#
#   scripts/bench/interleaved.sh [options] URL_A URL_B
#     --lua create.lua|get_list.lua   what each request is (default create.lua)
#     --orgs N          organizations measured on each side (default 20000)
#     --warm-orgs N     organizations of the warm-up (default 2000)
#     --warm SECS       warm-up length (default 3)
#     --slices N        pairs of turns (default 6)
#     --secs SECS       length of a turn (default 5)
#     --walklistd PATH  the server to run (default build-release/bin/walklistd)
#
# URL_A and URL_B are migrated databases (a Citus coordinator after `walklistctl distribute`).
# Before measuring, each gets VACUUM ANALYZE of organizations and api_keys and a CHECKPOINT (on
# Citus, on every worker too), as on a server running for a while: a checkpoint recycles WAL
# segments, whose zero-fill otherwise stalls commits on a cluster just made. Needs wrk, psql and
# curl. Figures, not pass/fail; docs/scaling-out.md has the runs it made and what they mean.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
die() {
  printf 'interleaved.sh: %s\n' "$*" >&2
  exit 2
}

LUA=create.lua ORGS=20000 WARM_ORGS=2000 WARM=3 SLICES=6 SECS=5
WALKLISTD=$root/build-release/bin/walklistd
urls=()
while (($# > 0)); do
  case $1 in
  --lua) LUA=$2; shift ;;
  --orgs) ORGS=$2; shift ;;
  --warm-orgs) WARM_ORGS=$2; shift ;;
  --warm) WARM=$2; shift ;;
  --slices) SLICES=$2; shift ;;
  --secs) SECS=$2; shift ;;
  --walklistd) WALKLISTD=$2; shift ;;
  -*) die "unknown option $1" ;;
  *) urls+=("$1") ;;
  esac
  shift
done
((${#urls[@]} == 2)) || die "usage: interleaved.sh [options] URL_A URL_B"
[[ $LUA == create.lua || $LUA == get_list.lua ]] || die "--lua is create.lua or get_list.lua"
for n in "$ORGS" "$WARM_ORGS" "$WARM" "$SLICES" "$SECS"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || die "counts and lengths are positive integers, not '$n'"
done
[[ -x $WALKLISTD ]] || die "no walklistd at $WALKLISTD (--walklistd PATH)"
for tool in wrk psql curl; do
  command -v "$tool" >/dev/null || die "$tool is missing"
done

work=$(mktemp -d)
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

sql() { psql "$1" -X -q -v ON_ERROR_STOP=1 -tA "${@:2}"; }

# A set name (setup_orgs.sql: 2 characters) no organization of the database has yet, so that
# every key is seen for the first time and every rate-limit bucket is new.
fresh_set() {
  sql "$1" -c "SELECT s FROM (SELECT chr(97 + a) || chr(97 + b) AS s FROM generate_series(0, 25) a,
                 generate_series(0, 25) b) x
                WHERE s NOT IN (SELECT left(slug, 2) FROM organizations WHERE substr(slug, 3, 1) = '-')
                ORDER BY random() LIMIT 1"
}

# ORGS organizations into KEYS, with a walk list each for GET by id (as scripts/bench.sh does).
make_orgs() {
  local url=$1 count=$2 keys=$3 set
  set=$(fresh_set "$url")
  [[ -n $set ]] || die "no set name left in $url"
  sql "$url" -F ' ' -v orgs="$count" -v set="$set" -f "$here/setup_orgs.sql" | grep '^wlk_' >"$keys"
  if [[ $LUA == get_list.lua ]]; then
    sql "$url" -v set="$set" <<'SQL'
INSERT INTO locate_lists (org_id, id, name, codes)
SELECT org_id, 'bench-' || org_id, 'Bench walk',
       ARRAY(SELECT format('SKU-%s', lpad((i * 37)::text, 7, '0')) FROM generate_series(1, 20) i)
  FROM organizations WHERE slug LIKE :'set' || '-%'
ON CONFLICT DO NOTHING;
SQL
  fi
}

declare -A port
for side in A B; do
  url=${urls[$([[ $side == A ]] && echo 0 || echo 1)]}
  make_orgs "$url" "$ORGS" "$work/keys-$side.txt"
  make_orgs "$url" "$WARM_ORGS" "$work/warm-$side.txt"
  "$WALKLISTD" --database-url "$url" --listen 127.0.0.1:0 --threads 32 --db-pool-size 34 \
    --max-connections-per-ip 1000 2>"$work/walklistd-$side.log" &
  pids+=($!)
  for _ in $(seq 100); do
    port[$side]=$(sed -n 's/.*"msg":"listening".*"port":\([0-9]*\).*/\1/p' "$work/walklistd-$side.log" | head -n 1)
    [[ -n ${port[$side]} ]] && break
    sleep 0.1
  done
  [[ -n ${port[$side]} ]] || die "walklistd on $side did not start: $(tail -3 "$work/walklistd-$side.log")"
  sql "$url" -c "VACUUM ANALYZE organizations, api_keys" -c "CHECKPOINT"
  if [[ $(sql "$url" -c "SELECT count(*) FROM pg_extension WHERE extname = 'citus'") == 1 ]]; then
    sql "$url" -c "SELECT run_command_on_workers('CHECKPOINT')" >/dev/null
  fi
done

route='/api/v1/locate-lists'
[[ $LUA == get_list.lua ]] && route='/api/v1/locate-lists/{id}'
# The route's answers walklistd has made so far, one "KEY COUNT" line each: "all" and "fast" (in
# 25 ms or less, from its latency histogram), and each status.
answers() {
  curl -fsS "http://127.0.0.1:${port[$1]}/metrics" | awk -v r="route=\"$route\"" '
    !index($0, r) { next }
    index($0, "walklist_http_request_duration_seconds_bucket{") == 1 {
      if (index($0, "le=\"0.025\"")) fast += $2
      if (index($0, "le=\"+Inf\"")) all += $2
    }
    index($0, "walklist_http_requests_total{") == 1 && match($0, /status="[0-9]+"/) {
      print substr($0, RSTART + 8, RLENGTH - 9), $2
    }
    END { print "all", all + 0; print "fast", fast + 0 }'
}

run_wrk() { # SIDE KEYS SECS OUT
  WALKLIST_BENCH_KEYS=$2 WALKLIST_BENCH_DIR=$here \
    wrk -t2 -c32 -d"$3"s --latency -s "$here/$LUA" "http://127.0.0.1:${port[$1]}" >"$4" 2>&1
}

declare -A requests seconds p99s
for side in A B; do
  run_wrk "$side" "$work/warm-$side.txt" "$WARM" "$work/warm-wrk-$side.txt"
  answers "$side" >"$work/answers-warm-$side.txt"
  requests[$side]=0 seconds[$side]=0 p99s[$side]=""
done
for i in $(seq "$SLICES"); do
  order="A B"
  ((i % 2 == 0)) && order="B A"
  for side in $order; do
    out=$work/wrk-$side-$i.txt
    run_wrk "$side" "$work/keys-$side.txt" "$SECS" "$out"
    requests[$side]=$((requests[$side] + $(awk '/requests in/ {print $1}' "$out")))
    seconds[$side]=$(awk -v s="${seconds[$side]}" '/requests in/ {d = $4; sub(/s,$/, "", d); print s + d}' "$out")
    p99s[$side]+="$(awk '$1 == "99%" {print $2}' "$out") "
  done
done

declare -A rate
for side in A B; do
  rate[$side]=$(awk -v r="${requests[$side]}" -v s="${seconds[$side]}" 'BEGIN {printf "%.0f", r / s}')
  # The measured turns' answers: now less what the warm-up had left.
  answers "$side" >"$work/answers-$side.txt"
  summary=$(awk 'NR == FNR { before[$1] = $2; next } { n[$1] = $2 - before[$1] }
    END {
      for (k in n) if (k ~ /^[0-9]+$/ && n[k] > 0) s = s k "=" n[k] " "
      printf "%s over 25 ms by walklistd %.3f%%", s, (n["all"] > 0 ? 100 * (n["all"] - n["fast"]) / n["all"] : 0)
    }' "$work/answers-warm-$side.txt" "$work/answers-$side.txt")
  printf '%s  %s/s  %s requests  answers: %s  p99 by wrk per turn: %s\n' \
    "$side" "${rate[$side]}" "${requests[$side]}" "$summary" "${p99s[$side]% }"
done
awk -v a="${rate[A]}" -v b="${rate[B]}" -v lua="$LUA" 'BEGIN {printf "%s: A at %.3f of B'"'"'s rate\n", lua, a / b}'
