"""On-chain calls: build the unsigned contract transaction, take back the signed one, show its status.

Guardians (JWT) approve with `approve_guardian`; beneficiaries (claim token) finalise the
release with `finalize_release` and claim with `claim_assets`. The service signs nothing: it
builds what the signer's wallet must sign, checks what comes back (core.stellar.soroban_check.check_signed),
stores it `pending` and relays it through the worker. Flow and decisions: docs/soroban.md.
"""

from __future__ import annotations

from aiohttp import web
from aiohttp_apigami import docs, request_schema, response_schema

from api.chain.schemas import (
    BuiltSchema,
    SubmitSchema,
    TransactionSchema,
    WalletBodySchema,
    built_schema,
    transaction_schema,
)
from api.claim.gate import claim_gate
from api.common import dump_many, json_response
from api.keys import USER_ID, context
from api.schemas import error_responses
from core.errors import BadRequest, NotFound
from core.stellar import soroban, soroban_check
from core.stellar.soroban import SorobanGateway
from models.chain import transactions
from models.claim.capsules import Capsule
from models.common import parse_id
from models.flows import finishing, onchain
from models.flows.onchain import Target

routes = web.RouteTableDef()

FLOW = (
    "The response is the unsigned transaction: sign `xdr` with the wallet named in `args` for "
    "`networkPassphrase` before `validUntil`, then POST it to the matching submit route. "
    "A wallet that does not exist on the network is a 409 (fund it first); a call the contract "
    "would refuse is a 409 with `contractErrorCode`; an unreachable RPC node is a 503 with "
    "`Retry-After`; no contract configured is a 503."
)
SUBMIT = (
    "Checks the signed envelope (this network, one call of the service's contract with the "
    "function and arguments this route allows, source = the signer, source signature valid, "
    "time bound not passed: 400 otherwise), stores it `pending` and relays it. 202 with the "
    "status object; the same envelope again returns the same row. Poll the transactions route: "
    "`confirmed` only once the network says so."
)


def _gateway(request: web.Request) -> SorobanGateway:
    ctx = context(request)
    gateway = ctx.soroban
    if gateway is None:
        raise soroban.not_configured()
    return gateway


async def _build(request: web.Request, target: Target) -> web.Response:
    ctx = context(request)
    built = await _gateway(request).build(
        function=target["function"],
        owner=target["owner_wallet"],
        signer=target["signer"],
        now=ctx.now(),
    )
    return json_response(built_schema.dump(built))


async def _accepted(request: web.Request, row: transactions.Transaction) -> web.Response:
    """202 with the committed row's status; its relay is enqueued after the commit (a Redis
    failure leaves it to the sweep, never a 503 for a stored transaction)."""
    ctx = context(request)
    if row["status"] == "pending":
        await transactions.enqueue_relay(ctx.redis, tx_hash=row["hash"])
    return json_response(dump_many(transaction_schema, [dict(row)])[0], status=202)


# Guardian (JWT of the guardian's wallet) ----------------------------------------------------


@routes.post("/api/legacy/guardianships/{planId}/approve/build")
@docs(
    tags=["on-chain"],
    summary="Build approve_guardian(owner, guardian) for the guardian's wallet to sign",
    description="Allowed while the plan is PendingVerification (409 otherwise), for a guardian who has "
    "accepted to guard it (403 before). " + FLOW,
    responses=error_responses(401, 403, 404, 409, 503),
)
@response_schema(BuiltSchema, 200)
async def guardian_build(request: web.Request) -> web.Response:
    ctx = context(request)
    _gateway(request)
    target = await onchain.guardian_approval_target(
        ctx.pool, user_id=request[USER_ID], raw_plan_id=request.match_info["planId"]
    )
    return await _build(request, target)


@routes.post("/api/legacy/guardianships/{planId}/submit")
@docs(
    tags=["on-chain"],
    summary="Relay the guardian's signed approve_guardian",
    description=SUBMIT,
    responses=error_responses(400, 401, 403, 404, 409, 503),
)
@request_schema(SubmitSchema, required=True)
@response_schema(TransactionSchema, 202)
async def guardian_submit(request: web.Request) -> web.Response:
    ctx = context(request)
    gateway = _gateway(request)
    row, _created = await onchain.guardian_submit(
        ctx.pool,
        user_id=request[USER_ID],
        raw_plan_id=request.match_info["planId"],
        xdr=request["data"]["signed_xdr"].strip(),
        contract_id=gateway.contract_id,
        passphrase=gateway.passphrase,
        now=ctx.now(),
    )
    return await _accepted(request, row)


@routes.get("/api/legacy/guardianships/{planId}/transactions/{id}")
@docs(
    tags=["on-chain"],
    summary="Status of a transaction this guardian submitted",
    description="`pending` until the network confirms or fails it; `contractErrorCode` when the "
    "contract refused.",
    responses=error_responses(401, 404, 503),
)
@response_schema(TransactionSchema, 200)
async def guardian_transaction(request: web.Request) -> web.Response:
    ctx = context(request)
    _gateway(request)
    target = await onchain.guardian_target(
        ctx.pool, user_id=request[USER_ID], raw_plan_id=request.match_info["planId"]
    )
    row = await transactions.get(
        ctx.pool,
        tx_id=parse_id(raw=request.match_info["id"], what="Transaction"),
        owner_id=target["owner_id"],
        signer=target["signer"],
    )
    if row is None:
        raise NotFound("Transaction")
    return json_response(transaction_schema.dump(row))


# Beneficiary (claim token) ------------------------------------------------------------------


@routes.post("/api/claim/{token}/release/build")
@docs(
    tags=["on-chain"],
    summary="Build finalize_release(owner, caller) for the beneficiary's wallet to sign",
    description="Allowed once the plan is Approved and its cancel window has passed (409 otherwise, "
    'saying when). Only with the wallet bound to you: 409 "prove your wallet first" (naming '
    "`/wallet/challenge` and `/wallet/verify`) when none is, 409 for another wallet. Builds per heir "
    "(these routes and the page's button together) are limited to RATE_LIMIT_HEIR_BUILDS_PER_HOUR "
    "(429 with `Retry-After`). " + FLOW,
    responses=error_responses(400, 404, 409, 429, 503),
)
@request_schema(WalletBodySchema)
@response_schema(BuiltSchema, 200)
@claim_gate
async def release_build(request: web.Request, capsule: Capsule) -> web.Response:
    return await _beneficiary_build(request, capsule, "finalize_release")


@routes.post("/api/claim/{token}/claim/build")
@docs(
    tags=["on-chain"],
    summary="Build claim_assets(owner, beneficiary) for the beneficiary's wallet to sign",
    description="Allowed once the plan is Released and this beneficiary has not claimed (409 "
    "otherwise). Only with the wallet bound to you, as for `/release/build`. " + FLOW,
    responses=error_responses(400, 404, 409, 429, 503),
)
@request_schema(WalletBodySchema)
@response_schema(BuiltSchema, 200)
@claim_gate
async def claim_build(request: web.Request, capsule: Capsule) -> web.Response:
    return await _beneficiary_build(request, capsule, "claim_assets")


async def _beneficiary_build(request: web.Request, capsule: Capsule, function: str) -> web.Response:
    ctx = context(request)
    _gateway(request)
    target = onchain.beneficiary_target(
        capsule=capsule,
        function=function,
        wallet_address=(request.get("data") or {}).get("wallet_address"),
        now=ctx.now(),
    )
    await finishing.count_build(
        ctx.redis,
        beneficiary_id=capsule["beneficiary_id"],
        limit=ctx.settings.rate_limit_heir_builds_per_hour,
    )
    return await _build(request, target)


@routes.post("/api/claim/{token}/submit")
@docs(
    tags=["on-chain"],
    summary="Relay the beneficiary's signed finalize_release or claim_assets",
    description=SUBMIT + " The source must be the wallet bound to this beneficiary: 400 otherwise, "
    "nothing stored, nothing sent.",
    responses=error_responses(400, 404, 409, 503),
)
@request_schema(SubmitSchema, required=True)
@response_schema(TransactionSchema, 202)
@claim_gate
async def claim_submit(request: web.Request, capsule: Capsule) -> web.Response:
    ctx = context(request)
    gateway = _gateway(request)
    xdr = request["data"]["signed_xdr"].strip()
    envelope = soroban_check.decode(xdr)
    if envelope.function not in onchain.BENEFICIARY_FUNCTIONS:
        raise BadRequest("This route relays only finalize_release or claim_assets")
    row, _created = await onchain.beneficiary_submit(
        ctx.pool,
        capsule=capsule,
        envelope=envelope,
        xdr=xdr,
        contract_id=gateway.contract_id,
        passphrase=gateway.passphrase,
        now=ctx.now(),
    )
    return await _accepted(request, row)


@routes.get("/api/claim/{token}/transactions/{id}")
@docs(
    tags=["on-chain"],
    summary="Status of a transaction this beneficiary submitted",
    responses=error_responses(404, 503),
)
@response_schema(TransactionSchema, 200)
@claim_gate
async def claim_transaction(request: web.Request, capsule: Capsule) -> web.Response:
    ctx = context(request)
    _gateway(request)
    row = await transactions.get_for_beneficiary(
        ctx.pool,
        tx_id=parse_id(raw=request.match_info["id"], what="Transaction"),
        beneficiary_id=capsule["beneficiary_id"],
    )
    if row is None:
        raise NotFound("Transaction")
    return json_response(transaction_schema.dump(row))
