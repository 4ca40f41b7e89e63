-- A corrected heir address (docs/lifecycle.md, "A corrected heir address"): an accepted guardian
-- proposes a new address for an heir. Before the release it goes to the owner (`to_owner`), who
-- edits the address; after it, the plan's threshold of guardians agrees (`pending`), then it
-- waits the hold (`holding`, until `hold_until`) during which any guardian can stop it
-- (`stopped`), then the new address gets a confirmation link (`confirming`) and, confirmed, it
-- becomes the heir's and their claim link goes there (`applied`). The address is sealed
-- (models/sealed_text.py); who proposed, agreed and stopped are kept for the timeline.
CREATE TABLE IF NOT EXISTS address_changes (
    id             uuid PRIMARY KEY,
    plan_id        uuid NOT NULL REFERENCES plans (id) ON DELETE CASCADE,
    beneficiary_id uuid NOT NULL REFERENCES beneficiaries (id) ON DELETE CASCADE,
    email_sealed   text NOT NULL,
    proposed_by    uuid REFERENCES guardians (id) ON DELETE SET NULL,
    status         text NOT NULL,
    created_at     timestamptz NOT NULL,
    hold_until     timestamptz,
    stopped_by     uuid REFERENCES guardians (id) ON DELETE SET NULL,
    decided_at     timestamptz
);
CREATE INDEX IF NOT EXISTS address_changes_beneficiary_idx ON address_changes (beneficiary_id, status);
CREATE INDEX IF NOT EXISTS address_changes_holding_idx ON address_changes (hold_until) WHERE status = 'holding';

CREATE TABLE IF NOT EXISTS address_change_approvals (
    change_id   uuid NOT NULL REFERENCES address_changes (id) ON DELETE CASCADE,
    guardian_id uuid NOT NULL REFERENCES guardians (id) ON DELETE CASCADE,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (change_id, guardian_id)
);
