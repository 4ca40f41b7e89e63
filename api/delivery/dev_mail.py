"""`/dev/mail`: the development mailbox, where a newcomer reads every email the service sent
(kept by the worker in models/delivery/mailbox.py when no email provider is configured).

Registered only when `Settings.dev_mailbox` (APP_ENV=development, no provider): in production
the paths are the 404 page. The emails carry claim, guardian and check-in links, so both pages
answer only a peer on this machine, judged by the socket's own peer address (never a
forwarded header, which any client can write): with HOST=0.0.0.0 the network gets a 403. A
tunnel (ngrok, cloudflared) or a proxy on this machine delivers the whole internet's requests
from loopback, so a request carrying any proxy's header (PROXY_HEADERS, any X-Forwarded-*)
is the 404 page too; and so is a Host other than localhost, 127.0.0.1 or [::1], which is how a
page of another site reaches a loopback server by DNS rebinding. `this_machine_only` is the
guard of every development-only route.

The email's HTML is shown inline, not in a frame, under the pages' strict CSP: it is first cut
down to plain text markup (paragraphs, lists, emphasis, links to http(s) and mailto), so no
script, style, form or frame of it can reach the page. Decisions: docs/pages.md.
"""

from __future__ import annotations

import html
import ipaddress
import re
from html.parser import HTMLParser

from aiohttp import web
from aiohttp_apigami import docs
from markupsafe import Markup

from api import html as pages
from api.keys import SETTINGS
from api.public import public
from core.errors import NotFound
from models.delivery import mailbox

routes = web.RouteTableDef()

LIST_PATH = "/dev/mail"
ONE_PATH = "/dev/mail/{id}"

# Markup an email may keep on the page; anything else keeps only its text.
_KEPT = frozenset(
    {"p", "br", "a", "strong", "em", "b", "i", "ul", "ol", "li", "blockquote", "h1", "h2", "h3"}
)
_VOID = frozenset({"br"})
# Elements whose text is not the email's words: dropped with everything inside them.
_DROPPED = frozenset(
    {"script", "style", "head", "title", "template", "iframe", "object", "svg", "math", "noscript"}
)
_LINK_SCHEMES = ("http://", "https://", "mailto:")


class _Cleaner(HTMLParser):
    """Rebuilds an email's body from its text and the few elements in _KEPT, every attribute
    dropped but a link's http(s)/mailto href; every element it opens is closed."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.open: list[str] = []
        self.hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _DROPPED:
            self.hidden += 1
        elif not self.hidden and tag in _KEPT:
            href = dict(attrs).get("href") or "" if tag == "a" else ""
            if href.strip().lower().startswith(_LINK_SCHEMES):
                self.out.append(f'<a href="{html.escape(href.strip())}">')
            else:
                self.out.append(f"<{tag}>")
            if tag not in _VOID:
                self.open.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in _DROPPED:
            self.handle_starttag(tag, attrs)
            if tag in self.open and self.open[-1] == tag:
                self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in _DROPPED:
            self.hidden = max(0, self.hidden - 1)
        elif not self.hidden and tag in self.open:
            while self.open:
                closing = self.open.pop()
                self.out.append(f"</{closing}>")
                if closing == tag:
                    break

    def handle_data(self, data: str) -> None:
        if not self.hidden:
            self.out.append(html.escape(data))

    def result(self) -> str:
        return "".join(self.out) + "".join(f"</{tag}>" for tag in reversed(self.open))


def clean_html(markup: str) -> Markup:
    """An email's HTML as markup safe to place inline in a page."""
    cleaner = _Cleaner()
    cleaner.feed(markup)
    cleaner.close()
    return Markup(cleaner.result())  # noqa: S704 - built above from escaped text and fixed tags


def from_this_machine(request: web.Request) -> bool:
    """Whether the connection's own peer is a loopback address (X-Forwarded-For is not asked)."""
    peer = request.transport.get_extra_info("peername") if request.transport else None
    if not isinstance(peer, tuple) or not peer:
        return False
    try:
        address = ipaddress.ip_address(str(peer[0]).split("%")[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


# Headers a proxy, a tunnel or a CDN adds: their presence, whatever they say, means the loopback
# peer is relaying someone else. Any `X-Forwarded-*` counts too (see `_forwarded`).
PROXY_HEADERS = (
    "Forwarded",
    "X-Forwarded-For",
    "X-Real-IP",
    "CF-Connecting-IP",
    "True-Client-IP",
    "X-Client-IP",
    "Via",
)
PROXY_HEADERS_UPPER = frozenset(name.upper() for name in PROXY_HEADERS)
# The names a browser on this machine writes in Host, with or without a port: anything else (a
# rebound DNS name, this machine's LAN address) is a page of another site, or another machine.
LOCAL_HOST = re.compile(r"(?:localhost|127\.0\.0\.1|\[::1\])(?::[0-9]{1,5})?", re.IGNORECASE)


def _forwarded(request: web.Request) -> bool:
    return any(
        name.upper() in PROXY_HEADERS_UPPER or name.upper().startswith("X-FORWARDED-")
        for name in request.headers
    )


def local_host_header(request: web.Request) -> bool:
    """Whether the request names this machine in its one Host header, and in its target when
    that is a whole URL (aiohttp's `host` is then the URL's): DNS rebinding keeps the
    attacker's name there."""
    hosts = request.headers.getall("Host", [])
    return len(hosts) == 1 and all(LOCAL_HOST.fullmatch(name.strip()) for name in (hosts[0], request.host))


def this_machine_only(request: web.Request) -> web.Response | None:
    """The guard of every development-only route: None when it may answer, else the refusal.
    A peer off this machine gets the 403 page; on it, a Host naming anything but this machine
    or any proxy's header is the 404 page (raised), so nothing of the route is shown."""
    if not from_this_machine(request):
        return _refused(request)
    if _forwarded(request) or not local_host_header(request):
        raise NotFound("Page")
    return None


# The name the mailbox's handlers were written against.
_opens_here = this_machine_only


def _refused(request: web.Request) -> web.Response:
    return pages.render(
        "dev_mail_refused.html", reader=request, status=403, title="The mailbox opens only on this machine"
    )


@routes.get(LIST_PATH)
@public
@docs(
    tags=["development"],
    summary="Development only: every email the service sent, newest first",
    description="Exists only with APP_ENV=development and no email provider configured (404 "
    "otherwise), and answers only a client on this machine (the socket's loopback peer; 403 from "
    "anywhere else; the 404 page when its Host is not localhost, 127.0.0.1 or [::1], or when it "
    "carries any forwarding header (Forwarded, X-Forwarded-*, X-Real-IP, CF-Connecting-IP, "
    "True-Client-IP, X-Client-IP, Via), as through a tunnel every request arrives from loopback). "
    "Each email links to `/dev/mail/<id>`.",
    produces=["text/html"],
    responses={200: {"description": "The page"}},
)
async def mail_list(request: web.Request) -> web.Response:
    if refused := this_machine_only(request):
        return refused
    kept = mailbox.newest(data_dir=request.app[SETTINGS].data_dir)
    return pages.render(
        "dev_mail_list.html", reader=request, title="Development mailbox", kept=kept, shown=mailbox.SHOWN
    )


@routes.get(ONE_PATH)
@public
@docs(
    tags=["development"],
    summary="Development only: one email, its HTML inline and its text",
    description="As `/dev/mail`: development only, this machine only. Unknown ids are the 404 page.",
    produces=["text/html"],
    responses={200: {"description": "The page"}},
)
async def mail_one(request: web.Request) -> web.Response:
    if refused := this_machine_only(request):
        return refused
    kept = mailbox.one(data_dir=request.app[SETTINGS].data_dir, mail_id=request.match_info["id"])
    if kept is None:
        raise NotFound("Kept email")
    return pages.render(
        "dev_mail.html",
        reader=request,
        title=kept.email.subject,
        kept=kept,
        body=clean_html(kept.email.html),
        back=LIST_PATH,
    )
