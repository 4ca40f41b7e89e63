-- The service hears what happened to each email (#28, docs/capsule.md "What happened to an
-- email"): the provider's id for the email, returned at send, and what its webhook later said.
-- `sent_to_bidx` is the keyed blind index of the address the email went to (copied from the
-- recipient's row at send): a bounce counts against a person's address only while they still
-- have that address, so changing it clears the warning without anything else being written.
ALTER TABLE outbox ADD COLUMN IF NOT EXISTS provider_id text;
ALTER TABLE outbox ADD COLUMN IF NOT EXISTS sent_to_bidx bytea;
ALTER TABLE outbox ADD COLUMN IF NOT EXISTS delivery text
    CHECK (delivery IN ('delayed', 'delivered', 'bounced', 'complained'));
ALTER TABLE outbox ADD COLUMN IF NOT EXISTS delivery_at timestamptz;
-- The webhook finds the row by the provider's id.
CREATE INDEX IF NOT EXISTS outbox_provider_id_idx ON outbox (provider_id) WHERE provider_id IS NOT NULL;
-- Readiness and the alerts' once-a-day rule read a recipient's latest outcomes.
CREATE INDEX IF NOT EXISTS outbox_delivery_idx ON outbox (recipient_id, delivery_at)
    WHERE delivery IS NOT NULL;

-- Webhook message ids already applied: a replay (the provider retries until it hears a 2xx)
-- is a no-op. Written in the transaction that applies the event; pruned after a day (a
-- message older than 5 minutes is refused by its signature's timestamp anyway).
CREATE TABLE IF NOT EXISTS email_events (
    id          text PRIMARY KEY,
    received_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS email_events_received_idx ON email_events (received_at);
