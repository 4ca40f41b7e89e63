"""The owner's page session and the rules every owner page (`/plan…`, `/sign-in`) follows.

A browser signed in holds an opaque id in a cookie (never the JWT): `HttpOnly`, `SameSite=Lax`,
`Path=/`, and `Secure` with the `__Host-` prefix when PUBLIC_BASE_URL is https. The session it
names is kept on the server (models.account.sessions) and read on every page.

`owner_page` wraps every `/plan…` handler, GET and POST:
- a GET under another host than PUBLIC_BASE_URL's is sent to the same path there (the cookie
  belongs to that host only);
- a POST is refused (a 403 page, nothing recorded, the body unread) unless its `Origin` is the
  origin of PUBLIC_BASE_URL (no `Origin`: its `Referer` under it; `Origin: null` is refused),
  and then unless its form carries the session's `formToken`;
- signed out, a GET answers 303 to `/sign-in?next=<the path>` (only a path under `/plan` is
  kept), a POST 303 to `/sign-in` with nothing done.
`owner_door` is the same without a session required (the sign-in pages, `/`): signing in is a
POST too, and a form posted from another site must not sign a browser in to someone's account.
Decisions: docs/security.md, "The owner's page session"; docs/pages.md, "The owner's pages".
"""

from __future__ import annotations

import functools
import hmac
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

from aiohttp import web

from api import html
from api.keys import context
from api.public import public
from core.errors import Forbidden
from core.settings import Settings
from core.text.i18n import N_, _
from models.account import sessions
from models.flows import auth

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

_SESSION = "lps.owner_session"
_OWNER_PAGE = "__owner_page__"
SESSION_COOKIE = "lps_session"
PENDING_COOKIE = "lps_sign_in"
FORM_TOKEN = "formToken"  # noqa: S105 - a field name
SIGN_IN_PATH = "/sign-in"
SIGN_OUT_PATH = "/sign-out"
HOME_PATH = "/plan"

CROSS_SITE = N_(
    "This form did not come from this service's own page, so nothing was done. Open the page again "
    "from your address bar or a bookmark and use its form."
)
STALE_FORM = N_(
    "This form belongs to an earlier visit (you may have signed in again since), so nothing was done. "
    "Open the page again and use its form."
)


@dataclass(frozen=True, slots=True)
class PageSession:
    """The signed-in owner of this request (`owner_session(request)` in a handler)."""

    user_id: str
    session_id: str
    form_token: str
    passkey_id: bytes | None
    locale: str | None
    time_zone: str | None


def is_https(settings: Settings) -> bool:
    return settings.public_base_url.lower().startswith("https://")


def cookie_name(settings: Settings, base: str) -> str:
    """`__Host-<base>` over https (the browser then keeps it to this host, Secure, Path=/)."""
    return f"__Host-{base}" if is_https(settings) else base


def set_cookie(
    response: web.StreamResponse, settings: Settings, *, base: str, value: str, max_age: int
) -> None:
    """Every cookie the pages set: HttpOnly, SameSite=Lax, Path=/, Secure over https."""
    response.set_cookie(
        cookie_name(settings, base),
        value,
        max_age=max_age,
        path="/",
        secure=is_https(settings),
        httponly=True,
        samesite="Lax",
    )


def clear_cookie(response: web.StreamResponse, settings: Settings, *, base: str) -> None:
    """A cookie being cleared carries the same flags as when it was set."""
    set_cookie(response, settings, base=base, value="", max_age=0)


def cookie(request: web.Request, *, base: str) -> str | None:
    return request.cookies.get(cookie_name(context(request).settings, base)) or None


def service_origin(settings: Settings) -> str:
    """PUBLIC_BASE_URL's origin as a browser writes it in `Origin` (lower case, no default port)."""
    split = urlsplit(settings.public_base_url)
    scheme = split.scheme.lower()
    host = (split.hostname or "").lower()
    port = split.port
    default = {"http": 80, "https": 443}.get(scheme)
    shown = "" if port is None or port == default else f":{port}"
    return f"{scheme}://{host}{shown}"


def from_this_service(request: web.Request, settings: Settings) -> bool:
    """A POST made by one of this service's own pages: its Origin is ours; without an Origin,
    its Referer is under ours. `Origin: null` (an opaque origin: a sandboxed frame, a redirect
    across sites, a `no-referrer` page) is never ours."""
    ours = service_origin(settings)
    origin = request.headers.get("Origin")
    if origin is not None:
        return origin.strip().lower() == ours
    referer = request.headers.get("Referer")
    return referer is not None and (referer == ours or referer.startswith(ours + "/"))


def on_our_host(request: web.Request, settings: Settings) -> bool:
    return (request.host or "").lower() == urlsplit(settings.public_base_url).netloc.lower()


def return_path(raw: str | None) -> str:
    """Where sign-in leads back: a path under `/plan` only (never another site, never `//…`)."""
    if not raw or "\\" in raw or "//" in raw or any(ord(c) < 0x21 for c in raw):
        return HOME_PATH
    path = raw.split("?", 1)[0].split("#", 1)[0]
    if path == HOME_PATH or path.startswith(HOME_PATH + "/"):
        return path
    return HOME_PATH


def sign_in_url(request: web.Request) -> str:
    path = return_path(request.path)
    target = SIGN_IN_PATH if path == HOME_PATH else f"{SIGN_IN_PATH}?next={quote(path, safe='/')}"
    return html.carry_language(request, target)


async def read_session(request: web.Request) -> PageSession | None:
    """The live session the request's cookie names (its visit noted), or None."""
    raw = cookie(request, base=SESSION_COOKIE)
    if raw is None:
        return None
    ctx = context(request)
    found = await sessions.current(
        ctx.pool, cookie=raw, idle_seconds=ctx.settings.session_idle_seconds, now=ctx.now()
    )
    if found is None:
        return None
    return PageSession(
        user_id=found["user_id"],
        session_id=found["id"],
        form_token=found["form_token"],
        passkey_id=found["passkey_id"],
        locale=found["locale"],
        time_zone=found["time_zone"],
    )


def signed_in(request: web.Request, opened: sessions.Opened, *, to: str) -> web.Response:
    """303 to where the owner was going, with the new session's cookie (a new id: rotated at
    every sign-in) and the pending sign-in's cookie cleared."""
    ctx = context(request)
    response = web.Response(status=303, headers={"Location": html.carry_language(request, to)})
    lifetime = int((opened["expires_at"] - ctx.now()).total_seconds())
    set_cookie(response, ctx.settings, base=SESSION_COOKIE, value=opened["cookie"], max_age=lifetime)
    clear_cookie(response, ctx.settings, base=PENDING_COOKIE)
    return response


async def _answered_meanwhile(request: web.Request) -> web.Response | None:
    """A signed-out GET from a browser whose wallet has answered its sign-in since: signed in
    now, on this very request (303 to the same address, with the session's cookie)."""
    pending = cookie(request, base=PENDING_COOKIE)
    if pending is None or request.method not in ("GET", "HEAD"):
        return None
    ctx = context(request)
    finished = await auth.finish_wallet_sign_in(
        ctx.pool, ctx.redis, ctx.settings, pending_cookie=pending, replacing=None, now=ctx.now()
    )
    if finished is None:
        return None
    # On a sign-in page, on to where the sign-in was going; elsewhere, this very page.
    to = finished[1] if request.path.startswith(SIGN_IN_PATH) else request.path_qs
    return signed_in(request, finished[0], to=to)


def owner_session(request: web.Request) -> PageSession:
    """The signed-in owner of a handler under `owner_page`."""
    session: PageSession = request[_SESSION]
    return session


def maybe_session(request: web.Request) -> PageSession | None:
    """The session under `owner_door`, when the browser has one."""
    session: PageSession | None = request.get(_SESSION)
    return session


def _elsewhere(request: web.Request, settings: Settings) -> web.Response | None:
    """A GET under another host goes to the same path under PUBLIC_BASE_URL; a POST from
    anywhere but this service's own pages is refused before its body is read."""
    if request.method in ("GET", "HEAD"):
        if on_our_host(request, settings):
            return None
        return web.Response(status=303, headers={"Location": settings.public_base_url + request.path_qs})
    if not from_this_service(request, settings):
        raise Forbidden(CROSS_SITE)
    return None


async def _check_form_token(request: web.Request, session: PageSession) -> None:
    form = await html.read_form(request)
    sent = form.get(FORM_TOKEN, "")
    if not hmac.compare_digest(sent.encode(), session.form_token.encode()):
        raise Forbidden(STALE_FORM)


def _mark(wrapped: Handler, kind: str) -> Handler:
    setattr(wrapped, _OWNER_PAGE, kind)
    return public(wrapped)  # no bearer token: the cookie's session, checked here


def is_owner_page(handler: object) -> bool:
    """A handler under `owner_page`: signed in only (tests/test_public_routes.py walks them)."""
    return getattr(handler, _OWNER_PAGE, None) == "page"


def is_owner_door(handler: object) -> bool:
    """A handler under `owner_door`: open to a signed-out browser."""
    return getattr(handler, _OWNER_PAGE, None) == "door"


def owner_door(handler: Handler) -> Handler:
    """An owner page open to a signed-out browser (sign-in, `/`): the host and origin rules,
    the session when there is one."""

    @functools.wraps(handler)
    async def door(request: web.Request) -> web.StreamResponse:
        settings = context(request).settings
        if (moved := _elsewhere(request, settings)) is not None:
            return moved
        session = await read_session(request)
        request[_SESSION] = session
        if session is not None:
            html.negotiate(request, locale=session.locale, time_zone=session.time_zone)
        elif (answered := await _answered_meanwhile(request)) is not None:
            return answered
        return await handler(request)

    return _mark(door, "door")


def owner_page(handler: Handler) -> Handler:
    """An owner page (`/plan…`): signed in only; a POST from this service's page with this
    session's form token only."""

    @functools.wraps(handler)
    async def page(request: web.Request) -> web.StreamResponse:
        settings = context(request).settings
        if (moved := _elsewhere(request, settings)) is not None:
            return moved
        session = await read_session(request)
        if session is None and (answered := await _answered_meanwhile(request)) is not None:
            return answered
        if session is None:
            location = sign_in_url(request) if request.method in ("GET", "HEAD") else SIGN_IN_PATH
            return web.Response(status=303, headers={"Location": location})
        request[_SESSION] = session
        html.negotiate(request, locale=session.locale, time_zone=session.time_zone)
        if request.method not in ("GET", "HEAD"):
            await _check_form_token(request, session)
        return await handler(request)

    return _mark(page, "page")


def render(template: str, *, request: web.Request, status: int = 200, **page: Any) -> web.Response:
    """An owner page: `owner_base.html`'s sign-out form and language picker get what they need
    (`form_token`, `signed_in`); every form of the page carries `form_token` as `formToken`."""
    session = request.get(_SESSION)
    with html.speaking(request):
        if isinstance(page.get("title"), str):  # a marked title (`N_`), said in the reader's language
            page["title"] = _(page["title"])
        return html.render(
            template,
            reader=request,
            status=status,
            form_token=session.form_token if session is not None else "",
            signed_in=session is not None,
            sign_out=SIGN_OUT_PATH,
            **page,
        )
