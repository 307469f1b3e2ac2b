-- The rack assignments of a bin by a hash of the bin instead of a B-tree (0005): a bin's
-- staging flag or a warehouse's kind changes the export rows of the SKUs its bins hold, and
-- each bin's rows are found by one probe (a warehouse's bins are its rows of locations, whose
-- key leads with the warehouse). The B-tree cost the first import of a catalogue's rack
-- assignments a random insertion per row, a search among keys of three columns; a hash index
-- keeps 4 bytes per row and inserts without comparing keys: the 2,000,000 of a 1,000,000-SKU
-- catalogue COPYed in about 7.2 s instead of 10.7 s (BENCHMARKS.md, "Generate and import").
-- The key is the organization, the warehouse and the bin in one text, spelled the same in the
-- queries that probe it (src/store/inventory.c, BIN_KEY); a collision only costs a row that
-- the queries' own equalities then drop.
DROP INDEX location_stock_bin;
CREATE INDEX location_stock_bin ON location_stock
    USING hash (((org_id::text || ' ' || warehouse || ' ' || location) COLLATE "C"));
