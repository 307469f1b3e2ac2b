-- Kept only because migration 0001 creates triggers on it; 0002 drops those triggers (key
-- changes are announced by the transactions that make them: wl_keys_revoke). It was the trigger
-- function of api_keys and organizations: a process that keeps verified keys in memory forgets them when this
-- announcement (channel wl_keys_changed: the key's prefix, or '*' for every key) arrives. Keys
-- are never changed otherwise (only revoked), so UPDATE and DELETE are what matter; an
-- organization's slug travels with its keys' answers, so its changes are announced too.
CREATE OR REPLACE FUNCTION wl__keys_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('wl_keys_changed', CASE TG_TABLE_NAME WHEN 'api_keys'
                                         THEN coalesce(NEW.prefix, OLD.prefix) ELSE '*' END);
    RETURN NULL;
END;
$$;

