"""/api/assets: what the plan hands on, with exact decimal-string amounts."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from api.common import Doc, Owned
from api.contents.schemas import AssetCreateSchema, AssetPatchSchema, AssetSchema
from api.keys import Context
from models.contents import assets
from models.pagination import Page, PageRequest

routes = web.RouteTableDef()


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
