"""Schema building blocks every resource shares: base class, fields, errors, paging, and what
the OpenAPI document says of media types.

Requests are camelCase on the wire (`data_key`), snake_case in Python. Unknown fields are
stripped (EXCLUDE), as the spec asks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from aiohttp import web
from aiohttp_apigami import AiohttpApiSpec
from aiohttp_apigami.constants import SWAGGER_DICT  # not exported: docs/conventions.md, Library internals
from apispec import BasePlugin
from marshmallow import (
    EXCLUDE,
    Schema,
    ValidationError,
    fields,
    missing,
    post_load,
    pre_load,
    validate,
    validates_schema,
)

from core.clock import wire_time
from core.stellar.wallet import is_valid_address
from core.text import gender, i18n
from core.text.cleaning import clean_block, clean_line
from models.pagination import DEFAULT_LIMIT, MAX_LIMIT, PageRequest, decode_cursor


class BaseSchema(Schema):
    class Meta:
        unknown = EXCLUDE

    @pre_load(pass_many=True)
    def refuse_unstorable(self, data: Any, **kwargs: Any) -> Any:
        """Refuse, for every field and key, what PostgreSQL text cannot hold (NUL, unpaired
        UTF-16 surrogates) and nesting no request needs, as a 400 rather than a 500 later."""
        problem = unstorable(data)
        if problem:
            raise ValidationError(problem)
        return data


MAX_DEPTH = 16
NUL_MESSAGE = "Text may not contain NUL (U+0000) characters."
SURROGATE_MESSAGE = "Text may not contain unpaired UTF-16 surrogates (not valid Unicode)."


def bad_text(text: str) -> str | None:
    """Why PostgreSQL would refuse this string, or None (ASCII is checked without encoding)."""
    if "\x00" in text:
        return NUL_MESSAGE
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return SURROGATE_MESSAGE
    return None


def unstorable(data: Any) -> str | None:
    """The first problem found walking `data` (iteratively, so depth cannot blow the stack)."""
    stack = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            problem = bad_text(value)
            if problem:
                return problem
        elif isinstance(value, Mapping | list | tuple):
            if depth >= MAX_DEPTH:
                return f"Nested more than {MAX_DEPTH} levels deep."
            if isinstance(value, Mapping):
                stack.extend((k, depth + 1) for k in value)
                stack.extend((v, depth + 1) for v in value.values())
            else:
                stack.extend((v, depth + 1) for v in value)
    return None


class PatchSchema(BaseSchema):
    """Base for PATCH bodies: list it before a create schema to reuse that schema's fields.

    Every field becomes optional (its validation still applies when given), and a body that
    names none of them once unknown fields are stripped is a 400, not a silent no-op.
    """

    def on_bind_field(self, field_name: str, field_obj: fields.Field) -> None:
        field_obj.required = False
        super().on_bind_field(field_name, field_obj)

    @validates_schema
    def not_empty(self, data: dict[str, Any], **kwargs: Any) -> None:
        if not data:
            names = ", ".join(f.data_key or name for name, f in self.load_fields.items())
            raise ValidationError(f"Give at least one field to change: {names}.")


class UtcDateTime(fields.DateTime):
    """ISO 8601 in UTC with a trailing Z, the one time format on the wire (`core.clock.wire_time`)."""

    @staticmethod
    def to_wire(value: Any) -> str | None:
        """The JSON value for a stored one (`api.common.dump_many` calls it directly)."""
        if value is None:
            return None
        if not isinstance(value, datetime):
            return str(value)
        return wire_time(value)

    def _serialize(self, value: Any, attr: Any, obj: Any, **kwargs: Any) -> str | None:
        return self.to_wire(value)

    def _deserialize(self, value: Any, attr: Any, data: Any, **kwargs: Any) -> datetime:
        parsed: datetime = super()._deserialize(value, attr, data, **kwargs)
        if parsed.tzinfo is None:
            raise ValidationError("Must include a timezone (e.g. 2026-01-31T12:00:00Z).")
        try:  # PostgreSQL refuses offsets past ±15:59 that Python accepts: compare in UTC
            return parsed.astimezone(UTC)
        except OverflowError:
            raise ValidationError("Out of range.") from None


class Whole(fields.Nested):
    """A nested object on the wire made of keys of the record itself, not of one of its values:
    `approvals: {count, threshold}` from an overview's `approval_count` and `threshold`."""

    def get_value(self, obj: Any, attr: str, accessor: Any = None, default: Any = missing) -> Any:
        return obj


class Id(fields.UUID):
    """A UUID checked on the way in and handed on as its canonical text: ids are `str` past
    the schema, as they are in every record."""

    def _deserialize(self, value: Any, attr: Any, data: Any, **kwargs: Any) -> str:  # type: ignore[override]
        return str(super()._deserialize(value, attr, data, **kwargs))


class Text(fields.String):
    """Text a person typed, cleaned before validation (core/text/cleaning.py): bidi overrides and
    isolates removed; a one-line text (the default: names, titles, addresses) also loses every
    other control character, a `multiline` one keeps line breaks and tabs. Surrounding
    whitespace is removed (so "  " is empty) unless `trim=False` (a letter, kept as written)."""

    def __init__(self, *, multiline: bool = False, trim: bool = True, **kwargs: Any) -> None:
        self.multiline, self.trim = multiline, trim
        super().__init__(**kwargs)

    def _deserialize(self, value: Any, attr: Any, data: Any, **kwargs: Any) -> str:
        text: str = super()._deserialize(value, attr, data, **kwargs)
        text = clean_block(text) if self.multiline else clean_line(text)
        return text.strip() if self.trim else text


class WalletAddress(fields.String):
    """A Stellar account id: the spec's regex and a valid StrKey checksum."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("metadata", {}).update(
            {
                "example": "GAAZI4TCR3TY5OJHCTJC2A4QSY6CJWJH5IAJTGKIN2ER7LBNVKOCCWN7",
                "pattern": "^G[A-Z2-7]{55}$",
            }
        )
        super().__init__(**kwargs)

    def _deserialize(self, value: Any, attr: Any, data: Any, **kwargs: Any) -> str:
        text: str = super()._deserialize(value, attr, data, **kwargs)
        if not is_valid_address(text):
            raise ValidationError("Not a valid Stellar address (G..., 56 characters, valid checksum).")
        return text


class Locale(fields.String):
    """A person's language: exactly one of the supported ones (LANGUAGES, `core.text.i18n`), as
    written there (`pt-BR`, not `pt`, `pt-br` or `pt_BR`); null clears it. Checked here, not by
    the database, because the list is a setting."""

    def __init__(self, *, who: str, **kwargs: Any) -> None:
        kwargs.setdefault("allow_none", True)
        kwargs["metadata"] = {
            **{
                "maxLength": 35,
                "example": "es",
                "description": f"{who} language, one of the service's supported languages (LANGUAGES; "
                f"shipped: {', '.join(i18n.SHIPPED)}). null: not set, emails are in English and pages "
                "follow the browser's Accept-Language.",
            },
            **kwargs.get("metadata", {}),
        }
        super().__init__(**kwargs)

    @staticmethod
    def to_wire(value: Any) -> str | None:
        """As a plain String dumps it, on a list's fast path (api/common.py `_converter`)."""
        return None if value is None else str(value)

    def _deserialize(self, value: Any, attr: Any, data: Any, **kwargs: Any) -> str:
        problem = i18n.locale_problem(value)
        if problem:
            raise ValidationError(problem)
        return str(value)


class TimeZone(fields.String):
    """A person's time zone: an IANA name (`Europe/Madrid`); null clears it."""

    def __init__(self, *, who: str, **kwargs: Any) -> None:
        kwargs.setdefault("allow_none", True)
        kwargs["metadata"] = {
            **{
                "maxLength": 64,
                "example": "Europe/Madrid",
                "description": f"{who} time zone, an IANA name such as Europe/Madrid. null: not set, "
                "times in emails are given in UTC (said so).",
            },
            **kwargs.get("metadata", {}),
        }
        super().__init__(**kwargs)

    @staticmethod
    def to_wire(value: Any) -> str | None:
        """As a plain String dumps it, on a list's fast path (api/common.py `_converter`)."""
        return None if value is None else str(value)

    def _deserialize(self, value: Any, attr: Any, data: Any, **kwargs: Any) -> str:
        problem = i18n.zone_problem(value)
        if problem:
            raise ValidationError(problem)
        return str(value)


class GrammaticalGender(fields.String):
    """How to refer to a person in the languages that mark grammatical gender (core/text/gender.py):
    `feminine`, `masculine` or `neutral`; null clears it (not said: wording that needs no gender)."""

    def __init__(self, *, who: str, **kwargs: Any) -> None:
        kwargs.setdefault("allow_none", True)
        kwargs.setdefault("validate", validate.OneOf(gender.GENDERS))
        kwargs["metadata"] = {
            **{
                "example": "feminine",
                "description": f"How to refer to {who} in languages that mark grammatical gender (a "
                'Spanish heir is "beneficiaria" or "beneficiario", an Arabic sentence about the owner '
                'says "her plan" or "his plan"): feminine, masculine or neutral. null: not said; '
                "like neutral, the emails and pages use wording that needs no gender.",
            },
            **kwargs.get("metadata", {}),
        }
        super().__init__(**kwargs)

    @staticmethod
    def to_wire(value: Any) -> str | None:
        """As a plain String dumps it, on a list's fast path (api/common.py `_converter`)."""
        return None if value is None else str(value)


class DecimalString(fields.String):
    """An amount as a decimal string; a JSON number is refused so no float ever rounds money."""

    def __init__(self, pattern: str = r"^\d+(\.\d{1,7})?$", **kwargs: Any) -> None:
        self.pattern_re = validate.Regexp(pattern, error='Must be a decimal string like "12.5".')
        kwargs.setdefault("metadata", {}).update({"pattern": pattern, "example": "1250.50"})
        super().__init__(**kwargs)

    @staticmethod
    def to_wire(value: Any) -> str | None:
        """The JSON value for a stored one (`api.common.dump_many` calls it directly)."""
        if value is None:
            return None
        return format(value, "f") if isinstance(value, Decimal) else str(value)

    def _serialize(self, value: Any, attr: Any, obj: Any, **kwargs: Any) -> str | None:
        return self.to_wire(value)

    def _deserialize(self, value: Any, attr: Any, data: Any, **kwargs: Any) -> Decimal:
        if not isinstance(value, str):
            raise ValidationError('Amounts are decimal strings (e.g. "12.5"), not numbers.')
        self.pattern_re(value)
        try:
            return Decimal(value)
        except InvalidOperation:
            raise ValidationError("Not a valid decimal.") from None


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


MAX_AUDIENCE = 200


class AudienceSchema(BaseSchema):
    """Who may see a message or archive item: every beneficiary, or a list of the owner's own."""

    all = fields.Boolean(truthy={True}, falsy={False}, metadata={"description": "true: every beneficiary."})
    beneficiaryIds = fields.List(
        Id(),
        validate=validate.Length(min=1, max=MAX_AUDIENCE),
        attribute="beneficiary_ids",
        metadata={"description": "Ids of your own beneficiaries."},
    )

    @validates_schema(skip_on_field_errors=True)
    def one_form(self, data: dict[str, Any], **kwargs: Any) -> None:
        if ("all" in data) == ("beneficiary_ids" in data) or data.get("all") is False:
            raise ValidationError('Give either {"all": true} or {"beneficiaryIds": [...]}.')

    @post_load
    def normalise(self, data: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        ids = list(dict.fromkeys(data.get("beneficiary_ids", [])))
        return {"all": bool(data.get("all")), "beneficiary_ids": ids}


class ErrorSchema(BaseSchema):
    statusCode = fields.Integer(required=True)
    error = fields.String(required=True)
    message = fields.Raw(required=True, metadata={"description": "A string or a list of strings."})
    details = fields.Dict(metadata={"description": "Per-field messages, for validation errors."})
    contractErrorCode = fields.Integer(
        metadata={"description": "Soroban contract error code, when one applies."}
    )


class PageQuerySchema(BaseSchema):
    limit = fields.Integer(
        load_default=DEFAULT_LIMIT,
        validate=validate.Range(min=1, max=MAX_LIMIT),
        metadata={"description": f"Page size, 1 to {MAX_LIMIT}."},
    )
    cursor = fields.String(
        metadata={"description": 'Opaque cursor from the previous page\'s Link rel="next" header.'}
    )

    @post_load
    def to_page(self, data: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        after = None
        if data.get("cursor"):
            try:
                after = decode_cursor(cursor=data["cursor"])
            except ValueError as exc:
                raise ValidationError(str(exc), field_name="cursor") from None
        data["page"] = PageRequest(limit=data["limit"], after=after)
        return data


def error_responses(*statuses: int) -> dict[int, dict[str, Any]]:
    """OpenAPI `responses` entries for the error statuses a route can return."""
    descriptions = {
        400: "Validation failed",
        401: "Missing or invalid bearer token",
        403: "Not allowed yet (e.g. a guardian who has not accepted the invitation)",
        404: "Not found (or owned by another account)",
        409: "Conflict with the current state (plan contents: frozen during verification and after release)",
        413: "Payload too large",
        429: "Rate limit exceeded (see Retry-After)",
        503: "Integration not configured or unavailable",
    }
    return {s: {"schema": ErrorSchema, "description": descriptions.get(s, "Error")} for s in statuses}


class MediaTypes(BasePlugin):
    """apispec plugin: what an operation answers with, said the OpenAPI 3 way.

    aiohttp-apigami's `docs` writes Swagger 2's `produces` on every operation (JSON unless told
    otherwise), which OpenAPI 3 does not know. This moves it to where OpenAPI 3 puts it: each
    success response's `content`, a string body for text and a binary one for files; JSON
    responses already carry theirs. An operation documented without any response gets a 200.
    """

    def operation_helper(
        self, path: str | None = None, operations: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        for operation in (operations or {}).values():
            media_types = operation.pop("produces", None) or ["application/json"]
            responses = operation.setdefault("responses", {})
            if not responses:
                responses["200"] = {"description": "OK"}
            if media_types == ["application/json"]:
                continue
            for status, response in responses.items():
                if str(status).startswith("2") and "content" not in response:
                    response["content"] = {kind: {"schema": _body_schema(kind)} for kind in media_types}


def _body_schema(media_type: str) -> dict[str, str]:
    if media_type.startswith("text/"):
        return {"type": "string"}
    return {"type": "string", "format": "binary"}


# The documents built in this process, by route table (`OpenApiDocument`).
_DOCUMENTS: dict[tuple[tuple[str, str, str], ...], dict[str, Any]] = {}


class OpenApiDocument(AiohttpApiSpec):
    """aiohttp-apigami's document, built once per process for a given route table.

    Building it resolves every route's schemas, which costs more than the rest of an app's
    start together. The document is a function of the routes alone (the options and the
    plugin are the same for every app `create_app` makes), so an app made again in the same
    process with the same routes, as the test suite makes one per test, serves the same one.
    """

    def _register(self, app: web.Application) -> None:
        table = tuple(
            sorted(
                (route.method, route.resource.canonical if route.resource else "", route.handler.__qualname__)
                for route in app.router.routes()
            )
        )
        document = _DOCUMENTS.get(table)
        if document is None:
            super()._register(app)
            document = _DOCUMENTS.setdefault(table, app[SWAGGER_DICT])
        app[SWAGGER_DICT] = document
