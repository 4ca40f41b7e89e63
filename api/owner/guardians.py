"""`/plan/guardians`: the owner's guardians from a browser, each change the JSON route's own
model call (`/api/guardians`: add, change, remove, invite again), its form read by the route's
schema (api/owner/forms.py). docs/pages.md, "The owner's pages".
"""

from __future__ import annotations

from typing import Any

from aiohttp import web
from aiohttp_apigami import docs

from api import html
from api.common import email_budget
from api.contents.schemas import GuardianCreateSchema
from api.keys import context
from api.owner import plan_pages
from api.owner.forms import FormState, load, refused
from api.owner.plan_pages import done, owner_id, posted, show
from api.owner.session import owner_page
from core.errors import BadRequest, Conflict
from core.text import gender, i18n
from core.text.i18n import N_, _, ngettext
from models import plans
from models.contents import guardians
from models.contents.guardians import Guardian
from models.plan import owner_pages, plan_settings

routes = web.RouteTableDef()

GUARDIANS = "/plan/guardians"
GUARDIAN = "/plan/guardians/{id}"
REMOVED = N_(
    "They are no longer asked anything about your plan, and their page opens nothing. You can add them "
    "again later; they would be invited again."
)


def rule(plan: plans.Plan | None, guardians_now: list[Guardian]) -> str:
    """How many approvals a release needs, in words."""
    standing = sum(1 for guardian in guardians_now if guardian["declined_at"] is None)
    if plan is None or standing == 0:
        return _(
            "A release needs the approval of more than half of your guardians, unless you choose another "
            "number."
        )
    needed = plans.threshold(plan=plan, standing=standing)
    return ngettext(
        "A release needs the approval of {count} of your {standing} guardians who have not declined.",
        "A release needs the approval of {count} of your {standing} guardians who have not declined.",
        needed,
    ).format(count=i18n.number(needed), standing=i18n.number(standing))


def _wire(guardian: Guardian) -> dict[str, Any]:
    return {
        "name": guardian["name"],
        "email": guardian["email"],
        "walletAddress": guardian["wallet_address"],
        "locale": guardian["locale"],
        "grammaticalGender": guardian["grammatical_gender"],
    }


def _gender_choices(request: web.Request) -> list[tuple[str, str]]:
    with html.speaking(request):  # the page's language
        return gender.choices()


async def _list(request: web.Request, form: FormState, *, status: int = 200) -> web.Response:
    ctx = context(request)
    view = await owner_pages.guardian_list(ctx.pool, ctx.ring, user_id=owner_id(request))
    listed = view["guardians"][::-1]  # in the order they were added
    plan_status = view["plan"]["status"] if view["plan"] else plans.DRAFT
    return show(
        request,
        "owner/guardians.html",
        title=N_("Your guardians"),
        status=status,
        guardians=listed,
        answer=plan_pages.answer,  # said as the page is written, in its language
        rule=rule,
        plan=view["plan"],
        open=plan_status != plans.RELEASED,
        can_invite=plan_status in (plans.DRAFT, plans.ACTIVE),
        form=form,
        language_choices=plan_pages.language_choices(),
        gender_choices=_gender_choices(request),
    )


@routes.get(GUARDIANS)
@docs(tags=["pages"], summary="The owner's guardians, and a form to add one", produces=["text/html"])
@owner_page
async def guardians_page(request: web.Request) -> web.Response:
    return await _list(request, FormState())


@routes.post(GUARDIANS)
@docs(tags=["pages"], summary="Add a guardian (the form of /plan/guardians)", produces=["text/html"])
@owner_page
async def add_guardian(request: web.Request) -> web.Response:
    ctx = context(request)
    data, form = load(GuardianCreateSchema(), await posted(request))
    if data is not None:
        try:
            row = await guardians.create(
                ctx.pool,
                ctx.ring,
                ctx.redis,
                user_id=owner_id(request),
                data=data,
                now=ctx.now(),
                budget=email_budget(request),
                plan_defaults=plan_settings.new_plan_defaults(ctx.settings),
            )
        except (BadRequest, Conflict) as error:
            refused(form, error)
        else:
            done(request, GUARDIANS, "guardian-added" if row["invited_at"] else "guardian-waiting")
    return await _list(request, form, status=422)


async def _edit(request: web.Request, form: FormState | None, *, status: int = 200) -> web.Response:
    ctx = context(request)
    guardian = await guardians.get(
        ctx.pool, ctx.ring, user_id=owner_id(request), raw_id=request.match_info["id"]
    )
    shown = form if form is not None else FormState.of(_wire(guardian))
    return show(
        request,
        "owner/guardian_edit.html",
        title=N_("Change a guardian's details"),
        status=status,
        guardian=guardian,
        form=shown,
        language_choices=plan_pages.language_choices(),
        gender_choices=_gender_choices(request),
    )


@routes.get(GUARDIAN)
@docs(tags=["pages"], summary="Change a guardian's details", produces=["text/html"])
@owner_page
async def guardian_page(request: web.Request) -> web.Response:
    return await _edit(request, None)


@routes.post(GUARDIAN)
@docs(tags=["pages"], summary="Save a guardian's details", produces=["text/html"])
@owner_page
async def change_guardian(request: web.Request) -> web.Response:
    """Read as a whole guardian (every field is on the form; an emptied wallet address means
    "no wallet": a passkey); the model changes only what differs, as a PATCH."""
    ctx = context(request)
    changes, form = load(GuardianCreateSchema(), await posted(request))
    if changes is not None:
        try:
            await guardians.update(
                ctx.pool,
                ctx.ring,
                ctx.redis,
                user_id=owner_id(request),
                raw_id=request.match_info["id"],
                changes=changes,
                now=ctx.now(),
                budget=email_budget(request),
            )
        except (BadRequest, Conflict) as error:
            refused(form, error)
        else:
            done(request, GUARDIANS, "guardian-saved")
    return await _edit(request, form, status=422)


@routes.get(GUARDIAN + "/remove")
@docs(tags=["pages"], summary="Confirm removing a guardian", produces=["text/html"])
@owner_page
async def remove_guardian_page(request: web.Request) -> web.Response:
    """The confirmation step: a GET shows it and changes nothing."""
    ctx = context(request)
    guardian = await guardians.get(
        ctx.pool, ctx.ring, user_id=owner_id(request), raw_id=request.match_info["id"]
    )
    return show(
        request,
        "owner/remove.html",
        title=N_("Remove a guardian"),
        name=guardian["name"],
        consequence=REMOVED,
        action=f"{GUARDIANS}/{guardian['id']}/remove",
        back=GUARDIANS,
        back_words=N_("Your guardians"),
    )


@routes.post(GUARDIAN + "/remove")
@docs(tags=["pages"], summary="Remove a guardian", produces=["text/html"])
@owner_page
async def remove_guardian(request: web.Request) -> web.Response:
    ctx = context(request)
    await guardians.delete(
        ctx.pool,
        ctx.ring,
        ctx.redis,
        user_id=owner_id(request),
        raw_id=request.match_info["id"],
        now=ctx.now(),
    )
    done(request, GUARDIANS, "guardian-removed")


@routes.post(GUARDIAN + "/invite")
@docs(tags=["pages"], summary="Invite a guardian again", produces=["text/html"])
@owner_page
async def invite_again(request: web.Request) -> web.Response:
    """POST /api/guardians/:id/reinvite from the page: the invitation sent again to a guardian
    who has not answered, or a new one after a lost passkey (the same call: a new link, any
    passkey of theirs forgotten)."""
    ctx = context(request)
    row = await guardians.reinvite(
        ctx.pool,
        ctx.ring,
        ctx.redis,
        user_id=owner_id(request),
        raw_id=request.match_info["id"],
        now=ctx.now(),
        budget=email_budget(request),
    )
    done(request, GUARDIANS, "guardian-invited" if row["invited_at"] else "guardian-waiting")
