"""/api/guardians: people whose Stellar wallet approves a release (`approve_guardian`)."""

from __future__ import annotations

from aiohttp import web
from aiohttp_apigami import docs, request_schema, response_schema
from marshmallow import fields, validate

from api.common import email_budget, json_response, list_response
from api.keys import USER_ID, context
from api.schemas import (
    BaseSchema,
    PageQuerySchema,
    PatchSchema,
    Text,
    UtcDateTime,
    WalletAddress,
    error_responses,
)
from models.contents import guardians
from models.plan import plan_settings

routes = web.RouteTableDef()


class GuardianCreateSchema(BaseSchema):
    name = Text(required=True, validate=validate.Length(min=1, max=120))
    email = fields.Email(required=True, validate=validate.Length(max=254))
    walletAddress = WalletAddress(
        required=True,
        attribute="wallet_address",
        metadata={"description": "The guardian's own Stellar account; it signs approve_guardian."},
    )
    relationship = Text(allow_none=True, validate=validate.Length(min=1, max=60))


class GuardianPatchSchema(PatchSchema, GuardianCreateSchema):
    """Any subset of the create fields; `relationship: null` clears it."""


class GuardianSchema(BaseSchema):
    id = fields.String(required=True)
    userId = fields.String(required=True, attribute="user_id")
    name = fields.String(required=True)
    email = fields.String(required=True)
    walletAddress = fields.String(required=True, attribute="wallet_address")
    relationship = fields.String(required=True, allow_none=True)
    createdAt = UtcDateTime(required=True, attribute="created_at")
    updatedAt = UtcDateTime(required=True, attribute="updated_at")
    invitedAt = UtcDateTime(
        required=True,
        allow_none=True,
        attribute="invited_at",
        metadata={
            "description": "When the invitation was (last) emailed; null while it waits for your name "
            "(PATCH /api/users/me): no invitation goes out without saying whose plan it is."
        },
    )
    acceptedAt = UtcDateTime(
        required=True,
        allow_none=True,
        attribute="accepted_at",
        metadata={
            "description": "When they accepted, from their own wallet session; null until then. Only "
            "accepted guardians count toward the approvals, report or approve."
        },
    )
    declinedAt = UtcDateTime(
        required=True,
        allow_none=True,
        attribute="declined_at",
        metadata={"description": "null unless declined."},
    )
    reconfirmedAt = UtcDateTime(
        required=True,
        allow_none=True,
        attribute="reconfirmed_at",
        metadata={
            "description": "When they last confirmed they can still act (asked every "
            "GUARDIAN_RECONFIRM_INTERVAL_SECONDS, a year, after accepting or confirming); null: not yet."
        },
    )
    unresponsiveSince = UtcDateTime(
        required=True,
        allow_none=True,
        attribute="unresponsive_since",
        metadata={
            "description": "Set when they were asked to confirm and did not within "
            "GUARDIAN_RECONFIRM_GRACE_SECONDS (30 days); cleared when they confirm. You are emailed once."
        },
    )


guardian_schema = GuardianSchema()
RULES = (
    "`walletAddress` must be a checksum-valid Stellar G-address, not one of your own wallets (400), "
    "and not already one of your guardians (409)."
)
INVITATION = (
    " The guardian is emailed an invitation and counts only once they accept it (signed in with that "
    "wallet: `POST /api/legacy/guardianships/{planId}/accept`)."
)
BUDGET = (
    " Invitations count against your account's daily budget of emails to addresses you typed "
    "(EMAIL_TO_NAMED_PEOPLE_PER_DAY, and EMAIL_TO_NAMED_PEOPLE_PER_CLIENT_PER_DAY per client address, "
    "over a rolling 24 h): past it the change is made all the same and the invitation waits, `deferred` "
    "in `GET /api/legacy` notifications and said in its readiness warnings, until the day frees. Until "
    'they accept, the invitation carries an "I don\'t know this person" link (RFC 8058 one-click): once '
    "used, nothing more from your account reaches that address, and you are told."
)


@routes.get("/api/guardians")
@docs(tags=["guardians"], summary="List guardians, newest first", responses=error_responses(400, 401))
@request_schema(PageQuerySchema, location="querystring")
@response_schema(GuardianSchema(many=True), 200)
async def list_guardians(request: web.Request) -> web.Response:
    ctx = context(request)
    page = await guardians.list_page(
        ctx.pool,
        ctx.ring,
        user_id=request[USER_ID],
        page=request["data"]["page"],
    )
    return list_response(request, page, guardian_schema)


@routes.post("/api/guardians")
@docs(
    tags=["guardians"],
    summary="Add a guardian",
    description=RULES + INVITATION + BUDGET,
    responses=error_responses(400, 401, 409),
)
@request_schema(GuardianCreateSchema, required=True)
@response_schema(GuardianSchema, 201)
async def create_guardian(request: web.Request) -> web.Response:
    ctx = context(request)
    row = await guardians.create(
        ctx.pool,
        ctx.ring,
        ctx.redis,
        user_id=request[USER_ID],
        data=request["data"],
        now=ctx.now(),
        budget=email_budget(request),
        plan_defaults=plan_settings.new_plan_defaults(ctx.settings),
    )
    return json_response(guardian_schema.dump(row), status=201)


@routes.get("/api/guardians/{id}")
@docs(tags=["guardians"], summary="Get a guardian", responses=error_responses(401, 404))
@response_schema(GuardianSchema, 200)
async def get_guardian(request: web.Request) -> web.Response:
    ctx = context(request)
    row = await guardians.get(
        ctx.pool,
        ctx.ring,
        user_id=request[USER_ID],
        raw_id=request.match_info["id"],
    )
    return json_response(guardian_schema.dump(row))


@routes.patch("/api/guardians/{id}")
@docs(
    tags=["guardians"],
    summary="Change a guardian",
    description="Validated like create, for the fields given; an empty body is a 400. " + RULES + " A new "
    "`walletAddress` clears `acceptedAt` and `declinedAt` and invites the guardian again; a new `email` "
    "re-sends the invitation to a guardian who has not answered yet." + BUDGET,
    responses=error_responses(400, 401, 404, 409),
)
@request_schema(GuardianPatchSchema, required=True)
@response_schema(GuardianSchema, 200)
async def patch_guardian(request: web.Request) -> web.Response:
    ctx = context(request)
    row = await guardians.update(
        ctx.pool,
        ctx.ring,
        ctx.redis,
        user_id=request[USER_ID],
        raw_id=request.match_info["id"],
        changes=request["data"],
        now=ctx.now(),
        budget=email_budget(request),
    )
    return json_response(guardian_schema.dump(row))


@routes.delete("/api/guardians/{id}")
@docs(
    tags=["guardians"],
    summary="Remove a guardian",
    responses={204: {"description": "Deleted"}, **error_responses(401, 404, 409)},
)
async def delete_guardian(request: web.Request) -> web.Response:
    ctx = context(request)
    await guardians.delete(
        ctx.pool,
        ctx.ring,
        ctx.redis,
        user_id=request[USER_ID],
        raw_id=request.match_info["id"],
        now=ctx.now(),
    )
    return web.Response(status=204)
