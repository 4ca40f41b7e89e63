"""The chain room's wire shapes: every request and response schema of its routes."""

from __future__ import annotations

from marshmallow import fields, validate

from api.claim.schemas import WalletBindingSchema
from api.schemas import BaseSchema, Percentage, UtcDateTime, WalletAddress


class ArgSchema(BaseSchema):
    name = fields.String(required=True)
    type = fields.String(required=True)
    value = fields.String(required=True)


class BuiltSchema(BaseSchema):
    xdr = fields.String(required=True, metadata={"description": "Unsigned TransactionEnvelope, base64"})
    networkPassphrase = fields.String(required=True, attribute="network_passphrase")
    contractId = fields.String(required=True, attribute="contract_id")
    function = fields.String(required=True)
    args = fields.List(fields.Nested(ArgSchema), required=True)
    fee = fields.Integer(
        required=True, metadata={"description": "Maximum fee in stroops (inclusion + resources)"}
    )
    validUntil = UtcDateTime(required=True, attribute="valid_until")


class TransactionSchema(BaseSchema):
    id = fields.String(required=True)
    hash = fields.String(required=True)
    function = fields.String(required=True)
    status = fields.String(required=True, metadata={"enum": ["pending", "confirmed", "failed"]})
    ledger = fields.Integer(allow_none=True)
    confirmedAt = UtcDateTime(allow_none=True, attribute="confirmed_at")
    contractErrorCode = fields.Integer(allow_none=True, attribute="contract_error_code")
    reason = fields.String(allow_none=True)


class WalletBodySchema(BaseSchema):
    walletAddress = WalletAddress(
        attribute="wallet_address",
        metadata={
            "description": "The wallet that will sign: the one bound to you (409 otherwise). Optional: "
            "the bound wallet is used when absent."
        },
    )


class SubmitSchema(BaseSchema):
    signedXdr = fields.String(
        required=True, attribute="signed_xdr", validate=validate.Length(min=1, max=20_000)
    )


built_schema = BuiltSchema()


transaction_schema = TransactionSchema()


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
