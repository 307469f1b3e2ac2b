#!/usr/bin/env bash
# e2e.zz_sql_portable, run after every other test (tests/CMakeLists.txt): the SQL the product
# sent during the suite stays in forms that a distributed PostgreSQL (Citus) accepts too
# (docs/scaling-out.md). CI has no Citus, so the rules are enforced here, on what
# the test cluster logged (its test profile logs every statement with the application's name,
# scripts/lib.sh), statements of walklistd and walklistctl only (application walklist*):
#   - no function but immutable ones in RETURNING (times are read as columns and converted in C);
#   - no volatile function (clock_timestamp, random, ...) in an INSERT or an UPDATE;
#   - no time function in ON CONFLICT .. DO UPDATE, nor now() in COALESCE or CASE;
#   - the temporary staging table import_rows never in UPDATE .. FROM, DELETE .. USING or a
#     JOIN of its own, nor correlated NOT EXISTS subqueries against it;
#   - no DROP VIEW of a view named pg_temp.NAME (Citus's hook looks for a schema "pg_temp");
#   - in the PL/pgSQL bodies, no scalar subquery in coalesce (function_rules below);
# and the template database has no trigger on the reference tables (organizations, api_keys,
# server_secrets); walklistd's sessions (every application but walklistctl) write none of
# them (a reference table needs every node: one worker down would fail the request); every
# table of the template has a primary key (logical replication moves shards by it). PL/pgSQL bodies (src/store/functions) are not in the log: their statements
# are checked by the same rules in their files. Exits 77 when the cluster logged nothing.
#
#   sql_scan.sh STATE SOURCE_DIR     STATE: the test cluster's state dir (build/testpg)
#   sql_scan.sh --check FILE         the rules alone, on statements one a line (self-check)
set -euo pipefail

rules=(
  'returning [^;]*\b(now|clock_timestamp|current_timestamp|statement_timestamp|extract|date_part|date_trunc|floor|to_char|to_timestamp)[[:space:]]*\(|a function in RETURNING'
  '^(insert|update)\b.*\b(clock_timestamp|random|timeofday|gen_random_uuid)[[:space:]]*\(|a volatile function in an INSERT or UPDATE'
  'on conflict .*do update.*\b(now|clock_timestamp|current_timestamp|statement_timestamp|extract|date_trunc)\b|a time function in ON CONFLICT'
  '\b(coalesce|case)\b[^;]*\bnow[[:space:]]*\(\)|now() in COALESCE or CASE'
  '\b(using|join)[[:space:]]+import_rows\b|import_rows joined directly (USING/JOIN)'
  '^update\b[^(]*\bfrom[[:space:]]+import_rows\b|UPDATE .. FROM import_rows'
  'not exists[[:space:]]*\(select 1 from [a-z_]+ [a-z]+ where [^)]*\bi\.[a-z_]+|a correlated NOT EXISTS against the staged rows'
  '^drop[[:space:]]+view[[:space:]]+(if[[:space:]]+exists[[:space:]]+)?pg_temp\.|DROP VIEW pg_temp.NAME (Citus takes pg_temp for a schema of that name)'
)

# PL/pgSQL bodies only: wl_admit's statements are planned once per session (a generic plan),
# where Citus routes a statement by a variable's value only in a plain one-table form; a scalar
# subquery naming a variable ("could not create distributed plan") failed the whole group. A
# top-level statement's parameter is bound before Citus plans it, so the log is not held to it.
function_rules=(
  'coalesce[[:space:]]*\([[:space:]]*\(select\b|a scalar subquery in a function (Citus cannot plan it by a variable: SELECT .. INTO, then coalesce)'
)

# Prints "RULE: statement" for each statement (one a line, on stdin) that breaks a rule of the
# arrays named (default: rules).
check() {
  local line lower rule pattern why list
  local -a applied=()
  for list in "${@:-rules}"; do
    local -n named=$list
    applied+=("${named[@]}")
    unset -n named
  done
  while IFS= read -r line; do
    lower=${line,,}
    for rule in "${applied[@]}"; do
      pattern=${rule%|*}
      why=${rule##*|}
      if [[ $lower =~ $pattern ]]; then
        printf '%s: %s\n' "$why" "${line:0:300}"
      fi
    done
  done
}

if [[ ${1:-} == --check ]]; then
  found=$(check <"${2:?usage: sql_scan.sh --check FILE}")
  [[ -z $found ]] || { printf '%s\n' "$found"; exit 1; }
  exit 0
fi

state=${1:?usage: sql_scan.sh STATE SOURCE_DIR}
source_dir=${2:?usage: sql_scan.sh STATE SOURCE_DIR}
# shellcheck source-path=SCRIPTDIR
source "$source_dir/scripts/lib.sh"

# The rules fire on what they are meant to catch (statements this project sent before).
self_check=$(mktemp)
trap 'rm -f -- "$self_check"' EXIT
cat >"$self_check" <<'BAD'
INSERT INTO locate_lists (org_id, id, name, codes) VALUES ($1, $2, $3, $4::text[]) RETURNING floor(extract(epoch FROM created_at) * 1000)::bigint
UPDATE locate_lists SET state = 'loaded', loaded_at = date_trunc('milliseconds', clock_timestamp()) WHERE org_id = $1
INSERT INTO idempotency_keys AS k (org_id, key) VALUES ($1, $2) ON CONFLICT (org_id, key) DO UPDATE SET created_at = now()
UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE prefix = $1
UPDATE products p SET name = i.name FROM import_rows i WHERE p.org_id = $1
DELETE FROM product_eans e USING import_rows i WHERE e.org_id = $1
SELECT label FROM import_rows i WHERE NOT EXISTS (SELECT 1 FROM products p WHERE p.org_id = $1 AND p.sku = i.sku)
DROP VIEW pg_temp.catalogue_products
BAD
caught=$(check <"$self_check" | wc -l)
caught_in_functions=$(printf '%s\n' \
  '                SELECT coalesce((SELECT ev.version FROM export_versions ev' |
  check function_rules | wc -l)
if ((caught < 8 || caught_in_functions < 1)); then
  printf 'sql_scan: the rules caught %d of 8 known bad statements, %d of 1 in functions\n' \
    "$caught" "$caught_in_functions"
  check <"$self_check"
  exit 1
fi

dir=$(pg_cluster_dir "$state")
log_file=$dir/postgres.log
statements=$(mktemp)
trap 'rm -f -- "$self_check" "$statements"' EXIT
# "... app=walklist... LOG:  statement: SQL" and "... LOG:  execute <name>: SQL" (prepared).
grep -a -E ' app=walklist[^ ]* .*LOG:  (statement|execute [^:]+):' "$log_file" 2>/dev/null |
  sed -E 's/^.*LOG:  (statement|execute [^:]+): //' >"$statements" || true
count=$(wc -l <"$statements")
if ((count == 0)); then
  printf 'sql_scan: no statement of walklistd or walklistctl in %s: nothing to scan\n' "$log_file"
  exit 77
fi

# PL/pgSQL bodies: each line of the function files, as a statement of its own.
functions=$(mktemp)
trap 'rm -f -- "$self_check" "$statements" "$functions"' EXIT
cat "$source_dir"/src/store/functions/*.sql >"$functions"

failed=0
found=$(sort -u "$statements" | check)
if [[ -n $found ]]; then
  printf 'sql_scan: statements Citus refuses, sent during the suite:\n%s\n' "$found"
  failed=1
fi
found=$(check rules function_rules <"$functions")
if [[ -n $found ]]; then
  printf 'sql_scan: in src/store/functions:\n%s\n' "$found"
  failed=1
fi
triggers=$(pg_psql "$(pg_cluster_conninfo "$state" walklist_template)" -At -c \
  "SELECT tgrelid::regclass || ' ' || tgname FROM pg_trigger WHERE NOT tgisinternal
     AND tgrelid IN ('organizations'::regclass, 'api_keys'::regclass, 'server_secrets'::regclass)")
if [[ -n $triggers ]]; then
  printf 'sql_scan: triggers on reference tables:\n%s\n' "$triggers"
  failed=1
fi
written=$(grep -a -E ' app=walklist[^ ]* .*LOG:  (statement|execute [^:]+):' "$log_file" |
  grep -a -v ' app=walklistctl ' | sed -E 's/^.*LOG:  (statement|execute [^:]+): //' |
  grep -a -i -E '^[[:space:]]*(insert[[:space:]]+into|update|delete[[:space:]]+from)[[:space:]]+(organizations|api_keys|server_secrets)\b' |
  sort -u || true)
if [[ -n $written ]]; then
  printf 'sql_scan: walklistd wrote a reference table:\n%s\n' "$written"
  failed=1
fi
keyless=$(pg_psql "$(pg_cluster_conninfo "$state" walklist_template)" -At -c \
  "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind IN ('r', 'p') AND n.nspname = 'public' AND NOT c.relispartition
      AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conrelid = c.oid AND k.contype = 'p')")
if [[ -n $keyless ]]; then
  printf 'sql_scan: tables without a primary key:\n%s\n' "$keyless"
  failed=1
fi
printf 'sql_scan: %d statements of walklistd and walklistctl scanned (%d distinct)\n' "$count" \
  "$(sort -u "$statements" | wc -l)"
exit "$failed"
