#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (ctest) against a private PostgreSQL
# that is removed afterwards, whatever happens. Exits non-zero on any failure.
#
#   scripts/test.sh              all tests
#   scripts/test.sh -L unit      extra arguments go to ctest
#
# Environment: WALKLIST_BUILD_DIR (default build), WALKLIST_BUILD_TYPE (RelWithDebInfo),
# WALKLIST_CMAKE_ARGS (more cmake arguments, e.g. -DWL_SANITIZE=ON), WALKLIST_JOBS (2),
# WALKLIST_TEST_TIMEOUT (whole ctest run, default 25m).
set -euo pipefail

# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$WL_ROOT"

BUILD=$(build_dir)
# tests/CMakeLists.txt starts the "pg" fixture's cluster in <build dir>/testpg.
TEST_PGDIR=$BUILD/testpg

# shellcheck disable=SC2317 # (run by the EXIT trap)
remove_test_postgres() {
  local status=$?
  "$WL_ROOT/tests/pg_fixture.sh" stop "$TEST_PGDIR" || status=1
  exit "$status"
}

trap remove_test_postgres EXIT
ensure_packages
build

# timeout runs ctest in a process group of its own and, when time is up or when it is sent
# TERM, signals that whole group: ctest and every test it started. It runs in the background so
# that INT (Ctrl-C) and TERM sent to this script reach it at once; the EXIT trap then removes
# the test cluster.
limit=${WALKLIST_TEST_TIMEOUT:-25m}
timeout --kill-after=30s "$limit" \
  ctest --test-dir "$BUILD" --output-on-failure --no-tests=error -j "${WALKLIST_JOBS:-2}" "$@" &
ctest_pid=$!
trap 'kill -TERM "$ctest_pid" 2>/dev/null || true' INT TERM
status=0
while kill -0 "$ctest_pid" 2>/dev/null; do
  status=0
  wait "$ctest_pid" || status=$?
done
if ((status == 124 || status == 137)); then
  log "error: the test run took longer than $limit and was stopped"
fi
exit "$status"
