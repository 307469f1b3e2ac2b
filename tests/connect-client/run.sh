#!/usr/bin/env bash
# ctest driver of the Node.js tooling in tests/connect-client (see tests/CMakeLists.txt):
#
#   run.sh e2e WORKDIR   e2e.connect_node: the Connect client for Node (@connectrpc/connect-node,
#                        code generated from proto/ by protoc-gen-es) against a real walklistd.
#                        Needs the "pg" fixture's environment (WALKLIST_TEST_PGDIR, WALKLISTD,
#                        WALKLISTCTL). Makes its own database from walklist_template,
#                        organizations and keys, imports a little inventory (walklistctl
#                        import), starts walklistd on 127.0.0.1:0, generates code into
#                        WORKDIR/run.*/gen, runs `node --test test/connect.test.mjs
#                        test/stream.test.mjs` (the second on a catalogue of
#                        WALKLIST_STREAM_SKUS, default 200,000, from walklistctl generate), stops
#                        walklistd, drops the database; exits with node's status.
#   run.sh lint          lint.buf: `buf lint` of proto/ (rules in proto/buf.yaml).
#   run.sh breaking      lint.buf_breaking: `buf breaking` of proto/ against the previous
#                        commit's proto/ (HEAD~1, or WALKLIST_BUF_AGAINST: any git revision).
#                        Exits 77 (ctest: skipped) when there is no such commit (not a git
#                        checkout, git missing, shallow clone of depth 1, first commit).
#   run.sh openapi       lint.openapi: gateway/openapi.json through Spectral (its OpenAPI
#                        ruleset) and Redocly (recommended-strict): any error or warning fails.
#   run.sh bodies DIR    e2e.zz_openapi_bodies: every REST exchange the e2e tests recorded in DIR
#                        (tests/support/exchange_log.c) checked against gateway/openapi.json
#                        with Ajv (openapi_bodies.mjs): status, media type, body schema,
#                        headers, the error shape. More arguments go to openapi_bodies.mjs.
#   run.sh setup         only installs node_modules (what the others do first).
#
# node_modules is installed with `npm ci` from package-lock.json (exact versions, from the npm
# registry) when missing or when package.json/package-lock.json changed since; concurrent runs
# wait for each other (flock). The buf binary comes from buf's own platform package on the npm
# registry (@bufbuild/buf-linux-x64 or -aarch64, optional dependencies: npm installs the one
# whose os/cpu match). Not the @bufbuild/buf wrapper: its lock file must list the packages of
# every platform, which npm only records when the registry serves them all.
set -euo pipefail

CLIENT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"

# Debian's nodejs (18.20 in Debian 12) is new enough: @connectrpc/connect-node 2.0.4, the
# newest release that supports Node 18, needs 18.14.1.
NODE_MIN=18.14.1
NODE_PACKAGES="nodejs npm"

require_node() {
  local tool
  for tool in node npm; do
    command -v "$tool" >/dev/null ||
      die "$tool not found: the Connect client test and buf lint need Node.js and npm.
  Install the Debian packages: apt-get install -y $NODE_PACKAGES"
  done
  local version
  version=$(node --version)
  version=${version#v}
  if [[ $(printf '%s\n%s\n' "$NODE_MIN" "$version" | sort -V | head -n 1) != "$NODE_MIN" ]]; then
    die "node $version is too old (need $NODE_MIN or newer; Debian 12's nodejs package has 18.20)"
  fi
}

# The buf binary of this machine's platform package in node_modules.
buf_binary() {
  local arch
  case $(uname -m) in
  x86_64 | amd64) arch=x64 ;;
  aarch64 | arm64) arch=aarch64 ;;
  *) arch=unsupported-$(uname -m) ;;
  esac
  printf '%s\n' "$CLIENT/node_modules/@bufbuild/buf-linux-$arch/bin/buf"
}

buf() {
  "$(buf_binary)" "$@"
}

# What node_modules was installed from: the manifest, the lock file and node's version.
modules_stamp() {
  cat "$CLIENT/package.json" "$CLIENT/package-lock.json" | sha256sum | cut -d' ' -f1
  node --version
}

# npm ci when node_modules is missing or stale. Serialized with other runs of this script
# (ctest -j runs lint.buf, lint.buf_breaking and e2e.connect_node at once).
ensure_node_modules() {
  require_node
  local stamp_file=$CLIENT/node_modules/.walklist-stamp want lock_fd
  want=$(modules_stamp)
  exec {lock_fd}>"$CLIENT/.npm-install.lock"
  flock "$lock_fd"
  if [[ ! -f $stamp_file || $(<"$stamp_file") != "$want" ]]; then
    log "installing node_modules (npm ci)"
    # --include: also when NODE_ENV=production or npm's config would omit them; the buf binary
    # is an optional dependency.
    if ! (cd "$CLIENT" && npm ci --no-audit --no-fund --loglevel=error \
      --include=dev --include=optional); then
      flock -u "$lock_fd"
      die "npm ci failed in $CLIENT (it needs the npm registry, or npm's cache)"
    fi
    printf '%s\n' "$want" >"$stamp_file"
  fi
  flock -u "$lock_fd"
  exec {lock_fd}>&-
  [[ -x $(buf_binary) ]] ||
    die "no buf binary for $(uname -s) $(uname -m) in node_modules (package.json's optionalDependencies carry linux x64 and aarch64)"
  PATH=$CLIENT/node_modules/.bin:$PATH
  export PATH
}

# buf keeps a cache (modules, plugins); ours needs none of it beyond this run.
buf_cache() {
  BUF_TMP=$(mktemp -d "${TMPDIR:-/tmp}/walklist-buf.XXXXXX")
  export BUF_CACHE_DIR=$BUF_TMP/cache
}

cmd_lint() {
  ensure_node_modules
  buf_cache
  trap 'rm -rf "$BUF_TMP"' EXIT
  buf --version >&2
  buf lint "$WL_ROOT/proto"
  log "buf lint: proto/ is clean"
}

cmd_breaking() {
  local against=${WALKLIST_BUF_AGAINST:-HEAD~1} sha
  command -v git >/dev/null || {
    log "skipped: git not found, so there is no previous commit to compare proto/ with"
    exit 77
  }
  # safe.directory: a checkout owned by another user (CI running as root) is still readable.
  local -a git=(git -c "safe.directory=$WL_ROOT" -C "$WL_ROOT")
  if ! "${git[@]}" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    log "skipped: $WL_ROOT is not a git checkout, so there is no previous commit to compare with"
    exit 77
  fi
  if ! sha=$("${git[@]}" rev-parse --verify --quiet "$against^{commit}"); then
    log "skipped: no commit $against (first commit or a shallow clone); nothing to compare with"
    exit 77
  fi
  ensure_node_modules
  buf_cache
  trap 'rm -rf "$BUF_TMP"' EXIT
  # The previous proto/ as files (git archive needs no clone, works in worktrees). A proto/
  # without buf.yaml (before this file existed) is fine: buf reads the .proto files.
  mkdir -p "$BUF_TMP/against"
  if ! "${git[@]}" cat-file -e "$sha:proto" 2>/dev/null; then
    log "skipped: commit ${sha:0:12} ($against) has no proto/ directory"
    exit 77
  fi
  "${git[@]}" archive --format=tar "$sha" proto | tar -x -C "$BUF_TMP/against"
  buf --version >&2
  log "buf breaking: proto/ against ${sha:0:12} ($against), rules of proto/buf.yaml"
  buf breaking "$WL_ROOT/proto" --against "$BUF_TMP/against/proto"
  log "buf breaking: no breaking change"
}

# --- e2e.connect_node --------------------------------------------------------------------

RUN=
DAEMON_PID=
DB_NAME=
ADMIN_CONNINFO=

e2e_cleanup() {
  local status=$?
  if [[ -n $DAEMON_PID ]] && kill -0 "$DAEMON_PID" 2>/dev/null; then
    stop_daemon || true
  fi
  if ((status != 0)) && [[ -n $RUN && -s $RUN/walklistd.log ]]; then
    printf -- '----- walklistd log (last 60 lines) -----\n' >&2
    tail -n 60 "$RUN/walklistd.log" >&2
  fi
  if [[ -n $DB_NAME ]]; then
    pg_psql "$ADMIN_CONNINFO" -c "DROP DATABASE IF EXISTS $DB_NAME" >/dev/null 2>&1 || true
  fi
  [[ -n $RUN ]] && rm -rf -- "$RUN"
  exit "$status"
}

stop_daemon() {
  kill -TERM "$DAEMON_PID" 2>/dev/null || true # gone already: wait still reads its status
  local i
  for ((i = 0; i < 100; i++)); do
    kill -0 "$DAEMON_PID" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$DAEMON_PID" 2>/dev/null; then
    log "walklistd did not stop within 10 s of SIGTERM; killing it"
    kill -KILL "$DAEMON_PID" 2>/dev/null || true
  fi
  local status=0
  wait "$DAEMON_PID" 2>/dev/null || status=$?
  DAEMON_PID=
  # A sanitizer build's report (on walklistd's stderr, the log) fails the run like its exit
  # status does.
  if ((status == 0)) && grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$RUN/walklistd.log"; then
    status=99
  fi
  if ((status != 0)); then
    log "walklistd exited with status $status"
  fi
  return "$status"
}

ctl() {
  "$WALKLISTCTL" --database-url "$DB_CONNINFO" "$@"
}

# Writes the inventory of one organization as CSV files into DIR (the import formats of
# `walklistctl formats`). The
# expected export and breakdown are spelled out in test/connect.test.mjs.
write_inventory() {
  local dir=$1
  mkdir -p "$dir"
  printf '%s\n' 'code,name,kind' 'WH1,Main warehouse,own' 'SUP,Supplier,supplier' >"$dir/warehouses.csv"
  printf '%s\n' 'warehouse,code,staging' 'WH1,A-10,false' 'WH1,A-2,false' 'WH1,STAGE,true' \
    'SUP,S-1,false' >"$dir/locations.csv"
  printf '%s\n' 'sku,name,eans' 'SKU-1001,Widget,4006381333931' \
    'SKU-1002,"Gadget, blue",4000000000001' 'SKU-2000,Gizmo,4000000000001' >"$dir/products.csv"
  printf '%s\n' 'sku,warehouse,on_hand' 'SKU-1001,WH1,10' 'SKU-1002,WH1,5' 'SKU-1002,SUP,100' \
    'SKU-2000,WH1,3' >"$dir/stock.csv"
  printf '%s\n' 'sku,warehouse,location,quantity' 'SKU-1001,WH1,A-10,4' 'SKU-1001,WH1,A-2,6' \
    'SKU-1002,WH1,STAGE,5' 'SKU-1002,SUP,S-1,100' >"$dir/location-stock.csv"
  printf '%s\n' 'ref,sku,warehouse,quantity,status' 'R-1,SKU-1001,WH1,3,active' \
    'R-2,SKU-1001,WH1,2,released' 'R-3,SKU-1002,SUP,50,active' >"$dir/reservations.csv"
}

cmd_e2e() {
  local workdir=${1:-}
  [[ -n $workdir ]] || die "usage: run.sh e2e WORKDIR"
  local var
  for var in WALKLIST_TEST_PGDIR WALKLISTD WALKLISTCTL; do
    [[ -n ${!var:-} ]] || die "$var is not set: run under ctest (tests/CMakeLists.txt)"
  done
  [[ -x $WALKLISTD && -x $WALKLISTCTL ]] || die "WALKLISTD or WALKLISTCTL is not executable"
  [[ -f $WALKLIST_TEST_PGDIR/conninfo ]] ||
    die "no $WALKLIST_TEST_PGDIR/conninfo: the pg fixture (pg_start) did not run"

  ensure_node_modules
  trap e2e_cleanup EXIT
  mkdir -p "$workdir"
  RUN=$(mktemp -d "$workdir/run.XXXXXX")

  # Generated code lives in the build dir, one copy per run (never in the source tree, never
  # shared with a concurrent run). Its imports of @bufbuild/protobuf find WORKDIR/node_modules,
  # a link to ours; package.json makes its .js files ES modules.
  ln -sfn "$CLIENT/node_modules" "$workdir/node_modules"
  printf '{"type":"module","private":true}\n' >"$RUN/package.json"
  export BUF_CACHE_DIR=$RUN/buf-cache
  (cd "$CLIENT" && buf generate "$WL_ROOT/proto" --template buf.gen.yaml --output "$RUN")
  [[ -f $RUN/gen/walklist/v1/locate_list_pb.js ]] || die "buf generate wrote no code into $RUN/gen"

  # Our own database, from the fixture's migrated template.
  ADMIN_CONNINFO=$(<"$WALKLIST_TEST_PGDIR/conninfo")
  DB_NAME=walklist_connect_node_$$
  pg_psql "$ADMIN_CONNINFO" -c "CREATE DATABASE $DB_NAME TEMPLATE walklist_template"
  DB_CONNINFO=$(pg_cluster_conninfo "$WALKLIST_TEST_PGDIR" "$DB_NAME")

  ctl org create connect-a --name "Connect A" >/dev/null
  ctl org create connect-b --name "Connect B" >/dev/null
  # Empty: the test writes their inventory through InventoryService, one per codec.
  ctl org create connect-rpc-binary >/dev/null
  ctl org create connect-rpc-json >/dev/null
  # A catalogue larger than a unary message may carry, for the streams (test/stream.test.mjs).
  ctl org create connect-stream >/dev/null
  ctl generate --org connect-stream --skus "${WALKLIST_STREAM_SKUS:-200000}" 2>/dev/null
  local kind
  write_inventory "$RUN/csv"
  for kind in warehouses locations products stock location-stock reservations; do
    ctl import "$kind" "$RUN/csv/$kind.csv" --org connect-a >/dev/null
  done

  export WALKLIST_KEY_ALL WALKLIST_KEY_LISTS WALKLIST_KEY_STOCK WALKLIST_KEY_INVENTORY \
    WALKLIST_KEY_OTHER_ORG WALKLIST_KEY_REVOKED WALKLIST_KEY_RPC_BINARY WALKLIST_KEY_RPC_JSON \
    WALKLIST_KEY_STREAM WALKLIST_DB_CONNINFO
  WALKLIST_DB_CONNINFO=$DB_CONNINFO
  WALKLIST_KEY_STREAM=$(ctl key create --org connect-stream --name stream \
    --scopes stock:read,inventory:write)
  WALKLIST_KEY_ALL=$(ctl key create --org connect-a --name all \
    --scopes lists:write,stock:read,scanner,inventory:write)
  WALKLIST_KEY_LISTS=$(ctl key create --org connect-a --name lists --scopes lists:write)
  WALKLIST_KEY_STOCK=$(ctl key create --org connect-a --name stock --scopes stock:read)
  WALKLIST_KEY_INVENTORY=$(ctl key create --org connect-a --name inventory \
    --scopes inventory:write)
  WALKLIST_KEY_OTHER_ORG=$(ctl key create --org connect-b --name other \
    --scopes lists:write,stock:read,scanner,inventory:write)
  WALKLIST_KEY_RPC_BINARY=$(ctl key create --org connect-rpc-binary --name rpc \
    --scopes lists:write,stock:read,scanner,inventory:write)
  WALKLIST_KEY_RPC_JSON=$(ctl key create --org connect-rpc-json --name rpc \
    --scopes lists:write,stock:read,scanner,inventory:write)
  WALKLIST_KEY_REVOKED=$(ctl key create --org connect-a --name revoked --scopes lists:write)
  # Token: wlk_ + 8-character prefix + _ + secret.
  local prefix=${WALKLIST_KEY_REVOKED#wlk_}
  ctl key revoke "${prefix%%_*}" >/dev/null

  # walklistd on a free port, read back from its "listening" log line. Limits high enough
  # never to be met by this test.
  : >"$RUN/walklistd.log" # exists before the background process opens it
  "$WALKLISTD" --database-url "$DB_CONNINFO" --listen 127.0.0.1:0 --grpc-listen 127.0.0.1:0 --threads 4 \
    --rate-limit-locate-lists 1000000 --rate-limit-stock-export 1000000 \
    --rate-limit-shared 1000000 --rate-limit-anonymous 1000000 \
    </dev/null >"$RUN/walklistd.log" 2>&1 &
  DAEMON_PID=$!
  local port="" grpc_port="" i
  for ((i = 0; i < 200; i++)); do
    port=$(sed -n 's/.*"msg":"listening".*"port":\([0-9][0-9]*\).*/\1/p;T;q' "$RUN/walklistd.log")
    grpc_port=$(sed -n 's/.*"msg":"listening".*"grpcPort":\([0-9][0-9]*\).*/\1/p;T;q' "$RUN/walklistd.log")
    [[ -n $port ]] && break
    if ! kill -0 "$DAEMON_PID" 2>/dev/null; then
      DAEMON_PID=
      die "walklistd exited at start"
    fi
    sleep 0.05
  done
  [[ -n $port ]] || die "walklistd did not log its port within 10 s"
  export WALKLIST_URL=http://127.0.0.1:$port WALKLIST_GRPC_URL=http://127.0.0.1:$grpc_port
  export WALKLIST_PROTO_DIR=$WL_ROOT/proto
  export WALKLIST_GEN_DIR=$RUN/gen
  log "walklistd listening on $WALKLIST_URL (database $DB_NAME)"

  local status=0
  node --test --test-reporter=spec "$CLIENT/test/connect.test.mjs" "$CLIENT/test/stream.test.mjs" ||
    status=$?
  stop_daemon || status=1
  return "$status"
}

# The API description as two independent linters read it: a client generated from it with strict
# schemas must accept every real answer, so their warnings count as failures too.
cmd_openapi() {
  ensure_node_modules
  local doc=$WL_ROOT/gateway/openapi.json
  spectral lint --ruleset "$CLIENT/openapi.spectral.yaml" --fail-severity=warn "$doc"
  redocly lint --config "$CLIENT/openapi.redocly.yaml" "$doc"
}

# The answers the e2e tests received, against the description's responses (openapi_bodies.mjs).
cmd_bodies() {
  local dir=${1:-}
  [[ -n $dir ]] || die "usage: run.sh bodies DIR [--min-exchanges N]"
  shift
  ensure_node_modules
  node "$CLIENT/openapi_bodies.mjs" "$WL_ROOT/gateway/openapi.json" "$dir" "$@"
}

case ${1:-} in
e2e) shift; cmd_e2e "$@" ;;
openapi) cmd_openapi ;;
bodies) shift; cmd_bodies "$@" ;;
lint) cmd_lint ;;
breaking) cmd_breaking ;;
setup) ensure_node_modules ;;
*)
  printf 'usage: %s e2e WORKDIR | lint | breaking | openapi | bodies DIR | setup\n' "$0" >&2
  exit 2
  ;;
esac
