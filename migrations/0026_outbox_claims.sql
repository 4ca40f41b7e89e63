-- A delivery job no longer holds a connection (and row locks) while the email provider answers
-- (#28, docs/operations.md): it claims its rows in one short transaction, under its job id until
-- `claimed_until`, sends with no connection held, and records the results in another.
-- models/delivery/outbox.py `claim` and `Batch.record`.
ALTER TABLE outbox ADD COLUMN IF NOT EXISTS claimed_by text;
ALTER TABLE outbox ADD COLUMN IF NOT EXISTS claimed_until timestamptz;
