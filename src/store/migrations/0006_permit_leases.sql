-- Permit leases for the rate limits and announcements of revoked keys, so that a walklistd
-- process can answer most requests without a database round trip (BENCHMARKS.md).

-- A hit may now stand for several requests: counts[i] requests counted at hits[i]. NULL
-- (rows written before this migration) means one request per hit.
ALTER TABLE rate_limits ADD COLUMN counts integer[];

-- Counts up to p_want requests against the bucket, as many as fit, and says how many.
--
-- A process may lease permits to spend later: it then passes p_hold_ms, the longest it will
-- hold them, and the permits are counted at now + p_hold_ms, the latest moment one of them can
-- be spent. Every request is then counted at or after the moment it was served, so any rolling
-- window holds no more requests than the counts inside it: still never more than p_limit. The
-- price is that a leased permit keeps its place in the window up to p_hold_ms longer.
--
-- Permits a process did not spend come back with its next call (p_return of the hit counted
-- at p_return_at); if they never do, they only leave the window late, which is the safe side.
CREATE FUNCTION wl_rate_take(p_org bigint, p_bucket text, p_limit integer, p_window_ms integer,
                             p_want integer, p_hold_ms integer, p_return_at timestamptz,
                             p_return integer)
RETURNS TABLE (granted integer, used integer, reset_ms bigint, counted_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_hits timestamptz[];
    v_counts integer[];
    v_now timestamptz;
    v_window interval := make_interval(secs => p_window_ms / 1000.0);
    v_used integer;
    v_oldest timestamptz;
BEGIN
    LOOP
        SELECT r.hits, r.counts INTO v_hits, v_counts
          FROM rate_limits r WHERE r.org_id = p_org AND r.bucket = p_bucket FOR UPDATE;
        EXIT WHEN FOUND;
        INSERT INTO rate_limits (org_id, bucket) VALUES (p_org, p_bucket)
            ON CONFLICT ON CONSTRAINT rate_limits_pkey DO NOTHING;
    END LOOP;
    -- The clock is read once the row is locked, so decisions are ordered like the clock.
    v_now := clock_timestamp();
    SELECT coalesce(array_agg(live.h ORDER BY live.h), '{}'),
           coalesce(array_agg(live.c ORDER BY live.h), '{}'),
           coalesce(sum(live.c), 0), min(live.h)
      INTO v_hits, v_counts, v_used, v_oldest
      FROM (SELECT u.h, u.c - CASE WHEN u.h = p_return_at
                                   THEN least(u.c, greatest(p_return, 0)) ELSE 0 END AS c
              FROM unnest(v_hits, coalesce(v_counts, array_fill(1, ARRAY[cardinality(v_hits)])))
                   AS u(h, c)
             WHERE u.h > v_now - v_window) AS live
     WHERE live.c > 0;
    granted := greatest(0, least(p_want, p_limit - v_used));
    counted_at := v_now + make_interval(secs => greatest(p_hold_ms, 0) / 1000.0);
    IF granted > 0 THEN
        v_hits := v_hits || counted_at;
        v_counts := v_counts || granted;
        v_used := v_used + granted;
        v_oldest := least(v_oldest, counted_at);
    END IF;
    UPDATE rate_limits r SET hits = v_hits, counts = v_counts
     WHERE r.org_id = p_org AND r.bucket = p_bucket;
    used := v_used;
    -- Until the oldest counted request leaves the window (a request is then accepted again).
    reset_ms := CASE WHEN v_oldest IS NULL THEN 0
                ELSE greatest(0, ceil(extract(epoch FROM (v_oldest + v_window - v_now)) * 1000))
                END;
    RETURN NEXT;
END;
$$;

-- The key check and the count of one request, in one round trip, on the same accounting as
-- the leases.
CREATE OR REPLACE FUNCTION wl_authorize(p_prefix text, p_token_hash bytea, p_bucket text,
                                        p_limit integer, p_window_ms integer)
RETURNS TABLE (org_id bigint, slug text, scopes text, accepted boolean, used integer,
               reset_ms bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_org bigint;
    v_slug text;
    v_scopes text;
    v_granted integer;
BEGIN
    SELECT k.org_id, o.slug, array_to_string(k.scopes, ',')
      INTO v_org, v_slug, v_scopes
      FROM api_keys k JOIN organizations o ON o.org_id = k.org_id
     WHERE k.prefix = p_prefix AND k.token_hash = p_token_hash AND k.revoked_at IS NULL;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    org_id := v_org;
    slug := v_slug;
    scopes := v_scopes;
    IF p_bucket IS NULL THEN -- authentication only, nothing counted
        accepted := true;
        used := 0;
        reset_ms := 0;
        RETURN NEXT;
        RETURN;
    END IF;
    SELECT t.granted, t.used, t.reset_ms INTO v_granted, used, reset_ms
      FROM wl_rate_take(v_org, p_bucket, p_limit, p_window_ms, 1, 0, NULL, 0) AS t;
    accepted := v_granted = 1;
    RETURN NEXT;
END;
$$;

DROP FUNCTION wl__rate_accept(timestamptz[], timestamptz, interval);

-- A process that keeps verified keys in memory forgets them when this announcement arrives.
-- Keys are never changed otherwise (only revoked), so UPDATE and DELETE are what matter; an
-- organization's slug travels with its keys' answers, so its changes are announced too.
CREATE FUNCTION wl__keys_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('wl_keys_changed', CASE TG_TABLE_NAME WHEN 'api_keys'
                                         THEN coalesce(NEW.prefix, OLD.prefix) ELSE '*' END);
    RETURN NULL;
END;
$$;

CREATE TRIGGER api_keys_changed AFTER UPDATE OR DELETE ON api_keys
    FOR EACH ROW EXECUTE FUNCTION wl__keys_changed();
CREATE TRIGGER organizations_changed AFTER UPDATE OF slug OR DELETE ON organizations
    FOR EACH ROW EXECUTE FUNCTION wl__keys_changed();
