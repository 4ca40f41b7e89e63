"""/api/legacy/claims: the owner's view of what happened on-chain, beneficiary by beneficiary."""

from __future__ import annotations

from aiohttp import web
from aiohttp_apigami import docs, response_schema

from api.chain.schemas import ClaimsSchema, claims_schema
from api.common import json_response
from api.keys import USER_ID, context
from api.schemas import error_responses
from models.chain import claims

routes = web.RouteTableDef()


@routes.get("/api/legacy/claims")
@docs(
    tags=["legacy"],
    summary="Each beneficiary's claim, the on-chain release and the guardians' on-chain approvals",
    description="`claim.status` is `none` (no claim submitted), `pending` (submitted, the network has "
    "not answered yet), `confirmed` (on-chain, with its hash and ledger close time) or `failed` "
    "(with `contractErrorCode` when the contract refused). A confirmed transaction is shown over "
    "later attempts; otherwise the latest attempt. `capsuleOpenedAt` is the last time the "
    "beneficiary opened their capsule. Beneficiaries in the order they were added.",
    responses=error_responses(401),
)
@response_schema(ClaimsSchema, 200)
async def get_claims(request: web.Request) -> web.Response:
    ctx = context(request)
    overview = await claims.overview(ctx.pool, ctx.ring, user_id=request[USER_ID])
    return json_response(claims_schema.dump(overview))
