"""/api/legacy/claims: the owner's view of what happened on-chain, beneficiary by beneficiary."""

from __future__ import annotations

from aiohttp import web
from aiohttp_apigami import docs, response_schema
from marshmallow import fields

from api.claim.capsule import WalletBindingSchema
from api.common import json_response
from api.contents.beneficiaries import Percentage
from api.keys import USER_ID, context
from api.schemas import BaseSchema, UtcDateTime, error_responses
from models.chain import claims

routes = web.RouteTableDef()


class OnChainSchema(BaseSchema):
    status = fields.String(required=True, metadata={"enum": ["none", "pending", "confirmed", "failed"]})
    hash = fields.String(allow_none=True)
    confirmedAt = UtcDateTime(allow_none=True, attribute="confirmed_at")
    contractErrorCode = fields.Integer(allow_none=True, attribute="contract_error_code")


class BeneficiaryClaimSchema(BaseSchema):
    beneficiaryId = fields.String(required=True, attribute="beneficiary_id")
    name = fields.String(required=True)
    allocationPercentage = Percentage(required=True, attribute="allocation_percentage")
    walletAddress = fields.String(allow_none=True, attribute="wallet_address")
    wallet = fields.Nested(
        WalletBindingSchema,
        allow_none=True,
        metadata={"description": "The bound wallet and how: recorded by you, or proven by the beneficiary."},
    )
    capsuleOpenedAt = UtcDateTime(allow_none=True, attribute="capsule_opened_at")
    claim = fields.Nested(OnChainSchema, required=True)


class GuardianApprovalSchema(OnChainSchema):
    guardianId = fields.String(required=True, attribute="guardian_id")
    guardianName = fields.String(allow_none=True, attribute="guardian_name")


class ClaimsSchema(BaseSchema):
    claims = fields.List(fields.Nested(BeneficiaryClaimSchema), required=True)
    release = fields.Nested(OnChainSchema, required=True)
    approvals = fields.List(fields.Nested(GuardianApprovalSchema), required=True)


claims_schema = ClaimsSchema()


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
