-- #24 section 4: an heir can ask. An heir's request to verify (through their claim link) starts
-- a verification like a guardian's report; the owner may turn requests off.
ALTER TABLE plans ADD COLUMN IF NOT EXISTS allow_beneficiary_requests boolean NOT NULL DEFAULT true;

ALTER TABLE plans DROP CONSTRAINT IF EXISTS plans_verification_reason_check;
ALTER TABLE plans ADD CONSTRAINT plans_verification_reason_check
    CHECK (verification_reason IN ('inactivity', 'guardian_report', 'beneficiary_request'));

ALTER TABLE plan_transitions DROP CONSTRAINT IF EXISTS plan_transitions_actor_check;
ALTER TABLE plan_transitions ADD CONSTRAINT plan_transitions_actor_check
    CHECK (actor IN ('owner', 'guardian', 'scheduler', 'contract', 'beneficiary'));

-- One row per request that started a verification: who asked (the heir's row; their name is
-- read from it) and their optional note, sealed at rest (models/sealed_text.py), never on the
-- timeline. The guardians' emails render the note from here at send time.
CREATE TABLE IF NOT EXISTS heir_requests (
    id             uuid PRIMARY KEY,
    plan_id        uuid NOT NULL REFERENCES plans (id) ON DELETE CASCADE,
    round          integer NOT NULL,
    beneficiary_id uuid REFERENCES beneficiaries (id) ON DELETE SET NULL,
    note_sealed    text,
    created_at     timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS heir_requests_plan_idx ON heir_requests (plan_id, round);
