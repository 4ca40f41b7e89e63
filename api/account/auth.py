"""/api/auth/*: wallet sign-in, session, wallet linking. Email/password is disabled."""

from __future__ import annotations

from datetime import timedelta

from aiohttp import web
from aiohttp_apigami import docs, request_schema, response_schema

from api.account.schemas import (
    ChallengeRequestSchema,
    ChallengeSchema,
    LogoutAllSchema,
    OkSchema,
    SessionSchema,
    UserSchema,
    VerifyRequestSchema,
    challenge_schema,
    logout_all_schema,
    session_schema,
    user_schema,
)
from api.common import client_ip, dump_one, json_response
from api.keys import USER_ID, context
from api.public import public
from api.schemas import UtcDateTime, error_responses
from core.clock import wire_time
from core.errors import Gone
from models.account import users
from models.flows import auth

routes = web.RouteTableDef()


@routes.post("/api/auth/wallet/challenge")
@public
@docs(
    tags=["auth"],
    summary="Get a sign-in challenge for a wallet",
    description="Rate limited per client address (RATE_LIMIT_CHALLENGE_PER_IP a minute) and per client "
    "address and wallet (RATE_LIMIT_CHALLENGE_PER_WALLET a minute), 429 with Retry-After; nobody else's "
    "requests count against you. A challenge expires after CHALLENGE_TTL_SECONDS (5 minutes), is used "
    "once, and must be verified from the client address that asked for it. Up to 5 stay live per "
    "wallet and address (a new one past that retires the oldest), so a second tab does not break the first.",
    responses=error_responses(400, 429),
)
@request_schema(ChallengeRequestSchema)
@response_schema(ChallengeSchema, 200)
async def challenge(request: web.Request) -> web.Response:
    ctx = context(request)
    data = request["data"]
    message = await auth.request_challenge(
        ctx.redis,
        ctx.settings,
        wallet_address=data["walletAddress"],
        client_ip=client_ip(request),
        now=ctx.now(),
    )
    return json_response(challenge_schema.dump({"message": message}))


@routes.post("/api/auth/wallet/verify")
@public
@docs(
    tags=["auth"],
    summary="Exchange a signed challenge for a session token",
    description="Creates the account on first sign-in. A challenge is single use; a replay is 401. "
    "While your legacy plan is Active, signing in counts as a check-in. While guardians verify it "
    "(PendingVerification, Approved) it does not: it is recorded on the timeline "
    "(`account.signed_in_during_verification`), the plan's accepted guardians see when "
    "(`ownerKeyUsedAt` in GET /api/legacy/guardianships), and only an explicit check-in "
    "(POST /api/legacy/check-in, the emailed link or the check-in page) stops the release.",
    responses=error_responses(400, 401),
)
@request_schema(VerifyRequestSchema)
@response_schema(SessionSchema, 200)
async def verify(request: web.Request) -> web.Response:
    ctx = context(request)
    data = request["data"]
    token, user = await auth.sign_in(
        ctx.pool,
        ctx.redis,
        ctx.settings,
        wallet_address=data["walletAddress"],
        signature=data["signature"],
        client_ip=client_ip(request),
        now=ctx.now(),
    )
    return json_response(session_schema.dump({"token": token, "user": user}))


@routes.get("/api/auth/me")
@docs(tags=["auth"], summary="The signed-in account", responses=error_responses(401))
@response_schema(UserSchema, 200)
async def me(request: web.Request) -> web.Response:
    ctx = context(request)
    user = await users.get_with_wallets(ctx.pool, ctx.ring, user_id=request[USER_ID])
    return json_response(dump_one(user_schema, user))


@routes.post("/api/auth/logout")
@docs(
    tags=["auth"],
    summary="Log out (a courtesy)",
    description="Sessions are stateless JWTs: this does not revoke the token; the client discards it. "
    "To end every session of the account, stolen ones included, use `POST /api/auth/logout-all`.",
    responses=error_responses(401),
)
@response_schema(OkSchema, 200)
async def logout(request: web.Request) -> web.Response:
    return json_response(
        {"ok": True, "message": "Discard the token on the client; it stays valid until expiry."}
    )


@routes.post("/api/auth/logout-all")
@docs(
    tags=["auth"],
    summary="Sign out everywhere: end every session of this account",
    description="Every session token issued to this account before this call stops working, the one "
    "that made the call included: at once on the server that answered, and on every other server "
    "within 30 seconds (the response gives both times). On a read, another server may still accept an "
    "old session until `endedEverywhereBy`; one that has already seen a session issued afterwards "
    "refuses the old ones at once. Sessions issued afterwards (sign in again) work everywhere.",
    responses=error_responses(401),
)
@response_schema(LogoutAllSchema, 200)
async def logout_all(request: web.Request) -> web.Response:
    ctx = context(request)
    now = ctx.now()
    await users.end_all_sessions(ctx.pool, check=ctx.accounts, user_id=request[USER_ID], now=now.timestamp())
    everywhere = now + timedelta(seconds=users.ACCOUNT_CHECK_SECONDS)
    return json_response(
        logout_all_schema.dump(
            {
                "ok": True,
                "ended_here": now,
                "ended_everywhere_by": everywhere,
                "message": "Every session of this account has ended: on this server now, on every "
                f"server by {UtcDateTime.to_wire(everywhere)} (within "
                f"{users.ACCOUNT_CHECK_SECONDS:.0f} seconds). Sign in again to continue.",
            }
        )
    )


@routes.post("/api/auth/link-wallet")
@docs(
    tags=["auth"],
    summary="Link another wallet to this account",
    description="Request a challenge for the new wallet, sign it with that wallet, and post it here. "
    "409 if the wallet already belongs to another account.",
    responses=error_responses(400, 401, 409),
)
@request_schema(VerifyRequestSchema)
@response_schema(UserSchema, 200)
async def link_wallet(request: web.Request) -> web.Response:
    ctx = context(request)
    data = request["data"]
    user = await auth.link_wallet(
        ctx.pool,
        ctx.redis,
        ctx.ring,
        user_id=request[USER_ID],
        wallet_address=data["walletAddress"],
        signature=data["signature"],
        client_ip=client_ip(request),
        now=ctx.now(),
    )
    return json_response(user_schema.dump(user))


SESSIONS_ENDED_HEADER = "Sessions-Ended-Everywhere-By"


@routes.delete("/api/auth/wallets/{address}")
@docs(
    tags=["auth"],
    summary="Remove a wallet from this account; every session ends",
    description="The wallet no longer signs in to this account. 404 for a wallet that is not this "
    "account's, 409 for its last wallet, and, with an on-chain contract configured, 409 for the primary "
    "wallet (`walletAddress`: the plan's owner on-chain). Off-chain, removing the primary wallet makes "
    "the oldest remaining one primary. **Every session of the account ends, this one included**, as "
    "`POST /api/auth/logout-all` does (a session carries no wallet, so the removed key's sessions go "
    f"only with all of them): sign in again with a remaining wallet. A 204 has no body, so the header "
    f"`{SESSIONS_ENDED_HEADER}` gives the moment by which every server refuses the old sessions (at "
    "once on the one that answered). The owner is emailed once the plan has been activated.",
    responses={
        204: {
            "description": "Removed; every session of the account has ended.",
            "headers": {
                SESSIONS_ENDED_HEADER: {
                    "description": "ISO 8601 UTC: by then every server refuses the account's earlier "
                    "sessions (at once on the one that answered).",
                    "schema": {"type": "string", "format": "date-time"},
                }
            },
        },
        **error_responses(401, 404, 409),
    },
)
async def remove_wallet(request: web.Request) -> web.Response:
    ctx = context(request)
    now = ctx.now()
    await users.remove_wallet(
        ctx.pool,
        ctx.ring,
        check=ctx.accounts,
        user_id=request[USER_ID],
        wallet_address=request.match_info["address"],
        contract_configured=bool(ctx.settings.service_contract_id),
        now=now,
    )
    everywhere = now + timedelta(seconds=users.ACCOUNT_CHECK_SECONDS)
    return web.Response(status=204, headers={SESSIONS_ENDED_HEADER: wire_time(everywhere)})


@public
@docs(
    tags=["auth"],
    summary="Email/password sign-in (disabled)",
    description="Disabled: this service signs in with a Stellar wallet only. Always 410.",
    responses=error_responses(410),
)
async def password_disabled(request: web.Request) -> web.Response:
    raise Gone("Email/password sign-in is disabled; sign in with a Stellar wallet")


for _path in (
    "/api/auth/register",
    "/api/auth/login",
    "/api/auth/forgot-password",
    "/api/auth/reset-password",
):
    routes.post(_path)(password_disabled)
