-- pgbench floor of walk-list creation: the INSERT the service makes per list (src/store/lists.c
-- wl_lists_insert), 20 codes, one statement per transaction, spread over the benchmark
-- organizations (:org_min..:org_max, set with pgbench -D).
\set org random(:org_min, :org_max)
INSERT INTO locate_lists (org_id, id, name, codes)
VALUES (:org, md5(random()::text || clock_timestamp()::text), 'Bench walk',
        '{"SKU-0000037","SKU-0000074","SKU-0000111","SKU-0000148","SKU-0000185","SKU-0000222","SKU-0000259","SKU-0000296","SKU-0000333","SKU-0000370","SKU-0000407","SKU-0000444","SKU-0000481","SKU-0000518","SKU-0000555","SKU-0000592","SKU-0000629","SKU-0000666","SKU-0000703","SKU-0000740"}'::text[])
RETURNING floor(extract(epoch FROM created_at) * 1000)::bigint;
