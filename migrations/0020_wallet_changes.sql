-- A lost wallet (#16, docs/soroban.md "A lost wallet"): an heir who no longer holds the wallet
-- bound to them proves a new one through their claim token; the request waits here until the
-- plan's guardians approve it by their threshold, then the new wallet is bound ('guardians').
CREATE TABLE IF NOT EXISTS wallet_changes (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    beneficiary_id uuid NOT NULL REFERENCES beneficiaries (id) ON DELETE CASCADE,
    plan_id        uuid NOT NULL REFERENCES plans (id) ON DELETE CASCADE,
    wallet_address text NOT NULL,                -- proven by the heir's signature
    status         text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'applied', 'replaced')),
    created_at     timestamptz NOT NULL,
    decided_at     timestamptz
);
-- One request waits per heir: a new proof replaces it (and its approvals).
CREATE UNIQUE INDEX IF NOT EXISTS wallet_changes_pending_idx ON wallet_changes (beneficiary_id)
    WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS wallet_changes_plan_idx ON wallet_changes (plan_id) WHERE status = 'pending';

CREATE TABLE IF NOT EXISTS wallet_change_approvals (
    change_id        uuid NOT NULL REFERENCES wallet_changes (id) ON DELETE CASCADE,
    guardian_id      uuid NOT NULL REFERENCES guardians (id) ON DELETE CASCADE,
    approver_user_id uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at       timestamptz NOT NULL,
    PRIMARY KEY (change_id, guardian_id),
    UNIQUE (change_id, approver_user_id)
);
