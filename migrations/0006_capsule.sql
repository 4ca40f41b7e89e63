-- The beneficiary's capsule (docs/capsule.md). Its contents are read from the plan-contents and
-- archive tables; this only remembers which days a capsule was opened, so the owner's timeline
-- gets `capsule.opened` at most once per beneficiary per UTC day, whichever API process served it.
CREATE TABLE capsule_opens (
    beneficiary_id uuid NOT NULL REFERENCES beneficiaries (id) ON DELETE CASCADE,
    day            date NOT NULL,                     -- UTC day of the open, from the service clock
    PRIMARY KEY (beneficiary_id, day)
);
