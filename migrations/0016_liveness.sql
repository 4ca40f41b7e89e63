-- Liveness (#17, docs/lifecycle.md): check-in links, guardians who have said yes, and a
-- verification that never stalls in silence.

-- One row per owner email that carries a one-time check-in link. The token is never stored:
-- it is an HMAC of the outbox row id under a subkey of the ENCRYPTION_KEYS ring, made when the
-- email is rendered, and only its SHA-256 digest is kept (with the key id it was made under,
-- so a retry renders the same link after a key rotation). Any check-in deletes every link of
-- the plan: a link is single use and ends at the first check-in of any kind.
CREATE TABLE check_in_links (
    outbox_id  uuid PRIMARY KEY REFERENCES outbox (id) ON DELETE CASCADE,
    plan_id    uuid NOT NULL REFERENCES plans (id) ON DELETE CASCADE,
    digest     bytea UNIQUE,            -- NULL until the email is rendered
    key_id     text,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX check_in_links_plan_idx ON check_in_links (plan_id);

-- A guardian counts once they have accepted; a new wallet address asks them again.
ALTER TABLE guardians
    ADD COLUMN invited_at  timestamptz,
    ADD COLUMN accepted_at timestamptz,
    ADD COLUMN declined_at timestamptz,
    ADD CONSTRAINT guardians_one_answer CHECK (accepted_at IS NULL OR declined_at IS NULL);

ALTER TABLE plans
    -- NULL: no deadline (wait for the guardians or the owner for ever).
    ADD COLUMN verification_timeout_seconds integer CHECK (verification_timeout_seconds > 0),
    ADD COLUMN on_verification_timeout      text NOT NULL DEFAULT 'wait'
        CHECK (on_verification_timeout IN ('wait', 'release')),
    -- Scheduler stages of the current verification done (guardian reminders, the deadline).
    ADD COLUMN verification_stage_done      smallint NOT NULL DEFAULT 0,
    -- Set when the deadline passed and the plan went on waiting (journey: "waiting").
    ADD COLUMN verification_timed_out_at    timestamptz,
    -- The owner's last veto: guardians' next report waits PLAN_REPORT_COOLDOWN_SECONDS.
    ADD COLUMN last_vetoed_at               timestamptz;

-- Guardians recorded before this migration have never been asked: invite them now (the email
-- sweep sends pending outbox rows), unless their owner's plan is already released.
UPDATE guardians g SET invited_at = now()
    FROM plans p WHERE p.user_id = g.user_id AND p.status <> 'Released';
INSERT INTO outbox (kind, plan_id, recipient_type, recipient_id, context, next_attempt_at, created_at)
    SELECT 'guardian_invitation', p.id, 'guardian', g.id,
           jsonb_build_object('walletAddress', g.wallet_address), now(), now()
    FROM guardians g JOIN plans p ON p.user_id = g.user_id WHERE p.status <> 'Released';
