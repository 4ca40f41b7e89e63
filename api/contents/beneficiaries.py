"""/api/beneficiaries: who receives a share of the plan, and their capsule claim tokens."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from aiohttp import web
from aiohttp_apigami import docs, response_schema
from marshmallow import ValidationError, fields, validate

from api.common import Doc, Owned, json_response
from api.keys import USER_ID, Context, context
from api.schemas import (
    BaseSchema,
    PatchSchema,
    Text,
    UtcDateTime,
    WalletAddress,
    error_responses,
)
from models.contents import beneficiaries
from models.contents.beneficiaries import Beneficiary
from models.pagination import Page, PageRequest

routes = web.RouteTableDef()

CLAIM_LINK_NOTE = (
    "`claimToken` (64 lowercase hex, 32 random bytes) is minted by the service; a value sent by the "
    "client is ignored. It is the only key to the beneficiary's capsule at `/api/claim/:token`: "
    "share it with them, and rotate it if it leaks."
)


class Percentage(fields.Number):
    """A JSON number > 0 and ≤ 100 with at most two decimals, kept exact as a Decimal."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("metadata", {}).update(
            {"minimum": 0, "exclusiveMinimum": True, "maximum": 100, "multipleOf": 0.01, "example": 25.5}
        )
        super().__init__(**kwargs)

    def _deserialize(self, value: Any, attr: Any, data: Any, **kwargs: Any) -> Decimal:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValidationError("Must be a number, e.g. 25.5.")
        if isinstance(value, int) and not 0 < value <= 100:  # before float(): 10**400 overflows it
            raise ValidationError("Must be greater than 0 and at most 100.")
        if not math.isfinite(value) or not 0 < value <= 100:
            raise ValidationError("Must be greater than 0 and at most 100.")
        # repr() of a float is its shortest round-trip form, so 33.33 stays 33.33.
        number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
        if number != number.quantize(Decimal("0.01")):
            raise ValidationError("At most 2 decimal places.")
        return number

    @staticmethod
    def to_wire(value: Any) -> int | float | None:
        """The JSON value for a stored one (`api.common.dump_many` calls it directly)."""
        if value is None:
            return None
        number = Decimal(value)
        return int(number) if number == number.to_integral_value() else float(number)

    def _serialize(self, value: Any, attr: Any, obj: Any, **kwargs: Any) -> int | float | None:
        return self.to_wire(value)


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
    createdAt = UtcDateTime(required=True, attribute="created_at")
    updatedAt = UtcDateTime(required=True, attribute="updated_at")


beneficiary_schema = BeneficiarySchema()


class Beneficiaries(Owned):
    path = "/api/beneficiaries"
    tag = "beneficiaries"
    schema = BeneficiarySchema
    create_schema = BeneficiaryCreateSchema
    patch_schema = BeneficiaryPatchSchema
    docs = {
        "list": Doc("List beneficiaries, newest first"),
        "create": Doc(
            "Add a beneficiary",
            "The total `allocationPercentage` over your beneficiaries may not exceed 100 "
            "(400 naming the current total). " + CLAIM_LINK_NOTE,
        ),
        "get": Doc("Get a beneficiary"),
        "patch": Doc(
            "Change a beneficiary",
            "Validated like create, for the fields given; an empty body is a 400. "
            "A `claimToken` in the body is ignored: use the rotate route.",
        ),
        "delete": Doc(
            "Remove a beneficiary",
            "Also removes them from every message audience; a message left with no recipient "
            "stays, addressed to nobody, until you re-address it. Their claim link stops working.",
        ),
    }

    async def list(self, ctx: Context, request: web.Request, *, user_id: str, page: PageRequest) -> Page[Any]:
        return await beneficiaries.list_page(ctx.pool, ctx.ring, user_id=user_id, page=page)

    async def create(
        self, ctx: Context, request: web.Request, *, user_id: str, data: dict[str, Any]
    ) -> Beneficiary:
        return await beneficiaries.create(ctx.pool, ctx.ring, user_id=user_id, data=data, now=ctx.now())

    async def get(self, ctx: Context, request: web.Request, *, user_id: str, raw_id: str) -> Beneficiary:
        return await beneficiaries.get(ctx.pool, ctx.ring, user_id=user_id, raw_id=raw_id)

    async def update(
        self, ctx: Context, request: web.Request, *, user_id: str, raw_id: str, changes: dict[str, Any]
    ) -> Beneficiary:
        return await beneficiaries.update(
            ctx.pool, ctx.ring, user_id=user_id, raw_id=raw_id, changes=changes, now=ctx.now()
        )

    async def delete(self, ctx: Context, request: web.Request, *, user_id: str, raw_id: str) -> None:
        await beneficiaries.delete(ctx.pool, ctx.ring, user_id=user_id, raw_id=raw_id, now=ctx.now())


Beneficiaries().register(routes)


@routes.post("/api/beneficiaries/{id}/claim-token/rotate")
@docs(
    tags=["beneficiaries"],
    summary="Issue a new claim token",
    description="The previous token stops opening the capsule at once; share the new one.",
    responses=error_responses(401, 404, 409),
)
@response_schema(BeneficiarySchema, 200)
async def rotate_claim_token(request: web.Request) -> web.Response:
    ctx = context(request)
    row = await beneficiaries.rotate_claim_token(
        ctx.pool, ctx.ring, user_id=request[USER_ID], raw_id=request.match_info["id"]
    )
    return json_response(beneficiary_schema.dump(row))
