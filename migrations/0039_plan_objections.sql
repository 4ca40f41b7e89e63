-- A guardian's objection during a verification ("This is a mistake: I know they are alive or
-- able to act", docs/lifecycle.md "Objections"): one row per guardian and round, the note sealed
-- (models/sealed_text.py). Withdrawn objections stay, with `withdrawn_at`, for the record; objecting
-- again in the same round brings the row back. `plans.objections` counts the round's standing ones
-- (kept with the rows, under the plan's lock): while it is above zero the deadline does not release.
CREATE TABLE IF NOT EXISTS plan_objections (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    plan_id      uuid NOT NULL REFERENCES plans (id) ON DELETE CASCADE,
    round        integer NOT NULL,
    guardian_id  uuid NOT NULL REFERENCES guardians (id) ON DELETE CASCADE,
    note_sealed  text,
    created_at   timestamptz NOT NULL,
    withdrawn_at timestamptz,
    UNIQUE (plan_id, round, guardian_id)
);

ALTER TABLE plans ADD COLUMN IF NOT EXISTS objections integer NOT NULL DEFAULT 0;

-- When the owner last chose the verification deadline or what happens at it (NULL: the
-- service's default, never changed): guardians are told which (docs/lifecycle.md). Plans from
-- before this migration count as chosen where they differ from the default (30 days, release).
ALTER TABLE plans ADD COLUMN IF NOT EXISTS deadline_chosen_at timestamptz;
UPDATE plans SET deadline_chosen_at = updated_at
 WHERE deadline_chosen_at IS NULL
   AND (verification_timeout_seconds IS DISTINCT FROM 2592000 OR on_verification_timeout <> 'release');
