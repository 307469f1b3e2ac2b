#!/usr/bin/env bash
# Shell functions shared by scripts/run.sh, scripts/test.sh and tests/pg_fixture.sh: package
# installation, the build, and private PostgreSQL clusters. Source it; it runs nothing itself.
#
# A private cluster is described by a *state dir* (build/testpg for the tests, var/pg for
# run.sh) holding two small files:
#   cluster   absolute path of the cluster's private dir
#   conninfo  libpq conninfo of the cluster's "postgres" database
# The private dir holds the data dir (data/), the server log (postgres.log), initdb.log when
# initdb failed, and the Unix socket; nothing listens on TCP. When we run as root, PostgreSQL (which refuses to run
# as root) runs as the system user walklist-pg, so the private dir lives under /tmp or /var/tmp
# where that user can reach it even if the checkout is under /root.

WL_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Debian packages needed to build, test and run walklist.
WL_PACKAGES=(
  build-essential cmake pkg-config
  protobuf-c-compiler libprotobuf-c-dev protobuf-compiler libprotobuf-dev
  nanopb libnanopb-dev python3-protobuf
  libmicrohttpd-dev libjansson-dev libpq-dev libssl-dev zlib1g-dev libcurl4-openssl-dev
  curl openssl postgresql git
  iproute2 iptables clang-format
  libgrpc-dev grpc-proto python3-grpcio python3-grpc-tools
  gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm dpkg-dev
  docker-compose lintian libsystemd-dev help2man
)

# The Connect client test runs on Node.js and npm: Debian's, unless the machine already has
# both on PATH (some images ship their own).
required_packages() {
  printf '%s\n' "${WL_PACKAGES[@]}"
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    printf '%s\n' nodejs npm
  fi
}

WL_PG_USER=walklist-pg   # unprivileged user that runs PostgreSQL when we are root
WL_PG_SUPERUSER=walklist # superuser role created by initdb
WL_PG_PORT=5432          # only names the socket file; the socket dir is private

log() { printf '%s: %s\n' "${0##*/}" "$*" >&2; }

# The files of the source tree in the current directory, one a line, relative: what git tracks,
# or (not a git checkout) every file but build output, .git and node_modules.
source_files() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files
  else
    find . -type f -not -path './build*' -not -path './.git/*' -not -path '*/node_modules/*' |
      sed 's|^\./||'
  fi
}
die() {
  log "error: $*"
  exit 1
}

# --- Packages ----------------------------------------------------------------------------

# Prints the packages among "$@" that are not installed, one a line.
missing_packages() {
  local pkg status
  for pkg in "$@"; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    [[ $status == "install ok installed" ]] || printf '%s\n' "$pkg"
  done
}

# Installs whatever is missing of WL_PACKAGES with apt-get (through sudo when not
# root). Does nothing, and needs no network, when everything is installed.
ensure_packages() {
  command -v dpkg-query >/dev/null || die "dpkg-query not found: these scripts need Debian or Ubuntu"
  local -a missing sudo=() wanted
  mapfile -t wanted < <(required_packages)
  mapfile -t missing < <(missing_packages "${wanted[@]}")
  ((${#missing[@]} > 0)) || return 0

  if ((EUID != 0)); then
    if ! command -v sudo >/dev/null; then
      die "missing packages: ${missing[*]}
  not root and sudo is not available; as root, run:
    apt-get update && apt-get install -y ${missing[*]}"
    fi
    sudo=(sudo)
    [[ -t 0 ]] || sudo+=(-n) # no terminal to ask for a password: fail instead of hanging
  fi

  log "installing missing packages: ${missing[*]}"
  local apt_log
  apt_log=$(mktemp "${TMPDIR:-/tmp}/walklist-apt.XXXXXX")
  if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -qq -o DPkg::Lock::Timeout=300 update \
    >"$apt_log" 2>&1 ||
    ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -qq -o Dpkg::Use-Pty=0 \
      -o DPkg::Lock::Timeout=300 install -y --no-install-recommends "${missing[@]}" \
      >>"$apt_log" 2>&1; then
    tail -n 40 "$apt_log" >&2
    rm -f "$apt_log"
    die "could not install: ${missing[*]}
  install them by hand (as root): apt-get update && apt-get install -y ${missing[*]}"
  fi
  rm -f "$apt_log"

  mapfile -t missing < <(missing_packages "${wanted[@]}")
  ((${#missing[@]} == 0)) || die "still missing after apt-get install: ${missing[*]}"
}

# --- Build -------------------------------------------------------------------------------

# The build dir, absolute: WALKLIST_BUILD_DIR (or BUILD_DIR), default build/ of the checkout.
build_dir() {
  local dir=${WALKLIST_BUILD_DIR:-${BUILD_DIR:-build}}
  [[ $dir == /* ]] || dir=$WL_ROOT/$dir
  printf '%s\n' "$dir"
}

# Configures and builds. WALKLIST_BUILD_TYPE (or BUILD_TYPE) defaults to RelWithDebInfo;
# WALKLIST_JOBS to 2; WALKLIST_CMAKE_ARGS adds cmake arguments, split at blanks
# (WALKLIST_CMAKE_ARGS=-DWL_SANITIZE=ON).
build() {
  local dir type=${WALKLIST_BUILD_TYPE:-${BUILD_TYPE:-RelWithDebInfo}}
  local -a extra=()
  read -r -a extra <<<"${WALKLIST_CMAKE_ARGS:-}"
  dir=$(build_dir)
  cmake -S "$WL_ROOT" -B "$dir" -DCMAKE_BUILD_TYPE="$type" "${extra[@]}"
  cmake --build "$dir" -j "${WALKLIST_JOBS:-2}"
}

# --- Running PostgreSQL ------------------------------------------------------------------

# Prints the newest /usr/lib/postgresql/<version>/bin, or that of VERSION when given.
# WALKLIST_PG_BINDIR overrides.
pg_bin_dir() {
  local version=${1:-} dir
  if [[ -n ${WALKLIST_PG_BINDIR:-} ]]; then
    dir=$WALKLIST_PG_BINDIR
  elif [[ -n $version ]]; then
    dir=/usr/lib/postgresql/$version/bin
  else
    dir=$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  fi
  [[ -x $dir/initdb && -x $dir/pg_ctl && -x $dir/postgres ]] ||
    die "PostgreSQL ${version:+$version }server binaries not found in $dir (install the postgresql package)"
  printf '%s\n' "$dir"
}

# Prints "uid:gid" of the user PostgreSQL runs as: ourselves, or walklist-pg when root
# (created on first use; falls back to nobody if it cannot be created).
pg_user_ids() {
  if ((EUID != 0)); then
    printf '%s:%s\n' "$(id -u)" "$(id -g)"
    return
  fi
  if ! id -u "$WL_PG_USER" >/dev/null 2>&1; then
    useradd --system --user-group --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin --comment "walklist private PostgreSQL" "$WL_PG_USER" \
      >/dev/null 2>&1 || true
  fi
  if id -u "$WL_PG_USER" >/dev/null 2>&1; then
    printf '%s:%s\n' "$(id -u "$WL_PG_USER")" "$(id -g "$WL_PG_USER")"
  else
    log "warning: could not create user $WL_PG_USER; running PostgreSQL as nobody"
    printf '%s:%s\n' "$(id -u nobody)" "$(id -g nobody)"
  fi
}

# Runs "$@" as UID:GID when we are root, else as ourselves. From / so that a cwd under /root
# does not trouble the unprivileged user.
run_as_ids() {
  local ids=$1
  shift
  if ((EUID != 0)); then
    "$@"
    return
  fi
  (cd / && exec setpriv --reuid="${ids%%:*}" --regid="${ids##*:}" --clear-groups -- "$@")
}

# Runs "$@" as the PostgreSQL user (see pg_user_ids).
run_as_pg_user() {
  run_as_ids "$(pg_user_ids)" "$@"
}

# Quotes a value for a libpq conninfo string when it needs it.
conninfo_value() {
  local v=$1
  if [[ -z $v || $v == *[[:space:]\'\\]* ]]; then
    v=${v//\\/\\\\}
    v=${v//\'/\\\'}
    v="'$v'"
  fi
  printf '%s\n' "$v"
}

# --- Private clusters (see the top of this file) ------------------------------------------

# Makes a new, empty private dir under PARENT, owned by the PostgreSQL user, and prints it.
pg_private_dir_new() {
  local parent=$1 dir
  dir=$(mktemp -d "$parent/wl-pg.XXXXXX")
  touch "$dir/.walklist-pg" # marks it as ours: pg_cluster_remove deletes only such dirs
  if ((EUID == 0)); then
    chown "$(pg_user_ids)" "$dir"
  fi
  printf '%s\n' "$dir"
}

# Prints the private dir recorded in STATE; fails when there is none.
pg_cluster_dir() {
  local state=$1 dir
  [[ -f $state/cluster ]] || return 1
  dir=$(<"$state/cluster")
  [[ $dir == /* ]] || return 1
  printf '%s\n' "$dir"
}

# Prints the conninfo of database DB (default postgres) of the cluster in STATE.
pg_cluster_conninfo() {
  local state=$1 db=${2:-postgres} dir
  dir=$(pg_cluster_dir "$state") || die "no cluster recorded in $state"
  printf 'host=%s port=%s user=%s dbname=%s\n' "$(conninfo_value "$dir")" "$WL_PG_PORT" \
    "$WL_PG_SUPERUSER" "$(conninfo_value "$db")"
}

# Creates a cluster in the private dir DIR (which must exist, owned by the PostgreSQL user)
# and records it in STATE. PROFILE "test" trades durability for speed (fsync off);
# "durable" keeps PostgreSQL's safe defaults.
pg_cluster_init() {
  local state=$1 dir=$2 profile=$3 bin
  bin=$(pg_bin_dir) || return 1
  mkdir -p "$state"
  printf '%s\n' "$dir" >"$state/cluster"
  [[ -e $dir/.walklist-pg ]] || touch "$dir/.walklist-pg"

  local -a initdb_args=(-D "$dir/data" -U "$WL_PG_SUPERUSER" --auth=trust --encoding=UTF8 --no-locale)
  if [[ $profile == test ]]; then
    initdb_args+=(--no-sync)
  fi
  if ! run_as_pg_user "$bin/initdb" "${initdb_args[@]}" >"$dir/initdb.log" 2>&1; then
    log "initdb failed (see $dir/initdb.log)"
    return 1
  fi
  rm -f "$dir/initdb.log"

  local sock=${dir//\'/\'\'}
  {
    printf '\n# --- walklist private cluster ---\n'
    printf "listen_addresses = ''\n"
    printf "unix_socket_directories = '%s'\n" "$sock"
    printf 'unix_socket_permissions = 0700\n'
    printf 'port = %s\n' "$WL_PG_PORT"
    printf 'max_connections = 200\n'
    if [[ $profile == test ]]; then
      printf '# test cluster: speed over durability\n'
      printf 'fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n'
      printf '# every statement, with its application, for tests/sql_scan.sh (no parameters)\n'
      printf "log_statement = 'all'\nlog_line_prefix = '%%m [%%p] app=%%a '\n"
      printf 'log_parameter_max_length = 0\n'
      printf '# how often each statement, nested ones too, is planned (tests of plans)\n'
      printf "shared_preload_libraries = 'pg_stat_statements'\n"
      printf 'pg_stat_statements.track = all\npg_stat_statements.track_planning = on\n'
      # A whole suite makes about 12,000 entries (every database's statements): at the default
      # 5,000 PostgreSQL evicted some mid-run (31 times in one run), which could take a counted
      # statement away between a test's two reads of it. About 25 MB of shared memory.
      printf 'pg_stat_statements.max = 50000\n'
    fi
  } >>"$dir/data/postgresql.conf"
  pg_cluster_conninfo "$state" >"$state/conninfo"
}

# Is the cluster recorded in STATE running?
pg_cluster_running() {
  local state=$1 dir bin
  dir=$(pg_cluster_dir "$state") || return 1
  [[ -f $dir/data/postmaster.pid ]] || return 1
  bin=$(pg_bin_dir "$(cat "$dir/data/PG_VERSION" 2>/dev/null)") || return 1
  run_as_ids "$(stat -c %u:%g "$dir/data")" "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1
}

# Starts the cluster recorded in STATE (no-op when it runs already), waiting up to 60 s.
# On failure, pg_cluster_log_tail tells why.
pg_cluster_start() {
  local state=$1 dir bin
  dir=$(pg_cluster_dir "$state") || die "no cluster recorded in $state"
  [[ -f $dir/data/PG_VERSION ]] || die "no PostgreSQL data dir in $dir/data"
  pg_cluster_running "$state" && return 0
  bin=$(pg_bin_dir "$(<"$dir/data/PG_VERSION")") || return 1
  if ! run_as_ids "$(stat -c %u:%g "$dir/data")" \
    "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 -s start \
    </dev/null >/dev/null 2>>"$dir/pg_ctl.log"; then
    log "PostgreSQL did not start (see $dir/postgres.log)"
    return 1
  fi
}

# Prints the end of the cluster's logs to stderr (for failure reports).
pg_cluster_log_tail() {
  local state=$1 dir f
  dir=$(pg_cluster_dir "$state") || return 0
  for f in initdb.log pg_ctl.log postgres.log; do
    if [[ -s $dir/$f ]]; then
      printf -- '----- %s (last 50 lines) -----\n' "$dir/$f" >&2
      tail -n 50 "$dir/$f" >&2
    fi
  done
}

# Stops the cluster recorded in STATE with MODE (fast, immediate); fine when not running.
# Makes sure the postmaster is gone afterwards.
pg_cluster_stop() {
  local state=$1 mode=${2:-fast} dir bin pid
  dir=$(pg_cluster_dir "$state") || return 0
  [[ -f $dir/data/postmaster.pid ]] || return 0
  pid=$(head -n 1 "$dir/data/postmaster.pid" 2>/dev/null || true)
  if bin=$(pg_bin_dir "$(cat "$dir/data/PG_VERSION" 2>/dev/null)" 2>/dev/null); then
    run_as_ids "$(stat -c %u:%g "$dir/data")" "$bin/pg_ctl" -D "$dir/data" -m "$mode" -w -t 60 \
      -s stop >/dev/null 2>&1 || true
  fi
  # pg_ctl failed or was unavailable: kill that postmaster (checked by its data dir) and its
  # children, so no server outlives the cluster's files.
  if [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null &&
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$dir/data"; then
    log "postmaster $pid did not stop; killing it"
    kill -QUIT "$pid" 2>/dev/null || true
    sleep 2
    if kill -0 "$pid" 2>/dev/null; then
      pkill -KILL -P "$pid" 2>/dev/null || true
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
}

# Stops the cluster recorded in STATE (immediately: its data is thrown away), deletes its
# private dir and STATE's files. Fine when nothing is there.
pg_cluster_remove() {
  local state=$1 dir
  if dir=$(pg_cluster_dir "$state"); then
    pg_cluster_stop "$state" immediate
    if [[ -d $dir ]]; then
      if [[ $dir != / && -e $dir/.walklist-pg ]]; then
        rm -rf -- "$dir"
      else
        log "warning: $dir is not a walklist cluster dir; not deleting it"
      fi
    fi
  fi
  rm -f -- "$state/cluster" "$state/conninfo"
  rmdir -- "$state" 2>/dev/null || true
}

# Runs psql on the cluster's database CONNINFO: psql CONNINFO [psql args...]
pg_psql() {
  local conninfo=$1 bin
  shift
  bin=$(pg_bin_dir)
  "$bin/psql" -X -q -v ON_ERROR_STOP=1 -d "$conninfo" "$@"
}
