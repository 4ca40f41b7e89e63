-- #24: a declined guardian never counts. The approvals a verification round needs are computed
-- when the round starts (the owner's number, or a majority of the guardians who have not
-- declined) and frozen for that round; NULL outside a round and for rounds started before this
-- migration (those read the rule live).
ALTER TABLE plans ADD COLUMN IF NOT EXISTS round_threshold integer CHECK (round_threshold > 0);
