-- A claim link is never lost (#16, docs/capsule.md "A link is never lost").
-- An heir asks for their link again by address (POST /api/claim/resend): the request is a row,
-- committed whatever the address, and the worker does the lookup, so the response and its
-- timing say nothing about a match. The address is sealed under ENCRYPTION_KEYS (AAD: table,
-- column, row id) and the row is deleted once processed: nothing records whether it matched.
CREATE TABLE IF NOT EXISTS claim_link_requests (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    email_sealed text NOT NULL,
    created_at   timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS claim_link_requests_created_idx ON claim_link_requests (created_at);

-- The lookup by address (models.contents.beneficiaries.find_by_email): the keyed blind index of
-- the sealed address.
CREATE INDEX IF NOT EXISTS beneficiaries_email_bidx_idx ON beneficiaries (email_bidx)
    WHERE email_bidx IS NOT NULL;

-- The per-beneficiary resend limit counts these rows (claim_link with context stage 'resend').
CREATE INDEX IF NOT EXISTS outbox_claim_link_idx ON outbox (recipient_id, created_at)
    WHERE kind = 'claim_link';
