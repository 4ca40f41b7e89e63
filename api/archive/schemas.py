"""The archive room's wire shapes: every request and response schema of its routes."""

from __future__ import annotations

from typing import Any

from marshmallow import ValidationError, fields, validate

from api.schemas import AudienceSchema, BaseSchema, Text, UtcDateTime
from core.text import bounded_json
from models.archive import items


class JsonText(fields.Field):
    """A form field carrying JSON, loaded through a nested schema (e.g. `audience`)."""

    def __init__(self, schema: BaseSchema, **kwargs: Any) -> None:
        self.schema = schema
        super().__init__(**kwargs)

    def _deserialize(self, value: Any, attr: Any, data: Any, **kwargs: Any) -> Any:
        if not isinstance(value, str):
            raise ValidationError("Must be a JSON string.")
        try:
            parsed = bounded_json.loads(value)
        except bounded_json.Unparsed:
            raise ValidationError("Not valid JSON.") from None
        try:
            return self.schema.load(parsed)
        except ValidationError as exc:
            # A whole-object rule reads better as the field's own message than as "field.body".
            messages = exc.messages
            if isinstance(messages, dict) and set(messages) == {"_schema"}:
                raise ValidationError(messages["_schema"]) from None
            raise


class UploadFieldsSchema(BaseSchema):
    """The text fields of the upload form (the file itself is streamed, not loaded here)."""

    title = Text(validate=validate.Length(min=1, max=200))
    type = fields.String(load_default="document", validate=validate.OneOf(items.TYPES))
    category = fields.String(load_default="other", validate=validate.OneOf(items.CATEGORIES))
    description = Text(multiline=True, validate=validate.Length(max=2000))
    audience = JsonText(AudienceSchema(), load_default={"all": True, "beneficiary_ids": []})


class ArchiveItemSchema(BaseSchema):
    id = fields.String(required=True)
    userId = fields.String(required=True, attribute="user_id")
    title = fields.String(required=True)
    type = fields.String(required=True, metadata={"enum": list(items.TYPES)})
    category = fields.String(required=True, metadata={"enum": list(items.CATEGORIES)})
    description = fields.String(required=True, allow_none=True)
    fileName = fields.String(required=True, attribute="file_name", metadata={"description": "Sanitised."})
    contentType = fields.String(required=True, attribute="content_type")
    size = fields.Integer(required=True, attribute="size_bytes", metadata={"description": "Bytes."})
    sha256 = fields.String(
        required=True,
        allow_none=True,
        metadata={"description": "Hex SHA-256 of the file as received (null: failed before it was known)."},
    )
    status = fields.String(required=True, metadata={"enum": list(items.STATUSES)})
    failureReason = fields.String(required=True, allow_none=True, attribute="failure_reason")
    damagedAt = UtcDateTime(
        required=True,
        allow_none=True,
        attribute="damaged_at",
        metadata={
            "description": "When the archive's regular check (the scrub) found the stored file damaged "
            "(`status: damaged`): delete the item and upload the file again. null otherwise."
        },
    )
    audience = fields.Method(
        "dump_audience",
        required=True,
        metadata={"type": "object", "description": '{"all": true} or {"beneficiaryIds": [...]}.'},
    )
    createdAt = UtcDateTime(required=True, attribute="created_at")
    updatedAt = UtcDateTime(required=True, attribute="updated_at")

    def dump_audience(self, record: items.ArchiveItem) -> dict[str, Any]:
        audience = record["audience"]
        return {"all": True} if audience["all"] else {"beneficiaryIds": audience["beneficiary_ids"]}


item_schema = ArchiveItemSchema()
