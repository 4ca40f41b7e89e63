"""/api/activity: the Family Timeline, read-only (other methods are 405)."""

from __future__ import annotations

from typing import Any

from aiohttp import web
from aiohttp_apigami import docs, request_schema, response_schema
from marshmallow import ValidationError, fields, validate, validates_schema

from api.common import list_response
from api.keys import USER_ID, context
from api.schemas import BaseSchema, PageQuerySchema, Text, UtcDateTime, error_responses
from models import activity

routes = web.RouteTableDef()


class ActivityQuerySchema(PageQuerySchema):
    entityType = Text(
        attribute="entity_type",
        validate=validate.Length(min=1, max=64),
        metadata={"description": "e.g. beneficiary, guardian, asset, message, user."},
    )
    kind = Text(
        validate=validate.Length(min=1, max=64), metadata={"description": "e.g. beneficiary.created."}
    )
    since = UtcDateTime(
        metadata={"description": "Entries at or after this time (ISO 8601 with zone, e.g. …Z)."}
    )
    until = UtcDateTime(metadata={"description": "Entries strictly before this time."})

    @validates_schema(skip_on_field_errors=True)
    def ordered_range(self, data: dict[str, Any], **kwargs: Any) -> None:
        if "since" in data and "until" in data and data["since"] >= data["until"]:
            raise ValidationError("Must be later than since.", field_name="until")


class ActivitySchema(BaseSchema):
    id = fields.String(required=True)
    kind = fields.String(required=True, metadata={"description": "<entity>.<verb>, e.g. asset.updated."})
    entityType = fields.String(required=True, attribute="entity_type")
    entityId = fields.String(required=True, allow_none=True, attribute="entity_id")
    summary = fields.String(
        required=True,
        metadata={
            "description": "A short sentence for the timeline, in your language. An entry about a "
            "guardian or an heir names them as they are now ('a former guardian' once removed)."
        },
    )
    metadata = fields.Dict(
        required=True,
        metadata={"description": 'Which fields changed ({"fields": [...]}), never private values.'},
    )
    createdAt = UtcDateTime(required=True, attribute="created_at")


activity_schema = ActivitySchema()


@routes.get("/api/activity")
@docs(
    tags=["activity"],
    summary="The Family Timeline, newest first",
    description="Every change to your plan, recorded in the same transaction as the change. "
    "Filter by `entityType`, `kind` and a time range (`since` inclusive, `until` exclusive).",
    responses=error_responses(400, 401),
)
@request_schema(ActivityQuerySchema, location="querystring")
@response_schema(ActivitySchema(many=True), 200)
async def list_activity(request: web.Request) -> web.Response:
    ctx = context(request)
    data = request["data"]
    filters = activity.ActivityFilter(
        entity_type=data.get("entity_type"),
        kind=data.get("kind"),
        since=data.get("since"),
        until=data.get("until"),
    )
    page = await activity.list_for_user(
        ctx.pool, ctx.ring, user_id=request[USER_ID], filters=filters, page=data["page"]
    )
    return list_response(request, page, activity_schema)
