-- A guardian without a Stellar wallet: name and email are enough to be invited, and they answer
-- with a passkey (WebAuthn) registered when they accept from their page (docs/security.md,
-- "Guardians with a passkey"). Of each passkey only what checks its assertions is kept: the
-- credential id, the public key (COSE), the signature counter and the transports the browser
-- reported; nothing about the device or the person. A re-invitation deletes them.
ALTER TABLE guardians ALTER COLUMN wallet_address DROP NOT NULL;

CREATE TABLE IF NOT EXISTS guardian_passkeys (
    credential_id bytea PRIMARY KEY,
    guardian_id   uuid NOT NULL REFERENCES guardians (id) ON DELETE CASCADE,
    public_key    bytea NOT NULL,
    sign_count    bigint NOT NULL DEFAULT 0 CHECK (sign_count >= 0),
    transports    text[] NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX IF NOT EXISTS guardian_passkeys_guardian_idx ON guardian_passkeys (guardian_id);

-- A passkey guardian's approval has no wallet: it is one per guardian and round instead.
ALTER TABLE plan_approvals ALTER COLUMN wallet_address DROP NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS plan_approvals_passkey_once ON plan_approvals (plan_id, round, guardian_id)
    WHERE wallet_address IS NULL;
ALTER TABLE plan_approvals DROP CONSTRAINT IF EXISTS plan_approvals_source_check;
ALTER TABLE plan_approvals ADD CONSTRAINT plan_approvals_source_check
    CHECK (source IN ('attestation', 'onchain', 'passkey'));
