-- The stock export's change history, for the delta export (GET /api/v1/stock-export?since=):
-- which SKUs' export rows (stock_availability) changed in which export version. Written by the
-- refresh that changes the rows, in its transaction, under the organization's inventory lock
-- (wl__export_record), so versions are handed out in commit order: a reader's snapshot that
-- shows version v shows every change of a version up to v, and none after it.
--
-- One row per SKU and version, none for the values: the delta reads each changed SKU's current
-- row of stock_availability (no row: it left the export). Rows older than the retention
-- (walklist.export_history_hours) are deleted by the next change of the organization.
CREATE TABLE export_changes (
    org_id  bigint NOT NULL,
    version bigint NOT NULL,
    sku     text COLLATE "C" NOT NULL,
    PRIMARY KEY (org_id, version, sku)
);

-- history_from: every change of a version above it is in export_changes. A cursor (an export
-- version) below it cannot be continued (410). It moves up when old changes are pruned and
-- when a write replaces most of the organization's export (then one mark, not a row per SKU).
-- Organizations exported before this migration have no history: it starts at their version.
ALTER TABLE export_versions ADD COLUMN history_from bigint NOT NULL DEFAULT 0;
UPDATE export_versions SET history_from = version;

-- Replaced by wl__export_bump, which also records the history.
DROP FUNCTION IF EXISTS wl__export_changed(bigint);
