-- An organization's exported values changed: a new export version (export_versions, the
-- stock export's ETag and the delta export's cursor), and an announcement on channel
-- wl_export_changed that tells every walklistd that listens to drop its cached export of the
-- organization (delivered at commit, never for a rollback). Called by every refresh that
-- changed a row, under the organization's inventory lock (pg_advisory_xact_lock(2002872684,
-- org)), which every writer of stock_availability holds until its commit: the next writer
-- gets the lock only once this transaction is visible, so versions grow in commit order.
--
-- The caller records which SKUs changed in export_changes under the returned version; with
-- p_reset (a write that replaced most of the export) it records none, and the history starts
-- again here: older cursors answer 410 and their clients export in full, which costs them
-- what the write's changes would have. Changes older than walklist.export_history_hours
-- (a setting, default 24; ALTER DATABASE .. SET walklist.export_history_hours = '48') are
-- deleted here, one index probe when there are none: an idle organization keeps its last.
--
-- The change is also a stock.changed webhook event (wl__webhook_enqueue: one index probe when
-- the organization has no endpoint for it), in this transaction, holding the export versions
-- before and after it (turned into cursors at delivery) and whether the history restarted.
-- Under the inventory lock, so an organization's stock.changed events chain: each one's
-- "from" is the previous one's "to".
CREATE OR REPLACE FUNCTION wl__export_bump(p_org bigint, p_reset boolean) RETURNS bigint
-- Key lookups by organization: no plan of it scans a table, whatever the statistics say and
-- whatever the caller's session allows (an import's batch does).
LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE
    v_version bigint;
    v_setting text := current_setting('walklist.export_history_hours', true);
    v_hours numeric := 24;
    v_cutoff bigint;
    v_pruned bigint;
    v_before bigint;
    v_at timestamptz := clock_timestamp();
BEGIN
    SELECT version INTO v_before FROM export_versions WHERE org_id = p_org;
    INSERT INTO export_versions AS v (org_id, version, changed_at)
    VALUES (p_org, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint, clock_timestamp())
    ON CONFLICT (org_id) DO UPDATE
        SET version = greatest(v.version + 1, excluded.version),
            changed_at = excluded.changed_at
    RETURNING v.version INTO v_version;
    IF p_reset THEN
        DELETE FROM export_changes WHERE org_id = p_org;
        UPDATE export_versions SET history_from = v_version WHERE org_id = p_org;
    ELSE
        -- A version is the microsecond it was made at (or just after the previous one), so
        -- versions below the cutoff were made before it. A bad setting keeps the default.
        IF v_setting ~ '^\s*[0-9]{1,6}(\.[0-9]*)?\s*$' THEN
            v_hours := v_setting::numeric;
        END IF;
        v_cutoff := ((extract(epoch FROM clock_timestamp()) - v_hours * 3600) * 1000000)::bigint;
        IF EXISTS (SELECT 1 FROM export_changes WHERE org_id = p_org AND version <= v_cutoff) THEN
            WITH pruned AS (
                DELETE FROM export_changes WHERE org_id = p_org AND version <= v_cutoff
                RETURNING version
            )
            SELECT max(version) INTO v_pruned FROM pruned;
            UPDATE export_versions SET history_from = greatest(history_from, v_pruned)
             WHERE org_id = p_org;
        END IF;
    END IF;
    PERFORM wl__webhook_enqueue(p_org, 'stock.changed',
        jsonb_build_object('from', coalesce(v_before, 0), 'to', v_version, 'reset', p_reset), v_at);
    PERFORM pg_notify('wl_export_changed', p_org::text);
    RETURN v_version;
END;
$$;
