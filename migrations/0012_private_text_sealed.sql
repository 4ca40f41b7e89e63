-- Private text at rest (#12 item 8, models/sealed_text.py, docs/sealed-text.md): message
-- titles and content, archive titles, descriptions and file names are stored sealed under the
-- ENCRYPTION_KEYS ring in `<column>_sealed`. The key is not in the database, so existing rows
-- cannot be sealed here: their plaintext stays in the old column until the worker's
-- `reseal_private_texts` cron seals it and sets the old column to NULL. New rows never write it.
ALTER TABLE messages
    ADD COLUMN IF NOT EXISTS title_sealed text,
    ADD COLUMN IF NOT EXISTS content_sealed text,
    ALTER COLUMN content DROP NOT NULL;
ALTER TABLE archive_items
    ADD COLUMN IF NOT EXISTS title_sealed text,
    ADD COLUMN IF NOT EXISTS description_sealed text,
    ADD COLUMN IF NOT EXISTS file_name_sealed text,
    ALTER COLUMN title DROP NOT NULL,
    ALTER COLUMN file_name DROP NOT NULL;

-- Each text lives in one place: sealed, or (rows from before) plain; required ones in one of them.
ALTER TABLE messages DROP CONSTRAINT IF EXISTS messages_text_once;
ALTER TABLE messages ADD CONSTRAINT messages_text_once CHECK (
    num_nonnulls(content, content_sealed) = 1 AND num_nonnulls(title, title_sealed) <= 1
);
ALTER TABLE archive_items DROP CONSTRAINT IF EXISTS archive_items_text_once;
ALTER TABLE archive_items ADD CONSTRAINT archive_items_text_once CHECK (
    num_nonnulls(title, title_sealed) = 1 AND num_nonnulls(file_name, file_name_sealed) = 1
    AND num_nonnulls(description, description_sealed) <= 1
);
