"""/api/legacy: the owner's plan, its settings, activation, check-in and journey.

The state machine and every decision: docs/lifecycle.md.
"""

from __future__ import annotations

from aiohttp import web
from aiohttp_apigami import docs, request_schema, response_schema

from api.common import email_budget, json_response
from api.keys import USER_ID, context
from api.plan.schemas import (
    STATES_NOTE,
    JourneySchema,
    OverviewSchema,
    SettingsPatchSchema,
    journey_schema,
    overview_schema,
)
from api.schemas import error_responses
from models.flows import lifecycle
from models.plan import journey, plan_settings

routes = web.RouteTableDef()


async def _overview(request: web.Request) -> web.Response:
    ctx = context(request)
    view = await journey.overview(
        ctx.pool,
        ctx.ring,
        user_id=request[USER_ID],
        defaults=plan_settings.new_plan_defaults(ctx.settings),
        contract=bool(ctx.settings.service_contract_id),
    )
    return json_response(overview_schema.dump(view))


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
        ctx.redis,
        ctx.settings,
        user_id=request[USER_ID],
        budget=email_budget(request),
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
        ctx.redis,
        user_id=request[USER_ID],
        now=ctx.now(),
        budget=email_budget(request),
        contract=bool(ctx.settings.service_contract_id),
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
    return json_response(journey_schema.dump(story))
