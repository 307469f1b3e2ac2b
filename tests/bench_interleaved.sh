#!/usr/bin/env bash
# scripts/bench/interleaved.sh at a tiny size against two databases of the tests' private
# PostgreSQL, both ways (creation and GET by id), so that the script keeps working: each side's
# line with its rate, answers and p99 of every turn, and the ratio. Every measured request must
# have been answered 201 (200 for GET by id), and none other: the organizations are new ones,
# enough for the turns. Bad arguments (a count of 0, an unknown script or option, one URL) are
# refused before anything is written. Its figures mean nothing at this size. Skipped (77)
# without wrk.
#
#   tests/bench_interleaved.sh SOURCE_DIR   (WALKLIST_TEST_PGDIR, WALKLISTD from ctest)
set -euo pipefail

source_dir=$1
# shellcheck source-path=SCRIPTDIR/../scripts
source "$source_dir/scripts/lib.sh"
command -v wrk >/dev/null || {
  echo "wrk is missing (scripts/bench.sh installs it): skipped"
  exit 77
}
: "${WALKLIST_TEST_PGDIR:?run under ctest (fixture pg)}" "${WALKLISTD:?run under ctest}"
PATH=$(pg_bin_dir):$PATH

failures=0
fail() {
  printf 'FAIL: %s\n' "$*"
  failures=$((failures + 1))
}

admin=$(pg_cluster_conninfo "$WALKLIST_TEST_PGDIR")
urls=()
for side in a b; do
  db=bench_interleaved_$side
  pg_psql "$admin" -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db TEMPLATE walklist_template"
  urls+=("$(pg_cluster_conninfo "$WALKLIST_TEST_PGDIR" "$db")")
done

# Bad arguments are refused (exit 2, a message saying what) before anything is written.
orgs_now() { pg_psql "${urls[0]}" -tA -c "SELECT count(*) FROM organizations"; }
before=$(orgs_now)
for bad in "--slices 0" "--lua export.lua" "--secs x" "--bogus 1" ""; do
  # shellcheck disable=SC2086 # (each case is words on purpose)
  if message=$("$source_dir/scripts/bench/interleaved.sh" $bad --walklistd "$WALKLISTD" \
    "${urls[@]:0:$([[ -z $bad ]] && echo 1 || echo 2)}" 2>&1); then
    fail "interleaved.sh accepted '$bad'"
  else
    status=$?
    ((status == 2)) || fail "interleaved.sh '$bad' exited $status, not 2"
    [[ $message == interleaved.sh:* ]] || fail "interleaved.sh '$bad' said: $message"
  fi
done
[[ $(orgs_now) == "$before" ]] || fail "a refused run wrote organizations"

for lua in create.lua get_list.lua; do
  status=201
  [[ $lua == get_list.lua ]] && status=200
  out=$("$source_dir/scripts/bench/interleaved.sh" --lua "$lua" --orgs 3000 --warm-orgs 300 \
    --warm 1 --slices 2 --secs 1 --walklistd "$WALKLISTD" "${urls[@]}") || {
    fail "$lua: interleaved.sh failed"
    printf '%s\n' "$out"
    continue
  }
  printf '%s\n' "$out"
  for side in A B; do
    line=$(grep "^$side  " <<<"$out" || true)
    shape="^$side  ([0-9]+)/s  ([0-9]+) requests  answers: (.*) over 25 ms by walklistd [0-9]+[.][0-9]{3}%  p99 by wrk per turn: [^ ]+ [^ ]+\$"
    [[ $line =~ $shape ]] ||
      {
        fail "$lua: no well-formed line for $side: '$line'"
        continue
      }
    requests=${BASH_REMATCH[2]} answers=${BASH_REMATCH[3]}
    ((requests > 0)) || fail "$lua: $side measured no request"
    answered=0
    [[ $answers =~ (^|\ )$status=([0-9]+) ]] && answered=${BASH_REMATCH[2]}
    ((answered >= requests)) || fail "$lua: $side answered fewer than its $requests requests $status: $answers"
    [[ $answers == "$status=$answered " ]] || fail "$lua: $side answered other statuses: $answers"
  done
  grep -Eq "^$lua: A at [0-9]+\.[0-9]{3} of B's rate$" <<<"$out" || fail "$lua: no ratio line"
done

for side in a b; do
  pg_psql "$admin" -c "DROP DATABASE IF EXISTS bench_interleaved_$side WITH (FORCE)"
done
((failures == 0)) || exit 1
echo "interleaved.sh: both ways work"
