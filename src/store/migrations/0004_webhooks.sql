-- Webhooks (README, "Webhooks"): each organization's endpoints, the transactional outbox of
-- its events, and one delivery row per event and endpoint subscribed when the event was
-- written. Events and deliveries are written in the transaction of the change they announce
-- (wl__webhook_enqueue), so an event exists exactly when its change committed; walklistd's
-- delivery workers read them from here. Every table leads with org_id (Citus).

-- secret: the signing key (Standard Webhooks' "whsec_" + base64 of these bytes), shown once
-- by walklistctl webhook add; HMAC needs it, so it is kept, but never shown or logged again.
-- retry_at: when the endpoint's oldest pending delivery is next due (NULL: now); the workers
-- look for endpoints, not deliveries, so that an endpoint in backoff costs nothing to skip.
-- lease_until, lease_owner: the worker delivering to the endpoint (one at a time, across
-- processes: per-endpoint order); a lease that ran out belongs to nobody.
-- failing_since: the first failure since the last success; disabled_at once that is older
-- than walklistd's --webhook-disable-after-s.
CREATE TABLE webhook_endpoints (
    org_id        bigint NOT NULL REFERENCES organizations (org_id),
    id            text COLLATE "C" NOT NULL,
    url           text NOT NULL,
    events        text[] COLLATE "C" NOT NULL,
    secret        bytea NOT NULL CHECK (length(secret) >= 24),
    created_at    timestamptz NOT NULL,
    retry_at      timestamptz,
    lease_until   timestamptz,
    lease_owner   text,
    failing_since timestamptz,
    disabled_at   timestamptz,
    PRIMARY KEY (org_id, id)
);

-- An organization's event counter: taken in the event's transaction and row-locked to its
-- commit, so seq grows in commit order within the organization (a delivery never waits on a
-- smaller seq that commits later).
CREATE TABLE webhook_sequences (
    org_id bigint PRIMARY KEY,
    seq    bigint NOT NULL
);

-- The outbox. id is the webhook-id receivers deduplicate by. data: the event's facts as
-- written (stock.changed: export versions, turned into cursors at delivery).
CREATE TABLE webhook_events (
    org_id     bigint NOT NULL,
    seq        bigint NOT NULL,
    id         text COLLATE "C" NOT NULL,
    type       text COLLATE "C" NOT NULL,
    created_at timestamptz NOT NULL,
    data       jsonb NOT NULL,
    PRIMARY KEY (org_id, seq)
);

-- One event for one endpoint. body and webhook_id are fixed at the first attempt, so every
-- retry sends the same bytes under the same id; a run of stock.changed deliveries not yet
-- attempted is coalesced into the first (state 'coalesced', coalesced_into its seq).
CREATE TABLE webhook_deliveries (
    org_id          bigint NOT NULL,
    endpoint_id     text COLLATE "C" NOT NULL,
    seq             bigint NOT NULL,
    state           text NOT NULL DEFAULT 'pending'
                    CHECK (state IN ('pending', 'delivered', 'coalesced')),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL,
    last_attempt_at timestamptz,
    last_status     integer,
    last_error      text,
    delivered_at    timestamptz,
    coalesced_into  bigint,
    webhook_id      text COLLATE "C",
    body            text,
    PRIMARY KEY (org_id, endpoint_id, seq)
);
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (org_id, endpoint_id, seq)
    WHERE state = 'pending';
