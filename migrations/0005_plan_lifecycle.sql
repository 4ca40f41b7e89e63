-- The plan lifecycle: one plan per owner, its guardian reports and approvals, its transitions,
-- and the email outbox. Design and every decision: docs/lifecycle.md.

CREATE TABLE plans (
    id                        uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id                   uuid NOT NULL UNIQUE REFERENCES users (id) ON DELETE CASCADE,
    status                    text NOT NULL DEFAULT 'Draft'
        CHECK (status IN ('Draft', 'Active', 'PendingVerification', 'Approved', 'Released')),
    -- Owner settings, in seconds; operators bound them from below (PLAN_MIN_* settings).
    check_in_interval_seconds integer NOT NULL DEFAULT 7776000 CHECK (check_in_interval_seconds > 0),
    grace_period_seconds      integer NOT NULL DEFAULT 1209600 CHECK (grace_period_seconds >= 0),
    cancel_window_seconds     integer NOT NULL DEFAULT 259200 CHECK (cancel_window_seconds >= 0),
    -- NULL: a majority of the guardians at the time it is read.
    guardian_threshold        integer CHECK (guardian_threshold >= 1),
    activated_at              timestamptz,
    -- The current check-in cycle starts at last_check_in_at and falls due at check_in_due_at.
    last_check_in_at          timestamptz,
    check_in_due_at           timestamptz,
    -- How many scheduler stages of this cycle are done (reminders, grace notice): a stage is
    -- sent at most once per cycle because this moves with the outbox row, under a row lock.
    stage_done                smallint NOT NULL DEFAULT 0,
    -- When the scheduler next has something to do for this plan; NULL = nothing.
    next_due_at               timestamptz,
    -- Each verification is a round; approvals and reports belong to one, a veto ends it.
    verification_round        integer NOT NULL DEFAULT 0,
    verification_started_at   timestamptz,
    verification_reason       text CHECK (verification_reason IN ('inactivity', 'guardian_report')),
    approved_at               timestamptz,
    release_at                timestamptz,
    released_at               timestamptz,
    created_at                timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at                timestamptz NOT NULL DEFAULT clock_timestamp(),
    CHECK (status <> 'Released' OR released_at IS NOT NULL),
    CHECK (status NOT IN ('Approved', 'Released') OR approved_at IS NOT NULL)
);
-- The scan reads only plans that are due: its cost follows due plans, not all plans.
CREATE INDEX plans_next_due_idx ON plans (next_due_at, id) WHERE next_due_at IS NOT NULL;

-- A guardian's account finds its guardianships by wallet.
CREATE INDEX guardians_wallet_idx ON guardians (wallet_address);

-- Evidence of each approval: the attestation text and the signature over it (or, on-chain,
-- the transaction hash). Kept after a veto (voided_at set) as history.
CREATE TABLE plan_approvals (
    id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    plan_id          uuid NOT NULL REFERENCES plans (id) ON DELETE CASCADE,
    round            integer NOT NULL,
    guardian_id      uuid REFERENCES guardians (id) ON DELETE SET NULL,
    guardian_name    text NOT NULL,
    wallet_address   text NOT NULL,
    approver_user_id uuid REFERENCES users (id) ON DELETE SET NULL,
    source           text NOT NULL DEFAULT 'attestation' CHECK (source IN ('attestation', 'onchain')),
    message          text,
    signature        text,
    tx_hash          text,
    created_at       timestamptz NOT NULL,
    voided_at        timestamptz,
    UNIQUE (plan_id, round, wallet_address),
    UNIQUE (plan_id, round, approver_user_id)
);

CREATE TABLE plan_reports (
    id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    plan_id          uuid NOT NULL REFERENCES plans (id) ON DELETE CASCADE,
    round            integer NOT NULL,
    guardian_id      uuid REFERENCES guardians (id) ON DELETE SET NULL,
    guardian_name    text NOT NULL,
    reporter_user_id uuid REFERENCES users (id) ON DELETE SET NULL,
    note             text,                          -- the guardian's words; never in the timeline
    created_at       timestamptz NOT NULL
);
CREATE INDEX plan_reports_plan_idx ON plan_reports (plan_id, round);

-- Every state change, with who or what caused it: the journey's history.
CREATE TABLE plan_transitions (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    plan_id     uuid NOT NULL REFERENCES plans (id) ON DELETE CASCADE,
    from_status text NOT NULL,
    to_status   text NOT NULL,
    actor       text NOT NULL CHECK (actor IN ('owner', 'guardian', 'scheduler', 'contract')),
    actor_name  text,                               -- the guardian's name when actor = guardian
    reason      text NOT NULL,
    at          timestamptz NOT NULL,
    seq         bigint GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX plan_transitions_plan_idx ON plan_transitions (plan_id, seq);

-- Email to send, written in the transaction of the event that causes it. It holds references
-- (kind, plan, recipient), never a rendered body or a claim token: those are made at send time.
CREATE TABLE outbox (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    kind            text NOT NULL,
    plan_id         uuid REFERENCES plans (id) ON DELETE CASCADE,
    recipient_type  text NOT NULL CHECK (recipient_type IN ('owner', 'guardian', 'beneficiary')),
    recipient_id    uuid NOT NULL,
    context         jsonb NOT NULL DEFAULT '{}'::jsonb,  -- non-secret facts the template needs
    status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'failed', 'skipped')),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL,
    last_error      text,
    created_at      timestamptz NOT NULL,
    finished_at     timestamptz
);
CREATE INDEX outbox_pending_idx ON outbox (next_attempt_at) WHERE status = 'pending';
CREATE INDEX outbox_plan_idx ON outbox (plan_id, created_at);
