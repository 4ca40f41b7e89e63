-- The per-client email budget's spend, kept outside the account's cascade (docs/security.md,
-- "Nobody's mail relay"): an outbox row goes with its plan when the account is deleted, so a
-- count read from the outbox alone let create, invite, delete, repeat spend the per-client budget
-- again and again. One row per counted email with a client digest, written in the transaction
-- that counts it; its outbox row is forgotten (SET NULL) with the account, the spend is not.
-- Rows older than the budget's window are pruned by the outbox sweep.
CREATE TABLE IF NOT EXISTS email_budget_spend (
    id            bigserial PRIMARY KEY,
    client_digest bytea NOT NULL,
    outbox_id     uuid REFERENCES outbox (id) ON DELETE SET NULL,
    at            timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS email_budget_spend_client_idx ON email_budget_spend (client_digest, at);
CREATE INDEX IF NOT EXISTS email_budget_spend_outbox_idx ON email_budget_spend (outbox_id)
    WHERE outbox_id IS NOT NULL;
INSERT INTO email_budget_spend (client_digest, outbox_id, at)
    SELECT client_digest, id, budget_at FROM outbox
    WHERE budget_at IS NOT NULL AND client_digest IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM email_budget_spend s WHERE s.outbox_id = outbox.id);
