-- Admissions: the requests a walklistd process has in flight, let in together in one statement
-- (one round trip, one durable commit). For each request: the key check when the process does
-- not know the key, the rate-limit decision when it holds no leased permit, and then, when the
-- request is let in, its own work: a walk list inserted, or one read.
--
-- Rate-limit rows are locked in (organization, bucket) order whatever the order of the
-- requests, so that two admissions (from any processes) never wait for each other in a cycle.
-- The requests are decided one after the other; what they change is written at the end, in
-- one statement per table (a bucket asked twice is read once, its hits kept in hand). Where
-- Citus is loaded, each row is written by a statement of its own, a creation's list (and its
-- bucket, on the node's own shards) as it is decided.
--
-- Parameters are parallel arrays, one element per request; p_codes holds every inserted list's
-- codes one after the other, p_code_count how many belong to each request. A request has:
--   p_prefix, p_token_hash   the key to check (NULL when p_org is known)
--   p_org                    the organization of a key the process knows (else NULL)
--   p_scope                  the scope the request's work needs (checked for a key checked here)
--   p_bucket, p_limit, p_want, p_hold_ms, p_return_at, p_return
--                            the wl_rate_take ask (p_want NULL: the process decided already)
--   p_action                 'take' (nothing more), 'create', 'get' or 'version'
--   p_list_id, p_list_name   the list to insert or read
--
-- One row per request, in request order (i from 1): org_id NULL when the key is unknown,
-- revoked or wrong; slug and scopes of a key checked here; the grant (granted NULL when no
-- ask was made); done when the work was done (for 'get', false also when no such list).
-- 'version' reads the organization's export version (0 when it never changed) for a
-- conditional export, so that its 304 needs no statement of its own; it answers in
-- list_created_ms, the work's one bigint: a column of its own would change the function's
-- result type, which only a DROP can (the running version's admissions would fail between the
-- migration and the new function, and Citus would forget wl_admit_at's distribution).
--
-- Rate limits count per organization and bucket: hits[k] is a moment, counts[k] the requests
-- counted at it (counts NULL: one request per hit). A process may lease permits to spend later:
-- it then asks with p_hold_ms, the longest it will hold them, and the permits are counted at
-- now + p_hold_ms, the latest moment one of them can be spent. Every request is then counted at
-- or after the moment it was served, so any rolling window holds no more requests than the
-- counts inside it: still never more than p_limit. The price is that a leased permit keeps its
-- place in the window up to p_hold_ms longer. Permits a process did not spend come back with
-- its next ask (p_return of the hit counted at p_return_at); if they never do, they only leave
-- the window late, which is the safe side.
CREATE OR REPLACE FUNCTION wl_admit(p_window_ms integer, p_prefix text[], p_token_hash bytea[],
                                    p_org bigint[], p_scope text[], p_bucket text[],
                                    p_limit integer[], p_want integer[], p_hold_ms integer[],
                                    p_return_at timestamptz[], p_return integer[],
                                    p_action text[], p_list_id text[], p_list_name text[],
                                    p_code_count integer[], p_codes text[])
RETURNS TABLE (i integer, org_id bigint, slug text, scopes text, granted integer, used integer,
               reset_ms bigint, counted_at timestamptz, done boolean, list_name text,
               list_state text, list_created_ms bigint, list_loaded_ms bigint, list_codes text[])
-- Its statements are key lookups of a few rows each, and PL/pgSQL keeps their plans for the
-- session: planned while a table was small (a new deployment), a plan would scan it for
-- every request later. No plan of it scans a table or joins by hashing or merging, whatever
-- the statistics say (docs: architecture, plans). And each is planned once per session
-- (force_generic_plan): left to choose, PostgreSQL planned the query of the group's requests
-- again at every call while groups were small (a custom plan counts unnest()'s rows from the
-- arrays and looks cheaper than the generic one), 12% of its time under a load of GETs by id;
-- on Citus a generic plan is also what lets each statement's shard plan be kept.
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    r record;
    v_row record;
    v_let_in boolean;
    v_window interval := make_interval(secs => p_window_ms / 1000.0);
    v_now timestamptz;
    v_hits timestamptz[];
    v_counts integer[];
    v_used integer;
    v_oldest timestamptz;
    v_granted integer;
    v_stamp timestamptz;
    v_made boolean;
    v_created timestamptz;
    v_live_hits timestamptz[];
    v_live_counts integer[];
    v_hit timestamptz;
    v_count integer;
    -- The bucket row locked last, and whether its hits changed since it was read.
    v_bucket_org bigint;
    v_bucket text;
    v_bucket_changed boolean := false;
    -- Writes kept for the end, one per changed bucket and one per list: the hits and counts
    -- of bucket k are w_hits[w_first[k] + 1 : w_first[k] + w_len[k]] (so for w_counts).
    w_org bigint[] := '{}';
    w_bucket text[] := '{}';
    w_first integer[] := '{}';
    w_len integer[] := '{}';
    w_hits timestamptz[] := '{}';
    w_counts integer[] := '{}';
    l_org bigint[] := '{}';
    l_id text[] := '{}';
    l_name text[] := '{}';
    l_first integer[] := '{}';
    l_len integer[] := '{}';
    -- Where Citus is loaded, rows are written one statement each (below): the row written
    -- last.
    v_per_row CONSTANT boolean := current_setting('citus.version', true) IS NOT NULL;
    v_write_org bigint;
    v_write_bucket text;
    v_write_hits timestamptz[];
    v_write_counts integer[];
    v_write_codes text[];
    -- On Citus, the shard-direct form of this function (src/store/shard_direct.c, installed by
    -- walklistctl where the tenant tables are distributed) turns the switch on: each marked
    -- statement then names the shard of its organization itself, as a plain table, where this
    -- node holds that shard alone, instead of going through Citus's executor, which cost a
    -- worker more than the statements' own work (docs/scaling-out.md, "Statements on the node's
    -- own shards"). v_direct_shards: the shards of rate_limits (the anchor: its shard group
    -- holds every table's rows of the organization) of this group's organizations that this
    -- node holds alone, metadata-locked; v_shard and v_direct: the row's, which the marked
    -- statements dispatch by. The form's shards of rate_limits and the least hash of each
    -- one's range, by range: an organization's shard is where PostgreSQL's hash of its id falls,
    -- as Citus places it (a shard split since the form was installed is still in its list but
    -- gone from pg_dist_shard, so it is never direct and goes through Citus).
    v_shard_direct CONSTANT boolean := false; -- shard-direct: true
    v_form_shards CONSTANT bigint[] := '{}'; -- shard-direct: shards
    v_form_mins CONSTANT integer[] := '{}'; -- shard-direct: mins
    v_direct_shards bigint[] := '{}';
    v_orgs bigint[];       -- the group's known organizations, and the shard of each
    v_org_shards bigint[];
    v_shard bigint;
    v_direct boolean := false;
BEGIN
    IF v_shard_direct AND current_setting('citus.version', true) IS NOT NULL THEN
        -- Locked in the mode Citus's executor locks a shard it writes (ShareLock, 5), in shard
        -- order: a shard move or split takes the same lock exclusively before it switches the
        -- shard's placement, so a shard seen here as this node's stays here until the commit,
        -- and one moved meanwhile is seen moved. Only the tables' owner may take it
        -- (lock_shard_metadata checks); anyone else goes through Citus as before.
        -- Each organization's shard found once a group, its rows and writes find it here by
        -- position; by the form's ranges, not Citus's get_shard_id_for_distribution_column,
        -- which cost 5 µs an organization (it writes the value out as text and reads it back).
        -- Only shards of the form's list can be direct, so the dispatch knows every one.
        SELECT array_agg(d.o ORDER BY d.o),
               array_agg(v_form_shards[width_bucket(hashint8(d.o), v_form_mins)] ORDER BY d.o)
          INTO v_orgs, v_org_shards
          FROM (SELECT DISTINCT o FROM unnest(p_org) AS o
                 WHERE o IS NOT NULL
                   AND pg_has_role((SELECT c.relowner FROM pg_class c
                                     WHERE c.oid = 'rate_limits'::regclass),
                                   'USAGE')) AS d;
        -- Only shards that still exist: one split since the form was installed is gone from
        -- the catalog, and Citus's lock refuses a shard it does not know ("could not find
        -- valid entry for shard"), which failed every group of its organizations.
        v_direct_shards := ARRAY(SELECT s.shardid FROM pg_dist_shard s
                                  WHERE s.shardid = ANY (v_org_shards) ORDER BY 1);
        IF cardinality(v_direct_shards) > 0 THEN
            PERFORM lock_shard_metadata(5, v_direct_shards);
            v_direct_shards := ARRAY(SELECT p.shardid FROM pg_dist_placement p
                                      WHERE p.shardid = ANY (v_direct_shards)
                                      GROUP BY p.shardid
                                     HAVING count(*) = 1
                                        AND bool_and(p.groupid = (SELECT lg.groupid
                                                                    FROM pg_dist_local_group lg)));
        END IF;
    END IF;
    FOR r IN
        WITH req AS (
            SELECT u.*, (sum(coalesce(u.n, 0)) OVER (ORDER BY u.i))::integer - coalesce(u.n, 0)
                       AS codes_before
              FROM unnest(p_prefix, p_token_hash, p_org, p_scope, p_bucket, p_limit, p_want,
                          p_hold_ms, p_return_at, p_return, p_action, p_list_id, p_list_name,
                          p_code_count)
                   WITH ORDINALITY AS u(prefix, token_hash, org, scope, bucket, lim, want,
                                        hold_ms, return_at, ret, action, list_id, list_name, n,
                                        i))
        -- Each key is looked up by itself (a call per request whose key is not known, through
        -- the key's index): a join could read every key for every admission when a plan
        -- thinks api_keys is small.
        SELECT q.*, coalesce(q.org, k.org_id) AS org_of, k.slug AS org_slug, k.scopes AS key_scopes
          FROM req q
          LEFT JOIN LATERAL wl__key_of_prefix(CASE WHEN q.org IS NULL THEN q.prefix END,
                                              q.token_hash) k ON true
         ORDER BY coalesce(q.org, k.org_id), q.bucket, q.i
    LOOP
        i := r.i;
        org_id := r.org_of;
        slug := r.org_slug;
        scopes := array_to_string(r.key_scopes, ',');
        granted := NULL;
        used := NULL;
        reset_ms := NULL;
        counted_at := NULL;
        done := false;
        list_name := NULL;
        list_state := NULL;
        list_created_ms := NULL;
        list_loaded_ms := NULL;
        list_codes := NULL;
        IF r.org_of IS NOT NULL THEN
            IF cardinality(v_direct_shards) > 0 THEN
                v_shard := v_org_shards[array_position(v_orgs, r.org_of)];
                v_direct := coalesce(v_shard = ANY (v_direct_shards), false);
            END IF;
            IF r.want IS NOT NULL THEN
                IF r.org_of = v_bucket_org AND r.bucket = v_bucket THEN
                    -- The bucket of the request before (rows come in bucket order): locked,
                    -- and its hits are the ones in hand, not yet written.
                    v_made := false;
                ELSE
                    IF v_bucket_changed THEN
                        w_org := w_org || v_bucket_org;
                        w_bucket := w_bucket || v_bucket;
                        w_first := w_first || cardinality(w_hits);
                        w_len := w_len || cardinality(v_hits);
                        w_hits := w_hits || v_hits;
                        w_counts := w_counts || v_counts;
                    END IF;
                    v_bucket_org := r.org_of;
                    v_bucket := r.bucket;
                    v_bucket_changed := false;
                    -- The rate-limit ask (0006 explains leases and returns).
                    -- shard-direct: statement
                    SELECT rl.hits, rl.counts INTO v_hits, v_counts
                      FROM rate_limits rl WHERE rl.org_id = r.org_of AND rl.bucket = r.bucket
                       FOR UPDATE;
                    v_made := false;
                    IF NOT FOUND THEN
                        -- The bucket's first request makes its row with the decision in it; a
                        -- concurrent first request waits for that INSERT, then locks the row.
                        v_now := clock_timestamp();
                        v_granted := greatest(0, least(r.want, r.lim));
                        v_stamp := v_now + make_interval(secs => greatest(r.hold_ms, 0) / 1000.0);
                        v_hits := CASE WHEN v_granted > 0 THEN ARRAY[v_stamp] ELSE '{}' END;
                        v_counts := CASE WHEN v_granted > 0 THEN ARRAY[v_granted] ELSE '{}' END;
                        -- shard-direct: statement
                        INSERT INTO rate_limits AS rl (org_id, bucket, hits, counts)
                        VALUES (r.org_of, r.bucket, v_hits, v_counts)
                            ON CONFLICT ON CONSTRAINT rate_limits_pkey DO NOTHING;
                        v_made := FOUND;
                        v_used := v_granted;
                        v_oldest := CASE WHEN v_granted > 0 THEN v_stamp END;
                        IF NOT v_made THEN
                            -- shard-direct: statement
                            SELECT rl.hits, rl.counts INTO v_hits, v_counts
                              FROM rate_limits rl
                             WHERE rl.org_id = r.org_of AND rl.bucket = r.bucket
                               FOR UPDATE;
                        END IF;
                    END IF;
                END IF;
                IF NOT v_made THEN
                    -- The clock is read once the row is locked: decisions follow the clock.
                    v_now := clock_timestamp();
                    IF v_now - v_window < ALL (v_hits) AND 1 = ALL (v_counts)
                       AND cardinality(v_counts) = cardinality(v_hits)
                       AND v_hits[1] <= ALL (v_hits)
                       AND (coalesce(r.ret, 0) <= 0 OR r.return_at IS NULL
                            OR r.return_at <> ALL (v_hits)) THEN
                        -- What the loop below keeps when every hit is still in the window,
                        -- each counts one request, the first is the oldest and no permit
                        -- comes back (each request's ask, hits in the order they were made),
                        -- found by array operators instead of a pass of PL/pgSQL statements
                        -- per hit: that pass cost about 7,000 instructions a hit (callgrind:
                        -- 38,000 more a creation at 6 hits, 148,000 at 25; BENCHMARKS.md).
                        v_used := cardinality(v_hits);
                        v_oldest := v_hits[1];
                    ELSE
                        -- The hits still in the window, less the permits returned, in a loop
                        -- of plain variables: a statement here cost more than the loop at any
                        -- size.
                        v_live_hits := '{}';
                        v_live_counts := '{}';
                        v_used := 0;
                        v_oldest := NULL;
                        FOR v_k IN 1 .. cardinality(v_hits) LOOP
                            v_hit := v_hits[v_k];
                            CONTINUE WHEN v_hit <= v_now - v_window;
                            v_count := coalesce(v_counts[v_k], 1);
                            IF v_hit = r.return_at THEN
                                v_count := v_count - least(v_count, greatest(r.ret, 0));
                            END IF;
                            CONTINUE WHEN v_count <= 0;
                            v_live_hits := v_live_hits || v_hit;
                            v_live_counts := v_live_counts || v_count;
                            v_used := v_used + v_count;
                            v_oldest := least(v_oldest, v_hit);
                        END LOOP;
                        v_hits := v_live_hits;
                        v_counts := v_live_counts;
                    END IF;
                    v_granted := greatest(0, least(r.want, r.lim - v_used));
                    v_stamp := v_now + make_interval(secs => greatest(r.hold_ms, 0) / 1000.0);
                    IF v_granted > 0 THEN
                        v_hits := v_hits || v_stamp;
                        v_counts := v_counts || v_granted;
                        v_used := v_used + v_granted;
                        v_oldest := least(v_oldest, v_stamp);
                    END IF;
                    v_bucket_changed := true;
                END IF;
                granted := v_granted;
                used := v_used;
                counted_at := v_stamp;
                -- Until the oldest counted request leaves the window (one is then accepted).
                reset_ms := CASE WHEN v_oldest IS NULL THEN 0
                            ELSE greatest(0, ceil(extract(epoch FROM (v_oldest + v_window - v_now))
                                                  * 1000))
                            END;
            END IF;
            v_let_in := (r.want IS NULL OR granted > 0)
                        AND (r.org IS NOT NULL OR r.scope = ANY (r.key_scopes));
            IF v_let_in AND r.action = 'create' THEN
                -- The time is taken here and converted here: a distributed database (Citus)
                -- refuses functions that are not immutable in an INSERT's RETURNING.
                v_created := now();
                IF v_per_row THEN
                    -- Where Citus is loaded, the list is written now, by a statement of its
                    -- own (the writes at the end explain why), and with its organization's
                    -- bucket where that changed and both are on this node's own shards (one
                    -- shard group): a statement fewer, and none of the arrays and the second
                    -- pass the end's writes take, whose expressions cost a worker more than
                    -- the statement (docs/scaling-out.md, "Statements on the node's own
                    -- shards").
                    v_write_codes := p_codes[r.codes_before + 1 : r.codes_before + r.n];
                    IF v_bucket_changed AND v_direct AND v_bucket_org = r.org_of THEN
                        -- shard-direct: statement
                        WITH bucket AS (UPDATE rate_limits rl SET hits = v_hits, counts = v_counts
                                         WHERE rl.org_id = v_bucket_org AND rl.bucket = v_bucket)
                        INSERT INTO locate_lists (org_id, id, name, codes, created_at)
                        VALUES (r.org_of, r.list_id, r.list_name, v_write_codes, now());
                        v_bucket_changed := false;
                    ELSE
                        -- shard-direct: statement
                        INSERT INTO locate_lists (org_id, id, name, codes, created_at)
                        VALUES (r.org_of, r.list_id, r.list_name, v_write_codes, now());
                    END IF;
                ELSE
                    l_org := l_org || r.org_of;
                    l_id := l_id || r.list_id;
                    l_name := l_name || r.list_name;
                    l_first := l_first || r.codes_before;
                    l_len := l_len || r.n;
                END IF;
                list_created_ms := floor(extract(epoch FROM v_created) * 1000)::bigint;
                done := true;
            ELSIF v_let_in AND r.action = 'get' THEN
                IF v_direct AND v_bucket_changed AND v_bucket_org = r.org_of THEN
                    -- On this node's own shards, the bucket is written by the read's statement.
                    -- shard-direct: statement
                    WITH bucket AS (UPDATE rate_limits rl SET hits = v_hits, counts = v_counts
                                     WHERE rl.org_id = v_bucket_org AND rl.bucket = v_bucket)
                    SELECT l.name, l.state,
                           floor(extract(epoch FROM l.created_at) * 1000)::bigint AS created_ms,
                           floor(extract(epoch FROM l.loaded_at) * 1000)::bigint AS loaded_ms,
                           l.codes
                      INTO v_row FROM locate_lists l WHERE l.org_id = r.org_of AND l.id = r.list_id;
                    v_bucket_changed := false;
                ELSE
                    -- shard-direct: statement
                    SELECT l.name, l.state,
                           floor(extract(epoch FROM l.created_at) * 1000)::bigint AS created_ms,
                           floor(extract(epoch FROM l.loaded_at) * 1000)::bigint AS loaded_ms, l.codes
                      INTO v_row
                      FROM locate_lists l WHERE l.org_id = r.org_of AND l.id = r.list_id;
                END IF;
                IF FOUND THEN
                    list_name := v_row.name;
                    list_state := v_row.state;
                    list_created_ms := v_row.created_ms;
                    list_loaded_ms := v_row.loaded_ms;
                    list_codes := v_row.codes;
                    done := true;
                END IF;
            ELSIF v_let_in AND r.action = 'version' THEN
                -- A plain SELECT INTO (NULL when no row): Citus cannot plan a scalar subquery
                -- that names a variable ("could not create distributed plan").
                -- shard-direct: statement
                SELECT ev.version INTO list_created_ms
                  FROM export_versions ev WHERE ev.org_id = r.org_of;
                list_created_ms := coalesce(list_created_ms, 0);
                done := true;
            END IF;
        END IF;
        RETURN NEXT;
    END LOOP;
    IF v_bucket_changed THEN
        w_org := w_org || v_bucket_org;
        w_bucket := w_bucket || v_bucket;
        w_first := w_first || cardinality(w_hits);
        w_len := w_len || cardinality(v_hits);
        w_hits := w_hits || v_hits;
        w_counts := w_counts || v_counts;
    END IF;
    -- The group's writes, made once its requests are decided (the rows it returned reach the
    -- caller only when these are done): one statement for the buckets and one for the lists
    -- cost a third of a statement per row, most of the time an admission spent in PostgreSQL.
    -- Citus does not run an UPDATE joined to a function over several shards, and would move
    -- an INSERT .. SELECT's rows through the executing node: where it is loaded, each row is
    -- written by a statement of its own, which goes to its one shard.
    IF NOT v_per_row THEN
        IF cardinality(w_org) > 0 THEN
            UPDATE rate_limits rl
               SET hits = w_hits[w.first + 1 : w.first + w.len],
                   counts = w_counts[w.first + 1 : w.first + w.len]
              FROM unnest(w_org, w_bucket, w_first, w_len) AS w(org, bucket, first, len)
             WHERE rl.org_id = w.org AND rl.bucket = w.bucket;
        END IF;
        IF cardinality(l_org) > 0 THEN
            INSERT INTO locate_lists (org_id, id, name, codes, created_at)
            SELECT l.org, l.id, l.name, p_codes[l.first + 1 : l.first + l.len], now()
              FROM unnest(l_org, l_id, l_name, l_first, l_len) AS l(org, id, name, first, len);
        END IF;
    ELSE
        -- Each value of a row goes in a plain variable, not as an array's element: Citus
        -- routes an UPDATE to its one shard only by a plain value of the distribution column,
        -- and sent one that said w_org[v_k] to every shard of every worker, in a two-phase
        -- commit (a bucket's second request on, creation fell to a sixth). And it turns each
        -- parameter of a statement into text: given the group's whole arrays to slice, every
        -- row's statement wrote out all of the group's codes and hits again.
        -- A creation's list was written when it was decided, and a bucket with the list or
        -- the read of its organization where it could: what is left here are buckets whose
        -- requests wrote or read nothing on this node's own shards.
        FOR v_k IN 1 .. cardinality(w_org) LOOP
            v_write_org := w_org[v_k];
            v_write_bucket := w_bucket[v_k];
            v_write_hits := w_hits[w_first[v_k] + 1 : w_first[v_k] + w_len[v_k]];
            v_write_counts := w_counts[w_first[v_k] + 1 : w_first[v_k] + w_len[v_k]];
            IF cardinality(v_direct_shards) > 0 THEN
                v_shard := v_org_shards[array_position(v_orgs, v_write_org)];
                v_direct := coalesce(v_shard = ANY (v_direct_shards), false);
            END IF;
            -- shard-direct: statement
            UPDATE rate_limits rl
               SET hits = v_write_hits, counts = v_write_counts
             WHERE rl.org_id = v_write_org AND rl.bucket = v_write_bucket;
        END LOOP;
    END IF;
END;
$$;
