"""`/plan/heirs`: the owner's heirs from a browser, each change the JSON route's own model call
(`/api/beneficiaries`: add, change, remove, ask to confirm the address, a new link), its form
read by the route's schema (api/owner/forms.py). docs/pages.md, "The owner's pages".
"""

from __future__ import annotations

from typing import Any

from aiohttp import web
from aiohttp_apigami import docs

from api import html
from api.common import email_budget
from api.contents.schemas import BeneficiaryCreateSchema
from api.keys import context
from api.owner import plan_pages
from api.owner.forms import FormState, load, refused
from api.owner.plan_pages import done, owner_id, posted, show
from api.owner.session import owner_page
from core.errors import BadRequest, Conflict
from core.text import gender
from core.text.i18n import N_
from models import plans
from models.contents import beneficiaries, email_confirmations
from models.contents.beneficiaries import Beneficiary
from models.delivery import outbox
from models.plan import owner_pages

routes = web.RouteTableDef()

HEIRS = "/plan/heirs"
HEIR = "/plan/heirs/{id}"
REMOVED = N_(
    "They are taken off every message you addressed to them, and their link stops working. This cannot "
    "be undone, but you can add them again."
)


def _wire(heir: Beneficiary) -> dict[str, Any]:
    """An heir's fields under the form's (the API's) names, for the page that changes them."""
    return {
        "name": heir["name"],
        "relationship": heir["relationship"],
        "email": heir["email"],
        "allocationPercentage": plan_pages.share(heir["allocation_percentage"]),
        "locale": heir["locale"],
        "timeZone": heir["time_zone"],
        "grammaticalGender": heir["grammatical_gender"],
    }


def _choices(request: web.Request) -> dict[str, Any]:
    """The form's lists, their words in the page's language."""
    with html.speaking(request):
        return {
            "language_choices": plan_pages.language_choices(),
            "zone_choices": plan_pages.zone_choices(),
            "gender_choices": gender.choices(),
        }


async def _list(request: web.Request, form: FormState, *, status: int = 200) -> web.Response:
    ctx = context(request)
    view = await owner_pages.heirs(ctx.pool, ctx.ring, user_id=owner_id(request))
    heirs = view["heirs"][::-1]  # in the order they were added
    return show(
        request,
        "owner/heirs.html",
        title=N_("Your heirs"),
        status=status,
        heirs=heirs,
        total=sum(heir["allocation_percentage"] for heir in heirs),
        open=view["status"] != plans.RELEASED,
        form=form,
        **_choices(request),
    )


@routes.get(HEIRS)
@docs(tags=["pages"], summary="The owner's heirs, and a form to add one", produces=["text/html"])
@owner_page
async def heirs_page(request: web.Request) -> web.Response:
    return await _list(request, FormState())


@routes.post(HEIRS)
@docs(tags=["pages"], summary="Add an heir (the form of /plan/heirs)", produces=["text/html"])
@owner_page
async def add_heir(request: web.Request) -> web.Response:
    ctx = context(request)
    data, form = load(BeneficiaryCreateSchema(), await posted(request))
    if data is not None:
        try:
            await beneficiaries.create(
                ctx.pool,
                ctx.ring,
                ctx.redis,
                user_id=owner_id(request),
                data=data,
                now=ctx.now(),
                budget=email_budget(request),
            )
        except (BadRequest, Conflict) as error:
            refused(form, error)
        else:
            done(request, HEIRS, "heir-added")
    return await _list(request, form, status=422)


async def _edit(request: web.Request, form: FormState | None, *, status: int = 200) -> web.Response:
    ctx = context(request)
    heir = await beneficiaries.get(
        ctx.pool, ctx.ring, user_id=owner_id(request), raw_id=request.match_info["id"]
    )
    shown = form if form is not None else FormState.of(_wire(heir))
    return show(
        request,
        "owner/heir_edit.html",
        title=N_("Change an heir's details"),
        status=status,
        heir=heir,
        form=shown,
        **_choices(request),
    )


@routes.get(HEIR)
@docs(tags=["pages"], summary="Change an heir's details", produces=["text/html"])
@owner_page
async def heir_page(request: web.Request) -> web.Response:
    return await _edit(request, None)


@routes.post(HEIR)
@docs(tags=["pages"], summary="Save an heir's details", produces=["text/html"])
@owner_page
async def change_heir(request: web.Request) -> web.Response:
    """Every field is on the form, so it is read as a whole heir (the create schema: an emptied
    name is refused, not left unchanged); the model changes only what differs, as a PATCH."""
    ctx = context(request)
    changes, form = load(BeneficiaryCreateSchema(), await posted(request))
    if changes is not None:
        try:
            await beneficiaries.update(
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
            done(request, HEIRS, "heir-saved")
    return await _edit(request, form, status=422)


@routes.get(HEIR + "/remove")
@docs(tags=["pages"], summary="Confirm removing an heir", produces=["text/html"])
@owner_page
async def remove_heir_page(request: web.Request) -> web.Response:
    """The confirmation step: a GET shows it and changes nothing."""
    ctx = context(request)
    heir = await beneficiaries.get(
        ctx.pool, ctx.ring, user_id=owner_id(request), raw_id=request.match_info["id"]
    )
    return show(
        request,
        "owner/remove.html",
        title=N_("Remove an heir"),
        name=heir["name"],
        consequence=REMOVED,
        action=f"{HEIRS}/{heir['id']}/remove",
        back=HEIRS,
        back_words=N_("Your heirs"),
    )


@routes.post(HEIR + "/remove")
@docs(tags=["pages"], summary="Remove an heir", produces=["text/html"])
@owner_page
async def remove_heir(request: web.Request) -> web.Response:
    ctx = context(request)
    await beneficiaries.delete(
        ctx.pool, ctx.ring, user_id=owner_id(request), raw_id=request.match_info["id"], now=ctx.now()
    )
    done(request, HEIRS, "heir-removed")


@routes.post(HEIR + "/confirm-email")
@docs(tags=["pages"], summary="Ask an heir to confirm their address", produces=["text/html"])
@owner_page
async def ask_to_confirm(request: web.Request) -> web.Response:
    """POST /api/beneficiaries/:id/confirm-email from the page."""
    ctx = context(request)
    sent = await email_confirmations.request(
        ctx.pool,
        ctx.ring,
        user_id=owner_id(request),
        raw_id=request.match_info["id"],
        now=ctx.now(),
        budget=email_budget(request),
    )
    await outbox.enqueue(ctx.redis, row_ids=[sent["outbox_id"]])
    done(request, HEIRS, "heir-asked-later" if sent["status"] == "deferred" else "heir-asked")


@routes.post(HEIR + "/new-link")
@docs(tags=["pages"], summary="Give an heir a new link", produces=["text/html"])
@owner_page
async def new_link(request: web.Request) -> web.Response:
    """POST /api/beneficiaries/:id/claim-token/rotate from the page."""
    ctx = context(request)
    await beneficiaries.rotate_claim_token(
        ctx.pool, ctx.ring, user_id=owner_id(request), raw_id=request.match_info["id"]
    )
    done(request, HEIRS, "heir-new-link")
