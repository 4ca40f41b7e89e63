-- An heir hears of the plan and of their request (docs/lifecycle.md, "An heir can ask").
-- `notify_beneficiaries_on_activation`: the owner's choice that each heir is emailed their link
-- once while the plan is Active (neutral words; the page opens nothing until the release; its
-- outbox row keeps it once per heir). `outcome`: what the heir who asked was last told
-- (`waiting`: the deadline passed and the plan waits; `well`: the owner checked in; `released`).
ALTER TABLE plans ADD COLUMN IF NOT EXISTS notify_beneficiaries_on_activation boolean NOT NULL DEFAULT false;
ALTER TABLE heir_requests ADD COLUMN IF NOT EXISTS outcome text;
ALTER TABLE heir_requests ADD COLUMN IF NOT EXISTS outcome_at timestamptz;
