-- An objection asks the owner to check in, and lapses if they don't (docs/lifecycle.md
-- "Objections"). Each guardian's window runs from their first objection in the round:
-- `lapses_at` is set when the row is first written and never moved (withdrawing and objecting
-- again keeps it); `remind_at` is when the owner is reminded, halfway (cleared once sent);
-- `lapsed_at` marks an objection that lapsed (its `withdrawn_at` is set with it, so every reader
-- of standing objections sees it gone; the guardian cannot object again in that round).
ALTER TABLE plan_objections ADD COLUMN IF NOT EXISTS lapses_at timestamptz;
ALTER TABLE plan_objections ADD COLUMN IF NOT EXISTS remind_at timestamptz;
ALTER TABLE plan_objections ADD COLUMN IF NOT EXISTS lapsed_at timestamptz;
-- Rows from before: the migration cannot read PLAN_OBJECTION_CHECK_IN_SECONDS, and the owner was
-- never told a date, so a standing objection gets the default window from now, reminder halfway.
UPDATE plan_objections SET lapses_at = now() + interval '14 days', remind_at = now() + interval '7 days'
 WHERE lapses_at IS NULL AND withdrawn_at IS NULL;
UPDATE plan_objections SET lapses_at = created_at + interval '14 days' WHERE lapses_at IS NULL;
ALTER TABLE plan_objections ALTER COLUMN lapses_at SET NOT NULL;

-- When an objection of the round next needs the scheduler (a reminder or a lapse; NULL: none):
-- `next_due_at` takes it into account, so the scan still walks due plans only.
ALTER TABLE plans ADD COLUMN IF NOT EXISTS objection_due_at timestamptz;
UPDATE plans p SET objection_due_at = d.due
  FROM (SELECT plan_id, round, min(least(coalesce(remind_at, lapses_at), lapses_at)) AS due
          FROM plan_objections WHERE withdrawn_at IS NULL GROUP BY plan_id, round) d
 WHERE d.plan_id = p.id AND d.round = p.verification_round AND p.status = 'PendingVerification';
UPDATE plans SET next_due_at = least(next_due_at, objection_due_at)
 WHERE objection_due_at IS NOT NULL AND status = 'PendingVerification';

-- An heir can stop a change of their own address (docs/lifecycle.md "A corrected heir address"):
-- while a corrected address holds after the release, the heir at their old address gets a
-- one-button link that stops it. The link is a capability: only its SHA-256 digest is kept
-- (`stop_digest`, with the key id it was made under), as for the guardians' pages. A stop by
-- that heir is `stopped_by_heir`. The other heirs cannot stop it; their "This looks wrong" tells
-- the guardians and the heir concerned and extends the hold once (`doubted_at`, `doubted_by`).
ALTER TABLE address_changes ADD COLUMN IF NOT EXISTS stop_digest bytea;
ALTER TABLE address_changes ADD COLUMN IF NOT EXISTS stop_key_id text;
ALTER TABLE address_changes ADD COLUMN IF NOT EXISTS stopped_by_heir boolean NOT NULL DEFAULT false;
ALTER TABLE address_changes ADD COLUMN IF NOT EXISTS doubted_at timestamptz;
ALTER TABLE address_changes ADD COLUMN IF NOT EXISTS doubted_by uuid REFERENCES beneficiaries (id) ON DELETE SET NULL;
CREATE UNIQUE INDEX IF NOT EXISTS address_changes_stop_digest ON address_changes (stop_digest)
    WHERE stop_digest IS NOT NULL;
