"""/api/legacy: the owner's plan, its settings, activation, check-in and journey.

The state machine and every decision: docs/lifecycle.md.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web
from aiohttp_apigami import docs, request_schema, response_schema
from marshmallow import fields, validate

from api.common import json_response
from api.keys import USER_ID, context
from api.schemas import BaseSchema, PatchSchema, UtcDateTime, error_responses
from models.flows import lifecycle
from models.plan import journey, plan_settings
from models.plans import APPROVED, ON_TIMEOUT, STATUSES

routes = web.RouteTableDef()

STATES_NOTE = (
    "States: `Draft` → `Active` → `PendingVerification` → `Approved` → `Released`. A check-in before "
    "`Released` returns the plan to `Active` (the owner's veto)."
)


class SettingsPatchSchema(PatchSchema):
    checkInIntervalSeconds = fields.Integer(
        strict=True,
        attribute="check_in_interval_seconds",
        validate=validate.Range(min=1, max=10 * 366 * 24 * 3600),
        metadata={
            "description": "How long you may stay silent before the plan starts to worry "
            "(default 90 days; at least PLAN_MIN_CHECK_IN_INTERVAL_SECONDS)."
        },
    )
    gracePeriodSeconds = fields.Integer(
        strict=True,
        attribute="grace_period_seconds",
        validate=validate.Range(min=0, max=366 * 24 * 3600),
        metadata={
            "description": "After a missed check-in, how long before guardians are asked (default 14 days)."
        },
    )
    cancelWindowSeconds = fields.Integer(
        strict=True,
        attribute="cancel_window_seconds",
        validate=validate.Range(min=0, max=366 * 24 * 3600),
        metadata={
            "description": "After guardians approve, how long you can still veto by checking in "
            "(default 72 hours; at least PLAN_MIN_CANCEL_WINDOW_SECONDS)."
        },
    )
    guardianThreshold = fields.Integer(
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
        truthy={True},
        falsy={False},
        attribute="allow_beneficiary_requests",
        metadata={
            "description": "Whether an heir may ask, through their claim link, that your guardians verify "
            "(POST /api/claim/{token}/request; default true). Such a request starts a verification as a "
            "guardian's report does: you are emailed and can stop it by checking in."
        },
    )


class SettingsSchema(BaseSchema):
    """A plan's settings, dumped from the plan record: GET /api/legacy and the export's plan.json
    both show them through this one schema, so a new setting added here is in both."""

    checkInIntervalSeconds = fields.Integer(required=True, attribute="check_in_interval_seconds")
    gracePeriodSeconds = fields.Integer(required=True, attribute="grace_period_seconds")
    cancelWindowSeconds = fields.Integer(required=True, attribute="cancel_window_seconds")
    guardianThreshold = fields.Integer(
        required=True,
        allow_none=True,
        attribute="guardian_threshold",
        metadata={"description": "As set; null: a majority of the guardians who have not declined."},
    )
    verificationTimeoutSeconds = fields.Integer(
        required=True,
        allow_none=True,
        attribute="verification_timeout_seconds",
        metadata={"description": "null: no deadline."},
    )
    onVerificationTimeout = fields.String(
        required=True, validate=validate.OneOf(ON_TIMEOUT), attribute="on_verification_timeout"
    )
    allowBeneficiaryRequests = fields.Boolean(required=True, attribute="allow_beneficiary_requests")


class ApprovalGuardianSchema(BaseSchema):
    guardianId = fields.String(required=True)
    name = fields.String(required=True)
    approvedAt = UtcDateTime(
        required=True, allow_none=True, metadata={"description": "null: not (yet) approved."}
    )


class ApprovalsSchema(BaseSchema):
    count = fields.Integer(required=True)
    threshold = fields.Integer(required=True, metadata={"description": "Approvals needed now."})
    guardians = fields.List(fields.Nested(ApprovalGuardianSchema), required=True)


class ReadinessSchema(BaseSchema):
    ready = fields.Boolean(required=True)
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
    archiveItems = fields.Integer(required=True)
    messages = fields.Integer(required=True)


class NotificationSchema(BaseSchema):
    id = fields.String(required=True)
    kind = fields.String(required=True, metadata={"example": "check_in_reminder"})
    recipient = fields.String(required=True, metadata={"description": "owner, guardian or beneficiary."})
    status = fields.String(required=True, metadata={"description": "pending, sent, failed or skipped."})
    createdAt = UtcDateTime(required=True)
    finishedAt = UtcDateTime(required=True, allow_none=True)
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
    deliveryAt = UtcDateTime(required=True, allow_none=True)


class OverviewSchema(BaseSchema):
    id = fields.String(required=True)
    status = fields.String(required=True, validate=validate.OneOf(STATUSES))
    settings = fields.Nested(SettingsSchema, required=True)
    lastCheckInAt = UtcDateTime(required=True, allow_none=True)
    nextCheckInDueAt = UtcDateTime(required=True, allow_none=True)
    verificationStartedAt = UtcDateTime(required=True, allow_none=True)
    approvals = fields.Nested(ApprovalsSchema, required=True)
    approvedAt = UtcDateTime(required=True, allow_none=True)
    releaseAt = UtcDateTime(
        required=True, allow_none=True, metadata={"description": "When the cancel window ends."}
    )
    releasedAt = UtcDateTime(required=True, allow_none=True)
    readyToFinalize = fields.Boolean(
        required=True,
        metadata={
            "description": "With a contract: the cancel window is over, every beneficiary was sent their "
            "link, and the release waits for one of them to finalise it on-chain."
        },
    )
    readySince = UtcDateTime(required=True, allow_none=True)
    readiness = fields.Nested(ReadinessSchema, required=True)
    counts = fields.Nested(CountsSchema, required=True)
    notifications = fields.List(
        fields.Nested(NotificationSchema),
        required=True,
        metadata={"description": "The latest 50 emails about this plan (no bodies, no addresses)."},
    )
    verificationNotice = fields.String(
        required=True,
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
    fromStatus = fields.String(required=True)
    toStatus = fields.String(required=True)
    actor = fields.String(
        required=True,
        metadata={"description": "owner, guardian, scheduler, contract or beneficiary (an heir's request)."},
    )
    actorName = fields.String(
        required=True, allow_none=True, metadata={"description": "The guardian's name."}
    )
    reason = fields.String(required=True)
    at = UtcDateTime(required=True)


class VerificationSchema(BaseSchema):
    round = fields.Integer(required=True)
    startedAt = UtcDateTime(required=True)
    reason = fields.String(
        required=True,
        allow_none=True,
        metadata={"description": "inactivity, guardian_report or beneficiary_request."},
    )
    deadlineAt = UtcDateTime(
        required=True, allow_none=True, metadata={"description": "null: no deadline was set."}
    )
    onTimeout = fields.String(required=True, validate=validate.OneOf(ON_TIMEOUT))
    timedOutAt = UtcDateTime(required=True, allow_none=True)
    waiting = fields.Boolean(
        required=True,
        metadata={"description": "The deadline passed and, as chosen, the plan waits for guardians or you."},
    )


class JourneySchema(BaseSchema):
    status = fields.String(required=True)
    steps = fields.List(fields.Nested(StepSchema), required=True)
    transitions = fields.List(fields.Nested(TransitionSchema), required=True)
    notifications = fields.List(fields.Nested(NotificationSchema), required=True)
    verification = fields.Nested(
        VerificationSchema,
        required=True,
        allow_none=True,
        metadata={"description": "The current verification (PendingVerification, Approved); null otherwise."},
    )


overview_schema = OverviewSchema()
settings_schema = SettingsSchema()
journey_schema = JourneySchema()


def _notices(items: list[Any]) -> list[dict[str, Any]]:
    return [
        {
            "id": n["id"],
            "kind": n["kind"],
            "recipient": n["recipient_type"],
            "status": n["status"],
            "createdAt": n["created_at"],
            "finishedAt": n["finished_at"],
            "delivery": n["delivery"],
            "deliveryAt": n["delivery_at"],
        }
        for n in items
    ]


def shape_overview(view: journey.Overview) -> dict[str, Any]:
    plan, known = view["plan"], view["facts"]
    return overview_schema.dump(
        {
            "id": plan["id"],
            "status": plan["status"],
            "settings": plan,
            "lastCheckInAt": plan["last_check_in_at"],
            "nextCheckInDueAt": plan["check_in_due_at"],
            "verificationStartedAt": plan["verification_started_at"],
            "approvals": {
                "count": view["approval_count"],
                "threshold": view["threshold"],
                "guardians": [
                    {"guardianId": str(a["guardian_id"]), "name": a["name"], "approvedAt": a["approved_at"]}
                    for a in view["approvals"]
                ],
            },
            "approvedAt": plan["approved_at"],
            "releaseAt": plan["release_at"],
            "releasedAt": plan["released_at"],
            "readyToFinalize": plan["status"] == APPROVED and plan["ready_at"] is not None,
            "readySince": plan["ready_at"] if plan["status"] == APPROVED else None,
            "readiness": {
                "ready": not view["problems"],
                "problems": view["problems"],
                "warnings": view["warnings"],
            },
            "counts": {
                "beneficiaries": known["beneficiaries"],
                "guardians": known["guardians"],
                "assets": known["assets"],
                "archiveItems": known["archive_items"],
                "messages": known["messages"],
            },
            "notifications": _notices(view["notifications"]),
            "verificationNotice": view["verification_notice"],
        }
    )


async def _overview(request: web.Request) -> web.Response:
    ctx = context(request)
    return json_response(
        shape_overview(
            await journey.overview(
                ctx.pool,
                ctx.ring,
                user_id=request[USER_ID],
                defaults=plan_settings.new_plan_defaults(ctx.settings),
            )
        )
    )


@routes.get("/api/legacy")
@docs(
    tags=["legacy"],
    summary="The plan overview",
    description="Created in `Draft` the first time it is read. " + STATES_NOTE + " `readiness.problems` "
    "says what blocks activation (empty once the plan is active). `notifications` lists the emails sent "
    "about the plan and how each ended (sent, failed, skipped), never their content.",
    responses=error_responses(401),
)
@response_schema(OverviewSchema, 200)
async def get_legacy(request: web.Request) -> web.Response:
    return await _overview(request)


@routes.patch("/api/legacy")
@docs(
    tags=["legacy"],
    summary="Change the plan's settings",
    description="Allowed in `Draft` and `Active` (409 otherwise). Integers in seconds; the operator's "
    "lower bounds (PLAN_MIN_CHECK_IN_INTERVAL_SECONDS, PLAN_MIN_CANCEL_WINDOW_SECONDS, "
    "PLAN_MIN_VERIFICATION_TIMEOUT_SECONDS) and "
    "`guardianThreshold` ≤ number of guardians are checked (400 naming each field). In `Active`, a new "
    "interval moves the current check-in's due time (from the last check-in).",
    responses=error_responses(400, 401, 409),
)
@request_schema(SettingsPatchSchema, required=True)
@response_schema(OverviewSchema, 200)
async def patch_legacy(request: web.Request) -> web.Response:
    ctx = context(request)
    await plan_settings.update_settings(
        ctx.pool,
        ctx.settings,
        user_id=request[USER_ID],
        changes=request["data"],
        now=ctx.now(),
    )
    return await _overview(request)


@routes.post("/api/legacy/activate")
@docs(
    tags=["legacy"],
    summary="Activate the plan (Draft → Active)",
    description="Requires at least one beneficiary, allocations totalling exactly 100, guardians ≥ "
    "threshold ≥ 1 with at least threshold-many of them having accepted their invitation, and an "
    "email address on your profile (reminders go there). Otherwise 409 with "
    "`details.readiness.problems` (naming the guardians who have not answered). Starts the first "
    "check-in cycle now.",
    responses=error_responses(401, 409),
)
@response_schema(OverviewSchema, 200)
async def activate(request: web.Request) -> web.Response:
    ctx = context(request)
    await lifecycle.activate(
        ctx.pool,
        ctx.ring,
        user_id=request[USER_ID],
        now=ctx.now(),
    )
    return await _overview(request)


@routes.post("/api/legacy/deactivate")
@docs(
    tags=["legacy"],
    summary="Return the plan to Draft (Active → Draft)",
    description="Stops check-ins and reminders. 409 in any state other than `Active` (during verification, "
    "check in instead).",
    responses=error_responses(401, 409),
)
@response_schema(OverviewSchema, 200)
async def deactivate(request: web.Request) -> web.Response:
    ctx = context(request)
    await lifecycle.deactivate(ctx.pool, user_id=request[USER_ID], now=ctx.now())
    return await _overview(request)


@routes.post("/api/legacy/check-in")
@docs(
    tags=["legacy"],
    summary="Check in (proof of life; the owner's veto)",
    description="Starts a new check-in cycle. In `PendingVerification` or `Approved` it is the veto: "
    "the plan "
    "returns to `Active`, pending approvals are voided (kept as history) and guardians are told it was a "
    "false alarm. Signing in with your wallet counts as a check-in too, and so does the one-time link "
    "of a lifecycle email (`POST /api/legacy/check-in/link`); any check-in ends every such link. "
    "409 in `Draft` and `Released`.",
    responses=error_responses(401, 409),
)
@response_schema(OverviewSchema, 200)
async def check_in(request: web.Request) -> web.Response:
    ctx = context(request)
    await lifecycle.check_in(ctx.pool, ctx.redis, user_id=request[USER_ID], now=ctx.now())
    return await _overview(request)


@routes.get("/api/legacy/journey")
@docs(
    tags=["legacy"],
    summary="The plan's story",
    description="`steps`: the five states in order, each `done`, `current` or `upcoming` with its time "
    "(for an upcoming release, when it is due); with a contract, `ReadyToFinalize` before `Released`: "
    "the cancel window's end, when every beneficiary is sent their link (the release then waits for one "
    "of them to finalise it on-chain, so it has no date). `transitions`: every state change so far, "
    "oldest first, "
    "with who or what caused it (owner, a guardian by name, the scheduler, or the contract). "
    "`notifications`: the emails sent about the plan (no content). `verification`: the running "
    "verification, its deadline and whether, the deadline passed, the plan is waiting.",
    responses=error_responses(401),
)
@response_schema(JourneySchema, 200)
async def get_journey(request: web.Request) -> web.Response:
    ctx = context(request)
    story = await journey.journey(
        ctx.pool,
        ctx.ring,
        user_id=request[USER_ID],
        contract_configured=bool(ctx.settings.service_contract_id),
        defaults=plan_settings.new_plan_defaults(ctx.settings),
    )
    return json_response(
        journey_schema.dump(
            {
                "status": story["plan"]["status"],
                "steps": story["steps"],
                "transitions": [
                    {
                        "fromStatus": t["from_status"],
                        "toStatus": t["to_status"],
                        "actor": t["actor"],
                        "actorName": t["actor_name"],
                        "reason": t["reason"],
                        "at": t["at"],
                    }
                    for t in story["transitions"]
                ],
                "notifications": _notices(story["notifications"]),
                "verification": _verification(story["verification"]),
            }
        )
    )


def _verification(view: journey.Verification | None) -> dict[str, Any] | None:
    if view is None:
        return None
    return {
        "round": view["round"],
        "startedAt": view["started_at"],
        "reason": view["reason"],
        "deadlineAt": view["deadline_at"],
        "onTimeout": view["on_timeout"],
        "timedOutAt": view["timed_out_at"],
        "waiting": view["waiting"],
    }
