-- #25: a guardian's report may say why (death, incapacity, unreachable, other), so emails and
-- the heir's page use words that fit it (sympathy only when a death was reported). The report
-- keeps its own reason; the plan keeps the round's (the first report that gave one), cleared by
-- the owner's veto, so a delivery and the capsule read it with the plan row they read already.
ALTER TABLE plan_reports ADD COLUMN IF NOT EXISTS reason text
    CHECK (reason IN ('death', 'incapacity', 'unreachable', 'other'));
ALTER TABLE plans ADD COLUMN IF NOT EXISTS report_reason text
    CHECK (report_reason IN ('death', 'incapacity', 'unreachable', 'other'));
