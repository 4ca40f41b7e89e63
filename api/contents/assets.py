"""/api/assets: what the plan hands on, with exact decimal-string amounts."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from aiohttp import web
from marshmallow import ValidationError, fields, validate

from api.common import Doc, Owned
from api.keys import Context
from api.schemas import (
    AudienceSchema,
    BaseSchema,
    DecimalString,
    PatchSchema,
    Text,
    UtcDateTime,
)
from core.stellar.wallet import is_valid_address
from models.contents import assets
from models.pagination import Page, PageRequest

routes = web.RouteTableDef()

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
        validate=validate.Range(
            max=AMOUNT_LIMIT, max_inclusive=False, error="Must have at most 31 integer digits."
        ),
        metadata={"description": "A decimal string with up to 7 decimals, returned exactly as sent."},
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
    amount = DecimalString(required=True)
    assetCode = fields.String(
        required=True,
        allow_none=True,
        attribute="asset_code",
        metadata={
            "description": "`XLM`, `CODE:ISSUER`, or null: not a Stellar asset (shown with no currency)."
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


class Assets(Owned):
    path = "/api/assets"
    tag = "assets"
    schema = AssetSchema
    create_schema = AssetCreateSchema
    patch_schema = AssetPatchSchema
    docs = {
        "list": Doc("List assets, newest first"),
        "create": Doc(
            "Add an asset", '`amount` is a decimal string such as "1250.50"; a JSON number is a 400.'
        ),
        "get": Doc("Get an asset"),
        "patch": Doc(
            "Change an asset", "Validated like create, for the fields given; an empty body is a 400."
        ),
        "delete": Doc("Remove an asset"),
    }

    async def list(self, ctx: Context, request: web.Request, *, user_id: str, page: PageRequest) -> Page[Any]:
        return await assets.list_page(ctx.pool, ctx.ring, user_id=user_id, page=page)

    async def create(
        self, ctx: Context, request: web.Request, *, user_id: str, data: dict[str, Any]
    ) -> assets.Asset:
        return await assets.create(ctx.pool, ctx.ring, user_id=user_id, data=data)

    async def get(self, ctx: Context, request: web.Request, *, user_id: str, raw_id: str) -> assets.Asset:
        return await assets.get(ctx.pool, ctx.ring, user_id=user_id, raw_id=raw_id)

    async def update(
        self, ctx: Context, request: web.Request, *, user_id: str, raw_id: str, changes: dict[str, Any]
    ) -> assets.Asset:
        return await assets.update(ctx.pool, ctx.ring, user_id=user_id, raw_id=raw_id, changes=changes)

    async def delete(self, ctx: Context, request: web.Request, *, user_id: str, raw_id: str) -> None:
        await assets.delete(ctx.pool, user_id=user_id, raw_id=raw_id)


Assets().register(routes)
