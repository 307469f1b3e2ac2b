-- Finding the SKUs a bin or a warehouse holds, by key: the export rows a write of a bin's
-- staging flag or a warehouse's kind changes are those SKUs' only (src/store/inventory.c,
-- affected_skus), and finding them costs what they are, not a scan of the organization's rack
-- assignments, stock and reservations (0.6 s for one bin of a 1,000,000-SKU catalogue). Each
-- costs the bulk import a second index of its table (about 2 s for the 2,000,000 rack
-- assignments of that catalogue).
CREATE INDEX location_stock_bin ON location_stock (org_id, warehouse, location, sku);
CREATE INDEX stock_warehouse ON stock (org_id, warehouse, sku);
-- Only active reservations count in the export.
CREATE INDEX reservations_warehouse ON reservations (org_id, warehouse, sku)
    WHERE status = 'active';
