-- A data version per organization for the stock export's ETag (CONTRACT section 4): it moves
-- exactly when a stock_availability row of the organization changes, in the same transaction,
-- so a conditional export is answered from this one row without reading the export itself.
--
-- version only grows: each change sets it to greatest(version + 1, microseconds since the
-- epoch), so the ETag "<org_id>-<version>" does not come back after the database is restored
-- from a backup or rebuilt, which a plain counter starting at 1 would.
CREATE TABLE export_versions (
    org_id     bigint PRIMARY KEY REFERENCES organizations (org_id),
    version    bigint NOT NULL,
    changed_at timestamptz
);

-- Organizations that already have an export get a version now, so none is without one.
INSERT INTO export_versions (org_id, version, changed_at)
SELECT DISTINCT org_id, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint, clock_timestamp()
FROM stock_availability;

-- As in 0001 (same rules, same lock taken first), and now counting the rows it really changes
-- (the upsert skips rows whose values stay the same) to move the organization's version.
CREATE OR REPLACE FUNCTION wl_refresh_availability(p_org bigint, p_skus text[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_changed bigint;
BEGIN
    PERFORM pg_advisory_xact_lock(2002872684, (p_org % 2147483647)::integer);
    WITH affected AS (
        SELECT DISTINCT s COLLATE "C" AS sku FROM unnest(p_skus) AS s
    ), on_hand AS (
        SELECT st.sku, sum(st.on_hand) AS on_hand
        FROM stock st
        JOIN warehouses w ON w.org_id = st.org_id AND w.code = st.warehouse AND w.kind = 'own'
        WHERE st.org_id = p_org AND st.sku IN (SELECT sku FROM affected)
        GROUP BY st.sku
    ), reserved AS (
        SELECT r.sku, sum(r.quantity) AS reserved
        FROM reservations r
        JOIN warehouses w ON w.org_id = r.org_id AND w.code = r.warehouse AND w.kind = 'own'
        WHERE r.org_id = p_org AND r.status = 'active' AND r.sku IN (SELECT sku FROM affected)
        GROUP BY r.sku
    ), primary_location AS (
        SELECT DISTINCT ON (ls.sku) ls.sku, ls.location
        FROM location_stock ls
        JOIN warehouses w ON w.org_id = ls.org_id AND w.code = ls.warehouse AND w.kind = 'own'
        JOIN locations l ON l.org_id = ls.org_id AND l.warehouse = ls.warehouse
                        AND l.code = ls.location AND NOT l.staging
        WHERE ls.org_id = p_org AND ls.sku IN (SELECT sku FROM affected)
        ORDER BY ls.sku, ls.quantity DESC, l.sort_key, ls.location, ls.warehouse
    ), computed AS (
        SELECT a.sku,
               greatest(0, coalesce(o.on_hand, 0) - coalesce(r.reserved, 0)) AS qty,
               p.location,
               (o.sku IS NOT NULL OR p.sku IS NOT NULL) AS included
        FROM affected a
        LEFT JOIN on_hand o ON o.sku = a.sku
        LEFT JOIN reserved r ON r.sku = a.sku
        LEFT JOIN primary_location p ON p.sku = a.sku
    ), removed AS (
        DELETE FROM stock_availability sa
        USING computed c
        WHERE sa.org_id = p_org AND sa.sku = c.sku AND NOT c.included
        RETURNING 1
    ), upserted AS (
        -- RETURNING yields inserted and updated rows only, not those the WHERE skipped.
        INSERT INTO stock_availability AS sa (org_id, sku, qty, location)
        SELECT p_org, c.sku, c.qty, c.location FROM computed c WHERE c.included
        ON CONFLICT (org_id, sku) DO UPDATE
            SET qty = excluded.qty, location = excluded.location
            WHERE (sa.qty, sa.location) IS DISTINCT FROM (excluded.qty, excluded.location)
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM removed) + (SELECT count(*) FROM upserted) INTO v_changed;

    IF v_changed > 0 THEN
        INSERT INTO export_versions AS v (org_id, version, changed_at)
        VALUES (p_org, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint, clock_timestamp())
        ON CONFLICT (org_id) DO UPDATE
            SET version = greatest(v.version + 1, excluded.version),
                changed_at = excluded.changed_at;
    END IF;
END;
$$;
