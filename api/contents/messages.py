"""/api/messages: private messages to beneficiaries, each with a release rule and an audience."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from api.common import Doc, Owned
from api.contents.schemas import MessageCreateSchema, MessagePatchSchema, MessageSchema
from api.keys import Context
from models.contents import messages
from models.pagination import Page, PageRequest

routes = web.RouteTableDef()


RELEASE_RULES = (
    "`releaseRule.kind`: `on_release` (value null: visible once the plan is Released), "
    "`on_date` (value an ISO date `YYYY-MM-DD`: visible from that date, and only once the plan is "
    "Released; a date already past when the plan is released means visible at release), "
    "`after_release` (value a whole number of days, 1 to 36500, counted from the release). "
    '`audience`: `{"all": true}` (every beneficiary) or `{"beneficiaryIds": [...]}` (1 to 200 of '
    "your own beneficiaries). Deleting a beneficiary removes it from audiences; a message left with "
    "an empty list is shown to nobody until re-addressed. `content`: up to 100 000 characters, "
    "private (never logged or recorded in the activity timeline)."
)


class Messages(Owned):
    path = "/api/messages"
    tag = "messages"
    schema = MessageSchema
    create_schema = MessageCreateSchema
    patch_schema = MessagePatchSchema
    docs = {
        "list": Doc("List messages, newest first"),
        "create": Doc("Write a message", RELEASE_RULES),
        "get": Doc("Get a message"),
        "patch": Doc(
            "Change a message",
            "Validated like create, for the fields given; an empty body is a 400. " + RELEASE_RULES,
        ),
        "delete": Doc("Delete a message"),
    }

    async def list(self, ctx: Context, request: web.Request, *, user_id: str, page: PageRequest) -> Page[Any]:
        return await messages.list_for_owner(ctx.pool, ctx.ring, user_id=user_id, page=page, now=ctx.now())

    async def create(
        self, ctx: Context, request: web.Request, *, user_id: str, data: dict[str, Any]
    ) -> messages.Message:
        return await messages.create(ctx.pool, ctx.ring, user_id=user_id, data=data)

    async def get(self, ctx: Context, request: web.Request, *, user_id: str, raw_id: str) -> messages.Message:
        return await messages.get_for_owner(ctx.pool, ctx.ring, user_id=user_id, raw_id=raw_id, now=ctx.now())

    async def update(
        self, ctx: Context, request: web.Request, *, user_id: str, raw_id: str, changes: dict[str, Any]
    ) -> messages.Message:
        return await messages.update(ctx.pool, ctx.ring, user_id=user_id, raw_id=raw_id, changes=changes)

    async def delete(self, ctx: Context, request: web.Request, *, user_id: str, raw_id: str) -> None:
        await messages.delete(ctx.pool, user_id=user_id, raw_id=raw_id)


Messages().register(routes)
