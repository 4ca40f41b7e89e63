"""`/check-in/<token>`: the owner's one-time check-in link from a lifecycle email, as a page on
the service's own origin (no wallet, no web client, no JavaScript needed).

A GET only shows the button (mail scanners and link previews fetch every link in an email: a
GET must never check in); the check-in happens on the form's POST, through the same model
function and miss limit as `POST /api/legacy/check-in/link`. docs/pages.md.
"""

from __future__ import annotations

from aiohttp import web
from aiohttp_apigami import docs

from api import html
from api.keys import context
from api.plan.check_in_link import refuse_check_in_miss
from api.public import public
from core.text.i18n import _
from models import check_in_links
from models.flows import lifecycle

routes = web.RouteTableDef()

PATH = "/check-in/{token}"


@routes.get(PATH)
@public
@docs(
    tags=["pages"],
    summary="The owner's check-in link as a page: one button, nothing done on GET",
    description="What `$PUBLIC_BASE_URL/check-in/<token>`, the link in owner emails, opens. A live "
    "link shows one button that posts the form back here; opening the link changes "
    "nothing. A link that checks nothing in (used, expired, unknown, malformed) is the 404 page, "
    "counted by the same miss limit as `POST /api/legacy/check-in/link` (429 page past it).",
    produces=["text/html"],
    responses={200: {"description": "The page"}},
)
async def check_in_page(request: web.Request) -> web.Response:
    ctx = context(request)
    token = request.match_info["token"]
    owner = await check_in_links.reader_if_live(ctx.pool, token=token, now=ctx.now())
    if owner is None:
        await refuse_check_in_miss(request)
    with html.speaking(request, **owner):
        return html.render("check_in.html", reader=request, title=_("Check in"), action=request.path)


@routes.post(PATH)
@public
@docs(
    tags=["pages"],
    summary="Check in from the page's button (an HTML form post)",
    description="Counts exactly as `POST /api/legacy/check-in/link` with this token (the same model "
    "function): the answer page says in one sentence that the plan is active again and when the next "
    "check-in is due. 404/429 pages as the GET; 409 page in Draft or Released (the link is not used up).",
    produces=["text/html"],
    responses={200: {"description": "The page"}},
)
async def check_in_from_page(request: web.Request) -> web.Response:
    ctx = context(request)
    token = request.match_info["token"]
    # The owner's language and zone, read while the link is live (the check-in uses it up); the
    # error pages speak it too.
    owner = await check_in_links.reader_if_live(ctx.pool, token=token, now=ctx.now())
    if owner is not None:
        html.negotiate(request, **owner)
    result = await lifecycle.check_in_by_link(ctx.pool, ctx.redis, token=token, now=ctx.now())
    if result is None:
        await refuse_check_in_miss(request)
    with html.speaking(request):
        return html.render(
            "check_in_done.html",
            reader=request,
            title=_("You are checked in"),
            due=result["next_check_in_due_at"],
        )
