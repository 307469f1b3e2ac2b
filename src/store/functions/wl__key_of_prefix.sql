-- The active key of a prefix whose secret's digest is p_token_hash: its organization, scopes and
-- the organization's slug (no row when there is none). wl_admit's check of a key its process
-- does not know. STRICT, so that a request of a known key (its prefix NULL) costs no call; PL/pgSQL,
-- never inlined into wl_admit's query: on a distributed database (Citus) the keys are reference
-- tables, and a query naming one is planned by Citus at every run, which then happens only for
-- the keys looked up here, not for every group (most groups of a distributed database carry
-- only keys their process checked already, services/admission_queue.h).
CREATE OR REPLACE FUNCTION wl__key_of_prefix(p_prefix text, p_token_hash bytea)
RETURNS TABLE (org_id bigint, scopes text[], slug text)
LANGUAGE plpgsql STABLE STRICT AS $$
BEGIN
    RETURN QUERY
    SELECT ak.org_id, ak.scopes, o.slug
      FROM api_keys ak JOIN organizations o ON o.org_id = ak.org_id
     WHERE ak.prefix = p_prefix AND ak.token_hash = p_token_hash AND ak.revoked_at IS NULL
     LIMIT 1;
END;
$$;
