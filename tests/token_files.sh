#!/usr/bin/env bash
# lint.no_tokens: no file of the source tree holds something shaped like an API key (wlk_ + 8 +
# _ + 20 or more base62 characters) or a webhook secret (whsec_ + 20 or more base64
# characters), except where a made-up one is the point: the test sources (tests/), and the
# documented examples listed below, each a value that was never issued. A token that lands
# anywhere else (test output written into the source tree, a pasted key) fails the suite.
#
#   token_files.sh SOURCE_DIR
set -euo pipefail

# shellcheck source-path=SCRIPTDIR/../scripts
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"

source_dir=${1:?usage: token_files.sh SOURCE_DIR}
cd "$source_dir"

# Examples in the documentation: the shape a reader sees, never a real key.
allowed=(README.md docs/change-feeds.md gateway/openapi.json)

files=$(source_files)

found=0
while IFS= read -r file; do
  [[ -f $file ]] || continue
  case $file in
  tests/*) continue ;;
  esac
  for ok in "${allowed[@]}"; do
    [[ $file == "$ok" ]] && continue 2
  done
  if grep -I -n -o -E 'wlk_[A-Za-z0-9]{8}_[A-Za-z0-9]{20,}|whsec_[A-Za-z0-9+/=]{20,}' "$file" |
    sed -E 's/(wlk_[A-Za-z0-9]{8}_|whsec_)[A-Za-z0-9+\/=]+/\1.../' | sed "s|^|$file:|"; then
    found=1
  fi
done <<<"$files"
if ((found)); then
  echo "token_files: key-shaped tokens in tracked files (above); remove them or, for a documented example, list the file in tests/token_files.sh" >&2
  exit 1
fi
echo "token_files: no key-shaped token outside tests/ and the documented examples"
