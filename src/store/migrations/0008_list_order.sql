-- Walk lists keep their creation time to the microsecond, so that lists one client creates
-- one after the other within the same millisecond still queue in creation order (the scanner
-- queue is ordered by created_at, then id, which is random). Answers still show milliseconds
-- (every reader floors to them).
ALTER TABLE locate_lists ALTER COLUMN created_at SET DEFAULT clock_timestamp();
