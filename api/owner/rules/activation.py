"""Activation, deactivation and the check-in that stops a release, from the owner's home page:
the same `lifecycle` calls as `POST /api/legacy/activate`, `/deactivate` and `/check-in`, with
the same timeline entries. What the home page says about them (`shown`) is written here so that
its words and the settings page's are one recipe (api/owner/rules/words.py). docs/pages.md.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from aiohttp import web
from aiohttp_apigami import docs

from api.common import email_budget
from api.keys import context
from api.owner.plan_pages import done, owner_id
from api.owner.rules import words
from api.owner.session import owner_page
from core.errors import Conflict
from core.text import i18n
from core.text.i18n import _
from models import plans
from models.flows import lifecycle

routes = web.RouteTableDef()

HOME = "/plan"


def shown(plan: Any) -> dict[str, Any]:
    """What the home page says about activating, deactivating and checking in, in the language
    and zone being spoken (the owner's)."""
    status = plan["status"]
    said: dict[str, Any] = {
        "activate": status == plans.DRAFT,
        "deactivate": status == plans.ACTIVE,
        "stops_release": status in (plans.PENDING, plans.APPROVED),
        "from_now": None,
        "on_activation": words.check_in(plan) if status == plans.DRAFT else None,
    }
    due = plan["check_in_due_at"]
    if status == plans.ACTIVE and due is not None:
        asked = due + timedelta(seconds=plan["grace_period_seconds"])
        said["from_now"] = _(
            "From now on: check in by {due}. If you have not by then, we email you, and on {asked} we ask "
            "your guardians whether your plan should be released."
        ).format(due=i18n.when(due), asked=i18n.when(asked))
    return said


@routes.post(HOME + "/activate")
@docs(tags=["pages"], summary="Activate the plan from the home page", produces=["text/html"])
@owner_page
async def activate(request: web.Request) -> web.Response:
    """POST /api/legacy/activate from the page. Refused by readiness, the home page says each
    reason beside the link to the page that fixes it (the same checklist the refusal carries)."""
    ctx = context(request)
    try:
        await lifecycle.activate(
            ctx.pool,
            ctx.ring,
            ctx.redis,
            user_id=owner_id(request),
            now=ctx.now(),
            budget=email_budget(request),
            contract=bool(ctx.settings.service_contract_id),
        )
    except Conflict:
        done(request, HOME, "not-ready")
    done(request, HOME, "activated")


@routes.post(HOME + "/deactivate")
@docs(tags=["pages"], summary="Return the plan to a draft from the home page", produces=["text/html"])
@owner_page
async def deactivate(request: web.Request) -> web.Response:
    """POST /api/legacy/deactivate from the page; refused outside Active (the page offers it only
    there), the home page then says what the plan is."""
    ctx = context(request)
    try:
        await lifecycle.deactivate(ctx.pool, user_id=owner_id(request), now=ctx.now())
    except Conflict:
        done(request, HOME, "not-active")
    done(request, HOME, "deactivated")
