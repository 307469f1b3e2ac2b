-- Write throughput (issue 6, scripts/bench.sh): inventory writes at catalogue scale (a
-- 1,000,000-SKU catalogue is about five million rows, and each went through per-row
-- foreign-key triggers and a refresh that rewrote every affected row), the export's
-- change announcements, and the rate limiter's statements.

-- 1. Foreign keys of the bulk-written tables. Each checked reference cost one trigger call
-- per row (SPI query plus a FOR KEY SHARE row lock on the referenced row): two thirds of the
-- time of importing stock or rack assignments. They are redundant with the one writer of
-- these tables, the inventory batch (src/store/inventory.c): it checks every reference of a
-- batch in SQL (it must anyway, to report each bad line), in the batch's own transaction,
-- under the organization's inventory lock; and nothing deletes organizations, warehouses,
-- locations or products. The small tables (warehouses, locations, lists, keys, limits) keep
-- theirs.
ALTER TABLE products DROP CONSTRAINT products_org_id_fkey;
ALTER TABLE product_eans DROP CONSTRAINT product_eans_org_id_sku_fkey;
ALTER TABLE stock DROP CONSTRAINT stock_org_id_sku_fkey,
                  DROP CONSTRAINT stock_org_id_warehouse_fkey;
ALTER TABLE location_stock DROP CONSTRAINT location_stock_org_id_sku_fkey,
                           DROP CONSTRAINT location_stock_org_id_warehouse_location_fkey;
ALTER TABLE reservations DROP CONSTRAINT reservations_org_id_sku_fkey,
                         DROP CONSTRAINT reservations_org_id_warehouse_fkey;
ALTER TABLE stock_availability DROP CONSTRAINT stock_availability_org_id_fkey;

-- Secondary indexes that only served the rare re-import of a warehouse (its kind) or a bin
-- (its staging flag), to find the SKUs stored there: each cost an index insert per stock,
-- reservation or rack row written. Those re-imports now read the organization's rows instead,
-- which they mostly refresh anyway.
DROP INDEX stock_warehouse;
DROP INDEX reservations_warehouse;
DROP INDEX location_stock_location;

-- The export's read (ORDER BY sku of one organization) becomes an index-only scan: the primary
-- key carries qty and location, so the rows come in key order from the index alone, as fast as
-- a sequential read, instead of one heap fetch per SKU in whatever order updates left the heap
-- (1,000,000 SKUs: 0.5 s against 3 s on the benchmark machine). Rows of pages changed since
-- the last (auto)vacuum are still checked in the heap, so the answer is the same; only its
-- speed depends on vacuum keeping up.
ALTER TABLE stock_availability DROP CONSTRAINT stock_availability_pkey,
    ADD CONSTRAINT stock_availability_pkey PRIMARY KEY (org_id, sku) INCLUDE (qty, location);

-- 2. The availability refresh, set-based: the affected SKUs come from a table (the batch's
-- temporary import_affected), and only rows whose values really change are written (the
-- upsert of 0002 locked and rewrote every affected row, changed or not). The rules are those
-- of 0001; the lock and the version bump those of 0002.
--
-- p_skus names a table or view with a text column "sku" (duplicates allowed). For large sets
-- the statement is planned with hash joins only: inside the writing transaction the tables'
-- statistics still describe them before the batch (often empty), and nested loops planned
-- on such estimates go quadratic.
CREATE FUNCTION wl_refresh_availability_from(p_org bigint, p_skus regclass) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_count bigint;
    v_changed bigint := 0;
    v_rows bigint;
    v_nestloop text := current_setting('enable_nestloop');
BEGIN
    PERFORM pg_advisory_xact_lock(2002872684, (p_org % 2147483647)::integer);
    EXECUTE format('CREATE TEMP TABLE wl_availability_skus ON COMMIT DROP AS'
                   ' SELECT DISTINCT sku COLLATE "C" AS sku FROM %s', p_skus);
    SELECT count(*) INTO v_count FROM pg_temp.wl_availability_skus;
    IF v_count > 5000 THEN
        ANALYZE pg_temp.wl_availability_skus;
        PERFORM set_config('enable_nestloop', 'off', true);
    END IF;

    CREATE TEMP TABLE wl_availability_computed ON COMMIT DROP AS
    WITH on_hand AS (
        SELECT st.sku, sum(st.on_hand) AS on_hand
        FROM stock st
        JOIN pg_temp.wl_availability_skus a ON a.sku = st.sku
        JOIN warehouses w ON w.org_id = st.org_id AND w.code = st.warehouse AND w.kind = 'own'
        WHERE st.org_id = p_org
        GROUP BY st.sku
    ), reserved AS (
        SELECT r.sku, sum(r.quantity) AS reserved
        FROM reservations r
        JOIN pg_temp.wl_availability_skus a ON a.sku = r.sku
        JOIN warehouses w ON w.org_id = r.org_id AND w.code = r.warehouse AND w.kind = 'own'
        WHERE r.org_id = p_org AND r.status = 'active'
        GROUP BY r.sku
    ), primary_location AS (
        SELECT DISTINCT ON (ls.sku) ls.sku, ls.location
        FROM location_stock ls
        JOIN pg_temp.wl_availability_skus a ON a.sku = ls.sku
        JOIN warehouses w ON w.org_id = ls.org_id AND w.code = ls.warehouse AND w.kind = 'own'
        JOIN locations l ON l.org_id = ls.org_id AND l.warehouse = ls.warehouse
                        AND l.code = ls.location AND NOT l.staging
        WHERE ls.org_id = p_org
        ORDER BY ls.sku, ls.quantity DESC, l.sort_key, ls.location, ls.warehouse
    )
    SELECT a.sku,
           greatest(0, coalesce(o.on_hand, 0) - coalesce(r.reserved, 0)) AS qty,
           p.location,
           (o.sku IS NOT NULL OR p.sku IS NOT NULL) AS included
      FROM pg_temp.wl_availability_skus a
      LEFT JOIN on_hand o ON o.sku = a.sku
      LEFT JOIN reserved r ON r.sku = a.sku
      LEFT JOIN primary_location p ON p.sku = a.sku;
    IF v_count > 5000 THEN
        ANALYZE pg_temp.wl_availability_computed;
    END IF;

    -- Only refreshers write stock_availability, one at a time per organization (the lock
    -- above), and each statement here sees every refresher that committed before it: so the
    -- plain INSERT below cannot meet a concurrent insert of the same SKU.
    DELETE FROM stock_availability sa
     USING pg_temp.wl_availability_computed c
     WHERE sa.org_id = p_org AND sa.sku = c.sku AND NOT c.included;
    GET DIAGNOSTICS v_rows = ROW_COUNT;
    v_changed := v_changed + v_rows;
    UPDATE stock_availability sa
       SET qty = c.qty, location = c.location
      FROM pg_temp.wl_availability_computed c
     WHERE sa.org_id = p_org AND sa.sku = c.sku AND c.included
       AND (sa.qty, sa.location) IS DISTINCT FROM (c.qty, c.location);
    GET DIAGNOSTICS v_rows = ROW_COUNT;
    v_changed := v_changed + v_rows;
    INSERT INTO stock_availability (org_id, sku, qty, location)
    SELECT p_org, c.sku, c.qty, c.location
      FROM pg_temp.wl_availability_computed c
     WHERE c.included
       AND NOT EXISTS (SELECT 1 FROM stock_availability sa
                        WHERE sa.org_id = p_org AND sa.sku = c.sku);
    GET DIAGNOSTICS v_rows = ROW_COUNT;
    v_changed := v_changed + v_rows;

    PERFORM set_config('enable_nestloop', v_nestloop, true);
    DROP TABLE pg_temp.wl_availability_computed;
    DROP TABLE pg_temp.wl_availability_skus;
    IF v_changed > 0 THEN
        INSERT INTO export_versions AS v (org_id, version, changed_at)
        VALUES (p_org, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint, clock_timestamp())
        ON CONFLICT (org_id) DO UPDATE
            SET version = greatest(v.version + 1, excluded.version),
                changed_at = excluded.changed_at;
        -- Tells every walklistd that listens to drop its cached export of the organization
        -- (delivered at commit, never for a rollback).
        PERFORM pg_notify('wl_export_changed', p_org::text);
    END IF;
    RETURN v_changed;
END;
$$;

-- The array form (0001, 0002) now goes through the set-based refresh: one implementation of
-- the rules.
CREATE OR REPLACE FUNCTION wl_refresh_availability(p_org bigint, p_skus text[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    CREATE TEMP TABLE wl_refresh_skus ON COMMIT DROP AS
        SELECT s COLLATE "C" AS sku FROM unnest(p_skus) AS s;
    PERFORM wl_refresh_availability_from(p_org, 'pg_temp.wl_refresh_skus'::regclass);
    DROP TABLE pg_temp.wl_refresh_skus;
END;
$$;

-- 3. Rate-limit decisions in fewer statements. One UPDATE locks the row, drops the hits that
-- left the window and appends this one, only when fewer than the limit remain; the row is made
-- on first use, and a full bucket is read without a write. The decision is the same and still
-- serialised by the row lock, so every process sees every accepted hit at once. The commit
-- stays durable: an asynchronous commit would be faster, but a crash of PostgreSQL could then
-- forget the hits of its last moments and let more than the limit through in the next minute,
-- which CONTRACT section 8 rules out.

-- The hits still in the window at p_now, oldest first, then p_now.
CREATE FUNCTION wl__rate_accept(p_hits timestamptz[], p_now timestamptz, p_window interval)
RETURNS timestamptz[] LANGUAGE sql IMMUTABLE AS $$
    SELECT ARRAY(SELECT h FROM unnest(p_hits) AS h WHERE h > p_now - p_window ORDER BY h) || p_now
$$;

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
    v_hits timestamptz[];
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

    -- The clock is read where the row is evaluated: for a row another request changed
    -- meanwhile, READ COMMITTED evaluates the statement again on the newest version, after
    -- the lock, so decisions stay ordered like the clock.
    accepted := false;
    FOR attempt IN 1..2 LOOP
        UPDATE rate_limits r
           SET hits = wl__rate_accept(r.hits, clock_timestamp(), v_window)
         WHERE r.org_id = v_org AND r.bucket = p_bucket
           AND (SELECT count(*) FROM unnest(r.hits) AS h
                 WHERE h > clock_timestamp() - v_window) < p_limit
        RETURNING r.hits INTO v_hits;
        IF FOUND THEN
            accepted := true;
            EXIT;
        END IF;
        EXIT WHEN attempt = 2;
        -- No row yet, or a full bucket: make the row (a no-op when it exists) and try once more.
        INSERT INTO rate_limits AS r (org_id, bucket) VALUES (v_org, p_bucket)
            ON CONFLICT ON CONSTRAINT rate_limits_pkey DO NOTHING;
    END LOOP;
    IF NOT accepted THEN
        SELECT ARRAY(SELECT h FROM unnest(r.hits) AS h
                      WHERE h > clock_timestamp() - v_window ORDER BY h)
          INTO v_hits
          FROM rate_limits r WHERE r.org_id = v_org AND r.bucket = p_bucket;
    END IF;

    used := coalesce(cardinality(v_hits), 0);
    -- Until the oldest counted request leaves the window (a request is then accepted again).
    reset_ms := CASE WHEN used = 0 THEN 0
                ELSE greatest(0, ceil(extract(epoch FROM (v_hits[1] + v_window - clock_timestamp()))
                                      * 1000))
                END;
    RETURN NEXT;
END;
$$;
