#!/usr/bin/env bash
# BENCHMARKS.md's analysis (from "## What is measured" up to "## Commands") is
# scripts/bench/analysis.md, which scripts/bench.sh copies into every BENCHMARKS.md it writes:
# an edit made to BENCHMARKS.md alone is lost at the next full run. Fails with a diff when the
# two differ; --write copies the analysis of BENCHMARKS.md into scripts/bench/analysis.md.
#
#   tests/bench_analysis.sh ROOT [--write]
set -euo pipefail

if (($# < 1 || $# > 2)) || { (($# == 2)) && [[ $2 != --write ]]; }; then
  echo "usage: $0 ROOT [--write]" >&2
  exit 2
fi
root=$1 write=${2:-}
page=$root/BENCHMARKS.md source=$root/scripts/bench/analysis.md

current=$(mktemp)
trap 'rm -f "$current"' EXIT
# bench.sh prints a blank line, the analysis, then "\n## Commands": the section without that
# last blank line.
awk '/^## What is measured$/ { on = 1 } /^## Commands$/ { exit } on' "$page" | sed '$ { /^$/d }' >"$current"
if [[ ! -s $current ]]; then
  echo "$page: no section from '## What is measured' to '## Commands'" >&2
  exit 1
fi

if [[ $write == --write ]]; then
  cp "$current" "$source"
  exit 0
fi
if ! diff -u "$source" "$current"; then
  echo "BENCHMARKS.md's analysis differs from scripts/bench/analysis.md, which the next" >&2
  echo "scripts/bench.sh run writes back; to keep what BENCHMARKS.md says:" >&2
  echo "  tests/bench_analysis.sh . --write" >&2
  exit 1
fi
