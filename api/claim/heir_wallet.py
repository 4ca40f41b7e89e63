"""/api/claim/:token/wallet/*: the heir proves the wallet they will claim with.

No session: the claim token is the credential, as for the capsule. A wallet must be bound to
the beneficiary (recorded by the owner, or proven here) before `release/build`, `claim/build`
and `submit` accept it, so nobody can claim through one heir's token with a wallet another
heir signed with. Decisions: docs/soroban.md "Beneficiary wallets".
"""

from __future__ import annotations

from aiohttp import web
from aiohttp_apigami import docs, request_schema, response_schema

from api.claim.gate import claim_gate
from api.claim.schemas import (
    WalletBoundSchema,
    WalletChallengeRequestSchema,
    WalletChallengeSchema,
    WalletVerifyRequestSchema,
    wallet_bound_schema,
    wallet_challenge_schema,
)
from api.common import client_ip, json_response
from api.keys import context
from api.schemas import error_responses
from models.claim import heir_wallets
from models.claim.capsules import Capsule

routes = web.RouteTableDef()


@routes.post("/api/claim/{token}/wallet/challenge")
@docs(
    tags=["capsule"],
    summary="Get a challenge to prove your wallet",
    description="Once your capsule is `ready` or `released` (409 before). Sign the message with the "
    "wallet and post the signature to `/api/claim/{token}/wallet/verify`. Rate limited per client "
    "address (RATE_LIMIT_CHALLENGE_PER_IP a minute, 429 with Retry-After).",
    responses=error_responses(400, 409),
)
@request_schema(WalletChallengeRequestSchema, required=True)
@response_schema(WalletChallengeSchema, 200)
@claim_gate
async def wallet_challenge(request: web.Request, capsule: Capsule) -> web.Response:
    ctx = context(request)
    message = await heir_wallets.challenge(
        ctx.redis,
        ctx.settings,
        capsule=capsule,
        wallet_address=request["data"]["wallet_address"],
        client_ip=client_ip(request),
        now=ctx.now(),
    )
    return json_response(wallet_challenge_schema.dump({"message": message}))


@routes.post("/api/claim/{token}/wallet/verify")
@docs(
    tags=["capsule"],
    summary="Bind the wallet you proved to you",
    description="200 with the bound wallet. The wallet already bound to you again: 200, unchanged. "
    "Another wallet already bound to you (e.g. the one the owner recorded): 409 saying so (if you lost "
    "it, the plan's guardians can approve the proven one). A wallet bound to another beneficiary of the "
    "plan: 409. A wrong, expired or reused challenge: 401.",
    responses=error_responses(400, 401, 409),
)
@request_schema(WalletVerifyRequestSchema, required=True)
@response_schema(WalletBoundSchema, 200)
@claim_gate
async def wallet_verify(request: web.Request, capsule: Capsule) -> web.Response:
    ctx = context(request)
    data = request["data"]
    binding = await heir_wallets.verify(
        ctx.pool,
        ctx.redis,
        ctx.settings,
        capsule=capsule,
        wallet_address=data["wallet_address"],
        signature=data["signature"],
        now=ctx.now(),
    )
    return json_response(wallet_bound_schema.dump({"wallet": binding}))
