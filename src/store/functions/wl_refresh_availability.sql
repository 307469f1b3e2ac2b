-- Recomputes the export rows of the SKUs in an array: the form for writers of a few SKUs,
-- through the set-based refresh (wl_refresh_availability_from), so that the rules have one
-- implementation.
CREATE OR REPLACE FUNCTION wl_refresh_availability(p_org bigint, p_skus text[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    CREATE TEMP TABLE wl_refresh_skus ON COMMIT DROP AS
        SELECT s COLLATE "C" AS sku FROM unnest(p_skus) AS s;
    PERFORM wl_refresh_availability_from(p_org, 'pg_temp.wl_refresh_skus'::regclass);
    DROP TABLE pg_temp.wl_refresh_skus;
END;
$$;
