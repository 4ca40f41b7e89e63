"""Authenticated by default: a route is anonymous only if its handler is declared `@public`.

The declaration sits on the handler, next to the route, so a new route anywhere (even under
`/api/auth/`) needs a session unless its author says otherwise. The public set is collected
once, when the app starts (the router is frozen then); the middleware does one set lookup
per request.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from aiohttp import web
from aiohttp_apigami.utils import get_or_set_apispec  # not exported: docs/conventions.md, Library internals

from api.keys import PUBLIC_ROUTES

H = TypeVar("H")

_MARK = "__public_route__"


def public(handler: H) -> H:
    """Declare a handler reachable without a session (its OpenAPI operation gets `security: []`).

    Works in any position among the route's decorators: it marks the function object itself,
    which is what `RouteTableDef` registers.
    """
    setattr(handler, _MARK, True)
    get_or_set_apispec(handler)["security"] = []
    return handler


def is_public(handler: object) -> bool:
    return getattr(handler, _MARK, False) is True


def collect_public_routes(app: web.Application, extra: Iterable[web.AbstractRoute] = ()) -> None:
    """At startup, record the public routes: marked handlers plus `extra` (e.g. the docs UI)."""
    extra = set(extra)
    app[PUBLIC_ROUTES] = set()

    async def collect(app: web.Application) -> None:
        marked = {route for route in app.router.routes() if is_public(route.handler)}
        app[PUBLIC_ROUTES].update(marked | extra)

    app.on_startup.append(collect)


def requires_session(request: web.Request) -> bool:
    return request.match_info.route not in request.app[PUBLIC_ROUTES]
