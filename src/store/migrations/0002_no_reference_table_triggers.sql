-- Key changes are announced by the transactions that make them (wl_keys_revoke sends
-- pg_notify('wl_keys_changed', prefix) before it commits), not by triggers: a distributed
-- database (Citus) refuses triggers on reference tables, which organizations and api_keys are
-- there. Nothing changes an organization's slug; a revocation done by hand in SQL must send
-- the same announcement (README, "Administration").
DROP TRIGGER IF EXISTS api_keys_changed ON api_keys;
DROP TRIGGER IF EXISTS organizations_changed ON organizations;
