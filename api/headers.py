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

import base64
import hashlib
import re

from aiohttp import web
from aiohttp.typedefs import Handler

from api.keys import CORS_ORIGINS
from core.settings import Settings

SERVER = "legacy-planning"
# What a response opened by a token in a link carries (a capsule, a check-in or guardian page):
# the token must not leak through the Referer, a cache or a search engine.
CAPSULE_HEADERS = {
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Robots-Tag": "noindex, nofollow",
}
# What an owner's page carries (api/owner/): as private, but its forms keep their `Origin`.
OWNER_HEADERS = {**CAPSULE_HEADERS, "Referrer-Policy": "same-origin"}

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

# Swagger UI (aiohttp-apigami) at /api/docs shares its origin with the heirs' pages, so it gets a
# CSP of its own, as strict as the UI allows: its scripts and styles from here only, plus the
# page's one inline script by its hash; the inline styles React sets and the data: images of its
# icons; fetches to this origin only (the OpenAPI document, "Try it out"); never framed.
DOCS_PREFIX = "/api/docs"
DOCS_CSP = (
    "default-src 'none'; script-src 'self'{hashes}; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; form-action 'none'; "
    "base-uri 'none'; frame-ancestors 'none'"
)
_INLINE_SCRIPT = re.compile(rb"<script>(.*?)</script>", re.S)


def docs_csp(body: bytes | None) -> str:
    """The docs' CSP, allowing exactly the inline scripts of this body (the Swagger UI page) by
    their SHA-256; for its assets, none."""
    hashes = "".join(
        f" 'sha256-{base64.b64encode(hashlib.sha256(script).digest()).decode()}'"
        for script in _INLINE_SCRIPT.findall(body or b"")
    )
    return DOCS_CSP.format(hashes=hashes)


def allowed_origins(settings: Settings) -> frozenset[str]:
    return frozenset(o.strip() for o in settings.cors_allowed_origins.split(",") if o.strip())


async def response_headers(request: web.Request, response: web.StreamResponse) -> None:
    """on_response_prepare: runs for every response the app sends, streamed ones included."""
    headers = response.headers
    headers["Server"] = SERVER
    headers["X-Content-Type-Options"] = "nosniff"
    if request.path == DOCS_PREFIX or request.path.startswith(DOCS_PREFIX + "/"):
        body = response.body if isinstance(response, web.Response) else None
        headers["Content-Security-Policy"] = docs_csp(body if isinstance(body, bytes) else None)
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
