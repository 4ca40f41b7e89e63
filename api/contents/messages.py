"""/api/messages: private messages to beneficiaries, each with a release rule and an audience."""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from aiohttp import web
from marshmallow import ValidationError, fields, post_load, validate

from api.common import Doc, Owned
from api.keys import Context
from api.schemas import (
    AudienceSchema,
    BaseSchema,
    Id,
    PatchSchema,
    Text,
    UtcDateTime,
)
from models.contents import messages
from models.contents.messages import RELEASE_KINDS
from models.pagination import Page, PageRequest

routes = web.RouteTableDef()

MAX_CONTENT_CHARS = 100_000
MAX_AFTER_DAYS = 36_500  # a century; also keeps the value well inside a SQL integer
ISO_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}")

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
