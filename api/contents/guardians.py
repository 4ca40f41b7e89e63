"""/api/guardians: people who confirm a release, with the Stellar wallet the owner records or,
without one, a passkey they register on their guardian page (docs/security.md)."""

from __future__ import annotations

from typing import Any

from aiohttp import web
from aiohttp_apigami import docs, response_schema

from api.common import Doc, Owned, email_budget, json_response
from api.contents.schemas import GuardianCreateSchema, GuardianPatchSchema, GuardianSchema
from api.keys import USER_ID, Context, context
from api.schemas import error_responses
from models.contents import guardians
from models.contents.guardians import Guardian
from models.pagination import Page, PageRequest
from models.plan import plan_settings

routes = web.RouteTableDef()


RULES = (
    "`walletAddress`, when given, must be a checksum-valid Stellar G-address, not one of your own wallets "
    "(400), and not already one of your guardians (409); without one the guardian answers with a passkey."
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


@routes.post("/api/guardians/{id}/reinvite")
@docs(
    tags=["guardians"],
    summary="Invite a guardian again (a lost passkey or link)",
    description="While the plan is Draft or Active: the guardian's passkeys are deleted, their old page "
    "link opens nothing, a new link is emailed and they answer again (a passkey guardian creates a new "
    "passkey when they accept); you are told too. 409 during a verification (the other guardians and the "
    "deadline carry the round) and once released." + BUDGET,
    responses=error_responses(401, 404, 409),
)
@response_schema(GuardianSchema, 200)
async def reinvite_guardian(request: web.Request) -> web.Response:
    ctx = context(request)
    row = await guardians.reinvite(
        ctx.pool,
        ctx.ring,
        ctx.redis,
        user_id=request[USER_ID],
        raw_id=request.match_info["id"],
        now=ctx.now(),
        budget=email_budget(request),
    )
    return json_response(GuardianSchema().dump(row))
