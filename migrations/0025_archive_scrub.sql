-- The archive scrub (#27, docs/archive.md "The scrub"): every stored file is read whole again on a
-- schedule; one that no longer opens is `damaged` (with when), the owner is told, and the
-- capsule shows it as damaged in words.
ALTER TABLE archive_items DROP CONSTRAINT archive_items_status_check;
ALTER TABLE archive_items
    ADD CONSTRAINT archive_items_status_check CHECK (status IN ('pending', 'available', 'failed', 'damaged'));
ALTER TABLE archive_items ADD COLUMN damaged_at timestamptz;
COMMENT ON COLUMN archive_items.damaged_at IS 'when the scrub found the stored file no longer whole';

-- The scrub's own bookkeeping per item, apart from the item so that reading a file never
-- touches the row the owner and the capsule read.
CREATE TABLE archive_scrub (
    item_id     uuid PRIMARY KEY REFERENCES archive_items (id) ON DELETE CASCADE,
    checked_at  timestamptz,                 -- the last whole pass over the file
    position    bigint NOT NULL DEFAULT 0,   -- plaintext bytes verified so far in the current pass
    notified_at timestamptz                  -- the last email to the owner about its damage
);
