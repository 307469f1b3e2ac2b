#!/usr/bin/env bash
# Fuzzes one parser with libFuzzer for a while:
#
#   scripts/fuzz.sh NAME SECONDS [libFuzzer options...]     e.g. scripts/fuzz.sh json 600
#   scripts/fuzz.sh --list                                   the harnesses
#
# NAME is a harness of tests/fuzz (tests/fuzz/fuzz_NAME.c). Configures build-fuzz (clang,
# -DWL_FUZZ=ON: ASan, UBSan and libFuzzer; WALKLIST_FUZZ_BUILD_DIR overrides), builds that
# harness, and runs it for SECONDS seeded with the committed corpus tests/fuzz/corpus/NAME,
# which is only read (and with the dictionary tests/fuzz/NAME.dict when there is one). New inputs go to a scratch corpus, build-fuzz/corpus/NAME (kept between
# runs, so a later run goes on from there), and crashes, leaks and timeouts to
# build-fuzz/findings/NAME/. To keep a finding as a regression input, minimize it
#   build-fuzz/tests/fuzz/fuzz_NAME -minimize_crash=1 -runs=100000 FILE
# and copy the result into tests/fuzz/corpus/NAME/ under a name that says what it is.
# Exits non-zero when the run found something.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$WL_ROOT"

if [[ ${1:-} == --list ]]; then
  for f in tests/fuzz/fuzz_*.c; do
    f=${f##*/fuzz_}
    printf '%s\n' "${f%.c}"
  done
  exit 0
fi
(($# >= 2)) || die "usage: scripts/fuzz.sh NAME SECONDS [libFuzzer options...] (names: scripts/fuzz.sh --list)"
name=$1 seconds=$2
shift 2
[[ -f tests/fuzz/fuzz_$name.c ]] || die "no harness tests/fuzz/fuzz_$name.c (names: scripts/fuzz.sh --list)"
[[ $seconds =~ ^[0-9]+$ ]] || die "SECONDS must be a whole number"
command -v clang >/dev/null || die "clang not found: apt-get install clang libclang-rt-14-dev"

build=${WALKLIST_FUZZ_BUILD_DIR:-build-fuzz}
[[ $build == /* ]] || build=$WL_ROOT/$build
mkdir -p "$build"
# Two runs may share the build dir (one per core): they build one at a time.
(
  flock 9
  if [[ ! -f $build/CMakeCache.txt ]]; then
    CC=clang cmake -S "$WL_ROOT" -B "$build" -DWL_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  fi
  cmake --build "$build" -j "${WALKLIST_JOBS:-2}" --target "fuzz_$name" >/dev/null
) 9>"$build/.fuzz-build.lock"

scratch=$build/corpus/$name findings=$build/findings/$name
mkdir -p "$scratch" "$findings"
log "fuzzing $name for ${seconds}s (new inputs: $scratch, findings: $findings)"
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
dict=()
[[ -f tests/fuzz/$name.dict ]] && dict=(-dict="$WL_ROOT/tests/fuzz/$name.dict")
exec "$build/tests/fuzz/fuzz_$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$findings/" "${dict[@]}" "$@" "$scratch" \
  "$WL_ROOT/tests/fuzz/corpus/$name"
