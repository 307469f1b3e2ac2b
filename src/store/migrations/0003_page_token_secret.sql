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
