""" "I don't know this person" (`/stop-emails/<token>`): the link in an invitation or a
confirmation request, and the RFC 8058 one-click URL in its `List-Unsubscribe` header. A GET
shows one button and changes nothing (mail scanners fetch links); a POST, from the button or a
mail client's one-click (`List-Unsubscribe=One-Click`), stops every email from that account to
that address and tells the owner. Each page speaks its recipient's language (their emails') and
names the email the link came in and whose plan sent it. Public: the token is the credential;
every miss is the same 404 page (429 past the per-IP miss limit). docs/security.md, "Nobody's
mail relay"; docs/pages.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

from aiohttp import web
from aiohttp_apigami import docs

from api import html
from api.common import refuse_miss
from api.keys import context
from api.public import public
from core.text.i18n import _
from models.account import users
from models.delivery import outbox, suppressions

routes = web.RouteTableDef()

PAGE = suppressions.PATH + "{token}"


async def refuse_stop_miss(request: web.Request) -> NoReturn:
    await refuse_miss(
        request,
        kind="stop-emails",
        limit=context(request).settings.rate_limit_check_in_misses_per_ip,
        what="Link",
        too_many="Too many unknown links from this address; try again later.",
    )


@routes.get(PAGE)
@public
@docs(
    tags=["pages"],
    summary='"I don\'t know this person": the page, one button, nothing done on GET',
    description="What the link at the foot of a guardian invitation or an address confirmation request "
    "opens (until the person has accepted or confirmed), and the URL of its `List-Unsubscribe` header "
    "(RFC 8058). Opening it changes nothing. Once the person has accepted or confirmed, the page says "
    "in words that the link no longer stops anything and why. A link that opens nothing (malformed, "
    "unknown, an account deleted since) is the 404 page (429 past RATE_LIMIT_CHECK_IN_MISSES_PER_IP "
    "misses a minute).",
    produces=["text/html"],
    responses={200: {"description": "The page"}},
)
async def stop_emails_page(request: web.Request) -> web.Response:
    ctx = context(request)
    link = await suppressions.state(ctx.pool, ctx.ring, token=request.match_info["token"])
    if link is None:
        await refuse_stop_miss(request)
    if link["state"] == "answered":
        return _answered(request, link)
    with _speaking(request, link):
        return html.render(
            "stop_emails.html",
            reader=request,
            title=_("Do you know this person?"),
            action=request.path,
            kind=link["kind"],
            owner=_owner(link),
            owner_gender=link["owner_gender"],
            heir_email=link["kind"] in HEIR_KINDS,
        )


# The emails an heir's link comes in; the rest (guardian_invitation) ask someone to be a guardian.
HEIR_KINDS = frozenset({"email_confirmation", "early_heir_link", "address_confirmation"})


@contextmanager
def _speaking(request: web.Request, link: suppressions.Link) -> Iterator[None]:
    """The page in its recipient's language and zone (the one their emails are in), unless the
    page's own language choice says otherwise."""
    with html.speaking(request, locale=link["locale"], time_zone=link["time_zone"]):
        yield


def _owner(link: suppressions.Link) -> str:
    return users.known_as(name=link["owner_name"], wallet=None)


def _answered(request: web.Request, link: suppressions.Link) -> web.Response:
    with _speaking(request, link):
        return html.render(
            "stop_emails_answered.html",
            reader=request,
            title=_("Nothing changed: you are part of this plan"),
            owner=_owner(link),
            owner_gender=link["owner_gender"],
            heir_email=link["kind"] in HEIR_KINDS,
        )


@routes.post(PAGE)
@public
@docs(
    tags=["pages"],
    summary="Stop every email from this account to this address (the button, or a one-click POST)",
    description="The page's button, and the one-click POST a mail client sends to the "
    "`List-Unsubscribe` URL (body `List-Unsubscribe=One-Click`; any body is accepted and not read). "
    "Every later email from the owner's account to the address this email went to is skipped (checked "
    "when it is written and when it is sent), and the owner is told once, by email and in their "
    "timeline, with no address and nothing of the person (in a corrected heir address's confirmation, "
    "the change ends instead and every accepted guardian is told). Pressing it again changes nothing "
    "more, nor does it once the person has accepted or confirmed: they are part of the plan, a mail client's "
    "Unsubscribe must not silently drop them, and the page says so (200). "
    "404/429 pages as the GET.",
    produces=["text/html"],
    responses={200: {"description": "The page"}},
)
async def stop_emails(request: web.Request) -> web.Response:
    ctx = context(request)
    link, told = await suppressions.suppress(
        ctx.pool, ctx.ring, token=request.match_info["token"], now=ctx.now()
    )
    if link is None:
        await refuse_stop_miss(request)
    if link["state"] == "answered":
        return _answered(request, link)
    await outbox.enqueue(ctx.redis, row_ids=told)
    with _speaking(request, link):
        return html.render(
            "stop_emails_done.html",
            reader=request,
            title=_("No more emails from them"),
            kind=link["kind"],
            owner=_owner(link),
        )
