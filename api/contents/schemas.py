"""The contents room's wire shapes: every request and response schema of its routes."""

from __future__ import annotations

import re
from datetime import date
from decimal import Decimal
from typing import Any

from marshmallow import ValidationError, fields, post_load, validate

from api.schemas import (
    AudienceSchema,
    BaseSchema,
    DecimalString,
    GrammaticalGender,
    Id,
    Locale,
    PatchSchema,
    Percentage,
    Text,
    TimeZone,
    UtcDateTime,
    WalletAddress,
)
from core.stellar.wallet import is_valid_address
from models.contents import assets, messages
from models.contents.messages import RELEASE_KINDS

CLAIM_LINK_NOTE = (
    "`claimToken` (64 lowercase hex, 32 random bytes) is minted by the service; a value sent by the "
    "client is ignored. It is the only key to the beneficiary's capsule at `/api/claim/:token`: "
    "share it with them, and rotate it if it leaks."
)

# A new beneficiary or guardian takes the owner's language unless one is sent (docs/translations.md).
NEW_PERSON_LOCALE = (
    "Their language, one of the service's supported languages (LANGUAGES). Not sent on create: the "
    "owner's own, if set. null: not set, emails are in English and pages follow the browser's "
    "Accept-Language. Their time zone is never copied from the owner's."
)


class BeneficiaryCreateSchema(BaseSchema):
    name = Text(required=True, validate=validate.Length(min=1, max=120))
    relationship = Text(
        required=True, validate=validate.Length(min=1, max=60), metadata={"example": "daughter"}
    )
    email = fields.Email(required=True, validate=validate.Length(max=254))
    allocationPercentage = Percentage(
        required=True,
        attribute="allocation_percentage",
        metadata={"description": "Share of the plan; one owner's beneficiaries total at most 100."},
    )
    walletAddress = WalletAddress(
        allow_none=True,
        attribute="wallet_address",
        metadata={
            "description": "Optional: the Stellar wallet this beneficiary claims with (unique among your "
            "beneficiaries, 409 otherwise). Left empty, the first confirmed on-chain claim records it."
        },
    )
    locale = Locale(who="Their", metadata={"description": NEW_PERSON_LOCALE})
    timeZone = TimeZone(who="Their", attribute="time_zone")
    grammaticalGender = GrammaticalGender(who="them", attribute="grammatical_gender")


class BeneficiaryPatchSchema(PatchSchema, BeneficiaryCreateSchema):
    """Any subset of the create fields; `claimToken` cannot be set (use the rotate route)."""


class BeneficiarySchema(BaseSchema):
    id = fields.String(required=True)
    userId = fields.String(required=True, attribute="user_id")
    name = fields.String(required=True)
    relationship = fields.String(required=True)
    email = fields.String(required=True)
    allocationPercentage = Percentage(required=True, attribute="allocation_percentage")
    walletAddress = fields.String(allow_none=True, attribute="wallet_address")
    claimToken = fields.String(
        required=True,
        allow_none=True,
        attribute="claim_token",
        metadata={
            "description": CLAIM_LINK_NOTE + " null once the plan is released: the heirs hold their own "
            "links, and the owner's account no longer opens them (a deliberate deviation from the "
            "spec's string type: docs/api-decisions.md).",
            "pattern": "^[0-9a-f]{64}$",
        },
    )
    emailConfirmedAt = UtcDateTime(
        required=True,
        allow_none=True,
        attribute="email_confirmed_at",
        metadata={
            "description": "When the heir confirmed, by the link of "
            "`POST /api/beneficiaries/:id/confirm-email`, that this address reaches them; null until "
            "then, and again after the address changes."
        },
    )
    locale = Locale(who="Their", required=True)
    timeZone = TimeZone(who="Their", required=True, attribute="time_zone")
    grammaticalGender = GrammaticalGender(who="them", required=True, attribute="grammatical_gender")
    createdAt = UtcDateTime(required=True, attribute="created_at")
    updatedAt = UtcDateTime(required=True, attribute="updated_at")


beneficiary_schema = BeneficiarySchema()


class GuardianCreateSchema(BaseSchema):
    name = Text(required=True, validate=validate.Length(min=1, max=120))
    email = fields.Email(required=True, validate=validate.Length(max=254))
    walletAddress = WalletAddress(
        allow_none=True,
        attribute="wallet_address",
        metadata={
            "description": "The guardian's own Stellar account, if they have one: it signs their answers "
            "(and approve_guardian on-chain). Omit it (or null) for a guardian without a wallet: they accept "
            "by creating a passkey on their guardian page, and answer with it. With SERVICE_CONTRACT_ID set, "
            "approvals are signed on-chain and need a wallet (readiness names who lacks one)."
        },
    )
    relationship = Text(allow_none=True, validate=validate.Length(min=1, max=60))
    locale = Locale(who="Their", metadata={"description": NEW_PERSON_LOCALE})
    timeZone = TimeZone(who="Their", attribute="time_zone")
    grammaticalGender = GrammaticalGender(who="them", attribute="grammatical_gender")


class GuardianPatchSchema(PatchSchema, GuardianCreateSchema):
    """Any subset of the create fields; `relationship: null` clears it."""


class GuardianSchema(BaseSchema):
    id = fields.String(required=True)
    userId = fields.String(required=True, attribute="user_id")
    name = fields.String(required=True)
    email = fields.String(required=True)
    walletAddress = fields.String(required=True, allow_none=True, attribute="wallet_address")
    proof = fields.String(
        required=True,
        allow_none=True,
        validate=validate.OneOf(["wallet", "passkey"]),
        metadata={
            "description": "How this guardian answers: `wallet` (a wallet address is recorded), `passkey` "
            "(no wallet: they registered a passkey when they accepted), or null (no wallet, not accepted)."
        },
    )
    relationship = fields.String(required=True, allow_none=True)
    locale = Locale(who="Their", required=True)
    timeZone = TimeZone(who="Their", required=True, attribute="time_zone")
    grammaticalGender = GrammaticalGender(who="them", required=True, attribute="grammatical_gender")
    createdAt = UtcDateTime(required=True, attribute="created_at")
    updatedAt = UtcDateTime(required=True, attribute="updated_at")
    invitedAt = UtcDateTime(
        required=True,
        allow_none=True,
        attribute="invited_at",
        metadata={
            "description": "When the invitation was (last) emailed; null while it waits for your name "
            "(PATCH /api/users/me): no invitation goes out without saying whose plan it is."
        },
    )
    acceptedAt = UtcDateTime(
        required=True,
        allow_none=True,
        attribute="accepted_at",
        metadata={
            "description": "When they accepted, from their own wallet session; null until then. Only "
            "accepted guardians count toward the approvals, report or approve."
        },
    )
    declinedAt = UtcDateTime(
        required=True,
        allow_none=True,
        attribute="declined_at",
        metadata={"description": "null unless declined."},
    )
    reconfirmedAt = UtcDateTime(
        required=True,
        allow_none=True,
        attribute="reconfirmed_at",
        metadata={
            "description": "When they last confirmed they can still act (asked every "
            "GUARDIAN_RECONFIRM_INTERVAL_SECONDS, a year, after accepting or confirming); null: not yet."
        },
    )
    unresponsiveSince = UtcDateTime(
        required=True,
        allow_none=True,
        attribute="unresponsive_since",
        metadata={
            "description": "Set when they were asked to confirm and did not within "
            "GUARDIAN_RECONFIRM_GRACE_SECONDS (30 days); cleared when they confirm. You are emailed once."
        },
    )


guardian_schema = GuardianSchema()


ASSET_CODE_RE = re.compile(r"[A-Za-z0-9]{1,12}")


# numeric(38, 7) bounds: 31 integer digits.
AMOUNT_LIMIT = Decimal(10) ** 31


class AssetCode(fields.String):
    """`XLM` (the native asset) or `CODE:ISSUER`: 1-12 letters/digits and a valid G-address."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("metadata", {}).update(
            {"example": "USDC:GA5ZSEJYB37JRC5AVCIA5MOP4RHTM335X2KGX3IHOJAPP5RE34K4KZVN"}
        )
        super().__init__(**kwargs)

    def _deserialize(self, value: Any, attr: Any, data: Any, **kwargs: Any) -> str:
        text: str = super()._deserialize(value, attr, data, **kwargs)
        if text == "XLM":
            return text
        code, sep, issuer = text.partition(":")
        if not sep or not ASSET_CODE_RE.fullmatch(code) or not is_valid_address(issuer):
            raise ValidationError(
                "Must be XLM or CODE:ISSUER (a 1-12 character alphanumeric code and the issuer's G-address)."
            )
        return text


class AssetCreateSchema(BaseSchema):
    label = Text(required=True, validate=validate.Length(min=1, max=200))
    amount = DecimalString(
        required=True,
        allow_none=True,
        validate=validate.Range(
            max=AMOUNT_LIMIT, max_inclusive=False, error="Must have at most 31 integer digits."
        ),
        metadata={
            "description": "A decimal string with up to 7 decimals, returned exactly as sent; or null for a "
            "thing (a piano, a ring), which is not divided: it goes whole to everyone it is for, who read no "
            "share and no unit. Only a thing: null needs `assetCode` null (400 otherwise)."
        },
    )
    assetCode = AssetCode(allow_none=True, attribute="asset_code")
    description = Text(multiline=True, allow_none=True, validate=validate.Length(max=2000))
    audience = fields.Nested(
        AudienceSchema,
        metadata={
            "description": 'Who sees it in their capsule: `{"all": true}` (the default: every beneficiary, '
            'including ones added later) or `{"beneficiaryIds": [...]}` (1 to 200 of your own).'
        },
    )


class AssetPatchSchema(PatchSchema, AssetCreateSchema):
    """Any subset of the create fields; null clears `assetCode` or `description`; an audience
    given is replaced whole."""


class AssetSchema(BaseSchema):
    id = fields.String(required=True)
    userId = fields.String(required=True, attribute="user_id")
    label = fields.String(required=True)
    amount = DecimalString(
        required=True,
        allow_none=True,
        metadata={"description": "The decimal string as sent, or null: a thing (whole to its audience)."},
    )
    assetCode = fields.String(
        required=True,
        allow_none=True,
        attribute="asset_code",
        metadata={
            "description": "`XLM`, `CODE:ISSUER`, or null: not a Stellar asset (shown with no currency; "
            "with a null amount, a thing)."
        },
    )
    description = fields.String(required=True, allow_none=True)
    audience = fields.Method(
        "dump_audience",
        required=True,
        metadata={
            "type": "object",
            "description": '{"all": true} or {"beneficiaryIds": [...]} (an empty list: the beneficiaries '
            "it named were deleted; it is shown to nobody until re-addressed).",
        },
    )
    createdAt = UtcDateTime(required=True, attribute="created_at")
    updatedAt = UtcDateTime(required=True, attribute="updated_at")

    def dump_audience(self, record: assets.Asset) -> dict[str, Any]:
        audience = record["audience"]
        return {"all": True} if audience["all"] else {"beneficiaryIds": audience["beneficiary_ids"]}


asset_schema = AssetSchema()


MAX_CONTENT_CHARS = 100_000


MAX_AFTER_DAYS = 36_500  # a century; also keeps the value well inside a SQL integer


ISO_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}")


class ReleaseRuleSchema(BaseSchema):
    kind = fields.String(required=True, validate=validate.OneOf(RELEASE_KINDS))
    value = fields.Raw(
        allow_none=True,
        metadata={
            "description": "null for on_release; YYYY-MM-DD for on_date; whole days >= 1 for after_release."
        },
    )

    @post_load
    def typed_value(self, data: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """Check the value against its kind and give it its Python type (None, date, int)."""
        kind, value = data["kind"], data.get("value")
        if kind == "on_release":
            if value is not None:
                raise ValidationError("Must be null when kind is on_release.", field_name="value")
        elif kind == "on_date":
            value = _iso_date(value)
        elif isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_AFTER_DAYS:
            raise ValidationError(
                f"Must be a whole number of days from 1 to {MAX_AFTER_DAYS} when kind is after_release.",
                field_name="value",
            )
        return {"kind": kind, "value": value}


def _iso_date(value: Any) -> date:
    message = "Must be a date YYYY-MM-DD when kind is on_date."
    if not isinstance(value, str) or not ISO_DATE_RE.fullmatch(value):
        raise ValidationError(message, field_name="value")
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ValidationError(message, field_name="value") from None


def _not_blank(value: str) -> None:
    if not value.strip():
        raise ValidationError("Must not be blank.")


class MessageCreateSchema(BaseSchema):
    title = Text(allow_none=True, validate=validate.Length(min=1, max=200))
    content = Text(
        multiline=True,
        trim=False,
        required=True,
        validate=[validate.Length(min=1, max=MAX_CONTENT_CHARS), _not_blank],
        metadata={
            "description": "Private; up to 100 000 characters, kept as sent but for bidirectional "
            "overrides and isolates (U+202A-202E, U+2066-2069) and control characters other than line "
            "breaks and tabs, which are removed."
        },
    )
    releaseRule = fields.Nested(ReleaseRuleSchema, required=True, attribute="release_rule")
    audience = fields.Nested(AudienceSchema, required=True)
    mediaId = Id(
        allow_none=True,
        attribute="media_id",
        metadata={"description": "One of your archive items of type photo, video or voice (400 otherwise)."},
    )


class MessagePatchSchema(PatchSchema, MessageCreateSchema):
    """Any subset of the create fields; a releaseRule or audience given is replaced whole."""


class MessageSchema(BaseSchema):
    id = fields.String(required=True)
    userId = fields.String(required=True, attribute="user_id")
    title = fields.String(required=True, allow_none=True)
    content = fields.String(
        required=True,
        allow_none=True,
        metadata={
            "description": "null once the plan is released, for a letter that has not yet opened to its "
            "heirs (see `opensAt`): the owner's key no longer reads what was meant for later."
        },
    )
    opensAt = UtcDateTime(
        required=True,
        allow_none=True,
        attribute="opens_at",
        metadata={
            "description": "Once the plan is released: when the letter opens to its heirs; null before."
        },
    )
    releaseRule = fields.Method(
        "dump_rule", required=True, metadata={"type": "object", "description": "{kind, value}, as sent."}
    )
    audience = fields.Method(
        "dump_audience",
        required=True,
        metadata={"type": "object", "description": '{"all": true} or {"beneficiaryIds": [...]}.'},
    )
    mediaId = fields.String(required=True, allow_none=True, attribute="media_id")
    createdAt = UtcDateTime(required=True, attribute="created_at")
    updatedAt = UtcDateTime(required=True, attribute="updated_at")

    def dump_rule(self, record: messages.Message) -> dict[str, Any]:
        value = record["release_rule"]["value"]
        return {
            "kind": record["release_rule"]["kind"],
            "value": value.isoformat() if isinstance(value, date) else value,
        }

    def dump_audience(self, record: messages.Message) -> dict[str, Any]:
        audience = record["audience"]
        return {"all": True} if audience["all"] else {"beneficiaryIds": audience["beneficiary_ids"]}


message_schema = MessageSchema()


class ConfirmationSentSchema(BaseSchema):
    status = fields.String(
        required=True,
        metadata={
            "enum": ["pending", "deferred"],
            "description": "`pending`: the email is queued. `deferred`: your account has used its day's "
            "budget of emails to addresses you typed (EMAIL_TO_NAMED_PEOPLE_PER_DAY), or this client "
            "address has; it waits and goes out as the day frees (readiness says so).",
        },
    )
    expiresAt = UtcDateTime(required=True, metadata={"description": "When the link in it stops working."})


class ConfirmTokenSchema(BaseSchema):
    token = fields.String(
        required=True,
        validate=validate.Length(min=1, max=200),
        metadata={"description": "The 64-hex token from `$PUBLIC_BASE_URL/confirm-email/<token>`."},
    )


class ConfirmedSchema(BaseSchema):
    confirmed = fields.Boolean(required=True)
    emailConfirmedAt = UtcDateTime(required=True, metadata={"description": "When this link confirmed it."})
    alreadyConfirmed = fields.Boolean(
        required=True, metadata={"description": "True when this link had confirmed it before."}
    )
