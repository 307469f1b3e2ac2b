-- An organization's first reservations (its first import of them; the inventory batch calls
-- this only then, under the organization's inventory lock): its reservations are all the
-- batch's. Before them each export row held qty = max(0, on hand - 0) = on hand, kept current
-- by every writer, so the new qty is max(0, qty - reserved), and only SKUs with active
-- reservations in own warehouses change; neither the location nor which SKUs are exported
-- depends on reservations. No aggregate of the organization's stock, which the general refresh
-- (wl_refresh_availability_from) computes again for every reserved SKU. Lock and version bump
-- as there. Returns the number of export rows changed.
CREATE OR REPLACE FUNCTION wl_refresh_availability_first_reservations(p_org bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_count bigint;
    v_changed bigint := 0;
    v_rows bigint;
    v_sku text;
    v_reserved numeric;
    v_skus text[] := '{}';
    v_version bigint;
    v_settings text[] := ARRAY[current_setting('enable_nestloop'),
                               current_setting('enable_mergejoin')];
BEGIN
    PERFORM pg_advisory_xact_lock(2002872684, (p_org % 2147483647)::integer);
    CREATE TEMP TABLE wl_first_reserved ON COMMIT DROP AS
    SELECT r.sku, sum(r.quantity) AS reserved
      FROM reservations r
      JOIN warehouses w ON w.org_id = r.org_id AND w.code = r.warehouse AND w.kind = 'own'
     WHERE r.org_id = p_org AND r.status = 'active'
     GROUP BY r.sku;
    SELECT count(*) INTO v_count FROM pg_temp.wl_first_reserved;
    IF v_count > 5000 THEN
        -- One hash join; the export's statistics may predate the organization's rows.
        ANALYZE pg_temp.wl_first_reserved;
        PERFORM set_config('enable_nestloop', 'off', true);
        PERFORM set_config('enable_mergejoin', 'off', true);
        UPDATE stock_availability sa
           SET qty = greatest(0, sa.qty - f.reserved)
          FROM pg_temp.wl_first_reserved f
         WHERE sa.org_id = p_org AND sa.sku = f.sku AND sa.qty <> greatest(0, sa.qty - f.reserved);
        GET DIAGNOSTICS v_changed = ROW_COUNT;
        PERFORM set_config('enable_nestloop', v_settings[1], true);
        PERFORM set_config('enable_mergejoin', v_settings[2], true);
    ELSE
        -- A few SKUs: each found by its key, whatever the statistics say.
        FOR v_sku, v_reserved IN SELECT sku, reserved FROM pg_temp.wl_first_reserved LOOP
            UPDATE stock_availability SET qty = greatest(0, qty - v_reserved)
             WHERE org_id = p_org AND sku = v_sku AND qty <> greatest(0, qty - v_reserved);
            GET DIAGNOSTICS v_rows = ROW_COUNT;
            v_changed := v_changed + v_rows;
            IF v_rows > 0 THEN
                v_skus := v_skus || v_sku;
            END IF;
        END LOOP;
    END IF;
    DROP TABLE pg_temp.wl_first_reserved;
    -- A few SKUs are recorded for the delta export; many start its history again
    -- (wl__export_bump).
    IF v_changed > 0 AND v_count > 5000 THEN
        PERFORM wl__export_bump(p_org, true);
    ELSIF v_changed > 0 THEN
        v_version := wl__export_bump(p_org, false);
        INSERT INTO export_changes (org_id, version, sku)
        SELECT p_org, v_version, s FROM unnest(v_skus) AS s;
    END IF;
    RETURN v_changed;
END;
$$;
