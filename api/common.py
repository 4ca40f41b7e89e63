"""Helpers every handler shares: JSON bodies, the list response, the client address."""

from __future__ import annotations

import json
from typing import Any, NoReturn

from aiohttp import web
from marshmallow import Schema, ValidationError
from webargs.aiohttpparser import AIOHTTPParser, is_json_request

from api.keys import SETTINGS
from core.errors import BadRequest, validation_error
from models.pagination import Page


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response(data, status=status, headers=headers, dumps=json.dumps)


def list_response(request: web.Request, page: Page, schema: Schema) -> web.Response:
    """A bare JSON array; the next page, if any, is announced in `Link: <…>; rel="next"`."""
    headers = {}
    if page.next_cursor:
        url = request.rel_url.update_query({"cursor": page.next_cursor})
        headers["Link"] = f'<{url}>; rel="next"'
    return json_response(schema.dump(page.items, many=True), headers=headers)


class RequestParser(AIOHTTPParser):
    """webargs parser whose every failure is a 400 in the standard error body."""

    async def load_json(self, req: web.Request, schema: Schema) -> Any:
        if req.body_exists and not is_json_request(req):
            raise BadRequest("Content-Type must be application/json")
        return await super().load_json(req, schema)

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
    """The socket peer, or the address a trusted proxy chain reports (TRUSTED_PROXY_HOPS)."""
    hops = request.app[SETTINGS].trusted_proxy_hops
    if hops > 0:
        forwarded = [p.strip() for p in request.headers.get("X-Forwarded-For", "").split(",") if p.strip()]
        if len(forwarded) >= hops:
            return forwarded[-hops]
    return request.remote or "unknown"
