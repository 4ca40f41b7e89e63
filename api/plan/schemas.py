"""The plan room's wire shapes: the owner's plan (/api/legacy) and its check-in link (what a
guardian's account sees: api/plan/guardianships/schemas.py). Each response schema dumps the
record its model returns as it is (`attribute=` names the key, `Whole` groups keys of one record)."""

from __future__ import annotations

from typing import Any

from marshmallow import fields, validate

from api.schemas import BaseSchema, PatchSchema, UtcDateTime, Whole
from models.plans import APPROVED, ON_TIMEOUT, STATUSES

STATES_NOTE = (
    "States: `Draft` → `Active` → `PendingVerification` → `Approved` → `Released`. A check-in before "
    "`Released` returns the plan to `Active` (the owner's veto)."
)


class SettingsSchema(BaseSchema):
    """The plan's settings, one shape both ways, dumped from the plan record: GET /api/legacy and
    the export's plan.json show them, PATCH changes any of them (`SettingsPatchSchema`). A new
    setting is one field here and its column in models/plans.py."""

    checkInIntervalSeconds = fields.Integer(
        required=True,
        strict=True,
        attribute="check_in_interval_seconds",
        validate=validate.Range(min=1, max=10 * 366 * 24 * 3600),
        metadata={
            "description": "How long you may stay silent before the plan starts to worry "
            "(default 90 days; at least PLAN_MIN_CHECK_IN_INTERVAL_SECONDS)."
        },
    )
    gracePeriodSeconds = fields.Integer(
        required=True,
        strict=True,
        attribute="grace_period_seconds",
        validate=validate.Range(min=0, max=366 * 24 * 3600),
        metadata={
            "description": "After a missed check-in, how long before guardians are asked (default 14 days)."
        },
    )
    cancelWindowSeconds = fields.Integer(
        required=True,
        strict=True,
        attribute="cancel_window_seconds",
        validate=validate.Range(min=0, max=366 * 24 * 3600),
        metadata={
            "description": "After guardians approve, how long you can still veto by checking in "
            "(default 72 hours; at least PLAN_MIN_CANCEL_WINDOW_SECONDS)."
        },
    )
    guardianThreshold = fields.Integer(
        required=True,
        strict=True,
        allow_none=True,
        attribute="guardian_threshold",
        validate=validate.Range(min=1, max=1000),
        metadata={
            "description": "Approvals needed, 1 … number of guardians; null: a majority of the guardians "
            "who have not declined (the default)."
        },
    )
    verificationTimeoutSeconds = fields.Integer(
        required=True,
        strict=True,
        allow_none=True,
        attribute="verification_timeout_seconds",
        validate=validate.Range(min=1, max=366 * 24 * 3600),
        metadata={
            "description": "A deadline for the guardians once a verification starts (at least "
            "PLAN_MIN_VERIFICATION_TIMEOUT_SECONDS, default 7 days); null: no deadline. New plans start "
            "with PLAN_DEFAULT_VERIFICATION_TIMEOUT_SECONDS (30 days). Before a deadline that releases you "
            "are emailed halfway and a final time at least PLAN_DEADLINE_WARNING_SECONDS (1 day) before "
            "it; the deadline never falls sooner than that after the final warning."
        },
    )
    onVerificationTimeout = fields.String(
        required=True,
        attribute="on_verification_timeout",
        validate=validate.OneOf(ON_TIMEOUT),
        metadata={
            "description": 'What happens at the deadline with too few approvals and no check-in: "wait" '
            '(you and the guardians are emailed once, nothing is released) or "release" (the default for '
            "new plans: the plan becomes `Approved`, the cancel window still runs and you are emailed a "
            'check-in link). Not "release" with an on-chain contract configured (400; new plans then '
            'start with "wait").'
        },
    )
    allowBeneficiaryRequests = fields.Boolean(
        required=True,
        truthy={True},
        falsy={False},
        attribute="allow_beneficiary_requests",
        metadata={
            "description": "Whether an heir may ask, through their claim link, that your guardians verify "
            "(POST /api/claim/{token}/request; default true). Such a request starts a verification as a "
            "guardian's report does: you are emailed and can stop it by checking in."
        },
    )
    notifyBeneficiariesOnActivation = fields.Boolean(
        required=True,
        truthy={True},
        falsy={False},
        attribute="notify_beneficiaries_on_activation",
        metadata={
            "description": "Whether each heir is emailed their link once, in neutral words, while the plan "
            "is `Active` (default false): that the plan exists, that the page opens nothing until the "
            "release, and (with `allowBeneficiaryRequests`) that from it they may ask your guardians to "
            "check. Sent at activation, when an heir is added to an `Active` plan, and when this is turned "
            "on in `Active`; never twice to the same heir. These emails count in the day's email budget "
            '(EMAIL_TO_NAMED_PEOPLE_PER_DAY) and carry the "I don\'t know this person" link, as '
            "invitations do."
        },
    )


class SettingsPatchSchema(PatchSchema, SettingsSchema):
    """Any subset of the settings; an empty body is a 400."""


class ApprovalGuardianSchema(BaseSchema):
    guardianId = fields.String(required=True, attribute="guardian_id")
    name = fields.String(required=True)
    approvedAt = UtcDateTime(
        required=True,
        allow_none=True,
        attribute="approved_at",
        metadata={"description": "null: not (yet) approved."},
    )
    objectedAt = UtcDateTime(
        required=True,
        allow_none=True,
        attribute="objected_at",
        metadata={
            "description": "When this guardian said, in this verification, that it is a mistake (they know "
            "you are alive or able to act); null: they do not object. An objection holds the deadline "
            "back only until `objectionLapsesAt`."
        },
    )
    objectionLapsesAt = UtcDateTime(
        required=True,
        allow_none=True,
        attribute="objection_lapses_at",
        metadata={
            "description": "When this guardian's objection lapses unless you check in before (null: they "
            "do not object). The window runs from their first objection in this verification "
            "(PLAN_OBJECTION_CHECK_IN_SECONDS); a lapsed objection no longer holds the deadline back, and "
            "the deadline applies as if it had not been made."
        },
    )


class ApprovalsSchema(BaseSchema):
    count = fields.Integer(required=True, attribute="approval_count")
    threshold = fields.Integer(required=True, metadata={"description": "Approvals needed now."})
    objections = fields.Integer(
        required=True,
        attribute="objection_count",
        metadata={
            "description": "Guardians objecting in this verification. While one does, the deadline does "
            "not release the plan (it waits), but each objection only until its `objectionLapsesAt` "
            "(below): unless you check in by then, it lapses and the deadline applies again. Enough "
            "approvals still release, and your check-in ends it all."
        },
    )
    guardians = fields.List(fields.Nested(ApprovalGuardianSchema), required=True, attribute="approvals")


class ReadinessSchema(BaseSchema):
    ready = fields.Function(lambda view: not view["problems"], required=True, metadata={"type": "boolean"})
    problems = fields.List(
        fields.String(),
        required=True,
        metadata={
            "description": "What blocks activation (in `Active`: what would no longer pass, e.g. fewer "
            "accepted guardians than the approvals needed, naming who has not answered)."
        },
    )
    warnings = fields.List(
        fields.String(),
        required=True,
        metadata={"description": "Advice that never blocks, e.g. link a second wallet."},
    )


class CountsSchema(BaseSchema):
    beneficiaries = fields.Integer(required=True)
    guardians = fields.Integer(required=True)
    assets = fields.Integer(required=True)
    archiveItems = fields.Integer(required=True, attribute="archive_items")
    messages = fields.Integer(required=True)


class NotificationSchema(BaseSchema):
    id = fields.String(required=True)
    kind = fields.String(required=True, metadata={"example": "check_in_reminder"})
    recipient = fields.String(
        required=True, attribute="recipient_type", metadata={"description": "owner, guardian or beneficiary."}
    )
    status = fields.String(
        required=True,
        metadata={
            "enum": ["pending", "deferred", "sent", "failed", "skipped"],
            "description": "`deferred`: an invitation or address confirmation waiting for the day's budget "
            "of emails to addresses you typed (EMAIL_TO_NAMED_PEOPLE_PER_DAY per account, "
            "EMAIL_TO_NAMED_PEOPLE_PER_CLIENT_PER_DAY per client address, rolling 24 h); it goes out by "
            "itself as the day frees (readiness warns). `skipped`: not sent (email not configured, or "
            "replaced by a later one to the same person before it went).",
        },
    )
    createdAt = UtcDateTime(required=True, attribute="created_at")
    finishedAt = UtcDateTime(required=True, allow_none=True, attribute="finished_at")
    delivery = fields.String(
        required=True,
        allow_none=True,
        metadata={
            "enum": ["delivered", "bounced", "complained", "delayed", None],
            "description": "What the email provider later reported for a sent email (its delivery "
            "webhook, POST /api/webhooks/email): `delivered`, `bounced` (the address refused it), "
            "`complained` (marked as spam) or `delayed` (still trying); null: nothing heard (yet, or no "
            "webhook configured).",
        },
    )
    deliveryAt = UtcDateTime(required=True, allow_none=True, attribute="delivery_at")


def _waiting(view: Any) -> bool:
    """Approved: with a contract, the release may be ready and wait for an heir to finalise it."""
    return bool(view["plan"]["status"] == APPROVED)


class OverviewSchema(BaseSchema):
    """Dumps `models.plan.journey.Overview` as it is: the plan's columns by their path."""

    id = fields.String(required=True, attribute="plan.id")
    status = fields.String(required=True, attribute="plan.status", validate=validate.OneOf(STATUSES))
    settings = fields.Nested(SettingsSchema, required=True, attribute="plan")
    lastCheckInAt = UtcDateTime(required=True, allow_none=True, attribute="plan.last_check_in_at")
    nextCheckInDueAt = UtcDateTime(required=True, allow_none=True, attribute="plan.check_in_due_at")
    verificationStartedAt = UtcDateTime(
        required=True, allow_none=True, attribute="plan.verification_started_at"
    )
    approvals = Whole(ApprovalsSchema, required=True)
    approvedAt = UtcDateTime(required=True, allow_none=True, attribute="plan.approved_at")
    releaseAt = UtcDateTime(
        required=True,
        allow_none=True,
        attribute="plan.release_at",
        metadata={"description": "When the cancel window ends."},
    )
    releasedAt = UtcDateTime(required=True, allow_none=True, attribute="plan.released_at")
    readyToFinalize = fields.Function(
        lambda view: _waiting(view) and view["plan"]["ready_at"] is not None,
        required=True,
        metadata={
            "type": "boolean",
            "description": "With a contract: the cancel window is over, every beneficiary was sent their "
            "link, and the release waits for one of them to finalise it on-chain.",
        },
    )
    readySince = fields.Function(
        lambda view: UtcDateTime.to_wire(view["plan"]["ready_at"] if _waiting(view) else None),
        required=True,
        metadata={"type": "string", "format": "date-time", "nullable": True},
    )
    readiness = Whole(ReadinessSchema, required=True)
    counts = fields.Nested(CountsSchema, required=True, attribute="facts")
    notifications = fields.List(
        fields.Nested(NotificationSchema),
        required=True,
        metadata={"description": "The latest 50 emails about this plan (no bodies, no addresses)."},
    )
    verificationNotice = fields.String(
        required=True,
        attribute="verification_notice",
        allow_none=True,
        metadata={
            "description": "While guardians verify (`PendingVerification`, `Approved`): one plain sentence "
            "saying who reported (or that no check-in came) and when, what happens at the deadline, and "
            "that only an explicit check-in stops it: signing in does not. null when no verification runs."
        },
    )


class StepSchema(BaseSchema):
    status = fields.String(required=True)
    state = fields.String(required=True, metadata={"description": "done, current or upcoming."})
    at = UtcDateTime(required=True, allow_none=True)


class TransitionSchema(BaseSchema):
    fromStatus = fields.String(required=True, attribute="from_status")
    toStatus = fields.String(required=True, attribute="to_status")
    actor = fields.String(
        required=True,
        metadata={"description": "owner, guardian, scheduler, contract or beneficiary (an heir's request)."},
    )
    actorName = fields.String(
        required=True,
        allow_none=True,
        attribute="actor_name",
        metadata={"description": "The guardian's name."},
    )
    reason = fields.String(required=True)
    at = UtcDateTime(required=True)


class VerificationSchema(BaseSchema):
    round = fields.Integer(required=True)
    startedAt = UtcDateTime(required=True, attribute="started_at")
    reason = fields.String(
        required=True,
        allow_none=True,
        metadata={"description": "inactivity, guardian_report or beneficiary_request."},
    )
    deadlineAt = UtcDateTime(
        required=True,
        allow_none=True,
        attribute="deadline_at",
        metadata={"description": "null: no deadline was set."},
    )
    onTimeout = fields.String(required=True, attribute="on_timeout", validate=validate.OneOf(ON_TIMEOUT))
    timedOutAt = UtcDateTime(required=True, allow_none=True, attribute="timed_out_at")
    waiting = fields.Boolean(
        required=True,
        metadata={"description": "The deadline passed and, as chosen, the plan waits for guardians or you."},
    )


class JourneySchema(BaseSchema):
    """Dumps `models.plan.journey.Journey` as it is."""

    status = fields.String(required=True, attribute="plan.status")
    steps = fields.List(fields.Nested(StepSchema), required=True)
    transitions = fields.List(fields.Nested(TransitionSchema), required=True)
    notifications = fields.List(fields.Nested(NotificationSchema), required=True)
    verification = fields.Nested(
        VerificationSchema,
        required=True,
        allow_none=True,
        metadata={"description": "The current verification (PendingVerification, Approved); null otherwise."},
    )


class CheckInLinkSchema(BaseSchema):
    token = fields.String(
        required=True,
        validate=validate.Length(min=1, max=200),
        metadata={"description": "The 64-hex token from the link `$PUBLIC_BASE_URL/check-in/<token>`."},
    )


class CheckInLinkResultSchema(BaseSchema):
    status = fields.String(
        required=True, validate=validate.OneOf(STATUSES), metadata={"description": "The plan's status now."}
    )
    nextCheckInDueAt = UtcDateTime(required=True, allow_none=True)


overview_schema = OverviewSchema()
settings_schema = SettingsSchema()
journey_schema = JourneySchema()
check_in_result_schema = CheckInLinkResultSchema()
