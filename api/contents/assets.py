"""/api/assets: what the plan hands on, with exact decimal-string amounts."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from aiohttp import web
from aiohttp_apigami import docs, request_schema, response_schema
from marshmallow import ValidationError, fields, validate

from api.common import json_response, list_response
from api.keys import USER_ID, context
from api.schemas import (
    AudienceSchema,
    BaseSchema,
    DecimalString,
    PageQuerySchema,
    PatchSchema,
    Text,
    UtcDateTime,
    error_responses,
)
from core.stellar.wallet import is_valid_address
from models.contents import assets

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


@routes.get("/api/assets")
@docs(tags=["assets"], summary="List assets, newest first", responses=error_responses(400, 401))
@request_schema(PageQuerySchema, location="querystring")
@response_schema(AssetSchema(many=True), 200)
async def list_assets(request: web.Request) -> web.Response:
    ctx = context(request)
    page = await assets.list_page(
        ctx.pool,
        ctx.ring,
        user_id=request[USER_ID],
        page=request["data"]["page"],
    )
    return list_response(request, page, asset_schema)


@routes.post("/api/assets")
@docs(
    tags=["assets"],
    summary="Add an asset",
    description='`amount` is a decimal string such as "1250.50"; a JSON number is a 400.',
    responses=error_responses(400, 401, 409),
)
@request_schema(AssetCreateSchema, required=True)
@response_schema(AssetSchema, 201)
async def create_asset(request: web.Request) -> web.Response:
    ctx = context(request)
    row = await assets.create(ctx.pool, ctx.ring, user_id=request[USER_ID], data=request["data"])
    return json_response(asset_schema.dump(row), status=201)


@routes.get("/api/assets/{id}")
@docs(tags=["assets"], summary="Get an asset", responses=error_responses(401, 404))
@response_schema(AssetSchema, 200)
async def get_asset(request: web.Request) -> web.Response:
    ctx = context(request)
    row = await assets.get(
        ctx.pool,
        ctx.ring,
        user_id=request[USER_ID],
        raw_id=request.match_info["id"],
    )
    return json_response(asset_schema.dump(row))


@routes.patch("/api/assets/{id}")
@docs(
    tags=["assets"],
    summary="Change an asset",
    description="Validated like create, for the fields given; an empty body is a 400.",
    responses=error_responses(400, 401, 404, 409),
)
@request_schema(AssetPatchSchema, required=True)
@response_schema(AssetSchema, 200)
async def patch_asset(request: web.Request) -> web.Response:
    ctx = context(request)
    row = await assets.update(
        ctx.pool,
        ctx.ring,
        user_id=request[USER_ID],
        raw_id=request.match_info["id"],
        changes=request["data"],
    )
    return json_response(asset_schema.dump(row))


@routes.delete("/api/assets/{id}")
@docs(
    tags=["assets"],
    summary="Remove an asset",
    responses={204: {"description": "Deleted"}, **error_responses(401, 404, 409)},
)
async def delete_asset(request: web.Request) -> web.Response:
    ctx = context(request)
    await assets.delete(ctx.pool, user_id=request[USER_ID], raw_id=request.match_info["id"])
    return web.Response(status=204)
