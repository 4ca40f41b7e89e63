"""`/plan`, the owner's home page: where the plan stands in one sentence, its readiness
checklist (each sentence linked to the page that fixes it), what each guardian answered, the
next check-in with its button, and the one next step as a link. 200 in every state, a new
account's included (the plan is created in Draft on a first visit, as GET /api/legacy does).
docs/pages.md, "The owner's pages".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from aiohttp import web
from aiohttp_apigami import docs
from markupsafe import Markup

from api import html
from api.keys import context
from api.owner import plan_pages
from api.owner.plan_pages import done, owner_id, show
from api.owner.rules import activation
from api.owner.session import owner_page
from core.text.i18n import N_, _
from models import plans
from models.flows import lifecycle
from models.plan import owner_pages, plan_settings
from models.plan.plan_settings import Facts
from models.plan.readiness import readiness, warnings

routes = web.RouteTableDef()

HOME = "/plan"
STATES = {
    plans.DRAFT: N_("Your plan is a draft: nothing happens until you activate it."),
    plans.ACTIVE: N_("Your plan is active: as long as you check in from time to time, nothing else happens."),
    plans.PENDING: N_("Your guardians are being asked to confirm whether your plan should be released."),
    plans.APPROVED: N_("Your guardians approved the release of your plan."),
    plans.RELEASED: N_("Your plan has been released: your heirs have their links."),
}
# The page that fixes what a checklist sentence is about, and the link's words.
FIXED_ON = {
    "heirs": ("/plan/heirs", N_("Go to your heirs")),
    "guardians": ("/plan/guardians", N_("Go to your guardians")),
    "account": ("/plan/account", N_("Go to your account")),
    "settings": ("/plan/settings", N_("Go to your plan's rules")),
}
CHECKS_IN = (plans.ACTIVE, plans.PENDING, plans.APPROVED)


def next_step(status: str, known: Facts) -> tuple[str, str, str] | None:
    """The one thing to do next (path, fragment, words), or None once nothing is asked."""
    if status == plans.RELEASED:
        return None
    if known["beneficiaries"] == 0:
        return "/plan/heirs", "#add", _("Add an heir")
    if known["guardians"] == 0:
        return "/plan/guardians", "#add", _("Add a guardian")
    if status in CHECKS_IN:
        return HOME, "#check-in", _("Check in")
    if known["allocation_total"] != 100:
        return "/plan/heirs", "", _("Correct your heirs' shares")
    if not known["has_owner_name"] or not known["has_owner_email"]:
        return "/plan/account", "", _("Add your name and email address")
    return None


# The facts that name people, whose names the checklist's sentences carry.
NAMED = (
    "unanswered_guardians",
    "declined_guardians",
    "unresponsive_guardians",
    "walletless_guardians",
    "guardians_also_heirs",
    "bounced_heirs",
    "unconfirmed_heirs",
)


def isolated(sentence: str | None, names: list[str]) -> Markup | None:
    """A model's sentence for the page, each of `names` in it isolated in `<bdi>` (a name in
    another script cannot reorder the sentence around it), the longest first; a name is matched
    only as a whole, never inside a word or inside a name isolated already."""
    if sentence is None:
        return None
    text = str(Markup.escape(sentence))
    for name in sorted({name for name in names if name.strip()}, key=len, reverse=True):
        found = re.compile(rf"(?<![\w>]){re.escape(str(Markup.escape(name)))}(?![\w<])")
        text = found.sub(str(html.bdi(name)).replace("\\", "\\\\"), text)
    return Markup(text)  # noqa: S704 - escaped above, names isolated by html.bdi


def linked(sentences: list[str], names: list[str]) -> list[tuple[Markup | None, str | None, str]]:
    """Each checklist sentence, its names isolated, with the page that fixes it (None: a setting
    of part two, or an email that waits) and the link's words."""
    items = []
    for sentence in sentences:
        path, words = FIXED_ON.get(getattr(sentence, "topic", ""), (None, ""))
        items.append((isolated(sentence, names), path, _(words) if words else ""))
    return items


def page(view: owner_pages.Home, *, contract: bool) -> dict[str, Any]:
    """What the home page shows, its sentences in the language being spoken: one recipe, so
    that whatever else renders the page (a measurement's bare server) shows the same."""
    overview = view["overview"]
    plan, known = overview["plan"], overview["facts"]
    status = plan["status"]
    problems = (
        readiness(plan=plan, known=known, contract=contract) if status in (plans.DRAFT, plans.ACTIVE) else []
    )
    advice = warnings(plan=plan, known=known) if status != plans.RELEASED else []
    facts: Mapping[str, list[str]] = known  # type: ignore[assignment]
    names = [name for key in NAMED for name in facts[key]] + [
        guardian["name"] for guardian in view["guardians"]
    ]
    return {
        "plan_status": status,
        "state": _(STATES[status]),
        "next_step": next_step(status, known),
        "problems": linked(problems, names),
        "advice": linked(advice, names),
        "check_in": status in CHECKS_IN,
        "due": plan["check_in_due_at"] if status == plans.ACTIVE else None,
        "notice": isolated(overview["verification_notice"], names),
        "guardians": view["guardians"][::-1],
        "answer": plan_pages.answer,
        "rules": activation.shown(plan),
    }


@routes.get(HOME)
@docs(tags=["pages"], summary="The owner's home page", produces=["text/html"])
@owner_page
async def home_page(request: web.Request) -> web.Response:
    ctx = context(request)
    contract = bool(ctx.settings.service_contract_id)
    view = await owner_pages.home(
        ctx.pool,
        ctx.ring,
        user_id=owner_id(request),
        defaults=plan_settings.new_plan_defaults(ctx.settings),
        contract=contract,
    )
    with html.speaking(request):
        shown = page(view, contract=contract)
    return show(request, "owner/home.html", title=N_("Your plan"), **shown)


@routes.post(HOME + "/check-in")
@docs(tags=["pages"], summary="Check in from the home page", produces=["text/html"])
@owner_page
async def check_in(request: web.Request) -> web.Response:
    """POST /api/legacy/check-in from the page (the same call, the same timeline entry)."""
    ctx = context(request)
    stops = (await request.post()).get("stops") == "release"  # the form said so: only the words differ
    await lifecycle.check_in(ctx.pool, ctx.redis, user_id=owner_id(request), now=ctx.now())
    done(request, HOME, "checked-in-stopped" if stops else "checked-in")
