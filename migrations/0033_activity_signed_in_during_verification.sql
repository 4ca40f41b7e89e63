-- #25: a plan's accepted guardians see the latest sign-in with the owner's wallet during the
-- current verification round (GET /api/legacy/guardianships ownerKeyUsedAt, the guardian's page),
-- read from the timeline entry account.signed_in_during_verification, which carries its round.
-- This partial index makes that read a lookup of the owner's few such entries, never a walk of
-- their whole timeline.
CREATE INDEX IF NOT EXISTS activity_signed_in_during_verification_idx
    ON activity (user_id, created_at DESC)
    WHERE kind = 'account.signed_in_during_verification';
