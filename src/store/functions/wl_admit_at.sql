-- wl_admit run where the group's rows are (docs/scaling-out.md, "Admission on the worker"). On
-- plain PostgreSQL it is wl_admit. On Citus, `walklistctl distribute` makes it a distributed
-- function by p_node_org, colocated with the tenant tables: the coordinator hands the whole call
-- to the worker holding that organization's rows, and wl_admit's statements meet the shards
-- there, planned once per session, instead of each being planned on the coordinator and sent
-- to the worker. walklistd passes an organization of the group's node (a group holds one node's
-- organizations); were one elsewhere (a shard moved meanwhile), its statement still reaches it
-- from the worker, only slower. PL/pgSQL, so that it is never inlined into the caller's query,
-- which is what the coordinator hands over.
CREATE OR REPLACE FUNCTION wl_admit_at(p_node_org bigint, p_window_ms integer, p_prefix text[],
                                       p_token_hash bytea[], p_org bigint[], p_scope text[],
                                       p_bucket text[], p_limit integer[], p_want integer[],
                                       p_hold_ms integer[], p_return_at timestamptz[],
                                       p_return integer[], p_action text[], p_list_id text[],
                                       p_list_name text[], p_code_count integer[], p_codes text[])
RETURNS TABLE (i integer, org_id bigint, slug text, scopes text, granted integer, used integer,
               reset_ms bigint, counted_at timestamptz, done boolean, list_name text,
               list_state text, list_created_ms bigint, list_loaded_ms bigint, list_codes text[])
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY SELECT * FROM wl_admit(p_window_ms, p_prefix, p_token_hash, p_org, p_scope,
                                        p_bucket, p_limit, p_want, p_hold_ms, p_return_at,
                                        p_return, p_action, p_list_id, p_list_name, p_code_count,
                                        p_codes);
END;
$$;
