"""/api/users/me: the owner's profile."""

from __future__ import annotations

from datetime import timedelta

from aiohttp import web
from aiohttp_apigami import docs, request_schema, response_schema

from api.account import auth
from api.account.schemas import (
    DeleteAccountSchema,
    DeletionSchema,
    ProfileUpdateSchema,
    UserSchema,
    deletion_schema,
    user_schema,
)
from api.common import email_budget, json_response
from api.keys import USER_ID, context
from api.schemas import error_responses
from models.account import users
from models.flows import deletion

routes = web.RouteTableDef()


# The same handler as /api/auth/me: the web client reads the profile from either path.
routes.get("/api/users/me")(auth.me)


@routes.patch("/api/users/me")
@docs(
    tags=["users"],
    summary="Update name, email, language or time zone",
    description="null clears a field. The timeline records which fields changed, not their values.",
    responses=error_responses(400, 401),
)
@request_schema(ProfileUpdateSchema)
@response_schema(UserSchema, 200)
async def patch_me(request: web.Request) -> web.Response:
    ctx = context(request)
    user = await users.update_profile(
        ctx.pool,
        ctx.ring,
        ctx.redis,
        user_id=request[USER_ID],
        changes=request["data"],
        now=ctx.now(),
        budget=email_budget(request),
    )
    return json_response(user_schema.dump(user))


@routes.delete("/api/users/me")
@docs(
    tags=["users"],
    summary="Delete your account and everything in it",
    description="`confirm`: one of the account's wallet addresses. 202: every session ends (on this "
    "server at once, on the others within 30 seconds, as with logout-all) and no wallet signs in to it "
    "any more (signing in again starts a new, empty account); each guardian who accepted is emailed "
    "that the plan no longer exists; then the worker deletes every row, stored file and cached key of "
    "the account, within minutes once those emails are settled. Claim and guardian links then open "
    "nothing (404). 409 while your guardians are verifying the plan, or once it is approved, ready or "
    "released: the family's claim must not vanish mid-release. 400 if `confirm` is not one of your "
    "wallets. What stays in backups, and for how long: docs/security.md.",
    responses=error_responses(400, 401, 409),
)
@request_schema(DeleteAccountSchema, required=True)
@response_schema(DeletionSchema, 202)
async def delete_me(request: web.Request) -> web.Response:
    ctx = context(request)
    now = ctx.now()
    await deletion.start(
        ctx.pool,
        ctx.redis,
        check=ctx.accounts,
        user_id=request[USER_ID],
        confirm=request["data"]["confirm"],
        now=now,
    )
    everywhere = now + timedelta(seconds=users.ACCOUNT_CHECK_SECONDS)
    body = {
        "status": "deleting",
        "ended_everywhere_by": everywhere,
        "message": "Your account is being deleted: every session has ended, your guardians are being told "
        "the plan no longer exists, and then everything is removed.",
    }
    return json_response(deletion_schema.dump(body), status=202)
