-- A walk list's organization without a foreign key. Creating a list is the hottest write, and
-- the key's check cost every INSERT a lookup and a row lock in organizations: about 6 µs of the
-- 86 µs PostgreSQL spent on a creation (BENCHMARKS.md, "Creation: what PostgreSQL spends"),
-- and on Citus a statement on a reference table. Like the bulk-written inventory tables, the
-- rows have one kind of writer that checks the reference itself: a list is inserted for the
-- organization of the key that let its request in, and api_keys references organizations;
-- nothing deletes an organization.
ALTER TABLE locate_lists DROP CONSTRAINT locate_lists_org_id_fkey;
