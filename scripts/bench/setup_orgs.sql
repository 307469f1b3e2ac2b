-- Benchmark organizations: :orgs organizations named bench-0001.. with one key each
-- (scopes lists:write, stock:read, scanner), so that wrk can rotate over them and measure the
-- service rather than the per-organization rate limits. Keys are made here, in SQL, because
-- thousands of `walklistctl key create` runs would take minutes; the tokens are derived from
-- the organization's number (benchmark databases only: they are guessable) and stored as
-- walklistctl stores them (prefix, SHA-256 of the whole token).
-- Output (run with psql -tA -F ' '), one line per organization: token, org_id, the ETag of its
-- (empty) export.
INSERT INTO organizations (slug, name)
SELECT format('bench-%s', lpad(i::text, 4, '0')), format('Benchmark organization %s', i)
  FROM generate_series(1, :orgs) AS i
ON CONFLICT (slug) DO NOTHING;

CREATE TEMP TABLE bench_keys AS
SELECT o.org_id,
       format('wlk_%s_%s', 'bk' || lpad(substr(o.slug, 7), 6, '0'),
              md5('walklist-bench-' || o.slug)) AS token
  FROM organizations o
 WHERE o.slug LIKE 'bench-%';

INSERT INTO api_keys (prefix, org_id, token_hash, scopes, name)
SELECT substr(token, 5, 8), org_id, sha256(convert_to(token, 'UTF8')),
       ARRAY['lists:write', 'stock:read', 'scanner'], 'bench'
  FROM bench_keys
ON CONFLICT (prefix) DO NOTHING;

SELECT k.token, k.org_id, format('"%s-%s"', k.org_id, coalesce(v.version, 0))
  FROM bench_keys k LEFT JOIN export_versions v USING (org_id)
 ORDER BY k.org_id;
