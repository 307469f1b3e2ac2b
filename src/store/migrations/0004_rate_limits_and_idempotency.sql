-- Rate limits (CONTRACT section 8) and Idempotency-Key (CONTRACT section 5).

-- Accepted requests of the last window per organization and bucket, oldest first. A row
-- holds at most `limit` timestamps, so it stays small; its row lock serialises the decision
-- across every walklistd process that shares the database.
CREATE TABLE rate_limits (
    org_id bigint NOT NULL REFERENCES organizations (org_id),
    bucket text COLLATE "C" NOT NULL,
    hits   timestamptz[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (org_id, bucket)
);

-- One round trip per request: checks the key (by prefix and SHA-256 of the whole token) and,
-- when it is valid, counts the request against the bucket unless the bucket is full.
-- No row back: the key is unknown, wrong or revoked, and nothing was counted.
CREATE FUNCTION wl_authorize(p_prefix text, p_token_hash bytea, p_bucket text, p_limit integer,
                             p_window_ms integer)
RETURNS TABLE (org_id bigint, slug text, scopes text, accepted boolean, used integer,
               reset_ms bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_org bigint;
    v_slug text;
    v_scopes text;
    v_hits timestamptz[];
    v_now timestamptz;
    v_window interval := make_interval(secs => p_window_ms / 1000.0);
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

    INSERT INTO rate_limits AS r (org_id, bucket) VALUES (v_org, p_bucket)
        ON CONFLICT ON CONSTRAINT rate_limits_pkey DO NOTHING;
    SELECT r.hits INTO v_hits FROM rate_limits r
     WHERE r.org_id = v_org AND r.bucket = p_bucket FOR UPDATE;
    -- Read the clock after the lock, so that decisions are ordered like the clock.
    v_now := clock_timestamp();
    v_hits := ARRAY(SELECT h FROM unnest(v_hits) AS h WHERE h > v_now - v_window ORDER BY h);
    accepted := coalesce(array_length(v_hits, 1), 0) < p_limit;
    IF accepted THEN
        v_hits := v_hits || v_now;
    END IF;
    UPDATE rate_limits r SET hits = v_hits WHERE r.org_id = v_org AND r.bucket = p_bucket;

    used := coalesce(array_length(v_hits, 1), 0);
    -- Until the oldest counted request leaves the window (a request is then accepted again).
    reset_ms := CASE WHEN used = 0 THEN 0
                ELSE greatest(0, ceil(extract(epoch FROM (v_hits[1] + v_window - v_now)) * 1000))
                END;
    RETURN NEXT;
END;
$$;

-- Idempotency-Key: the first list created with a key, and a hash of what was asked
-- (name and normalised codes), for 24 hours.
CREATE TABLE idempotency_keys (
    org_id       bigint NOT NULL REFERENCES organizations (org_id),
    key          text COLLATE "C" NOT NULL,
    request_hash bytea NOT NULL,
    list_id      text COLLATE "C" NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, key),
    -- The key is claimed before its list is written, in the same transaction.
    FOREIGN KEY (org_id, list_id) REFERENCES locate_lists (org_id, id) DEFERRABLE INITIALLY DEFERRED
);
CREATE INDEX idempotency_keys_age ON idempotency_keys (created_at);
