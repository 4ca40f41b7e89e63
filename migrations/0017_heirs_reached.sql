-- Every heir reached (#16). With a contract, the end of an Approved plan's cancel window makes
-- it ready to finalise: the heirs' links are emailed then, and their capsules answer `ready`
-- (docs/soroban.md "Ready to finalise"). Cleared by the owner's check-in, like release_at.
ALTER TABLE plans ADD COLUMN IF NOT EXISTS ready_at timestamptz;

-- The heir's wallet is proven before it can claim (docs/soroban.md, "Beneficiary wallets"):
-- how each bound wallet came to be bound, and when. `owner`: recorded by the plan's owner;
-- `proven`: the heir signed a challenge through their claim token; `guardians`: the plan's
-- guardians approved, by their threshold, a wallet the heir proved (the recovery of a lost
-- owner-recorded wallet); `claim`: bound by a confirmed claim before proofs were required.
ALTER TABLE beneficiaries
    ADD COLUMN IF NOT EXISTS wallet_bound_via text
        CHECK (wallet_bound_via IN ('owner', 'proven', 'guardians', 'claim')),
    ADD COLUMN IF NOT EXISTS wallet_bound_at timestamptz;

UPDATE beneficiaries b
SET wallet_bound_via = CASE WHEN EXISTS (
        SELECT 1 FROM transactions t WHERE t.beneficiary_id = b.id AND t.function = 'claim_assets'
        AND t.status = 'confirmed' AND t.signer = b.wallet_address) THEN 'claim' ELSE 'owner' END,
    wallet_bound_at = b.updated_at
WHERE b.wallet_address IS NOT NULL AND b.wallet_bound_via IS NULL;

ALTER TABLE beneficiaries DROP CONSTRAINT IF EXISTS beneficiaries_wallet_binding;
ALTER TABLE beneficiaries ADD CONSTRAINT beneficiaries_wallet_binding CHECK (
    num_nulls(wallet_address, wallet_bound_via, wallet_bound_at) IN (0, 3)
);
