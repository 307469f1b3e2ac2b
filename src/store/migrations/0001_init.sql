-- Initial schema. Every primary, unique and foreign key leads with org_id so that the
-- database can later be distributed by organization. Codes are compared byte-wise
-- (COLLATE "C"): SKUs, EANs and bin codes are case-sensitive and exact.

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

CREATE TABLE locations (
    org_id    bigint NOT NULL,
    warehouse text COLLATE "C" NOT NULL,
    code      text COLLATE "C" NOT NULL,
    staging   boolean NOT NULL,
    -- Natural bin order key (wl_bin_sort_key), so SQL sorts bins as the scanner does.
    sort_key  bytea NOT NULL,
    PRIMARY KEY (org_id, warehouse, code),
    FOREIGN KEY (org_id, warehouse) REFERENCES warehouses (org_id, code)
);

CREATE TABLE products (
    org_id bigint NOT NULL REFERENCES organizations (org_id),
    sku    text COLLATE "C" NOT NULL,
    name   text NOT NULL,
    PRIMARY KEY (org_id, sku)
);

-- One EAN may belong to more than one product (it is then ambiguous on the scanner).
CREATE TABLE product_eans (
    org_id bigint NOT NULL,
    ean    text COLLATE "C" NOT NULL,
    sku    text COLLATE "C" NOT NULL,
    PRIMARY KEY (org_id, ean, sku),
    FOREIGN KEY (org_id, sku) REFERENCES products (org_id, sku) ON DELETE CASCADE
);
CREATE INDEX product_eans_sku ON product_eans (org_id, sku);

-- Per-warehouse physical stock record.
CREATE TABLE stock (
    org_id    bigint NOT NULL,
    sku       text COLLATE "C" NOT NULL,
    warehouse text COLLATE "C" NOT NULL,
    on_hand   bigint NOT NULL CHECK (on_hand >= 0),
    PRIMARY KEY (org_id, sku, warehouse),
    FOREIGN KEY (org_id, sku) REFERENCES products (org_id, sku),
    FOREIGN KEY (org_id, warehouse) REFERENCES warehouses (org_id, code)
);
CREATE INDEX stock_warehouse ON stock (org_id, warehouse);

-- Rack assignment: the quantity a location holds of a SKU (0 still counts as assigned).
CREATE TABLE location_stock (
    org_id    bigint NOT NULL,
    sku       text COLLATE "C" NOT NULL,
    warehouse text COLLATE "C" NOT NULL,
    location  text COLLATE "C" NOT NULL,
    quantity  bigint NOT NULL CHECK (quantity >= 0),
    PRIMARY KEY (org_id, sku, warehouse, location),
    FOREIGN KEY (org_id, sku) REFERENCES products (org_id, sku),
    FOREIGN KEY (org_id, warehouse, location) REFERENCES locations (org_id, warehouse, code)
);
CREATE INDEX location_stock_location ON location_stock (org_id, warehouse, location);

CREATE TABLE reservations (
    org_id    bigint NOT NULL,
    ref       text COLLATE "C" NOT NULL,
    sku       text COLLATE "C" NOT NULL,
    warehouse text COLLATE "C" NOT NULL,
    quantity  bigint NOT NULL CHECK (quantity >= 0),
    status    text NOT NULL CHECK (status IN ('active', 'released', 'consumed')),
    PRIMARY KEY (org_id, ref),
    FOREIGN KEY (org_id, sku) REFERENCES products (org_id, sku),
    FOREIGN KEY (org_id, warehouse) REFERENCES warehouses (org_id, code)
);
CREATE INDEX reservations_sku ON reservations (org_id, sku, warehouse) WHERE status = 'active';
CREATE INDEX reservations_warehouse ON reservations (org_id, warehouse);

-- The stock export, kept current in the same transaction as every write that changes it
-- (wl_refresh_availability), so that the export is one ordered read of this table.
CREATE TABLE stock_availability (
    org_id   bigint NOT NULL REFERENCES organizations (org_id),
    sku      text COLLATE "C" NOT NULL,
    qty      bigint NOT NULL CHECK (qty >= 0),
    location text COLLATE "C",
    PRIMARY KEY (org_id, sku)
);

CREATE TABLE locate_lists (
    org_id     bigint NOT NULL REFERENCES organizations (org_id),
    id         text COLLATE "C" NOT NULL,
    name       text NOT NULL,
    codes      text[] COLLATE "C" NOT NULL,
    state      text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'loaded')),
    created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
    loaded_at  timestamptz,
    PRIMARY KEY (org_id, id)
);
-- The scanner queue: an organization's pending lists, oldest first.
CREATE INDEX locate_lists_queue ON locate_lists (org_id, created_at, id) WHERE state = 'pending';

-- Recomputes the export rows of the given SKUs from stock, reservations and rack
-- assignments. Rules (CONTRACT section 4): qty = max(0, on hand in own warehouses - active
-- reservations in own warehouses); location = the non-staging own location holding the most,
-- ties to the smallest code in natural bin order; a SKU is exported when it has a stock record
-- or a non-staging location assignment in an own warehouse.
--
-- Writers of one organization refresh one at a time: the transaction-scoped advisory lock is
-- taken first, and the refresh runs as a separate statement after it, so under READ COMMITTED
-- it sees every writer that committed before (no lost update between concurrent imports).
CREATE FUNCTION wl_refresh_availability(p_org bigint, p_skus text[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(2002872684, (p_org % 2147483647)::integer);
    WITH affected AS (
        SELECT DISTINCT s COLLATE "C" AS sku FROM unnest(p_skus) AS s
    ), on_hand AS (
        SELECT st.sku, sum(st.on_hand) AS on_hand
        FROM stock st
        JOIN warehouses w ON w.org_id = st.org_id AND w.code = st.warehouse AND w.kind = 'own'
        WHERE st.org_id = p_org AND st.sku IN (SELECT sku FROM affected)
        GROUP BY st.sku
    ), reserved AS (
        SELECT r.sku, sum(r.quantity) AS reserved
        FROM reservations r
        JOIN warehouses w ON w.org_id = r.org_id AND w.code = r.warehouse AND w.kind = 'own'
        WHERE r.org_id = p_org AND r.status = 'active' AND r.sku IN (SELECT sku FROM affected)
        GROUP BY r.sku
    ), primary_location AS (
        SELECT DISTINCT ON (ls.sku) ls.sku, ls.location
        FROM location_stock ls
        JOIN warehouses w ON w.org_id = ls.org_id AND w.code = ls.warehouse AND w.kind = 'own'
        JOIN locations l ON l.org_id = ls.org_id AND l.warehouse = ls.warehouse
                        AND l.code = ls.location AND NOT l.staging
        WHERE ls.org_id = p_org AND ls.sku IN (SELECT sku FROM affected)
        ORDER BY ls.sku, ls.quantity DESC, l.sort_key, ls.location, ls.warehouse
    ), computed AS (
        SELECT a.sku,
               greatest(0, coalesce(o.on_hand, 0) - coalesce(r.reserved, 0)) AS qty,
               p.location,
               (o.sku IS NOT NULL OR p.sku IS NOT NULL) AS included
        FROM affected a
        LEFT JOIN on_hand o ON o.sku = a.sku
        LEFT JOIN reserved r ON r.sku = a.sku
        LEFT JOIN primary_location p ON p.sku = a.sku
    ), removed AS (
        DELETE FROM stock_availability sa
        USING computed c
        WHERE sa.org_id = p_org AND sa.sku = c.sku AND NOT c.included
    )
    INSERT INTO stock_availability AS sa (org_id, sku, qty, location)
    SELECT p_org, c.sku, c.qty, c.location FROM computed c WHERE c.included
    ON CONFLICT (org_id, sku) DO UPDATE
        SET qty = excluded.qty, location = excluded.location
        WHERE (sa.qty, sa.location) IS DISTINCT FROM (excluded.qty, excluded.location);
END;
$$;
