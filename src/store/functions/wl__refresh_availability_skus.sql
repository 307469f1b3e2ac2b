-- Recomputes the export rows (stock_availability) of the SKUs in p_skus (duplicates allowed)
-- and returns how many changed: the refresh of a write that touches a few SKUs (a bin's
-- staging flag, a small file, an InventoryService call), whose cost follows the number of
-- SKUs, not the catalogue's. Each SKU's stock records, reservations and rack assignments are
-- found through keys that lead with (org_id, sku), the array's length known to the planner;
-- no temporary table is made (each costs catalogue rows and a file). The rules are those of
-- wl_refresh_availability_from, every part computed. The caller holds the organization's
-- inventory lock (pg_advisory_xact_lock(2002872684, org)) to its commit.
--
-- Only rows whose values change are written; then the export version moves (wl__export_bump)
-- and each changed SKU gets one export_changes row under it, for the delta export.
CREATE OR REPLACE FUNCTION wl__refresh_availability_skus(p_org bigint, p_skus text[])
RETURNS bigint
-- Lookups by (organization, SKU): no plan of it scans a table, whatever the statistics say
-- and whatever the caller's session allows (an import's batch does).
LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE
    v_skus text[];
    v_qty bigint[];
    v_location text[];
    v_included boolean[];
    v_existed boolean[];
    v_version bigint;
BEGIN
    SELECT array_agg(c.sku ORDER BY c.sku), array_agg(c.qty ORDER BY c.sku),
           array_agg(c.location ORDER BY c.sku), array_agg(c.included ORDER BY c.sku),
           array_agg(c.existed ORDER BY c.sku)
      INTO v_skus, v_qty, v_location, v_included, v_existed
      FROM (
        SELECT a.sku,
               greatest(0, coalesce(o.on_hand, 0) - coalesce(r.reserved, 0)) AS qty,
               p.location,
               o.sku IS NOT NULL OR p.sku IS NOT NULL AS included,
               sa.sku IS NOT NULL AS existed, sa.qty AS old_qty, sa.location AS old_location
          FROM (SELECT DISTINCT s COLLATE "C" AS sku FROM unnest(p_skus) AS s) a
          LEFT JOIN stock_availability sa ON sa.org_id = p_org AND sa.sku = a.sku
          LEFT JOIN (
            SELECT st.sku, sum(st.on_hand) AS on_hand
              FROM stock st
              JOIN warehouses w ON w.org_id = st.org_id AND w.code = st.warehouse
                               AND w.kind = 'own'
             WHERE st.org_id = p_org AND st.sku = ANY (p_skus)
             GROUP BY st.sku
          ) o ON o.sku = a.sku
          LEFT JOIN (
            SELECT rs.sku, sum(rs.quantity) AS reserved
              FROM reservations rs
              JOIN warehouses w ON w.org_id = rs.org_id AND w.code = rs.warehouse
                               AND w.kind = 'own'
             WHERE rs.org_id = p_org AND rs.sku = ANY (p_skus) AND rs.status = 'active'
             GROUP BY rs.sku
          ) r ON r.sku = a.sku
          LEFT JOIN (
            SELECT DISTINCT ON (ls.sku) ls.sku, ls.location
              FROM location_stock ls
              JOIN warehouses w ON w.org_id = ls.org_id AND w.code = ls.warehouse
                               AND w.kind = 'own'
              JOIN locations l ON l.org_id = ls.org_id AND l.warehouse = ls.warehouse
                              AND l.code = ls.location AND NOT l.staging
             WHERE ls.org_id = p_org AND ls.sku = ANY (p_skus)
             ORDER BY ls.sku, ls.quantity DESC, l.sort_key, ls.location, ls.warehouse
          ) p ON p.sku = a.sku
      ) c
     WHERE c.included <> c.existed
        OR (c.included AND (c.old_qty, c.old_location) IS DISTINCT FROM (c.qty, c.location));

    IF v_skus IS NULL THEN
        RETURN 0;
    END IF;
    -- Only refreshers write stock_availability, one at a time per organization (the lock the
    -- caller holds): the plain INSERT cannot meet a concurrent insert of the same SKU.
    DELETE FROM stock_availability sa
     USING unnest(v_skus, v_included) AS c(sku, included)
     WHERE sa.org_id = p_org AND sa.sku = c.sku COLLATE "C" AND NOT c.included;
    UPDATE stock_availability sa
       SET qty = c.qty, location = c.location
      FROM unnest(v_skus, v_qty, v_location, v_included, v_existed)
           AS c(sku, qty, location, included, existed)
     WHERE sa.org_id = p_org AND sa.sku = c.sku COLLATE "C" AND c.included AND c.existed;
    INSERT INTO stock_availability (org_id, sku, qty, location)
    SELECT p_org, c.sku, c.qty, c.location
      FROM unnest(v_skus, v_qty, v_location, v_included, v_existed)
           AS c(sku, qty, location, included, existed)
     WHERE c.included AND NOT c.existed
     ORDER BY c.sku COLLATE "C";
    v_version := wl__export_bump(p_org, false);
    INSERT INTO export_changes (org_id, version, sku)
    SELECT p_org, v_version, s FROM unnest(v_skus) AS s;
    RETURN cardinality(v_skus);
END;
$$;
