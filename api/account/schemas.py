"""The account room's wire shapes: every request and response schema of its routes."""

from __future__ import annotations

from marshmallow import fields, validate

from api.schemas import (
    BaseSchema,
    GrammaticalGender,
    Locale,
    PatchSchema,
    Text,
    TimeZone,
    UtcDateTime,
    WalletAddress,
)


class ChallengeRequestSchema(BaseSchema):
    walletAddress = WalletAddress(required=True)


class ChallengeSchema(BaseSchema):
    message = fields.String(
        required=True,
        metadata={
            "description": "Text to sign: service, wallet address, 256-bit nonce, issue and expiry times."
        },
    )


class VerifyRequestSchema(BaseSchema):
    walletAddress = WalletAddress(required=True)
    signature = fields.String(
        required=True,
        metadata={
            "description": "ed25519 signature of the challenge message, base64 (88 chars) or hex "
            "(128 chars), over the raw message or its SEP-53 digest."
        },
    )


class UserSchema(BaseSchema):
    id = fields.String(required=True)
    walletAddress = fields.String(required=True, attribute="wallet_address")
    name = fields.String(allow_none=True, required=True)
    email = fields.String(allow_none=True)
    wallets = fields.List(
        fields.String(), metadata={"description": "Every wallet that signs in to this account."}
    )
    locale = Locale(who="Your", required=True)
    timeZone = TimeZone(who="Your", required=True, attribute="time_zone")
    grammaticalGender = GrammaticalGender(who="you", required=True, attribute="grammatical_gender")
    createdAt = UtcDateTime(attribute="created_at")
    updatedAt = UtcDateTime(attribute="updated_at")


class SessionSchema(BaseSchema):
    token = fields.String(required=True, metadata={"description": "HS256 JWT, valid 7 days."})
    user = fields.Nested(UserSchema, required=True)


class OkSchema(BaseSchema):
    ok = fields.Boolean(required=True)
    message = fields.String()


user_schema = UserSchema()
challenge_schema = ChallengeSchema()
session_schema = SessionSchema()


class LogoutAllSchema(BaseSchema):
    ok = fields.Boolean(required=True)
    endedHere = UtcDateTime(
        required=True,
        attribute="ended_here",
        metadata={"description": "From this moment the server that answered refuses every earlier session."},
    )
    endedEverywhereBy = UtcDateTime(
        required=True,
        attribute="ended_everywhere_by",
        metadata={
            "description": "By this moment every server refuses them (each trusts what it last read "
            "about an account for up to 30 seconds)."
        },
    )
    message = fields.String(required=True)


logout_all_schema = LogoutAllSchema()


class ProfileUpdateSchema(PatchSchema):
    name = Text(allow_none=True, validate=validate.Length(min=1, max=120))
    email = fields.Email(allow_none=True, validate=validate.Length(max=254))
    locale = Locale(who="Your")
    timeZone = TimeZone(who="Your", attribute="time_zone")
    grammaticalGender = GrammaticalGender(who="you", attribute="grammatical_gender")


class DeleteAccountSchema(BaseSchema):
    confirm = fields.String(
        required=True,
        validate=validate.Length(min=1, max=100),
        metadata={"description": "A wallet address (G…) that signs in to this account, to confirm."},
    )


class DeletionSchema(BaseSchema):
    status = fields.String(required=True, metadata={"enum": ["deleting"]})
    endedEverywhereBy = UtcDateTime(
        required=True,
        attribute="ended_everywhere_by",
        metadata={"description": "Every session of the account is refused on every server by then."},
    )
    message = fields.String(required=True)


deletion_schema = DeletionSchema()
