-- The schema: organizations and their keys, the inventory (warehouses, bins, products, stock,
-- rack assignments, reservations), the stock export, walk lists, rate limits and
-- Idempotency-Keys. Functions are not here: each is in src/store/functions.
--
-- Every primary, unique and foreign key leads with org_id so that the database can later be
-- distributed by organization. Codes are compared byte-wise (COLLATE "C"): SKUs, EANs and bin
-- codes are case-sensitive and exact.

CREATE TABLE organizations (
    org_id     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    slug       text COLLATE "C" NOT NULL UNIQUE,
    name       text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Keys are found by their public prefix before the organization is known, so the prefix is
-- unique on its own; under a distributed database this is a reference table.
CREATE TABLE api_keys (
    prefix     text COLLATE "C" PRIMARY KEY,
    org_id     bigint NOT NULL REFERENCES organizations (org_id),
    token_hash bytea NOT NULL CHECK (length(token_hash) = 32),
    scopes     text[] NOT NULL,
    name       text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz
);
CREATE INDEX api_keys_org ON api_keys (org_id, created_at);

CREATE TABLE warehouses (
    org_id bigint NOT NULL REFERENCES organizations (org_id),
    code   text COLLATE "C" NOT NULL,
    name   text NOT NULL,
    kind   text NOT NULL CHECK (kind IN ('own', 'supplier')),
    PRIMARY KEY (org_id, code)
);

-- The bulk-written inventory tables (products, product_eans, stock, location_stock,
-- reservations, stock_availability, and locations' reference to their warehouse) have no
-- foreign keys: each checked reference cost one trigger call per row (an SPI query and a FOR
-- KEY SHARE lock of the referenced row), two thirds of the time of importing a catalogue
-- (BENCHMARKS.md). Their one writer, the inventory batch (src/store/inventory.c), checks every
-- reference of a batch in SQL (it must anyway, to report each bad line), in the batch's own
-- transaction, under the organization's inventory lock; and nothing deletes organizations,
-- warehouses, locations or products. The small tables keep theirs. For the same reason these
-- tables have no secondary index that only a rare re-import of a warehouse or bin would use.
CREATE TABLE locations (
    org_id    bigint NOT NULL,
    warehouse text COLLATE "C" NOT NULL,
    code      text COLLATE "C" NOT NULL,
    staging   boolean NOT NULL,
    -- Natural bin order key (wl_bin_sort_key), so SQL sorts bins as the scanner does.
    sort_key  bytea NOT NULL,
    PRIMARY KEY (org_id, warehouse, code)
);

CREATE TABLE products (
    org_id bigint NOT NULL,
    sku    text COLLATE "C" NOT NULL,
    name   text NOT NULL,
    PRIMARY KEY (org_id, sku)
);

-- One EAN may belong to more than one product (it is then ambiguous on the scanner).
CREATE TABLE product_eans (
    org_id bigint NOT NULL,
    ean    text COLLATE "C" NOT NULL,
    sku    text COLLATE "C" NOT NULL,
    PRIMARY KEY (org_id, ean, sku)
);
CREATE INDEX product_eans_sku ON product_eans (org_id, sku);

-- Per-warehouse physical stock record.
CREATE TABLE stock (
    org_id    bigint NOT NULL,
    sku       text COLLATE "C" NOT NULL,
    warehouse text COLLATE "C" NOT NULL,
    on_hand   bigint NOT NULL CHECK (on_hand >= 0),
    PRIMARY KEY (org_id, sku, warehouse)
);

-- Rack assignment: the quantity a location holds of a SKU (0 still counts as assigned).
CREATE TABLE location_stock (
    org_id    bigint NOT NULL,
    sku       text COLLATE "C" NOT NULL,
    warehouse text COLLATE "C" NOT NULL,
    location  text COLLATE "C" NOT NULL,
    quantity  bigint NOT NULL CHECK (quantity >= 0),
    PRIMARY KEY (org_id, sku, warehouse, location)
);

CREATE TABLE reservations (
    org_id    bigint NOT NULL,
    ref       text COLLATE "C" NOT NULL,
    sku       text COLLATE "C" NOT NULL,
    warehouse text COLLATE "C" NOT NULL,
    quantity  bigint NOT NULL CHECK (quantity >= 0),
    status    text NOT NULL CHECK (status IN ('active', 'released', 'consumed')),
    PRIMARY KEY (org_id, ref)
);
CREATE INDEX reservations_sku ON reservations (org_id, sku, warehouse) WHERE status = 'active';

-- The stock export, kept current in the same transaction as every write that changes it
-- (wl_refresh_availability_from), so that the export is one ordered read of this table. The
-- primary key carries qty and location, so that read (ORDER BY sku of one organization) is an
-- index-only scan: rows in key order from the index alone, as fast as a sequential read,
-- instead of one heap fetch per SKU in whatever order updates left the heap (1,000,000 SKUs:
-- 0.5 s against 3 s on the benchmark machine). Rows of pages changed since the last
-- (auto)vacuum are still checked in the heap, so only the speed depends on vacuum keeping up.
CREATE TABLE stock_availability (
    org_id   bigint NOT NULL,
    sku      text COLLATE "C" NOT NULL,
    qty      bigint NOT NULL CHECK (qty >= 0),
    location text COLLATE "C",
    PRIMARY KEY (org_id, sku) INCLUDE (qty, location)
);

-- A data version per organization for the stock export's ETag (CONTRACT section 4): it moves
-- exactly when a stock_availability row of the organization changes, in the same transaction
-- (wl__export_changed), so a conditional export is answered from this one row without reading
-- the export itself. version only grows: each change sets it to greatest(version + 1,
-- microseconds since the epoch), so the ETag "<org_id>-<version>" does not come back after the
-- database is restored from a backup or rebuilt, which a plain counter starting at 1 would.
CREATE TABLE export_versions (
    org_id     bigint PRIMARY KEY REFERENCES organizations (org_id),
    version    bigint NOT NULL,
    changed_at timestamptz
);

-- Walk lists keep their creation time to the microsecond, so that lists one client creates one
-- after the other within the same millisecond still queue in creation order (the scanner queue
-- is ordered by created_at, then id, which is random). Answers show milliseconds (every reader
-- floors to them).
CREATE TABLE locate_lists (
    org_id     bigint NOT NULL REFERENCES organizations (org_id),
    id         text COLLATE "C" NOT NULL,
    name       text NOT NULL,
    codes      text[] COLLATE "C" NOT NULL,
    state      text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'loaded')),
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    loaded_at  timestamptz,
    PRIMARY KEY (org_id, id)
);
-- The scanner queue: an organization's pending lists, oldest first.
CREATE INDEX locate_lists_queue ON locate_lists (org_id, created_at, id) WHERE state = 'pending';

-- Server-wide secrets, shared by every walklistd process on this database: the key that
-- seals page tokens (name 'page_token'). Rows are created on first use from the OS CSPRNG
-- (wl_secrets_get), never here, so that no two databases share a secret. Not organization
-- data, so the one other table (besides api_keys) whose key does not lead with org_id; under
-- a distributed database it is a reference table.
CREATE TABLE server_secrets (
    name       text COLLATE "C" PRIMARY KEY,
    secret     bytea NOT NULL CHECK (length(secret) >= 32),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Rate limits (CONTRACT section 8): the requests counted in the last window per organization
-- and bucket, counts[k] of them at hits[k] (counts NULL: one per hit), oldest first; wl_admit
-- decides. A row stays small (at most `limit` entries); its row lock serialises the decision
-- across every walklistd process that shares the database.
CREATE TABLE rate_limits (
    org_id bigint NOT NULL REFERENCES organizations (org_id),
    bucket text COLLATE "C" NOT NULL,
    hits   timestamptz[] NOT NULL DEFAULT '{}',
    counts integer[],
    PRIMARY KEY (org_id, bucket)
);

-- Idempotency-Key (CONTRACT section 5): the first list created with a key, and a hash of what
-- was asked (name and normalised codes), for 24 hours.
CREATE TABLE idempotency_keys (
    org_id       bigint NOT NULL REFERENCES organizations (org_id),
    key          text COLLATE "C" NOT NULL,
    request_hash bytea NOT NULL,
    list_id      text COLLATE "C" NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, key),
    -- The key is claimed before its list is written, in the same transaction.
    FOREIGN KEY (org_id, list_id) REFERENCES locate_lists (org_id, id) DEFERRABLE INITIALLY DEFERRED
);
CREATE INDEX idempotency_keys_age ON idempotency_keys (created_at);

-- Processes that keep checked keys in memory hear of every change of a key or of an
-- organization's slug (wl__keys_changed).
CREATE TRIGGER api_keys_changed AFTER UPDATE OR DELETE ON api_keys
    FOR EACH ROW EXECUTE FUNCTION wl__keys_changed();
CREATE TRIGGER organizations_changed AFTER UPDATE OF slug OR DELETE ON organizations
    FOR EACH ROW EXECUTE FUNCTION wl__keys_changed();
