-- Personal data at rest (#18 item 3, models/sealed_text.py, docs/sealed-text.md): the names,
-- relationships and email addresses of owners, beneficiaries and guardians, asset labels,
-- descriptions and amounts, and guardian report notes are stored sealed under the
-- ENCRYPTION_KEYS ring in `<column>_sealed`, as 0012 did for messages and archive texts. The key
-- is not in the database, so existing rows keep their plaintext until the worker's
-- `reseal_private_texts` cron seals it and sets the old column to NULL; new rows never write it.
-- Email addresses also get `email_bidx`, a keyed blind index (HMAC-SHA256), to find a row by
-- address without storing it. Wallet addresses are public identifiers and stay as they are.
ALTER TABLE users
    ADD COLUMN IF NOT EXISTS name_sealed text,
    ADD COLUMN IF NOT EXISTS email_sealed text,
    ADD COLUMN IF NOT EXISTS email_bidx bytea;
ALTER TABLE beneficiaries
    ADD COLUMN IF NOT EXISTS name_sealed text,
    ADD COLUMN IF NOT EXISTS relationship_sealed text,
    ADD COLUMN IF NOT EXISTS email_sealed text,
    ADD COLUMN IF NOT EXISTS email_bidx bytea,
    ALTER COLUMN name DROP NOT NULL,
    ALTER COLUMN relationship DROP NOT NULL,
    ALTER COLUMN email DROP NOT NULL;
ALTER TABLE guardians
    ADD COLUMN IF NOT EXISTS name_sealed text,
    ADD COLUMN IF NOT EXISTS email_sealed text,
    ADD COLUMN IF NOT EXISTS relationship_sealed text,
    ADD COLUMN IF NOT EXISTS email_bidx bytea,
    ALTER COLUMN name DROP NOT NULL,
    ALTER COLUMN email DROP NOT NULL;
-- The amount is sealed as the decimal string the owner sent; the bounds the NUMERIC CHECK kept
-- (>= 0, < 1e31, at most 7 decimals) are the request schema's (api/contents/assets.py).
ALTER TABLE assets
    ADD COLUMN IF NOT EXISTS label_sealed text,
    ADD COLUMN IF NOT EXISTS description_sealed text,
    ADD COLUMN IF NOT EXISTS amount_sealed text,
    ALTER COLUMN label DROP NOT NULL,
    ALTER COLUMN amount DROP NOT NULL;
ALTER TABLE plan_reports
    ADD COLUMN IF NOT EXISTS guardian_name_sealed text,
    ADD COLUMN IF NOT EXISTS note_sealed text,
    ALTER COLUMN guardian_name DROP NOT NULL;
ALTER TABLE plan_approvals
    ADD COLUMN IF NOT EXISTS guardian_name_sealed text,
    ALTER COLUMN guardian_name DROP NOT NULL;
ALTER TABLE plan_transitions
    ADD COLUMN IF NOT EXISTS actor_name_sealed text;

-- Each value lives in one place: sealed, or (rows from before) plain; required ones in one of them.
ALTER TABLE users DROP CONSTRAINT IF EXISTS users_text_once;
ALTER TABLE users ADD CONSTRAINT users_text_once CHECK (
    num_nonnulls(name, name_sealed) <= 1 AND num_nonnulls(email, email_sealed) <= 1
);
ALTER TABLE beneficiaries DROP CONSTRAINT IF EXISTS beneficiaries_text_once;
ALTER TABLE beneficiaries ADD CONSTRAINT beneficiaries_text_once CHECK (
    num_nonnulls(name, name_sealed) = 1 AND num_nonnulls(relationship, relationship_sealed) = 1
    AND num_nonnulls(email, email_sealed) = 1
);
ALTER TABLE guardians DROP CONSTRAINT IF EXISTS guardians_text_once;
ALTER TABLE guardians ADD CONSTRAINT guardians_text_once CHECK (
    num_nonnulls(name, name_sealed) = 1 AND num_nonnulls(email, email_sealed) = 1
    AND num_nonnulls(relationship, relationship_sealed) <= 1
);
ALTER TABLE assets DROP CONSTRAINT IF EXISTS assets_text_once;
ALTER TABLE assets ADD CONSTRAINT assets_text_once CHECK (
    num_nonnulls(label, label_sealed) = 1 AND num_nonnulls(amount, amount_sealed) = 1
    AND num_nonnulls(description, description_sealed) <= 1
);
ALTER TABLE plan_reports DROP CONSTRAINT IF EXISTS plan_reports_text_once;
ALTER TABLE plan_reports ADD CONSTRAINT plan_reports_text_once CHECK (
    num_nonnulls(guardian_name, guardian_name_sealed) = 1 AND num_nonnulls(note, note_sealed) <= 1
);
ALTER TABLE plan_approvals DROP CONSTRAINT IF EXISTS plan_approvals_text_once;
ALTER TABLE plan_approvals ADD CONSTRAINT plan_approvals_text_once CHECK (
    num_nonnulls(guardian_name, guardian_name_sealed) = 1
);
ALTER TABLE plan_transitions DROP CONSTRAINT IF EXISTS plan_transitions_text_once;
ALTER TABLE plan_transitions ADD CONSTRAINT plan_transitions_text_once CHECK (
    num_nonnulls(actor_name, actor_name_sealed) <= 1
);

-- Finding a row by address (the claim-link resend looks a beneficiary up across every plan).
CREATE INDEX IF NOT EXISTS users_email_bidx_idx ON users (email_bidx) WHERE email_bidx IS NOT NULL;
CREATE INDEX IF NOT EXISTS beneficiaries_email_bidx_idx ON beneficiaries (email_bidx)
    WHERE email_bidx IS NOT NULL;
CREATE INDEX IF NOT EXISTS guardians_email_bidx_idx ON guardians (email_bidx) WHERE email_bidx IS NOT NULL;

-- The Family Timeline named the guardian in these entries; it now says "A guardian" and keeps
-- the guardian's id (metadata.guardianId), so the activity table holds no name. Old entries
-- are rewritten the same way: the words are fixed, nothing is lost but the name.
UPDATE activity SET summary = 'A guardian reported that you may have died or cannot act'
    WHERE kind = 'guardian.reported' AND summary <> 'A guardian reported that you may have died or cannot act';
UPDATE activity SET summary = 'A guardian approved the release'
    WHERE kind = 'guardian.approved' AND summary <> 'A guardian approved the release';
UPDATE activity SET metadata = metadata - 'actorName' WHERE metadata ? 'actorName';
