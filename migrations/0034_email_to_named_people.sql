-- Nobody's mail relay (docs/security.md): emails to addresses an owner typed (guardian
-- invitations, address confirmations) have a daily budget per account and per client address.
-- `deferred`: a budgeted email waiting for its day to free; the outbox sweep lets it go.
ALTER TABLE outbox DROP CONSTRAINT IF EXISTS outbox_status_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_status_check
    CHECK (status IN ('pending', 'deferred', 'sent', 'failed', 'skipped'));
-- When a budgeted email was let go (at once, or from `deferred`): it counts against its plan's
-- and its client address's rolling 24 h from then. NULL for every other email.
ALTER TABLE outbox ADD COLUMN IF NOT EXISTS budget_at timestamptz;
-- The client address that caused a budgeted email, as a keyed digest (HMAC-SHA256 under a
-- key-ring subkey of the address, an IPv6 address's /64), never the address itself.
ALTER TABLE outbox ADD COLUMN IF NOT EXISTS client_digest bytea;
CREATE INDEX IF NOT EXISTS outbox_budget_plan_idx ON outbox (plan_id, budget_at) WHERE budget_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS outbox_budget_client_idx ON outbox (client_digest, budget_at)
    WHERE budget_at IS NOT NULL AND client_digest IS NOT NULL;
CREATE INDEX IF NOT EXISTS outbox_deferred_idx ON outbox (created_at, id) WHERE status = 'deferred';
