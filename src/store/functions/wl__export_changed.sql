-- An organization's exported values changed: a new export version (export_versions, the
-- stock export's ETag), and an announcement on channel wl_export_changed that tells every
-- walklistd that listens to drop its cached export of the organization (delivered at commit,
-- never for a rollback). Called by every refresh that changed a row.
CREATE OR REPLACE FUNCTION wl__export_changed(p_org bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO export_versions AS v (org_id, version, changed_at)
    VALUES (p_org, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint, clock_timestamp())
    ON CONFLICT (org_id) DO UPDATE
        SET version = greatest(v.version + 1, excluded.version),
            changed_at = excluded.changed_at;
    PERFORM pg_notify('wl_export_changed', p_org::text);
END;
$$;
