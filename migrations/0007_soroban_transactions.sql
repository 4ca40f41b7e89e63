-- Contract transactions the service built and relays to the Soroban RPC node, and the wallets
-- beneficiaries claim with. Flow and every decision: docs/soroban.md.

CREATE TABLE transactions (
    id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    hash                text NOT NULL UNIQUE CHECK (hash ~ '^[0-9a-f]{64}$'),  -- computed from the XDR
    function            text NOT NULL
        CHECK (function IN ('approve_guardian', 'finalize_release', 'claim_assets')),
    user_id             uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,  -- the plan's owner
    plan_id             uuid,                      -- the owner's plan (one per owner)
    guardian_id         uuid REFERENCES guardians (id) ON DELETE SET NULL,
    signer_user_id      uuid REFERENCES users (id) ON DELETE SET NULL,  -- the guardian's account
    beneficiary_id      uuid REFERENCES beneficiaries (id) ON DELETE SET NULL,
    signer              text NOT NULL,             -- the wallet that signed: the source account
    status              text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'confirmed', 'failed')),
    accepted            boolean NOT NULL DEFAULT false,  -- the node took it (PENDING or DUPLICATE)
    attempts            integer NOT NULL DEFAULT 0,      -- relay runs, across re-drives
    ledger              integer,
    confirmed_at        timestamptz,               -- the ledger's close time, as the node reports it
    contract_error_code integer,
    reason              text,                      -- why it failed, for the person who signed it
    valid_until         timestamptz NOT NULL,      -- the envelope's time bound
    xdr                 text NOT NULL,             -- the signed envelope, relayed as is
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    CHECK (status <> 'confirmed' OR (ledger IS NOT NULL AND confirmed_at IS NOT NULL)),
    CHECK (status <> 'failed' OR reason IS NOT NULL)
);
-- The sweeper reads only pending rows; the owner's claims view reads by owner.
CREATE INDEX transactions_pending_idx ON transactions (updated_at) WHERE status = 'pending';
CREATE INDEX transactions_user_idx ON transactions (user_id, function, created_at DESC);
-- A beneficiary claims once: at most one confirmed claim_assets each.
CREATE UNIQUE INDEX transactions_one_claim_idx ON transactions (beneficiary_id)
    WHERE function = 'claim_assets' AND status = 'confirmed';

-- Optional: set by the owner, or bound by the first confirmed claim_assets.
ALTER TABLE beneficiaries ADD COLUMN wallet_address text;
CREATE UNIQUE INDEX beneficiaries_wallet_idx ON beneficiaries (user_id, wallet_address)
    WHERE wallet_address IS NOT NULL;
