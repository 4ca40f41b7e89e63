"""Development only: "Sign in with a test wallet" (and "…with a sample plan") on `/sign-in`, so a
newcomer who ran `make run` sees every journey within a minute, with no wallet app.

Registered only with APP_ENV=development (in production the path is the 404 page), and guarded
as `/dev/mail` is, by the same function (`this_machine_only`): a loopback peer, a Host naming this
machine, no proxy's header. The test wallet is a keypair kept under DATA_DIR
(models.account.dev_wallet); it signs in through the same functions as any wallet. The sample
plan (two heirs, two guardians at example.org addresses, whose emails land in `/dev/mail`) is
made through the JSON API's own schemas and model functions, once, and only while the
development mailbox is on. docs/pages.md, "A newcomer's first minute".
"""

from __future__ import annotations

from typing import Any

from aiohttp import web
from aiohttp_apigami import docs

from api import html
from api.account.schemas import ProfileUpdateSchema
from api.common import email_budget
from api.contents.schemas import BeneficiaryCreateSchema, GuardianCreateSchema
from api.delivery.dev_mail import this_machine_only
from api.keys import Context, context
from api.owner import session as owner
from api.schemas import error_responses
from core.db import autocommit
from models.account import users
from models.contents import beneficiaries, guardians
from models.flows import auth
from models.plan import plan_settings

routes = web.RouteTableDef()

PATH = "/sign-in/test-wallet"
OWNER = {"name": "Sam Example", "email": "owner@example.org"}
HEIRS = (
    {
        "name": "Ana Example",
        "relationship": "daughter",
        "email": "ana@example.org",
        "allocationPercentage": 60,
    },
    {"name": "Ben Example", "relationship": "son", "email": "ben@example.org", "allocationPercentage": 40},
)
GUARDIANS = (
    {"name": "Carla Example", "email": "carla@example.org", "relationship": "friend"},
    {"name": "David Example", "email": "david@example.org", "relationship": "brother"},
)


async def _sample_plan(request: web.Request, ctx: Context, user: users.SigningIn) -> None:
    """Two heirs and two guardians, through the API's schemas and model calls; once (an account
    that already has people keeps them)."""
    user_id = user["id"]
    async with autocommit(ctx.pool) as cur:
        heirs = await beneficiaries.ROWS.list_all(cur, ctx.ring, user_id=user_id)
        named = await guardians.ROWS.list_all(cur, ctx.ring, user_id=user_id)
    if heirs or named:
        return
    if not user["name"] or not user["email"]:
        changes: dict[str, Any] = ProfileUpdateSchema().load(OWNER)
        await users.update_profile(
            ctx.pool,
            ctx.ring,
            ctx.redis,
            user_id=user_id,
            changes=changes,
            now=ctx.now(),
            budget=email_budget(request),
        )
    for heir in HEIRS:
        await beneficiaries.create(
            ctx.pool,
            ctx.ring,
            ctx.redis,
            user_id=user_id,
            data=BeneficiaryCreateSchema().load(heir),
            now=ctx.now(),
            budget=email_budget(request),
        )
    for guardian in GUARDIANS:
        await guardians.create(
            ctx.pool,
            ctx.ring,
            ctx.redis,
            user_id=user_id,
            data=GuardianCreateSchema().load(guardian),
            now=ctx.now(),
            budget=email_budget(request),
            plan_defaults=plan_settings.new_plan_defaults(ctx.settings),
        )


@routes.post(PATH)
@docs(
    tags=["development"],
    summary="Development only: sign in with a test wallet (and a sample plan)",
    description="Exists only with APP_ENV=development; answers only a browser on this machine (as "
    "/dev/mail). "
    "Form field `sample=true`: two heirs and two guardians at example.org addresses, offered while the "
    "development mailbox is on.",
    produces=["text/html"],
    responses={303: {"description": "Signed in"}, **error_responses(403, 404)},
)
@owner.owner_door
async def test_wallet(request: web.Request) -> web.Response:
    if (refused := this_machine_only(request)) is not None:
        return refused
    ctx = context(request)
    form = await html.read_form(request)
    opened, user = await auth.sign_in_test_owner(
        ctx.pool,
        ctx.redis,
        ctx.settings,
        replacing=owner.cookie(request, base=owner.SESSION_COOKIE),
        now=ctx.now(),
    )
    if form.get("sample") == "true" and ctx.settings.dev_mailbox:
        await _sample_plan(request, ctx, user)
    return owner.signed_in(request, opened, to=owner.return_path(form.get("next")))
