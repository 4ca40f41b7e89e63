"""The one gate in front of every claim route: the token in the path resolved to its capsule.

A claim route is written `async def handler(request, capsule)` under `@claim_gate`: the gate
looks the token up by its digest (`models.claim.capsules.open_by_token`), answers a miss with
404 (429 past the per-IP miss limit) and only then calls the handler with the capsule, so a
handler cannot run for a token that opens nothing. The gate also declares the route public
(the token is the credential) and documents the token parameter and the miss responses.
`ungated_claim_routes` finds a route under a claim path that does not go through the gate;
tests/test_public_routes.py fails on any.

Every response under a claim path, errors and unknown sub-paths included, carries the
capsule's privacy headers (`capsule_headers`, run as each response is prepared).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp_apigami.utils import get_or_set_apispec  # not exported: docs/conventions.md, Library internals

from api.common import refuse_miss
from api.headers import CAPSULE_HEADERS
from api.keys import context
from api.public import public
from api.schemas import error_responses
from models.claim import capsules

# The JSON routes a claim token opens. The page served to a browser from the same token
# (`/claim/<token>`, api/claim/capsule_page.py) gets these headers and its CSP from `api.html.page_headers`.
CLAIM_PREFIXES = ("/api/claim/",)
# Route templates that hold a claim token (what `ungated_claim_routes` checks).
TOKEN_ROUTE_PREFIXES = ("/api/claim/{token}", "/claim/{token}")

TOKEN_PARAM = {
    "in": "path",
    "name": "token",
    "required": True,
    "schema": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
    "description": "The beneficiary's claim token (64 lowercase hex), from their link.",
}

ClaimHandler = Callable[[web.Request, capsules.Capsule], Awaitable[web.StreamResponse]]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

_GATED = "__claim_gated__"


async def capsule_headers(request: web.Request, response: web.StreamResponse) -> None:
    """on_response_prepare: the capsule's privacy headers on everything under a claim path."""
    if request.path.startswith(CLAIM_PREFIXES):
        response.headers.update(CAPSULE_HEADERS)


async def resolve(request: web.Request) -> capsules.Capsule:
    """The capsule of the token in the path, in any plan state; 404 (or 429) for a miss.

    Only misses are counted, per client IP: a valid token is served without asking the
    limiter, so nobody's guesses (not even from the same address) can lock a beneficiary out.
    """
    ctx = context(request)
    capsule = await capsules.open_by_token(ctx.pool, ctx.ring, token=request.match_info["token"])
    if capsule is not None:
        return capsule
    await refuse_miss(
        request,
        kind="claim",
        limit=ctx.settings.rate_limit_claim_misses_per_ip,
        what="Capsule",
        too_many="Too many unknown claim links from this address; try again later.",
    )


def claim_gate(handler: ClaimHandler) -> Handler:
    """Put a claim route behind the gate; the innermost decorator, right above the handler."""

    @functools.wraps(handler)
    async def gated(request: web.Request) -> web.StreamResponse:
        return await handler(request, await resolve(request))

    setattr(gated, _GATED, True)
    spec = get_or_set_apispec(gated)
    spec["parameters"].append(TOKEN_PARAM)
    spec["responses"].update(error_responses(404, 429))
    return public(gated)


def is_gated(handler: object) -> bool:
    return getattr(handler, _GATED, False) is True


def ungated_claim_routes(app: web.Application) -> list[str]:
    """Routes whose path holds a claim token but whose handler does not go through the gate."""
    return [
        f"{route.method} {route.resource.canonical}"
        for route in app.router.routes()
        if route.resource is not None
        and route.resource.canonical.startswith(TOKEN_ROUTE_PREFIXES)
        and not is_gated(route.handler)
    ]
