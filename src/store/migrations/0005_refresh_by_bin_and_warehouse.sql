-- Finding the SKUs a bin or a warehouse holds by key: the export rows that a write of a bin's
-- staging flag or of a warehouse's kind changes are those SKUs' only (src/store/inventory.c,
-- affected_keys and affected_skus), found without reading the organization's rack
-- assignments, stock and reservations. The keys hold no SKU, so that each bin or warehouse is
-- stored once with the list of its rows (B-tree deduplication): small indexes, cheaper to keep
-- up in a bulk import; the SKUs are read from the few rows found. The bin index still costs
-- the first import of a catalogue's rack assignments a random insertion per row (several
-- seconds for the 2,000,000 of a 1,000,000-SKU catalogue, BENCHMARKS.md).
CREATE INDEX location_stock_bin ON location_stock (org_id, warehouse, location);
CREATE INDEX stock_warehouse ON stock (org_id, warehouse);
-- Only active reservations count in the export.
CREATE INDEX reservations_warehouse ON reservations (org_id, warehouse) WHERE status = 'active';
