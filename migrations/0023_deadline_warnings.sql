-- #24 section 1: no release waits for ever, and none comes unannounced. New plans get a
-- verification deadline from the service's settings when their row is created (the column
-- defaults stay: existing plans keep what they have, none is rewritten here).
-- The owner's warnings before a deadline that releases are their own stages of the round:
-- `deadline_stage_done` counts them (halfway where there is room, then the final warning),
-- `deadline_warned_at` is when the final warning went out (the deadline is then at least
-- `deadline_warning_seconds` after it: after an outage it moves rather than release unannounced),
-- and `deadline_warning_seconds` is PLAN_DEADLINE_WARNING_SECONDS when the round started (rounds
-- running now get the default, one day).
ALTER TABLE plans ADD COLUMN IF NOT EXISTS deadline_stage_done integer NOT NULL DEFAULT 0;
ALTER TABLE plans ADD COLUMN IF NOT EXISTS deadline_warned_at timestamptz;
ALTER TABLE plans ADD COLUMN IF NOT EXISTS deadline_warning_seconds integer NOT NULL DEFAULT 86400
    CHECK (deadline_warning_seconds > 0);
