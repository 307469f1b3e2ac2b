-- Benchmark organizations: :orgs organizations named :set-000001.. with one key each (scopes
-- lists:write, stock:read, scanner), so that wrk can rotate over them: at the specified rate
-- limits (30 a minute per organization and bucket) a run needs enough organizations to stay
-- under them, as a multi-tenant deployment's traffic does. :set is 2 characters, the start of
-- each key's public prefix, so that every set has keys of its own. Keys are made here, in SQL,
-- because thousands of `walklistctl key create` runs would take minutes; the tokens are derived from
-- the organization's number (benchmark databases only: they are guessable) and stored as
-- walklistctl stores them (prefix, SHA-256 of the whole token).
-- Output (run with psql -tA -F ' '), one line per organization: token, org_id, the ETag of its
-- (empty) export.
INSERT INTO organizations (slug, name)
SELECT format('%s-%s', :'set', lpad(i::text, 6, '0')), format('Benchmark organization %s', i)
  FROM generate_series(1, :orgs) AS i
ON CONFLICT (slug) DO NOTHING;

CREATE TEMP TABLE bench_keys AS
SELECT o.org_id,
       format('wlk_%s_%s', :'set' || substr(o.slug, 4), md5('walklist-bench-' || o.slug)) AS token
  FROM organizations o
 WHERE o.slug LIKE :'set' || '-%';

INSERT INTO api_keys (prefix, org_id, token_hash, scopes, name)
SELECT substr(token, 5, 8), org_id, sha256(convert_to(token, 'UTF8')),
       ARRAY['lists:write', 'stock:read', 'scanner'], 'bench'
  FROM bench_keys
ON CONFLICT (prefix) DO NOTHING;

SELECT k.token, k.org_id, format('"%s-%s"', k.org_id, coalesce(v.version, 0))
  FROM bench_keys k LEFT JOIN export_versions v USING (org_id)
 ORDER BY k.org_id;
