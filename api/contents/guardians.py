"""/api/guardians: people whose Stellar wallet approves a release (`approve_guardian`)."""

from __future__ import annotations

from typing import Any

from aiohttp import web
from marshmallow import fields, validate

from api.common import Doc, Owned, email_budget
from api.keys import Context
from api.schemas import (
    BaseSchema,
    PatchSchema,
    Text,
    UtcDateTime,
    WalletAddress,
)
from models.contents import guardians
from models.contents.guardians import Guardian
from models.pagination import Page, PageRequest
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


class Guardians(Owned):
    path = "/api/guardians"
    tag = "guardians"
    schema = GuardianSchema
    create_schema = GuardianCreateSchema
    patch_schema = GuardianPatchSchema
    docs = {
        "list": Doc("List guardians, newest first"),
        "create": Doc("Add a guardian", RULES + INVITATION + BUDGET),
        "get": Doc("Get a guardian"),
        "patch": Doc(
            "Change a guardian",
            "Validated like create, for the fields given; an empty body is a 400. " + RULES + " A new "
            "`walletAddress` clears `acceptedAt` and `declinedAt` and invites the guardian again; a new "
            "`email` re-sends the invitation to a guardian who has not answered yet." + BUDGET,
        ),
        "delete": Doc("Remove a guardian"),
    }

    async def list(self, ctx: Context, request: web.Request, *, user_id: str, page: PageRequest) -> Page[Any]:
        return await guardians.list_page(ctx.pool, ctx.ring, user_id=user_id, page=page)

    async def create(
        self, ctx: Context, request: web.Request, *, user_id: str, data: dict[str, Any]
    ) -> Guardian:
        return await guardians.create(
            ctx.pool,
            ctx.ring,
            ctx.redis,
            user_id=user_id,
            data=data,
            now=ctx.now(),
            budget=email_budget(request),
            plan_defaults=plan_settings.new_plan_defaults(ctx.settings),
        )

    async def get(self, ctx: Context, request: web.Request, *, user_id: str, raw_id: str) -> Guardian:
        return await guardians.get(ctx.pool, ctx.ring, user_id=user_id, raw_id=raw_id)

    async def update(
        self, ctx: Context, request: web.Request, *, user_id: str, raw_id: str, changes: dict[str, Any]
    ) -> Guardian:
        return await guardians.update(
            ctx.pool,
            ctx.ring,
            ctx.redis,
            user_id=user_id,
            raw_id=raw_id,
            changes=changes,
            now=ctx.now(),
            budget=email_budget(request),
        )

    async def delete(self, ctx: Context, request: web.Request, *, user_id: str, raw_id: str) -> None:
        await guardians.delete(ctx.pool, ctx.ring, ctx.redis, user_id=user_id, raw_id=raw_id, now=ctx.now())


Guardians().register(routes)
