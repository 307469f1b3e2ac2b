#!/usr/bin/env bash
# lint.no_work_item_refs: no tracked file points outside the repository or at a work item. A
# clone has no specification document beside it and no tracker's numbering, so a comment says
# the rule it means (or names the docs page that does), and history goes to CHANGELOG.md.
# Fails on, case-insensitively:
#   - a section reference into the outside specification ("CONTRACT" + " section" or " §");
#   - a relative path to the directory beside the repository ("..", "/", "shared");
#   - a numbered work item: the word issue or session, a space and a number.
# Files listed below are skipped, each for the reason beside it.
#
#   work_item_refs.sh SOURCE_DIR
set -euo pipefail

# shellcheck source-path=SCRIPTDIR/../scripts
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"

source_dir=${1:?usage: work_item_refs.sh SOURCE_DIR}
cd "$source_dir"

# The patterns are spelled so that this file does not match them itself.
pattern='CONTRACT[ ](section|§)|[.][.]/shared|\b(issue|session)[ ][0-9]+'

# Each entry is a bash pattern over the path (* also crosses /).
allowed=(
  'src/store/migrations/*'               # immutable once applied: their checksums are verified
  'CHANGELOG.md'                         # history is where work items may be named
)

files=$(source_files)

found=0
while IFS= read -r file; do
  [[ -f $file ]] || continue
  for ok in "${allowed[@]}"; do
    # shellcheck disable=SC2053 # the entry is a pattern
    [[ $file == $ok ]] && continue 2
  done
  if grep -I -n -i -E "$pattern" -- "$file" | sed "s|^|$file:|"; then
    found=1
  fi
done <<<"$files"
if ((found)); then
  echo "work_item_refs: references outside the repository or to work items (above): say the rule" \
    "the comment means, or link the docs page; history goes to CHANGELOG.md" >&2
  exit 1
fi
echo "work_item_refs: no outside reference or work-item number outside the allowlist"
