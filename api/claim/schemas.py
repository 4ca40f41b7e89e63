"""The claim room's wire shapes: every request and response schema of its routes."""

from __future__ import annotations

from marshmallow import fields, validate

from api.schemas import BaseSchema, DecimalString, Percentage, Text, UtcDateTime, WalletAddress


class CapsuleOwnerSchema(BaseSchema):
    name = fields.String(required=True, allow_none=True, metadata={"description": "null if never set."})


class CapsuleBeneficiarySchema(BaseSchema):
    name = fields.String(required=True)
    relationship = fields.String(required=True)
    allocationPercentage = Percentage(required=True, attribute="allocation_percentage")


class MediaSchema(BaseSchema):
    type = fields.String(required=True, metadata={"enum": ["photo", "video", "voice"]})
    contentType = fields.String(required=True, attribute="content_type")
    size = fields.Integer(required=True, metadata={"description": "Bytes."})
    status = fields.String(
        required=True,
        metadata={
            "enum": ["available", "damaged"],
            "description": "`damaged`: the archive's regular check found the stored file damaged; it can no "
            "longer be opened (its download answers 409 in words). Nothing else is affected.",
        },
    )


class CapsuleMessageSchema(BaseSchema):
    id = fields.String(required=True)
    title = fields.String(required=True, allow_none=True)
    content = fields.String(required=True)
    createdAt = UtcDateTime(required=True, attribute="created_at")
    media = fields.Nested(
        MediaSchema,
        required=True,
        allow_none=True,
        metadata={"description": "Play it from `GET /api/claim/{token}/messages/{id}/media`."},
    )


class SealedMessageSchema(BaseSchema):
    id = fields.String(required=True)
    title = fields.String(required=True, allow_none=True)
    opensAt = UtcDateTime(required=True, attribute="opens_at")


class CapsuleDocumentSchema(BaseSchema):
    id = fields.String(required=True)
    title = fields.String(required=True)
    type = fields.String(required=True)
    category = fields.String(required=True)
    fileName = fields.String(required=True, attribute="file_name")
    contentType = fields.String(required=True, attribute="content_type")
    size = fields.Integer(required=True, metadata={"description": "Bytes."})
    sha256 = fields.String(required=True, metadata={"description": "Hex SHA-256 of the file."})
    status = fields.String(
        required=True,
        metadata={
            "enum": ["available", "damaged"],
            "description": "`damaged`: the archive's regular check found the stored file damaged; it can no "
            "longer be opened (its download answers 409 in words). Nothing else is affected.",
        },
    )


class WalletBindingSchema(BaseSchema):
    address = fields.String(required=True, metadata={"description": "The Stellar wallet (G…)."})
    boundVia = fields.String(
        required=True,
        attribute="bound_via",
        metadata={
            "enum": ["owner", "proven", "guardians", "claim"],
            "description": "`owner`: recorded by the plan's owner; `proven`: you signed a challenge "
            "with it; `guardians`: the plan's guardians approved it in place of a lost one; `claim`: "
            "bound by a claim confirmed before proofs were required.",
        },
    )
    boundAt = UtcDateTime(required=True, attribute="bound_at")


class ShareSchema(BaseSchema):
    percentage = DecimalString(
        required=True,
        pattern=r"^\d+(\.\d{1,2})?$",
        metadata={
            "description": "Your allocation over the allocations of everyone this asset is for, in percent, "
            'to two decimals ("100" when it is for you alone); the percentages of one asset add up to 100.'
        },
    )
    amount = DecimalString(
        required=True,
        metadata={
            "description": "The asset's amount at that share, to the owner's own decimal places (two when "
            "the owner wrote fewer and the split is not exact at theirs). The shares of one asset add up "
            "exactly to its amount: each is rounded down and the units left go one each to the largest "
            "remainders (the heir the owner named first wins a tie). In the asset's currency, if it has one."
        },
    )


class CapsuleAssetSchema(BaseSchema):
    id = fields.String(required=True)
    label = fields.String(required=True)
    amount = DecimalString(
        required=True,
        allow_none=True,
        metadata={
            "description": "A decimal string, as the owner wrote it; null for a thing (a piano, a ring), "
            "which is not divided: it goes whole to everyone it is for (`sharedWith`)."
        },
    )
    assetCode = fields.String(
        required=True,
        allow_none=True,
        attribute="asset_code",
        metadata={
            "description": "`XLM`, `CODE:ISSUER`, or null: not a Stellar asset (a house): show the amount "
            "alone, with no currency."
        },
    )
    description = fields.String(required=True, allow_none=True)
    share = fields.Nested(
        ShareSchema,
        required=True,
        allow_none=True,
        metadata={
            "description": "Your part of this asset, among the beneficiaries it is for; null for a thing "
            "(no share, no unit: it goes whole to you, and to `sharedWith` if anyone)."
        },
    )
    sharedWith = fields.List(
        fields.String(),
        required=True,
        allow_none=True,
        attribute="shared_with",
        metadata={
            "description": "For a thing (`amount` null): the names of the other beneficiaries it goes to "
            'together with you, in the owner\'s order ([]: yours alone; "The piano goes to you and Cal"). '
            "null for an asset with an amount."
        },
    )


class CapsuleSchema(BaseSchema):
    status = fields.String(
        required=True,
        metadata={
            "enum": ["locked", "ready", "released"],
            "description": "`locked`: no other field is present. `ready` (a contract is configured and "
            "the owner's cancel window is over): `readySince`, `owner`, `beneficiary.name` and `wallet` "
            "only; finalise the release on-chain to open it.",
        },
    )
    readySince = UtcDateTime(attribute="ready_since")
    releasedAt = UtcDateTime(attribute="released_at")
    owner = fields.Nested(CapsuleOwnerSchema)
    beneficiary = fields.Nested(CapsuleBeneficiarySchema)
    wallet = fields.Nested(
        WalletBindingSchema,
        allow_none=True,
        metadata={
            "description": "The wallet bound to you for on-chain steps; null until the owner recorded "
            "one or you proved one (POST /api/claim/{token}/wallet/challenge, then /wallet/verify)."
        },
    )
    messages = fields.List(
        fields.Nested(CapsuleMessageSchema), metadata={"description": "Opened messages, oldest first."}
    )
    sealedMessages = fields.List(
        fields.Nested(SealedMessageSchema),
        attribute="sealed_messages",
        metadata={"description": "Addressed to this beneficiary, not open yet; soonest first."},
    )
    documents = fields.List(fields.Nested(CapsuleDocumentSchema), metadata={"description": "Oldest first."})
    assets = fields.List(
        fields.Nested(CapsuleAssetSchema),
        metadata={"description": "The assets addressed to this beneficiary (audience), oldest first."},
    )


class WalletChallengeRequestSchema(BaseSchema):
    walletAddress = WalletAddress(required=True, attribute="wallet_address")


class WalletChallengeSchema(BaseSchema):
    message = fields.String(
        required=True,
        metadata={
            "description": 'Text to sign with the wallet: names the service, the wallet, "claim as '
            "beneficiary of <owner>'s plan\", a 256-bit nonce, issue and expiry times. Single use, "
            "valid 5 minutes; up to 5 stay live at once."
        },
    )


class WalletVerifyRequestSchema(WalletChallengeRequestSchema):
    signature = fields.String(
        required=True,
        validate=validate.Length(min=1, max=200),
        metadata={
            "description": "ed25519 signature of the challenge message, base64 (88 chars) or hex "
            "(128 chars), over the raw message or its SEP-53 digest, exactly as sign-in accepts."
        },
    )


class WalletBoundSchema(BaseSchema):
    wallet = fields.Nested(WalletBindingSchema, required=True)


class HeirRequestSchema(BaseSchema):
    note = Text(
        multiline=True,
        validate=validate.Length(max=1000),
        allow_none=True,
        metadata={
            "description": "Optional words for the guardians (up to 1,000 characters): sealed at rest, "
            "shown in their email, never on the timeline."
        },
    )


class HeirRequestedSchema(BaseSchema):
    status = fields.String(required=True, metadata={"enum": ["requested"]})


class ResendRequestSchema(BaseSchema):
    email = Text(
        required=True,
        validate=[validate.Length(max=320), validate.Email()],
        metadata={"description": "The address the plan's owner registered for you."},
    )


class ResendAcceptedSchema(BaseSchema):
    status = fields.String(required=True, metadata={"enum": ["accepted"]})
    message = fields.String(required=True)


wallet_challenge_schema = WalletChallengeSchema()
wallet_bound_schema = WalletBoundSchema()
heir_requested_schema = HeirRequestedSchema()
capsule_schema = CapsuleSchema()
