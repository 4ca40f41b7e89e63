"""Headers every response carries, and the CORS policy (CORS_ALLOWED_ORIGINS).

Every answer: `X-Content-Type-Options: nosniff`, `Cache-Control: no-store` unless the route set
its own (JSON here carries session tokens, claim tokens and private text, none of which a
shared or browser cache should keep), and a `Server` header naming no versions.

CORS is deliberate and small: exact origins from the setting, bearer tokens only (never
`Allow-Credentials`: there are no cookies), preflight answered for paths that exist. Any
other origin gets no CORS headers at all, so the browser refuses it. The one exception is
`/.well-known/stellar.toml` (SEP-1 requires `Access-Control-Allow-Origin: *`; api/sep/stellar_toml.py).
Written here rather than with aiohttp-cors, which wants every route registered with it and adds
OPTIONS routes the authentication walk would then have to special-case; this is one dict lookup
per response.
"""

from __future__ import annotations

from aiohttp import web
from aiohttp.typedefs import Handler

from api.keys import CORS_ORIGINS
from core.settings import Settings

SERVER = "legacy-planning"

ALLOWED_HEADERS = "Authorization, Content-Type, Range, If-Range, If-None-Match"
EXPOSED_HEADERS = ", ".join(
    (
        "Link",
        "Retry-After",
        "X-Request-Id",
        "Content-Disposition",
        "Content-Range",
        "Accept-Ranges",
        "ETag",
        "WWW-Authenticate",
    )
)
PREFLIGHT_MAX_AGE = "600"


def allowed_origins(settings: Settings) -> frozenset[str]:
    return frozenset(o.strip() for o in settings.cors_allowed_origins.split(",") if o.strip())


async def response_headers(request: web.Request, response: web.StreamResponse) -> None:
    """on_response_prepare: runs for every response the app sends, streamed ones included."""
    headers = response.headers
    headers["Server"] = SERVER
    headers["X-Content-Type-Options"] = "nosniff"
    if "Cache-Control" not in headers:
        headers["Cache-Control"] = "no-store"
    origins = request.app[CORS_ORIGINS]
    if origins:
        headers.add("Vary", "Origin")
        origin = request.headers.get("Origin")
        # A route that opened itself to every origin keeps its `*` (stellar.toml, SEP-1).
        if origin is not None and origin in origins and "Access-Control-Allow-Origin" not in headers:
            headers["Access-Control-Allow-Origin"] = origin
            headers["Access-Control-Expose-Headers"] = EXPOSED_HEADERS


@web.middleware
async def cors_preflight(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Answer a CORS preflight from an allowed origin for an existing path and method; anything
    else goes on as usual (404/405 without CORS headers)."""
    if request.method != "OPTIONS":
        return await handler(request)
    origin = request.headers.get("Origin")
    wanted = request.headers.get("Access-Control-Request-Method", "")
    exc = request.match_info.http_exception
    if (
        origin is None
        or origin not in request.app[CORS_ORIGINS]
        or not isinstance(exc, web.HTTPMethodNotAllowed)
        or wanted not in exc.allowed_methods
    ):
        return await handler(request)
    return web.Response(
        status=204,
        headers={
            "Access-Control-Allow-Origin": origin,
            "Access-Control-Allow-Methods": ", ".join(sorted(exc.allowed_methods)),
            "Access-Control-Allow-Headers": ALLOWED_HEADERS,
            "Access-Control-Max-Age": PREFLIGHT_MAX_AGE,
        },
    )
