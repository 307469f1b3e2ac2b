#!/usr/bin/env bash
# lint.docker_files: what can be checked of docker/ without a Docker engine or a registry.
#   - docker/compose.yaml is accepted by Debian's docker-compose 1.29 (`config`), keeps its
#     health checks, the one-shot migration's condition and a stop grace period;
#   - .dockerignore lets through every file docker/Dockerfile copies and nothing of build
#     directories, var/ (database, demo key), .git, node_modules or key files (Docker's rules:
#     the last matching pattern wins, a pattern matching a folder covers what is inside);
#   - the Dockerfile's HEALTHCHECK is walklistd --probe, and walklistd's default shutdown
#     timeout ends before Docker's 10 s stop grace period.
# Usage: tests/docker_files.sh WALKLISTD SOURCE_DIR
set -euo pipefail
walklistd=$1
src=$2
cd "$src"
fail=0
problem() {
  echo "docker_files: $*" >&2
  fail=1
}

if command -v docker-compose >/dev/null; then
  if ! config=$(docker-compose -f docker/compose.yaml config 2>&1); then
    problem "docker-compose 1.29 refuses docker/compose.yaml: $config"
  else
    for needed in "condition: service_healthy" "condition: service_completed_successfully" \
      "stop_grace_period: 45s" "pg_isready"; do
      grep -qF -- "$needed" <<<"$config" || problem "compose config lacks '$needed'"
    done
  fi
else
  echo "docker_files: docker-compose is not installed (scripts/lib.sh installs it): compose not checked" >&2
fi

grep -qE '^HEALTHCHECK .*CMD \["walklistd", "--probe", "http://127\.0\.0\.1:8080/readyz"\]' \
  <(sed -e ':a' -e '/\\$/N; s/\\\n//; ta' docker/Dockerfile) ||
  problem "docker/Dockerfile has no HEALTHCHECK through walklistd --probe"

shutdown_ms=$("$walklistd" --print-config-markdown | awk -F'|' '/--shutdown-timeout-ms/ {gsub(/ /, "", $4); print $4}')
if [[ ! $shutdown_ms =~ ^[0-9]+$ ]] || ((shutdown_ms >= 10000)); then
  problem "walklistd's default --shutdown-timeout-ms ($shutdown_ms) is not below Docker's 10 s"
fi

# The files the Dockerfile copies: its COPY sources (not --from), as git knows them.
mapfile -t copied < <(awk '/^COPY / && !/--from/ {for (i = 2; i < NF; i++) print $i}' docker/Dockerfile)
((${#copied[@]} > 0)) || problem "no COPY lines in docker/Dockerfile"
# Every top-level folder CMakeLists.txt reads (tests aside: the image builds without them;
# files such as README.md are read by cmake --install only).
for used in $(grep -o '${CMAKE_SOURCE_DIR}/[A-Za-z_.-]*' CMakeLists.txt | sed 's#.*/##' | sort -u); do
  [[ $used == tests || $used == *.* ]] && continue
  printf '%s\n' "${copied[@]}" | grep -qx "$used/" || problem "CMakeLists.txt reads $used/, which docker/Dockerfile does not copy"
done
python3 - "${copied[@]}" <<'PY' || fail=1
import re, subprocess, sys

def pattern_regex(pattern):
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
        elif pattern.startswith("**", i):
            out += ".*"
            i += 2
        elif pattern[i] == "*":
            out += "[^/]*"
            i += 1
        elif pattern[i] == "?":
            out += "[^/]"
            i += 1
        else:
            out += re.escape(pattern[i])
            i += 1
    return re.compile(out + "$")

rules = []
for line in open(".dockerignore"):
    line = line.strip()
    if not line or line.startswith("#"):
        continue
    negate = line.startswith("!")
    pattern = line[1:] if negate else line
    rules.append((pattern_regex(pattern.strip("/")), negate))

def excluded(path):
    parts = path.split("/")
    result = False
    for regex, negate in rules:
        # A pattern that matches a folder of the path matches the path.
        if any(regex.match("/".join(parts[:n])) for n in range(1, len(parts) + 1)):
            result = not negate
    return result

files = subprocess.run(["git", "ls-files"], capture_output=True, text=True, check=True).stdout.split()
sources = [s.rstrip("/") for s in sys.argv[1:]]
bad = 0
for f in files:
    if any(f == s or f.startswith(s + "/") for s in sources) and excluded(f):
        print(f"docker_files: the Dockerfile copies {f}, but .dockerignore leaves it out", file=sys.stderr)
        bad = 1
for f in ["build/bin/walklistd", "build-asan/CMakeCache.txt", "var/demo-key", "var/pg/data/PG_VERSION",
          ".git/HEAD", "tests/connect-client/node_modules/x/index.js", "src/server.pem", "gateway/tls.key",
          "issued-tokens.txt"]:
    if not excluded(f):
        print(f"docker_files: .dockerignore lets {f} into the build context", file=sys.stderr)
        bad = 1
sys.exit(bad)
PY
exit "$fail"
