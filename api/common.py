"""Helpers every handler shares: JSON bodies, the list response, the client address, and the one
recipe for an owner's resource (`Owned`)."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NoReturn

import orjson
from aiohttp import web
from aiohttp_apigami import docs, request_schema, response_schema
from marshmallow import Schema, ValidationError, fields, missing
from redis.exceptions import RedisError
from webargs.aiohttpparser import AIOHTTPParser, is_json_request

from api.keys import USER_ID, Context, context
from api.schemas import PageQuerySchema, error_responses
from core import ratelimit
from core.errors import BadRequest, NotFound, RequestTimeout, TooManyRequests, validation_error
from models.delivery.budget import Budget, client_digest
from models.pagination import Page, PageRequest

log = logging.getLogger(__name__)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


# Only what the standard library would encode too: a datetime, dataclass or subclass that slipped
# into a body stays a TypeError (a 500 in tests) instead of orjson's own format.
_ORJSON_STRICT = (
    orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS
)


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    """A JSON body, encoded by orjson: several times cheaper than the standard library, which
    was a visible share of a capsule's or a list's CPU. What orjson
    refuses (integers past 64 bits, lone surrogates, non-string keys) goes to the standard library,
    as the log lines do (core.logging)."""
    try:
        body = orjson.dumps(data, option=_ORJSON_STRICT)
    except TypeError:  # orjson.JSONEncodeError is one
        body = json.dumps(data).encode()
    return web.Response(
        body=body, status=status, headers=headers, content_type="application/json", charset="utf-8"
    )


def list_response(request: web.Request, page: Page[Any], schema: Schema) -> web.Response:
    """A bare JSON array; the next page, if any, is announced in `Link: <…>; rel="next"`."""
    headers = {}
    if page.next_cursor:
        url = request.rel_url.update_query({"cursor": page.next_cursor})
        headers["Link"] = f'<{url}>; rel="next"'
    return json_response(dump_many(schema, page.items), headers=headers)


# How a field turns a row into JSON: (wire key, row key, converter, dumper). A field with a direct
# converter is read from the row here and converted when it is not None (every converter maps
# None to None, as marshmallow does); any other field is dumped by its dumper (the field's public
# `serialize`). One converter call per present value and no call for a null, not three nested
# calls per field: what a list's rows cost the API is mostly this loop.
_Dump = Callable[[Mapping[str, Any]], Any]  # a row -> the field's JSON value, or marshmallow.missing
_Step = tuple[str, str, Callable[[Any], Any] | None, _Dump | None]
_plans: dict[type[Schema], list[_Step]] = {}


def _string_list(value: Any) -> Any:
    return [None if each is None else str(each) for each in value]


def _converter(field: fields.Field) -> Callable[[Any], Any] | None:
    """A direct value -> JSON function for the field, when one gives what marshmallow gives for a
    value that is not None: plain strings, integers, lists of strings, and the project's fields
    with `to_wire`."""
    kind = type(field)
    if kind is fields.String:
        return str
    if isinstance(field, fields.Integer) and kind is fields.Integer and not field.as_string:
        return int
    if isinstance(field, fields.List) and kind is fields.List and type(field.inner) is fields.String:
        return _string_list
    if isinstance(field, fields.Nested) and kind is fields.Nested and not field.many and field.only is None:
        if field.exclude:
            return None
        return _nested(field.schema)
    to_wire: Callable[[Any], Any] | None = getattr(kind, "to_wire", None)
    return to_wire


def _nested(inner: Schema) -> Callable[[Any], Any]:
    """A nested dict through the inner schema's own plan (what `Schema.dump` of it gives);
    anything else through that schema's `dump`. A per-row `Schema.dump` was most of what a
    small nested object cost a list."""

    def dump(value: Any) -> Any:
        if not isinstance(value, Mapping):
            return inner.dump(value)
        return _row(_plan(inner), value)

    return dump


def _step(schema: Schema, name: str, field: fields.Field) -> _Step:
    key, attr = field.data_key or name, field.attribute or name
    convert = _converter(field) if field.dump_default is missing else None
    if convert is not None:
        return key, attr, convert, None
    accessor = schema.get_attribute
    return key, attr, None, lambda row: field.serialize(name, row, accessor=accessor)


def _plan(schema: Schema) -> list[_Step]:
    """Each field's step, worked out once per schema class."""
    kind = type(schema)
    plan = _plans.get(kind)
    if plan is None:
        plan = _plans[kind] = [_step(schema, name, field) for name, field in schema.dump_fields.items()]
    return plan


def _row(plan: list[_Step], row: Mapping[str, Any]) -> dict[str, Any]:
    out = {}
    for key, attr, convert, dump in plan:
        if convert is not None:
            value = row.get(attr, missing)
            if value is missing:
                continue
            out[key] = None if value is None else convert(value)
        else:
            assert dump is not None
            value = dump(row)
            if value is not missing:
                out[key] = value
    return out


def dump_one(schema: Schema, row: Mapping[str, Any]) -> dict[str, Any]:
    """`schema.dump(row)` for one dict row, through the same fast path as `dump_many`."""
    return _row(_plan(schema), row)


def dump_many(schema: Schema, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """`schema.dump(rows, many=True)` for dict rows, without marshmallow's per-row overhead.

    Lists are the hot path (where a page's CPU went, measured). The schema stays the one
    definition of the wire shape; this runs its fields through their public API (`dump_fields`,
    `Field.serialize`, and the project's fields' `to_wire`). No schema in api/ declares
    @pre_dump / @post_dump hooks (tests/test_list_dump.py reads the source), so a schema's fields
    are the whole of its dump; tests check this against `schema.dump` for every list schema.
    """
    plan = _plan(schema)
    return [_row(plan, row) for row in rows]


class RequestParser(AIOHTTPParser):
    """webargs parser whose every failure is a 400 in the standard error body."""

    async def load_json(self, req: web.Request, schema: Schema) -> Any:
        ctx = context(req)
        if req.body_exists and not is_json_request(req):
            raise BadRequest("Content-Type must be application/json")
        if req.body_exists:
            # Read the whole body first, within a deadline: a body that never finishes must not
            # hold the request (and a connection) forever. aiohttp keeps it for the parser.
            try:
                async with asyncio.timeout(ctx.settings.request_body_timeout_seconds):
                    await req.read()
            except TimeoutError:
                raise RequestTimeout("The request body did not arrive in time") from None
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
    ctx = context(request)
    hops = ctx.settings.trusted_proxy_hops
    if hops > 0:
        forwarded = [p.strip() for p in request.headers.get("X-Forwarded-For", "").split(",") if p.strip()]
        if len(forwarded) >= hops:
            try:
                return str(ipaddress.ip_address(forwarded[-hops]))
            except ValueError:
                pass
    return request.remote or "unknown"


def email_budget(request: web.Request) -> Budget:
    """The budget of emails to addresses the owner typed that this request may spend: per
    account and per client address (models.delivery.budget)."""
    ctx = context(request)
    return Budget(
        per_account=ctx.settings.email_to_named_people_per_day,
        per_client=ctx.settings.email_to_named_people_per_client_per_day,
        client=client_digest(ctx.ring, ip=client_ip(request)),
    )


MISS_WINDOW_SECONDS = 60


async def refuse_miss(request: web.Request, *, kind: str, limit: int, what: str, too_many: str) -> NoReturn:
    """404 (`what` not found) for a token in a link that opens nothing, or 429 (`too_many`)
    past `limit` misses a minute from one client address. Only misses are counted, so nobody's
    guesses can lock out the holder of a valid link. The limiter only quiets guessing (a
    token's 256 bits keep it secret): with Redis down a miss is still a plain 404, never a 500."""
    ctx = context(request)
    try:
        retry = await ratelimit.hit(
            ctx.redis, f"{kind}-miss:ip:{client_ip(request)}", limit, MISS_WINDOW_SECONDS
        )
    except (RedisError, OSError) as exc:
        log.warning(f"{kind} miss limiter unavailable", extra={"error": repr(exc)})
        retry = 0
    if retry:
        raise TooManyRequests(too_many, retry)
    raise NotFound(what)


@dataclass(frozen=True)
class Doc:
    """What one route of an owned resource says in the OpenAPI document beyond the common."""

    summary: str
    description: str | None = None


_Verb = Literal["list", "create", "get", "patch", "delete"]
# The errors each verb can answer with, the same for every owned resource.
_ERRORS: dict[_Verb, tuple[int, ...]] = {
    "list": (400, 401),
    "create": (400, 401, 409),
    "get": (401, 404),
    "patch": (400, 401, 404, 409),
    "delete": (401, 404, 409),
}


class Owned:
    """One recipe for an owner's rows of a resource (beneficiaries, guardians, assets, messages,
    archive items): list (paged, `Link` header), create (201), get, patch (changed fields only,
    an empty body is 400) and delete (204), each for the signed-in owner only.

    A resource subclasses it: its `path`, `tag`, response `schema` and request schemas, a `Doc`
    per route, and one method per model call it serves (`list`, `create`, `get`, `update`,
    `delete`, each taking the context, the request and the owner's id); a method it leaves out
    serves no route.
    `register(routes)` adds the routes to the module's table, in the order above.
    """

    path: str
    tag: str
    schema: type[Schema]
    create_schema: type[Schema] | None = None
    patch_schema: type[Schema] | None = None
    docs: Mapping[_Verb, Doc]

    async def list(self, ctx: Context, request: web.Request, *, user_id: str, page: PageRequest) -> Page[Any]:
        raise NotImplementedError

    async def create(
        self, ctx: Context, request: web.Request, *, user_id: str, data: dict[str, Any]
    ) -> Mapping[str, Any]:
        raise NotImplementedError

    async def get(
        self, ctx: Context, request: web.Request, *, user_id: str, raw_id: str
    ) -> Mapping[str, Any]:
        raise NotImplementedError

    async def update(
        self, ctx: Context, request: web.Request, *, user_id: str, raw_id: str, changes: dict[str, Any]
    ) -> Mapping[str, Any]:
        raise NotImplementedError

    async def delete(self, ctx: Context, request: web.Request, *, user_id: str, raw_id: str) -> None:
        raise NotImplementedError

    def _serves(self, method: str) -> bool:
        return getattr(type(self), method) is not getattr(Owned, method)

    def register(self, routes: web.RouteTableDef) -> None:
        one = self.schema()
        item = f"{self.path}/{{id}}"

        async def list_rows(request: web.Request) -> web.Response:
            page = await self.list(
                context(request), request, user_id=request[USER_ID], page=request["data"]["page"]
            )
            return list_response(request, page, one)

        async def create_row(request: web.Request) -> web.Response:
            row = await self.create(context(request), request, user_id=request[USER_ID], data=request["data"])
            return json_response(one.dump(row), status=201)

        async def get_row(request: web.Request) -> web.Response:
            row = await self.get(
                context(request), request, user_id=request[USER_ID], raw_id=request.match_info["id"]
            )
            return json_response(one.dump(row))

        async def patch_row(request: web.Request) -> web.Response:
            row = await self.update(
                context(request),
                request,
                user_id=request[USER_ID],
                raw_id=request.match_info["id"],
                changes=request["data"],
            )
            return json_response(one.dump(row))

        async def delete_row(request: web.Request) -> web.Response:
            await self.delete(
                context(request), request, user_id=request[USER_ID], raw_id=request.match_info["id"]
            )
            return web.Response(status=204)

        if self._serves("list"):
            handler = request_schema(PageQuerySchema, location="querystring")(
                response_schema(self.schema(many=True), 200)(list_rows)
            )
            routes.get(self.path)(self._documented("list", handler))
        if self._serves("create") and self.create_schema is not None:
            handler = request_schema(self.create_schema, required=True)(
                response_schema(self.schema, 201)(create_row)
            )
            routes.post(self.path)(self._documented("create", handler))
        if self._serves("get"):
            routes.get(item)(self._documented("get", response_schema(self.schema, 200)(get_row)))
        if self._serves("update") and self.patch_schema is not None:
            handler = request_schema(self.patch_schema, required=True)(
                response_schema(self.schema, 200)(patch_row)
            )
            routes.patch(item)(self._documented("patch", handler))
        if self._serves("delete"):
            routes.delete(item)(self._documented("delete", delete_row))

    def _documented(self, verb: _Verb, handler: Handler) -> Handler:
        doc = self.docs[verb]
        errors = error_responses(*_ERRORS[verb])
        responses = {204: {"description": "Deleted"}, **errors} if verb == "delete" else errors
        handler.__name__ = handler.__qualname__ = f"{verb}_{self.tag}"
        return docs(tags=[self.tag], summary=doc.summary, description=doc.description, responses=responses)(
            handler
        )
