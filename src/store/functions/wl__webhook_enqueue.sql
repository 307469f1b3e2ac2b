-- Writes an event of an organization to the webhook outbox, in the caller's transaction (the
-- transaction of the change it announces), with one pending delivery per enabled endpoint of
-- the organization subscribed to p_type; nothing at all when there is none, so organizations
-- without webhooks pay one index probe. p_at is the event's time, computed by the caller
-- (C passes it as a parameter: Citus refuses volatile functions in INSERTs). The id, the
-- webhook-id receivers deduplicate by, is random. Returns the event's seq, or NULL.
CREATE OR REPLACE FUNCTION wl__webhook_enqueue(p_org bigint, p_type text, p_data jsonb,
                                               p_at timestamptz) RETURNS bigint
-- Key lookups by organization: no plan of it scans a table, whatever the statistics say and
-- whatever the caller's session allows (an import's batch does).
LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE
    v_seq bigint;
    v_id text;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM webhook_endpoints
                    WHERE org_id = p_org AND disabled_at IS NULL AND p_type = ANY (events)) THEN
        RETURN NULL;
    END IF;
    -- The counter's row lock is held to the commit: seqs of an organization commit in order.
    INSERT INTO webhook_sequences AS s (org_id, seq) VALUES (p_org, 1)
        ON CONFLICT (org_id) DO UPDATE SET seq = s.seq + 1
        RETURNING s.seq INTO v_seq;
    v_id := 'msg_' || replace(gen_random_uuid()::text, '-', '');
    INSERT INTO webhook_events (org_id, seq, id, type, created_at, data)
        VALUES (p_org, v_seq, v_id, p_type, p_at, p_data);
    -- The target's org_id from the source's: Citus pushes the INSERT .. SELECT down to the
    -- organization's shards.
    INSERT INTO webhook_deliveries (org_id, endpoint_id, seq, next_attempt_at)
        SELECT e.org_id, e.id, v_seq, p_at FROM webhook_endpoints e
         WHERE e.org_id = p_org AND e.disabled_at IS NULL AND p_type = ANY (e.events);
    RETURN v_seq;
END;
$$;
