-- Webhook message ids are compared whole: the table keeps the SHA-256 of the whole id, never the
-- id cut to 200 characters (two long ids sharing their first 200 are two messages, not a replay).
-- Ids already kept become their digest (they live a day; a replay older than 5 minutes fails its
-- signature's timestamp anyway).
ALTER TABLE email_events ADD COLUMN IF NOT EXISTS digest bytea;
UPDATE email_events SET digest = sha256(convert_to(id, 'UTF8')) WHERE digest IS NULL;
ALTER TABLE email_events DROP COLUMN IF EXISTS id;
ALTER TABLE email_events ALTER COLUMN digest SET NOT NULL;
ALTER TABLE email_events ADD PRIMARY KEY (digest);
