#!/usr/bin/env bash
# The documented configuration table (docs/operations.md) is walklistd's option table
# (gateway/process/config.h), as `walklistd --print-config-markdown` prints it: the first block
# of table lines after the heading "Configuration of `walklistd`" (at any level). Fails with a
# diff when they differ; --write puts the printed table in the page instead.
#
#   tests/config_readme.sh WALKLISTD PAGE.md [--write]
set -euo pipefail

if (($# < 2 || $# > 3)) || { (($# == 3)) && [[ $3 != --write ]]; }; then
  echo "usage: $0 WALKLISTD PAGE.md [--write]" >&2
  exit 2
fi
walklistd=$1 readme=$2 write=${3:-}

heading='Configuration of `walklistd`'
generated=$(mktemp) current=$(mktemp)
trap 'rm -f "$generated" "$current"' EXIT
"$walklistd" --print-config-markdown >"$generated"
# The first run of lines starting with '|' after the heading.
awk -v heading="$heading" '
  /^#+ / { line = $0; sub(/^#+ /, "", line); if (line == heading) { in_section = 1; next } }
  in_section && /^\|/ { print; seen = 1; next }
  seen { exit }' "$readme" >"$current"
if [[ ! -s $current ]]; then
  echo "$readme: no table after the heading '$heading'" >&2
  exit 1
fi

if [[ $write == --write ]]; then
  updated=$(mktemp)
  awk -v heading="$heading" -v table="$generated" '
    /^#+ / && in_section == 0 { line = $0; sub(/^#+ /, "", line); if (line == heading) in_section = 1 }
    in_section == 1 && /^\|/ {
      while ((getline line < table) > 0) print line
      in_section = 2
      next
    }
    in_section == 2 && /^\|/ { next }
    in_section == 2 { in_section = 3 }
    { print }' "$readme" >"$updated"
  cat "$updated" >"$readme"
  rm -f "$updated"
  exit 0
fi

if ! diff -u --label "$readme (configuration table)" --label "walklistd --print-config-markdown" \
  "$current" "$generated"; then
  echo >&2
  echo "The configuration table of $readme differs from walklistd's options (gateway/process/config.h)." >&2
  echo "Put the option table's text in $readme with:" >&2
  echo "  tests/config_readme.sh $walklistd $readme --write" >&2
  exit 1
fi
echo "$readme's configuration table lists every option of walklistd as gateway/process/config.h does"
