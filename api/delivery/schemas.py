"""The delivery room's wire shapes: every request and response schema of its routes."""

from __future__ import annotations

from marshmallow import fields

from api.schemas import BaseSchema


class EventResultSchema(BaseSchema):
    result = fields.String(
        required=True,
        metadata={
            "enum": ["applied", "replayed", "unknown", "ignored"],
            "description": "`applied`: the email's outcome was recorded; `replayed`: this message id was "
            "applied before (nothing changed); `unknown`: no email of ours has that id (logged); `ignored`: "
            "an event type the service does not read.",
        },
    )


event_result_schema = EventResultSchema()
