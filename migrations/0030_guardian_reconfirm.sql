-- #24 section 3: guardians reconfirm. A year (GUARDIAN_RECONFIRM_INTERVAL_SECONDS) after a
-- guardian accepted or last confirmed, they are asked to confirm they can still act; no answer
-- within the grace (GUARDIAN_RECONFIRM_GRACE_SECONDS) makes them unresponsive and tells the owner.
-- `reconfirm_due_at` is when the sweep next has something to do for the guardian (NULL:
-- nothing); the sweep walks the partial index on it, so its cost follows the due guardians.
ALTER TABLE guardians ADD COLUMN IF NOT EXISTS reconfirmed_at timestamptz;
ALTER TABLE guardians ADD COLUMN IF NOT EXISTS reconfirm_asked_at timestamptz;
ALTER TABLE guardians ADD COLUMN IF NOT EXISTS unresponsive_since timestamptz;
ALTER TABLE guardians ADD COLUMN IF NOT EXISTS reconfirm_due_at timestamptz;
CREATE INDEX IF NOT EXISTS guardians_reconfirm_due_idx ON guardians (reconfirm_due_at)
    WHERE reconfirm_due_at IS NOT NULL;
-- Guardians who accepted before this migration are first asked a year (the default interval)
-- after they accepted; a past date means the first sweep asks them.
UPDATE guardians SET reconfirm_due_at = accepted_at + interval '365 days'
    WHERE accepted_at IS NOT NULL AND reconfirm_due_at IS NULL;
