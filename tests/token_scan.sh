#!/usr/bin/env bash
# e2e.zz_no_keys_in_logs, the suite's last test (tests/CMakeLists.txt orders it after every
# other): no API key may reach a log line (api_key= values are logged as REDACTED).
#
#   token_scan.sh DIR
#
# Scans every DIR/*.log (the walklistd logs of the e2e tests, tests/support/service.c) for
#   - each key the tests issued, recorded one a line in DIR/issued-tokens.txt by
#     tests/support/fixture.c, and each key's secret part on its own;
#   - anything shaped like a key (wlk_ + 8 + _ + 20 or more base62 characters), which also
#     catches the made-up keys tests send and keys made by walklistctl.
# A hit is reported as FILE:LINE with the key cut to its public prefix. Exits 77 (skipped)
# when there is no log to scan.
set -euo pipefail

dir=${1:?usage: token_scan.sh DIR}
tokens=$dir/issued-tokens.txt

shopt -s nullglob
logs=("$dir"/*.log)
if ((${#logs[@]} == 0)); then
  printf 'token_scan: no logs in %s: nothing to scan\n' "$dir"
  exit 77
fi

patterns=$(mktemp)
hits=$(mktemp)
trap 'rm -f -- "$patterns" "$hits"' EXIT

issued=0
if [[ -s $tokens ]]; then
  # The whole token and its secret alone (a log cutting the token apart still leaks it).
  sed -nE 's/^(wlk_[A-Za-z0-9]{8}_)([A-Za-z0-9]{20,})$/\1\2\n\2/p' "$tokens" | sort -u >"$patterns"
  issued=$(grep -c '^wlk_' "$patterns" || true)
fi

mask() {
  sed -E 's/(wlk_[A-Za-z0-9]{8}_)?[A-Za-z0-9]{20,}/\1.../g'
}

status=0
if [[ -s $patterns ]] && grep -H -n -o -F -f "$patterns" -- "${logs[@]}" >"$hits"; then
  printf 'token_scan: issued API keys found in logs:\n'
  mask <"$hits" | sort -u | head -n 50
  status=1
fi
if grep -H -n -o -E 'wlk_[A-Za-z0-9]{8}_[A-Za-z0-9]{20,}' -- "${logs[@]}" >"$hits"; then
  printf 'token_scan: key-shaped strings found in logs:\n'
  mask <"$hits" | sort -u | head -n 50
  status=1
fi
bytes=$(cat -- "${logs[@]}" | wc -c)
printf 'token_scan: %d logs (%d bytes) scanned for %d issued keys and any key-shaped string: %s\n' \
  "${#logs[@]}" "$bytes" "$issued" "$([[ $status == 0 ]] && echo clean || echo LEAKS)"
exit "$status"
