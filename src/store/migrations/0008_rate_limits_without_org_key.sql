-- A rate-limit bucket's organization without a foreign key, as walk lists have had since 0007.
-- A bucket's row is made by its first request, which on a new deployment is every
-- organization's first request: the key's check cost each of them a lookup and a row lock in
-- organizations, about 25 µs of an admission's time in PostgreSQL on the benchmark machine,
-- half of that INSERT. The rows have one writer, wl_admit, which makes a bucket only for the
-- organization of the key that let its request in (api_keys references organizations), and
-- nothing deletes an organization.
ALTER TABLE rate_limits DROP CONSTRAINT rate_limits_org_id_fkey;
