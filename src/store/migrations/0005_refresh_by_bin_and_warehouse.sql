-- Finding the SKUs a bin or a warehouse holds by key: the export rows that a write of a bin's
-- staging flag or of a warehouse's kind changes are those SKUs' only (src/store/inventory.c,
-- affected_keys and affected_skus), and finding them now costs what they are, not a scan of
-- the organization's rack assignments, stock and reservations (0.6 s for one bin of a
-- 1,000,000-SKU catalogue). The keys hold no SKU, so that PostgreSQL stores each bin or
-- warehouse once with the list of its rows (B-tree deduplication): small indexes, cheap to keep
-- up in a bulk import, where (org_id, warehouse, location, sku) doubled the import of the rack
-- assignments; the SKUs are read from the few rows found.
CREATE INDEX location_stock_bin ON location_stock (org_id, warehouse, location);
CREATE INDEX stock_warehouse ON stock (org_id, warehouse);
-- Only active reservations count in the export.
CREATE INDEX reservations_warehouse ON reservations (org_id, warehouse) WHERE status = 'active';
