"""Helpers every handler shares: JSON bodies, the list response, the client address."""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable
from typing import Any, NoReturn

from aiohttp import web
from marshmallow import Schema, ValidationError, fields
from webargs.aiohttpparser import AIOHTTPParser, is_json_request

from api.keys import SETTINGS
from core.errors import BadRequest, validation_error
from models.pagination import Page


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response(data, status=status, headers=headers, dumps=json.dumps)


def list_response(request: web.Request, page: Page[Any], schema: Schema) -> web.Response:
    """A bare JSON array; the next page, if any, is announced in `Link: <…>; rel="next"`."""
    headers = {}
    if page.next_cursor:
        url = request.rel_url.update_query({"cursor": page.next_cursor})
        headers["Link"] = f'<{url}>; rel="next"'
    return json_response(dump_many(schema, page.items), headers=headers)


_Plan = list[tuple[str, str, Callable[[Any, str, Any], Any]]]
_plans: dict[type[Schema], _Plan] = {}


def _field_dumper(field: fields.Field) -> Callable[[Any, str, Any], Any]:
    """How one field turns a row value into JSON: plain types inline, the rest by the field."""
    kind = type(field)
    if kind in (fields.String, fields.Str):
        return lambda value, attr, row: None if value is None else str(value)
    if kind in (fields.Integer, fields.Int):
        return lambda value, attr, row: None if value is None else int(value)
    return field._serialize


def dump_many(schema: Schema, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`schema.dump(rows, many=True)` for dict rows, without marshmallow's per-field overhead.

    Lists are the hot path (a 50-row page spent a third of its CPU in marshmallow). The schema
    stays the one definition of the wire shape; this only runs its fields more directly, and
    tests check it against `schema.dump` for every list schema. Method fields and schemas with
    dump hooks go through marshmallow itself.
    """
    kind = type(schema)
    plan = _plans.get(kind)
    if plan is None:
        hooks = schema._hooks["pre_dump"] or schema._hooks["post_dump"]
        if hooks or any(not field._CHECK_ATTRIBUTE for field in schema.dump_fields.values()):
            return list(schema.dump(rows, many=True))
        plan = [
            (field.data_key or name, field.attribute or name, _field_dumper(field))
            for name, field in schema.dump_fields.items()
        ]
        _plans[kind] = plan
    missing = object()
    result = []
    for row in rows:
        out = {}
        for key, attr, dump in plan:
            value = row.get(attr, missing)
            if value is not missing:
                out[key] = dump(value, attr, row)
        result.append(out)
    return result


class RequestParser(AIOHTTPParser):
    """webargs parser whose every failure is a 400 in the standard error body."""

    async def load_json(self, req: web.Request, schema: Schema) -> Any:
        if req.body_exists and not is_json_request(req):
            raise BadRequest("Content-Type must be application/json")
        try:
            return await super().load_json(req, schema)
        except RecursionError:
            raise BadRequest("JSON nested too deeply") from None
        except ValueError:  # e.g. an integer literal past Python's 4300-digit conversion limit
            raise BadRequest("Malformed JSON body") from None

    def _handle_invalid_json_error(
        self, error: Exception, req: web.Request, *args: Any, **kwargs: Any
    ) -> NoReturn:
        raise BadRequest("Malformed JSON body")

    def handle_error(
        self, error: ValidationError, req: web.Request, schema: Schema, *args: Any, **kwargs: Any
    ) -> NoReturn:
        messages: Any = error.messages
        if isinstance(messages, dict) and len(messages) == 1:
            location, inner = next(iter(messages.items()))
            if location in {"json", "querystring", "query", "form", "match_info", "files", "headers"}:
                messages = inner
        raise validation_error(messages)


def client_ip(request: web.Request) -> str:
    """The socket peer, or the address a trusted proxy chain reports (TRUSTED_PROXY_HOPS).

    Only a well-formed IP address is taken from the header (it becomes a Redis key).
    """
    hops = request.app[SETTINGS].trusted_proxy_hops
    if hops > 0:
        forwarded = [p.strip() for p in request.headers.get("X-Forwarded-For", "").split(",") if p.strip()]
        if len(forwarded) >= hops:
            try:
                return str(ipaddress.ip_address(forwarded[-hops]))
            except ValueError:
                pass
    return request.remote or "unknown"
