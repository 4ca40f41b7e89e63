"""POST /api/legacy/check-in/link: a check-in without a wallet, with the one-time link of an
owner email (`$PUBLIC_BASE_URL/check-in/<token>`; the token goes in the body, never a path the
API logs). Public: the token is the credential. Decisions: docs/lifecycle.md ("Check-in links").
"""

from __future__ import annotations

from typing import NoReturn

from aiohttp import web
from aiohttp_apigami import docs, request_schema, response_schema

from api.common import json_response, refuse_miss
from api.headers import CAPSULE_HEADERS
from api.keys import context
from api.plan.schemas import CheckInLinkResultSchema, CheckInLinkSchema, check_in_result_schema
from api.public import public
from api.schemas import error_responses
from models.flows import lifecycle

routes = web.RouteTableDef()


async def refuse_check_in_miss(request: web.Request) -> NoReturn:
    """404 for a link that checks nothing in (malformed, unknown, used, expired: one answer for
    all four), or 429 past RATE_LIMIT_CHECK_IN_MISSES_PER_IP misses a minute from one address.
    Shared by every route that checks in by link."""
    ctx = context(request)
    await refuse_miss(
        request,
        kind="check-in",
        limit=ctx.settings.rate_limit_check_in_misses_per_ip,
        what="Check-in link",
        too_many="Too many unknown check-in links from this address; try again later.",
    )


@routes.post("/api/legacy/check-in/link")
@public
@docs(
    tags=["legacy"],
    summary="Check in with the link from an email (no wallet needed)",
    description="Every lifecycle email to the owner (each reminder, the grace notice, verification "
    "started, approved, the verification deadline) carries a one-time link "
    "`$PUBLIC_BASE_URL/check-in/<token>`; post its token here. It counts exactly as `POST "
    "/api/legacy/check-in`: a new cycle in `Active`, the veto in `PendingVerification` and `Approved`, "
    "409 in `Draft` and `Released` (the link is not used up then). A link works once, for 30 days, "
    "and ends at the first check-in of any kind (this one, the route, a wallet sign-in). Unknown, "
    "used, expired and malformed tokens are the same 404; past RATE_LIMIT_CHECK_IN_MISSES_PER_IP "
    "of them a minute from one address, 429 with `Retry-After`. The answer says only the plan's "
    "status and next due time.",
    responses=error_responses(400, 404, 409, 429),
)
@request_schema(CheckInLinkSchema, required=True)
@response_schema(CheckInLinkResultSchema, 200)
async def check_in_by_link(request: web.Request) -> web.Response:
    ctx = context(request)
    result = await lifecycle.check_in_by_link(
        ctx.pool, ctx.redis, token=request["data"]["token"], now=ctx.now()
    )
    if result is None:
        await refuse_check_in_miss(request)
    body = check_in_result_schema.dump(
        {"status": result["status"], "nextCheckInDueAt": result["next_check_in_due_at"]}
    )
    return json_response(body, headers=CAPSULE_HEADERS)
