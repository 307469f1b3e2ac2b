-- Recomputes the export rows (stock_availability) of the SKUs in p_skus, a table or view with a
-- text column "sku" (duplicates allowed), and returns how many rows changed. The rules of
-- the stock export: qty = max(0, on hand in own warehouses - active reservations in own
-- warehouses); location = the non-staging own location holding the most, ties to the smallest
-- code in natural bin order; a SKU is exported when it has a stock record or a non-staging
-- location assignment in an own warehouse. Both overloads are here: the two-argument form
-- computes everything.
--
-- Writers of one organization refresh one at a time: the transaction-scoped advisory lock is
-- taken first, and the refresh runs as statements after it, so under READ COMMITTED it sees
-- every writer that committed before (no lost update between concurrent imports). Only rows
-- whose values change are written, and only then does the export version move
-- (wl__export_bump), with the changed SKUs recorded for the delta export (export_changes).
--
-- Up to 5,000 affected rows (a bin's staging flag, a small file, an InventoryService call) the
-- SKUs go to wl__refresh_availability_skus, which finds each one's rows by key: the cost
-- follows the SKUs, not the catalogue. At catalogue scale (BENCHMARKS.md, "Generate and
-- import"; a file of a 1,000,000-SKU catalogue touches most of the organization's export rows):
-- * p_parts says what the writing batch can change, and only that is computed: 'qty' (stock,
--   reservations: on hand and reserved), 'location' (rack assignments: the primary location),
--   or 'all' (warehouse kinds, staging flags, anything else). A part that is not computed is
--   taken from the SKU's current export row, which every writer keeps current in its own
--   transaction (the point of this table): a SKU without a row has no stock record in an own
--   warehouse (so 0 on hand) and no non-staging own location (so no location). Stock and rack
--   assignments are never deleted and a stock or rack batch cannot make a location staging, so
--   such a batch can add SKUs to the export but never remove one.
-- * When the affected rows are at least half as many as the organization's export rows (its
--   first import of stock, a whole file again), the computation covers the whole
--   organization, driven by the SKUs that have an export row or a computed part (every other
--   SKU neither is nor becomes exported), without making the affected SKUs distinct.
-- * When at least half of the organization's export rows change (or it had none), they are
--   replaced: the organization's rows deleted and the new ones inserted in SKU order, one
--   sequential pass over the heap and the key, instead of an UPDATE per row (each UPDATE writes
--   a new heap tuple and a new entry in the covering primary key, so nothing is HOT). Inside
--   the writer's transaction, so readers see the old rows until the commit, then the new ones.
--   The new heap is in SKU order, which suits the export's index-only scan; the replaced rows
--   and their index entries are dead at the commit and left to (auto)vacuum, which also sets
--   the visibility map the index-only scan needs (VACUUM cannot run in a transaction).
-- * Otherwise only the rows whose values change are written.
-- * When the refresh covers the whole organization and it has no export rows yet (its first
--   import of stock or rack assignments), the rows are computed from the stock and rack rows
--   alone (not driven by every product and joined to the empty export) and inserted straight,
--   in SKU order, without the temporary table, the count of changed rows and a second pass.
-- For large sets the statements are planned with hash joins only: inside the writing
-- transaction the tables' statistics still describe them before the batch (often empty), and
-- nested loops planned on such estimates go quadratic.
CREATE OR REPLACE FUNCTION wl_refresh_availability_from(p_org bigint, p_skus regclass, p_parts text)
RETURNS bigint
LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE
    v_existing bigint;
    v_affected bigint;
    v_whole boolean;
    v_changed bigint := 0;
    v_settings text[] := ARRAY[current_setting('enable_nestloop'), current_setting('work_mem'),
                               current_setting('enable_indexscan'),
                               current_setting('enable_indexonlyscan'),
                               current_setting('enable_hashagg')];
    v_qty text;
    v_location text;
    v_included text;
    v_sku text;
    v_rows text;
    v_parts text;
    v_computed text;
    v_version bigint;
    v_reset boolean := false;
    v_sku_list text[];
BEGIN
    IF p_parts NOT IN ('all', 'qty', 'location') THEN
        RAISE EXCEPTION 'wl_refresh_availability_from: unknown parts %', p_parts;
    END IF;
    PERFORM pg_advisory_xact_lock(2002872684, (p_org % 2147483647)::integer);
    -- Counted in heap order: p_skus may be a view of rows this transaction just wrote (a first
    -- import), which the visibility map does not cover, and an index-only scan would visit
    -- each one's heap page in the index's order (1.2 s for 2,000,000 rack assignments): with
    -- sequential scans off (the function's setting), a bitmap scan of the key.
    PERFORM set_config('enable_indexscan', 'off', true);
    PERFORM set_config('enable_indexonlyscan', 'off', true);
    EXECUTE format('SELECT count(*) FROM %s', p_skus) INTO v_affected;
    PERFORM set_config('enable_indexscan', v_settings[3], true);
    PERFORM set_config('enable_indexonlyscan', v_settings[4], true);
    IF v_affected <= 5000 THEN
        -- A few SKUs: each found by its keys (wl__refresh_availability_skus), every part
        -- computed, which costs the same per SKU as taking a part from its export row.
        EXECUTE format('SELECT array_agg(sku) FROM %s', p_skus) INTO v_sku_list;
        RETURN coalesce(wl__refresh_availability_skus(p_org, v_sku_list), 0);
    END IF;
    -- Only compared with twice the affected rows (or the changed ones, fewer), so counted no
    -- further: the rows of a freshly replaced organization are not all-visible yet, and each
    -- costs a heap visit.
    SELECT count(*) INTO v_existing
      FROM (SELECT 1 FROM stock_availability WHERE org_id = p_org LIMIT 2 * v_affected + 1) e;
    v_whole := v_affected * 2 >= v_existing;
    -- Inside the writing transaction the tables' statistics may still describe them before
    -- the batch (often empty): nested loops planned on that go quadratic. The sorts and hashes
    -- of a catalogue (about 200 MB at 1,000,000 SKUs) stay in memory.
    PERFORM set_config('enable_nestloop', 'off', true);
    PERFORM set_config('work_mem', '256MB', true);

    IF v_whole THEN
        -- Driven by the SKUs that have an export row or a computed part: every other SKU of
        -- the organization neither is nor becomes exported. Reading its products instead
        -- (a million SKUs, each probed into every part) cost a third more than this chain of
        -- full joins (BENCHMARKS.md, "The import and its floor").
        v_sku := 'coalesce(sa.sku, o.sku, p.sku)';
        v_rows := '(SELECT sku, qty, location FROM stock_availability WHERE org_id = $1) sa'
                  ' FULL JOIN on_hand o ON o.sku = sa.sku'
                  ' FULL JOIN primary_location p ON p.sku = coalesce(sa.sku, o.sku)'
                  ' LEFT JOIN reserved r ON r.sku = coalesce(sa.sku, o.sku, p.sku)';
        -- Every row of the organization is read, in heap order: bitmap scans of each table's
        -- key (sequential scans are off). Not index scans: the statistics do not know an
        -- organization whose rows were just written (estimated at 1 row, its million export
        -- rows were read as the hash side of a join through the index, one heap visit each,
        -- as they are not all-visible yet).
        PERFORM set_config('enable_indexscan', 'off', true);
        PERFORM set_config('enable_indexonlyscan', 'off', true);
    ELSE
        EXECUTE format('CREATE TEMP TABLE wl_availability_skus ON COMMIT DROP AS'
                       ' SELECT DISTINCT sku COLLATE "C" AS sku FROM %s', p_skus);
        ANALYZE pg_temp.wl_availability_skus;
        v_sku := 'a.sku';
        v_rows := 'pg_temp.wl_availability_skus a'
                  ' LEFT JOIN stock_availability sa ON sa.org_id = $1 AND sa.sku = a.sku'
                  ' LEFT JOIN on_hand o ON o.sku = a.sku'
                  ' LEFT JOIN reserved r ON r.sku = a.sku'
                  ' LEFT JOIN primary_location p ON p.sku = a.sku';
    END IF;

    v_qty := CASE WHEN p_parts = 'location' THEN 'coalesce(sa.qty, 0)'
                  ELSE 'greatest(0, coalesce(o.on_hand, 0) - coalesce(r.reserved, 0))' END;
    v_location := CASE WHEN p_parts = 'qty' THEN 'sa.location' ELSE 'p.location' END;
    v_included := CASE p_parts WHEN 'qty' THEN 'sa.sku IS NOT NULL OR o.sku IS NOT NULL'
                               WHEN 'location' THEN 'sa.sku IS NOT NULL OR p.sku IS NOT NULL'
                               ELSE 'o.sku IS NOT NULL OR p.sku IS NOT NULL' END;

    -- Each part joins the SKUs it is computed for only when they are a subset (not v_whole).
    v_parts := format($sql$
    WITH on_hand AS (
        SELECT st.sku, sum(st.on_hand) AS on_hand
        FROM stock st %1$s
        JOIN warehouses w ON w.org_id = st.org_id AND w.code = st.warehouse AND w.kind = 'own'
        WHERE st.org_id = $1 AND %2$L <> 'location'
        GROUP BY st.sku
    ), reserved AS (
        SELECT r.sku, sum(r.quantity) AS reserved
        FROM reservations r %3$s
        JOIN warehouses w ON w.org_id = r.org_id AND w.code = r.warehouse AND w.kind = 'own'
        WHERE r.org_id = $1 AND r.status = 'active' AND %2$L <> 'location'
        GROUP BY r.sku
    ), primary_location AS (
        SELECT DISTINCT ON (ls.sku) ls.sku, ls.location
        FROM location_stock ls %4$s
        JOIN warehouses w ON w.org_id = ls.org_id AND w.code = ls.warehouse AND w.kind = 'own'
        JOIN locations l ON l.org_id = ls.org_id AND l.warehouse = ls.warehouse
                        AND l.code = ls.location AND NOT l.staging
        WHERE ls.org_id = $1 AND %2$L <> 'qty'
        ORDER BY ls.sku, ls.quantity DESC, l.sort_key, ls.location, ls.warehouse
    )
    $sql$,
    CASE WHEN v_whole THEN '' ELSE 'JOIN pg_temp.wl_availability_skus sk ON sk.sku = st.sku' END,
    p_parts,
    CASE WHEN v_whole THEN '' ELSE 'JOIN pg_temp.wl_availability_skus sk ON sk.sku = r.sku' END,
    CASE WHEN v_whole THEN '' ELSE 'JOIN pg_temp.wl_availability_skus sk ON sk.sku = ls.sku' END);

    v_computed := v_parts || format($sql$, computed AS (
        SELECT %1$s AS sku, %2$s AS qty, %3$s AS location, (%4$s) AS included,
               sa.sku IS NOT NULL AS existed, sa.qty AS old_qty, sa.location AS old_location
          FROM %5$s
    )
    SELECT sku, qty, location, included, existed,
           included <> existed
           OR (included AND (old_qty, old_location) IS DISTINCT FROM (qty, location)) AS changed
      FROM computed
    $sql$, v_sku, v_qty, v_location, v_included, v_rows);

    IF v_whole AND v_existing = 0 THEN
        -- The organization's first export rows: every row is new, so they go straight into the
        -- table in SKU order, without the intermediate table and the comparison. The SKUs
        -- included are those with stock or a location (rules of 0001), so the rows come from
        -- those two parts; a part not computed (p_parts) is empty, and its value is what a SKU
        -- without an export row has (0 on hand, no location). Aggregated by sorting, not
        -- hashing: the rows are inserted in SKU order anyway, and a file's rows usually come
        -- in it already (a hash of 925,000 SKUs and a sort of its output cost 2.3 s of the
        -- first 1,000,000-SKU stock file, the sort and the grouping 0.9 s).
        PERFORM set_config('enable_hashagg', 'off', true);
        EXECUTE 'INSERT INTO stock_availability (org_id, sku, qty, location) ' || v_parts
                || ' SELECT $1, coalesce(o.sku, p.sku),'
                   ' greatest(0, coalesce(o.on_hand, 0) - coalesce(r.reserved, 0)), p.location'
                   ' FROM on_hand o FULL JOIN primary_location p ON p.sku = o.sku'
                   ' LEFT JOIN reserved r ON r.sku = coalesce(o.sku, p.sku)'
                   ' ORDER BY 2' USING p_org;
        GET DIAGNOSTICS v_changed = ROW_COUNT;
        PERFORM set_config('enable_hashagg', v_settings[5], true);
        v_reset := true;
        PERFORM set_config('enable_indexscan', v_settings[3], true);
        PERFORM set_config('enable_indexonlyscan', v_settings[4], true);
        IF v_changed > 0 THEN
            ANALYZE stock_availability;
        END IF;
    ELSE
        EXECUTE 'CREATE TEMP TABLE wl_availability_computed ON COMMIT DROP AS ' || v_computed
            USING p_org;

        SELECT count(*) INTO v_changed FROM pg_temp.wl_availability_computed WHERE changed;
        PERFORM set_config('enable_indexscan', v_settings[3], true);
        PERFORM set_config('enable_indexonlyscan', v_settings[4], true);

        IF v_changed = 0 THEN
            NULL;
        ELSIF v_whole AND v_changed > 5000 AND v_changed * 2 >= v_existing THEN
            -- Only refreshers write stock_availability, one at a time per organization (the lock
            -- above): the plain INSERT cannot meet a concurrent insert of the same SKU.
            DELETE FROM stock_availability WHERE org_id = p_org;
            INSERT INTO stock_availability (org_id, sku, qty, location)
            SELECT p_org, c.sku, c.qty, c.location
              FROM pg_temp.wl_availability_computed c
             WHERE c.included
             ORDER BY c.sku;
            v_reset := true;
            -- The next batch of the organization (usually the next file of the same catalogue)
            -- plans its refresh on these rows, not on statistics that predate them.
            ANALYZE stock_availability;
        ELSE
            IF v_changed > 5000 THEN
                ANALYZE pg_temp.wl_availability_computed;
            END IF;
            DELETE FROM stock_availability sa
             USING pg_temp.wl_availability_computed c
             WHERE sa.org_id = p_org AND sa.sku = c.sku AND c.changed AND NOT c.included;
            UPDATE stock_availability sa
               SET qty = c.qty, location = c.location
              FROM pg_temp.wl_availability_computed c
             WHERE sa.org_id = p_org AND sa.sku = c.sku AND c.changed AND c.included AND c.existed;
            INSERT INTO stock_availability (org_id, sku, qty, location)
            SELECT p_org, c.sku, c.qty, c.location
              FROM pg_temp.wl_availability_computed c
             WHERE c.changed AND c.included AND NOT c.existed
             ORDER BY c.sku;
            -- Recorded for the delta export; the whole replacements above are not (see
            -- wl__export_bump): they cost a row per SKU of the catalogue.
            v_version := wl__export_bump(p_org, false);
            INSERT INTO export_changes (org_id, version, sku)
            SELECT p_org, v_version, c.sku
              FROM pg_temp.wl_availability_computed c
             WHERE c.changed
             ORDER BY c.sku;
        END IF;

        DROP TABLE pg_temp.wl_availability_computed;
    END IF;

    PERFORM set_config('enable_nestloop', v_settings[1], true);
    PERFORM set_config('work_mem', v_settings[2], true);
    DROP TABLE IF EXISTS pg_temp.wl_availability_skus;
    IF v_changed > 0 AND v_reset THEN
        PERFORM wl__export_bump(p_org, true);
    END IF;
    RETURN v_changed;
END;
$$;

-- The two-argument form: every part computed.
CREATE OR REPLACE FUNCTION wl_refresh_availability_from(p_org bigint, p_skus regclass)
RETURNS bigint
LANGUAGE sql AS $$
    SELECT wl_refresh_availability_from(p_org, p_skus, 'all')
$$;
