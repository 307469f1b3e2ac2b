-- Counts up to p_want requests against the bucket, as many as fit, and says how many: the
-- rate-limit ask of a process outside a request (the refill threads' leases). It is an
-- admission of one ask, so that the rate-limit decision is written once, in wl_admit (which
-- explains leases and returns).
CREATE OR REPLACE FUNCTION wl_rate_take(p_org bigint, p_bucket text, p_limit integer,
                                        p_window_ms integer, p_want integer, p_hold_ms integer,
                                        p_return_at timestamptz, p_return integer)
RETURNS TABLE (granted integer, used integer, reset_ms bigint, counted_at timestamptz)
LANGUAGE sql AS $$
    SELECT a.granted, a.used, a.reset_ms, a.counted_at
      FROM wl_admit(p_window_ms, ARRAY[NULL::text], ARRAY[NULL::bytea], ARRAY[p_org], ARRAY[''],
                    ARRAY[p_bucket], ARRAY[p_limit], ARRAY[p_want], ARRAY[p_hold_ms],
                    ARRAY[p_return_at], ARRAY[p_return], ARRAY['take'], ARRAY[NULL::text],
                    ARRAY[NULL::text], ARRAY[0], '{}') AS a
$$;

