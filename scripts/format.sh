#!/usr/bin/env bash
# clang-format over every tracked C file, with the committed .clang-format.
#
#   scripts/format.sh          rewrites the files that are not formatted
#   scripts/format.sh --check  changes nothing; lists them and exits 1 (CI runs this)
set -euo pipefail

# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$WL_ROOT"
ensure_packages # clang-format among them

mapfile -t files < <(git ls-files '*.c' '*.h')
if [[ ${1:-} == --check ]]; then
  mapfile -t unformatted < <(clang-format --dry-run -Werror "${files[@]}" 2>&1 |
    sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error:.*/\1/p' | sort -u)
  if ((${#unformatted[@]} > 0)); then
    log "not formatted (run scripts/format.sh): ${unformatted[*]}"
    exit 1
  fi
  log "${#files[@]} files formatted"
else
  clang-format -i "${files[@]}"
fi
