-- Heirs' addresses confirmed before they are needed (#28, docs/capsule.md "An heir's address,
-- confirmed early"): the owner asks, the heir gets a one-time link; the table keeps only the
-- link token's SHA-256 digest, with the blind index of the address it was sent to (a link
-- confirms that address only, never one the owner typed since). Single use, 30 days.
CREATE TABLE IF NOT EXISTS email_confirmations (
    digest         bytea PRIMARY KEY,
    beneficiary_id uuid NOT NULL REFERENCES beneficiaries (id) ON DELETE CASCADE,
    outbox_id      uuid NOT NULL,
    email_bidx     bytea,
    created_at     timestamptz NOT NULL,
    expires_at     timestamptz NOT NULL,
    used_at        timestamptz
);
CREATE INDEX IF NOT EXISTS email_confirmations_beneficiary_idx ON email_confirmations (beneficiary_id, created_at);

-- When the heir confirmed their current address; cleared when the owner changes it.
ALTER TABLE beneficiaries ADD COLUMN IF NOT EXISTS email_confirmed_at timestamptz;
