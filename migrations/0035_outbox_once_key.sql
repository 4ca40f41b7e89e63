-- A bounce alert is written at most once per alert kind, person alerted, address that bounced and
-- UTC day, even when two bounce events are applied at the same moment. The check for a recent
-- alert in models/delivery/outbox.py (alert_undeliverable) cannot see a row another transaction
-- has not committed yet; this unique key can: the second insert waits for the first to commit,
-- then does nothing (ON CONFLICT DO NOTHING). Rows written before carry no key.
ALTER TABLE outbox ADD COLUMN IF NOT EXISTS once_key text;
CREATE UNIQUE INDEX IF NOT EXISTS outbox_once_key_idx ON outbox (once_key) WHERE once_key IS NOT NULL;
