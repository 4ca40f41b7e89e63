"""`/plan/timeline`: the Family Timeline (`GET /api/activity`) as a page, newest first, a page
at a time by the one keyset pagination (models/pagination.py: "Older entries" carries the
cursor), filtered by what an entry is about. Each entry's words are its stored summary, written
in the owner's language when it was recorded: the same sentence the emails' timeline lines
carry (docs/translations.md, "The timeline"). docs/pages.md.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web
from aiohttp_apigami import docs
from marshmallow import ValidationError

from api import html
from api.activity import ActivityQuerySchema
from api.keys import context
from api.owner.plan_pages import owner_id, show
from api.owner.session import owner_page
from core.text.i18n import N_, _
from models import activity

routes = web.RouteTableDef()

TIMELINE = "/plan/timeline"
PER_PAGE = 25
# What an entry is about (the API's `entityType`), in words; the filter offers these.
ABOUT = {
    "plan": N_("Your plan"),
    "beneficiary": N_("Your heirs"),
    "guardian": N_("Your guardians"),
    "asset": N_("What you leave"),
    "message": N_("Your letters"),
    "archive_item": N_("Your documents"),
    "capsule": N_("What your heirs opened"),
    "heir": N_("Your heirs' steps on the Stellar network"),
    "transaction": N_("The Stellar network"),
    "email": N_("Emails"),
    "user": N_("Your account"),
    "owner": N_("Your sign-ins"),
    "account": N_("Your wallet's use during a verification"),
}


def _query(request: web.Request) -> dict[str, Any]:
    """The page's query read by the API's own schema; what it refuses (a stale cursor, an unknown
    kind) is read as the first page of everything, never a 500: a GET has nothing to correct."""
    raw = {key: request.query[key] for key in ("entityType", "cursor") if request.query.get(key)}
    raw["limit"] = str(PER_PAGE)
    if raw.get("entityType") not in ABOUT:
        raw.pop("entityType", None)
    try:
        return ActivityQuerySchema().load(raw)
    except ValidationError:
        return ActivityQuerySchema().load({"limit": str(PER_PAGE)})


@routes.get(TIMELINE)
@docs(tags=["pages"], summary="The Family Timeline, in words", produces=["text/html"])
@owner_page
async def timeline_page(request: web.Request) -> web.Response:
    ctx = context(request)
    query = _query(request)
    about = query.get("entity_type")
    page = await activity.list_for_user(
        ctx.pool,
        ctx.ring,
        user_id=owner_id(request),
        filters=activity.ActivityFilter(entity_type=about),
        page=query["page"],
    )
    older = None
    if page.next_cursor:
        older = (
            TIMELINE + "?" + "&".join([f"entityType={about}"] * bool(about) + [f"cursor={page.next_cursor}"])
        )
    with html.speaking(request):
        kinds = [("", _("Everything"))] + [(key, _(words)) for key, words in ABOUT.items()]
    return show(
        request,
        "owner/timeline.html",
        title=N_("Your plan's timeline"),
        entries=page.items,
        kinds=kinds,
        about=about or "",
        older=older,
        first_page=query["page"].after is None,
        chosen=html.chosen_language(request),
    )
