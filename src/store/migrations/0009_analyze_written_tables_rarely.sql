-- The two tables every request writes are analyzed by autovacuum far more rarely. Autovacuum
-- analyzes a table once a tenth of its rows changed, and an analysis samples up to 30,000 rows
-- (at the default statistics target) whatever the table's size. rate_limits has each asking
-- admission rewrite its bucket's row, and locate_lists a row more for every creation; their
-- statistics choose no plan (every statement reads them by a key that leads with org_id, and
-- the request paths plan with sequential scans off: docs/architecture.md, "Plans that do not
-- depend on statistics"). On Citus each shard is analyzed by itself, after a tenth of its own
-- rows, so a cluster analyzed them as often as it has shards and sampled up to 30,000 rows of
-- each (most of a shard): on the benchmark's two workers, several seconds of a worker's CPU a
-- minute under load, in bursts that fell into measured runs (docs/scaling-out.md, "Background
-- work per shard"). Now:
-- - rate_limits after a hundred times as many changes as it has rows: its rows are rewritten,
--   not added, so its statistics never change what a plan does;
-- - locate_lists once it has doubled, so that the scanner's queue (org_id, state, created_at)
--   is still planned on statistics within a factor of two of the table.
-- A setting of the table: Citus passes it to every shard, present and future (an ALTER of a
-- distributed table reaches its shards, and a shard made later copies it). Instant: it takes a
-- lock that no read or write waits for.
ALTER TABLE rate_limits SET (autovacuum_analyze_scale_factor = 100);
ALTER TABLE locate_lists SET (autovacuum_analyze_scale_factor = 1);
