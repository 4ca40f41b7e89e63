"""`/plan/settings`: the plan's rules (`GET/PATCH /api/legacy`) as choices in words whose values
are the API's seconds, each with what it means in one sentence, the figures filled in. The form
posts the API's names and is read by its schema (`SettingsPatchSchema`); the change is the same
`plan_settings.update_settings` call, with the same timeline entry. docs/pages.md.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web
from aiohttp_apigami import docs

from api import html
from api.common import email_budget
from api.keys import context
from api.owner.forms import FormState, load
from api.owner.plan_pages import done, owner_id, posted, show
from api.owner.rules import words
from api.owner.rules.words import DAY, span
from api.owner.session import owner_page
from api.plan.schemas import SettingsPatchSchema
from core.errors import BadRequest, Conflict
from core.settings import Settings
from core.text import i18n
from core.text.i18n import N_, _
from models import plans
from models.plan import journey, plan_settings

routes = web.RouteTableDef()

SETTINGS = "/plan/settings"
HOUR = 3600
# The durations offered for each setting (in seconds, the API's values); the plan's own value is
# always offered too, whatever it is, and none under the operator's lower bound.
OFFERED = {
    "checkInIntervalSeconds": (30 * DAY, 60 * DAY, 90 * DAY, 180 * DAY, 365 * DAY),
    "gracePeriodSeconds": (0, 3 * DAY, 7 * DAY, 14 * DAY, 30 * DAY),
    "cancelWindowSeconds": (24 * HOUR, 48 * HOUR, 72 * HOUR, 7 * DAY, 14 * DAY),
    "verificationTimeoutSeconds": (7 * DAY, 14 * DAY, 30 * DAY, 60 * DAY, 90 * DAY),
}
COLUMNS = {
    "checkInIntervalSeconds": "check_in_interval_seconds",
    "gracePeriodSeconds": "grace_period_seconds",
    "cancelWindowSeconds": "cancel_window_seconds",
    "verificationTimeoutSeconds": "verification_timeout_seconds",
    "guardianThreshold": "guardian_threshold",
    "onVerificationTimeout": "on_verification_timeout",
    "allowBeneficiaryRequests": "allow_beneficiary_requests",
    "notifyBeneficiariesOnActivation": "notify_beneficiaries_on_activation",
}
FROZEN = N_(
    "Your plan's rules can change only while it is a draft or active: they stay as they are while "
    "your guardians are asked, and after the release."
)


def _least(settings: Settings) -> dict[str, int]:
    return {
        "checkInIntervalSeconds": settings.plan_min_check_in_interval_seconds,
        "gracePeriodSeconds": 0,
        "cancelWindowSeconds": settings.plan_min_cancel_window_seconds,
        "verificationTimeoutSeconds": settings.plan_min_verification_timeout_seconds,
    }


def _durations(name: str, current: int | None, least: int) -> list[tuple[str, str]]:
    offered = {seconds for seconds in OFFERED[name] if seconds >= least}
    if current is not None:
        offered.add(current)
    return [(str(seconds), span(seconds) if seconds else _("None")) for seconds in sorted(offered)]


def choices(plan: Any, *, settings: Settings, guardians: int) -> dict[str, list[tuple[str, str]]]:
    """Every setting's choices, in words, in the language being spoken."""
    least = _least(settings)
    offered = {
        name: _durations(name, plan[COLUMNS[name]], least[name])
        for name in ("checkInIntervalSeconds", "gracePeriodSeconds", "cancelWindowSeconds")
    }
    timeout = "verificationTimeoutSeconds"
    deadlines = _durations(timeout, plan["verification_timeout_seconds"], least[timeout])
    offered["verificationTimeoutSeconds"] = [("", _("No deadline")), *deadlines]
    offered["onVerificationTimeout"] = [("wait", _("Nothing is released: the plan waits"))]
    if not settings.service_contract_id or plan["on_verification_timeout"] == "release":
        offered["onVerificationTimeout"].insert(0, ("release", _("The plan is released")))
    most = max(guardians, plan["guardian_threshold"] or 0)
    offered["guardianThreshold"] = [("", _("A majority of them"))] + [
        (str(count), i18n.number(count)) for count in range(1, most + 1)
    ]
    return offered


def consequences(overview: journey.Overview, *, settings: Settings) -> dict[str, str]:
    """Each setting's consequence in one sentence, with the plan's figures."""
    plan = overview["plan"]
    return {
        "checkIn": words.check_in(plan),
        "cancelWindow": words.cancel_window(plan),
        "deadline": words.deadline(plan, objection_seconds=settings.plan_objection_check_in_seconds),
        "threshold": words.threshold(
            plan, needed=overview["threshold"], guardians=overview["facts"]["standing_guardians"]
        ),
        "earlyLinks": words.early_links(plan),
        "requests": words.requests(plan),
    }


def _wire(plan: Any) -> dict[str, Any]:
    """The plan's settings under the form's (the API's) names."""
    shown = {name: plan[column] for name, column in COLUMNS.items()}
    for name in ("allowBeneficiaryRequests", "notifyBeneficiariesOnActivation"):
        shown[name] = "true" if shown[name] else "false"
    return shown


def in_words(error: BadRequest, settings: Settings) -> dict[str, list[str]]:
    """The model's refusals (English, for programs) as the owner reads them beside each field,
    the operator's bounds as durations."""
    least = _least(settings)
    said: dict[str, list[str]] = {}
    details = error.details if isinstance(error.details, dict) else {}
    for name in details:
        if name in least:
            said[name] = [_("Choose at least {least}.").format(least=span(least[name]))]
        elif name == "guardianThreshold":
            said[name] = [_("Choose at most your number of guardians, or a majority of them.")]
        elif name == "onVerificationTimeout":
            said[name] = [
                _(
                    "This service releases a plan on-chain only with your guardians' approvals: at the "
                    "deadline your plan can only wait."
                )
            ]
        else:
            said[name] = [_("This could not be read: please choose again.")]
    return said


async def _page(request: web.Request, form: FormState | None, *, status: int = 200) -> web.Response:
    ctx = context(request)
    overview = await journey.overview(
        ctx.pool,
        ctx.ring,
        user_id=owner_id(request),
        defaults=plan_settings.new_plan_defaults(ctx.settings),
        contract=bool(ctx.settings.service_contract_id),
    )
    plan = overview["plan"]
    with html.speaking(request):
        offered = choices(plan, settings=ctx.settings, guardians=overview["facts"]["guardians"])
        said = consequences(overview, settings=ctx.settings)
    return show(
        request,
        "owner/settings.html",
        title=N_("Your plan's rules"),
        status=status,
        form=form if form is not None else FormState.of(_wire(plan)),
        offered=offered,
        said=said,
        changeable=plan["status"] in (plans.DRAFT, plans.ACTIVE),
        frozen=_(FROZEN),
    )


@routes.get(SETTINGS)
@docs(tags=["pages"], summary="The plan's rules, in words", produces=["text/html"])
@owner_page
async def settings_page(request: web.Request) -> web.Response:
    return await _page(request, None)


@routes.post(SETTINGS)
@docs(tags=["pages"], summary="Change the plan's rules (PATCH /api/legacy)", produces=["text/html"])
@owner_page
async def change_settings(request: web.Request) -> web.Response:
    ctx = context(request)
    changes, form = load(SettingsPatchSchema(), await posted(request))
    if changes is not None:
        try:
            await plan_settings.update_settings(
                ctx.pool,
                ctx.redis,
                ctx.settings,
                user_id=owner_id(request),
                budget=email_budget(request),
                changes=changes,
                now=ctx.now(),
            )
        except BadRequest as error:
            with html.speaking(request):
                form.refuse(in_words(error, ctx.settings))
        except Conflict:
            form.refuse(FROZEN)
        else:
            done(request, SETTINGS, "settings-saved")
    return await _page(request, form, status=422)
