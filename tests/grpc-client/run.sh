#!/usr/bin/env bash
# ctest driver of e2e.grpc_python (tests/CMakeLists.txt): Debian's grpcio (python3-grpcio), a
# gRPC client nobody here wrote, calls every method of every core service of real walklistd
# processes over gRPC (test_grpc.py starts them, each with the options it needs), streams the
# export and WatchStock's catch-up of a 200,000-SKU catalogue (test_stream_export.py), then
# drives server reflection as a generic client does (test_reflection.py).
#
#   run.sh WORKDIR         the test (test_grpc.py)
#   run.sh WORKDIR bench   one benchmark run instead (bench.py): unary GetLocateList and
#                          CreateLocateList over gRPC and over Connect, a table on stdout
#   run.sh WORKDIR watch   WatchStock at scale instead (watch_scale.py): many idle streams,
#                          memory per stream, commit-to-watcher times, a table row on stdout
#   run.sh WORKDIR stream  test_stream_export.py alone (WALKLIST_STREAM_SKUS: the catalogue)
#
# Needs the "pg" fixture's environment (WALKLIST_TEST_PGDIR, WALKLISTD, WALKLISTCTL). Generates
# the Python messages of proto/ with protoc (protobuf-compiler) and the gRPC stubs with
# grpc_tools.protoc (python3-grpc-tools) into WORKDIR/run.*/ (never into the source tree), and
# the reflection protocol's messages from Debian's grpc-proto (/usr/share/grpc-proto),
# makes its own database from walklist_template, runs the test, drops the database. Exits 77
# (ctest: skipped) only when the Python gRPC packages are not installed.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR
source "$HERE/../../scripts/lib.sh"

# Debian's python3-grpcio and python3-protobuf live in the system Python, not in whatever
# python3 comes first on PATH.
PYTHON=/usr/bin/python3

workdir=${1:-}
[[ -n $workdir ]] || die "usage: run.sh WORKDIR"
for var in WALKLIST_TEST_PGDIR WALKLISTD WALKLISTCTL; do
  [[ -n ${!var:-} ]] || die "$var is not set: run under ctest (tests/CMakeLists.txt)"
done
if ! "$PYTHON" -c 'import grpc, grpc_tools.protoc, google.protobuf' 2>/dev/null; then
  log "skipped: $PYTHON lacks grpc or grpc_tools (Debian: apt-get install python3-grpcio python3-grpc-tools)"
  exit 77
fi
command -v protoc >/dev/null || die "protoc not found (Debian: protobuf-compiler)"

RUN=
DB_NAME=
ADMIN_CONNINFO=
cleanup() {
  local status=$?
  if [[ -n $DB_NAME ]]; then
    pg_psql "$ADMIN_CONNINFO" -c "DROP DATABASE IF EXISTS $DB_NAME WITH (FORCE)" >/dev/null 2>&1 || true
  fi
  [[ -n $RUN ]] && rm -rf -- "$RUN"
  exit "$status"
}
trap cleanup EXIT

mkdir -p "$workdir"
RUN=$(mktemp -d "$workdir/run.XXXXXX")
WKT=/usr/include # google/protobuf/*.proto of libprotobuf-dev
protos=(walklist/v1/locate_list.proto walklist/v1/stock.proto walklist/v1/scanner.proto
  walklist/v1/inventory.proto)
mkdir -p "$RUN/gen" "$RUN/health"
protoc -I"$WL_ROOT/proto" -I"$WKT" --python_out="$RUN/gen" "${protos[@]}" \
  google/rpc/error_details.proto google/rpc/status.proto
"$PYTHON" -m grpc_tools.protoc -I"$WL_ROOT/proto" -I"$WKT" --grpc_python_out="$RUN/gen" "${protos[@]}"
# Apart, gRPC's own (health, reflection): a package named "grpc" on sys.path would hide
# grpcio itself.
protoc -I"$WL_ROOT/proto" --python_out="$RUN/health" grpc/health/v1/health.proto
GRPC_PROTO=/usr/share/grpc-proto
[[ -f $GRPC_PROTO/grpc/reflection/v1/reflection.proto ]] || die "$GRPC_PROTO lacks the reflection protos (Debian: grpc-proto)"
protoc -I"$GRPC_PROTO" --python_out="$RUN/health" grpc/reflection/v1/reflection.proto \
  grpc/reflection/v1alpha/reflection.proto

ADMIN_CONNINFO=$(<"$WALKLIST_TEST_PGDIR/conninfo")
DB_NAME=walklist_grpc_python_$$
pg_psql "$ADMIN_CONNINFO" -c "CREATE DATABASE $DB_NAME TEMPLATE walklist_template" >/dev/null
export WALKLIST_DB_CONNINFO WALKLIST_GEN_DIR=$RUN/gen WALKLIST_HEALTH_PB2=$RUN/health/grpc/health/v1/health_pb2.py
export WALKLIST_REFLECTION_PB2_DIR=$RUN/health/grpc/reflection
WALKLIST_DB_CONNINFO=$(pg_cluster_conninfo "$WALKLIST_TEST_PGDIR" "$DB_NAME")
export WALKLIST_RUN_DIR=$RUN
export PSQL
PSQL=$(pg_bin_dir)/psql
if [[ ${2:-} == bench ]]; then
  "$PYTHON" -u "$HERE/bench.py"
elif [[ ${2:-} == watch ]]; then
  "$PYTHON" -u "$HERE/watch_scale.py"
elif [[ ${2:-} == stream ]]; then
  "$PYTHON" -u "$HERE/test_stream_export.py" -v
else
  "$PYTHON" -u "$HERE/test_grpc.py" -v
  "$PYTHON" -u "$HERE/test_stream_export.py" -v
  "$PYTHON" -u "$HERE/test_reflection.py" -v
fi
