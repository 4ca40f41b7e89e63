"""A corrected heir address, the guardian's side (signed in) and the heir's confirmation page:
`POST /api/legacy/guardianships/:planId/beneficiaries/:id/address` proposes, `…/address-changes/
:changeId/agree` and `…/stop` decide, `/confirm-address/<token>` confirms (one button; a GET
changes nothing). While a change holds, the heir at their old address stops it at
`/stop-address/<token>`, and every other heir can say it looks wrong at
`/address-looks-wrong/<token>` (one button each; a GET changes nothing;
models.plan.guardianships.heir_stops). models.plan.guardianships.address_changes decides;
docs/lifecycle.md."""

from __future__ import annotations

from typing import NoReturn

from aiohttp import web
from aiohttp_apigami import docs, request_schema, response_schema

from api import html
from api.common import json_response, refuse_miss
from api.keys import USER_ID, context
from api.plan.guardianships.schemas import AddressChangeSchema, AddressProposalSchema, address_change_schema
from api.public import public
from api.schemas import error_responses
from core.text import i18n
from core.text.i18n import _
from models.plan.guardianships import address_changes, heir_stops

routes = web.RouteTableDef()
PAGE = "/confirm-address/{token}"
STOP_PAGE = "/stop-address/{token}"
DOUBT_PAGE = "/address-looks-wrong/{token}"


@routes.post("/api/legacy/guardianships/{planId}/beneficiaries/{beneficiaryId}/address")
@docs(
    tags=["guardianships"],
    summary="Propose a new email address for a beneficiary",
    description="When an heir's link bounced, or you know their address is wrong. Accepted guardians only "
    "(403 before). Before the release it goes to the owner (`to_owner`: emailed with the address, and on "
    "their timeline; they decide by editing it). After the release (or once ready to finalise) it needs "
    "the plan's threshold of accepted guardians (your proposal counts as your agreement), then waits 7 "
    "days (`holding`) during which the heir's old address, the other heirs and every accepted guardian "
    "are told and any guardian can stop it; then the new address is sent a link to confirm, and only once "
    "the heir confirms does their claim link go there. That email counts in the day's email budget. 409 "
    "for the address already on record, or while another change for this heir is being decided.",
    responses=error_responses(400, 401, 403, 404, 409),
)
@request_schema(AddressProposalSchema, required=True)
@response_schema(AddressChangeSchema, 202)
async def propose_address(request: web.Request) -> web.Response:
    ctx = context(request)
    proposal = await address_changes.propose(
        ctx.pool,
        ctx.redis,
        ctx.ring,
        user_id=request[USER_ID],
        raw_plan_id=request.match_info["planId"],
        raw_beneficiary_id=request.match_info["beneficiaryId"],
        email=request["data"]["email"],
        now=ctx.now(),
    )
    return json_response(address_change_schema.dump(proposal), status=202)


@routes.post("/api/legacy/guardianships/{planId}/address-changes/{changeId}/agree")
@docs(
    tags=["guardianships"],
    summary="Agree to an address another guardian proposed",
    description="After the release. At the plan's threshold the change waits its 7 days (`holding`). 409 "
    "if you agreed already or it is decided; 404 for a change or plan that is not yours to see.",
    responses=error_responses(401, 403, 404, 409),
)
@response_schema(AddressChangeSchema, 200)
async def agree_address(request: web.Request) -> web.Response:
    ctx = context(request)
    proposal = await address_changes.agree(
        ctx.pool,
        ctx.redis,
        ctx.ring,
        user_id=request[USER_ID],
        raw_plan_id=request.match_info["planId"],
        raw_change_id=request.match_info["changeId"],
        now=ctx.now(),
    )
    return json_response(address_change_schema.dump(proposal))


@routes.post("/api/legacy/guardianships/{planId}/address-changes/{changeId}/stop")
@docs(
    tags=["guardianships"],
    summary="Stop a proposed address",
    description="Any accepted guardian, until the heir confirms it. Nothing changes; the other guardians "
    "are told who stopped it, and the timeline keeps it. 409 once it is decided.",
    responses=error_responses(401, 403, 404, 409),
)
@response_schema(AddressChangeSchema, 200)
async def stop_address(request: web.Request) -> web.Response:
    ctx = context(request)
    proposal = await address_changes.stop(
        ctx.pool,
        ctx.redis,
        ctx.ring,
        user_id=request[USER_ID],
        raw_plan_id=request.match_info["planId"],
        raw_change_id=request.match_info["changeId"],
        now=ctx.now(),
    )
    return json_response(address_change_schema.dump(proposal))


async def _miss(request: web.Request) -> NoReturn:
    ctx = context(request)
    await refuse_miss(
        request,
        kind="confirm-address",
        limit=ctx.settings.rate_limit_check_in_misses_per_ip,
        what="Confirmation link",
        too_many="Too many unknown confirmation links from this address; try again later.",
    )


@routes.get(PAGE)
@public
@docs(
    tags=["pages"],
    summary="A corrected heir address's confirmation link: one button, nothing done on GET",
    description="What the link in the confirmation email opens. The button posts back here; once "
    "pressed, the address becomes the heir's (confirmed) and their claim link is sent to it. A link that "
    "confirms nothing (unknown, stopped, used) is the 404 page.",
    produces=["text/html"],
    responses={200: {"description": "The page"}},
)
async def confirm_page(request: web.Request) -> web.Response:
    ctx = context(request)
    heir = await heir_stops.reader_if_live(ctx.pool, ctx.ring, token=request.match_info["token"])
    if heir is None:
        await _miss(request)
    with html.speaking(request, **heir):
        return html.render(
            "confirm_address.html", reader=request, title=_("Confirm your address"), action=request.path
        )


@routes.post(PAGE)
@public
@docs(
    tags=["pages"],
    summary="Confirm the corrected address (the page's button)",
    description="The address becomes the heir's and their claim link is sent there; 404 page as the GET.",
    produces=["text/html"],
    responses={200: {"description": "The page"}},
)
async def confirm_address(request: web.Request) -> web.Response:
    ctx = context(request)
    token = request.match_info["token"]
    heir = await heir_stops.reader_if_live(ctx.pool, ctx.ring, token=token)
    if heir is not None:
        html.negotiate(request, **heir)  # read before the confirmation uses the link up
    if not await address_changes.confirm(ctx.pool, ctx.redis, ctx.ring, token=token, now=ctx.now()):
        await _miss(request)
    with html.speaking(request):
        return html.render("confirm_address_done.html", reader=request, title=_("Thank you"))


def _until(view: heir_stops.HeirView) -> str:
    return i18n.when(view["hold_until"]) if view["hold_until"] else _("soon")


@routes.get(STOP_PAGE)
@public
@docs(
    tags=["pages"],
    summary="An heir's own stop of a change of their address: one button, nothing done on GET",
    description="What the link emailed to the heir's old address opens while a corrected address holds "
    "after the release, and until the new address confirms. Its button posts back here. A link that "
    "stops nothing (unknown, stopped, confirmed) is the 404 page.",
    produces=["text/html"],
    responses={200: {"description": "The page"}},
)
async def stop_page(request: web.Request) -> web.Response:
    ctx = context(request)
    view = await heir_stops.stop_view(ctx.pool, ctx.ring, token=request.match_info["token"])
    if view is None:
        await _miss(request)
    with html.speaking(request, **view["reader"]):
        return html.render(
            "address_stop.html",
            reader=request,
            title=_("Stop the change of your address"),
            action=request.path,
            mode="stop",
            owner=view["owner"],
            heir=view["heir_name"] or "",
            until=_until(view),
            doubted=view["doubted"],
        )


@routes.post(STOP_PAGE)
@public
@docs(
    tags=["pages"],
    summary="Stop the change of your address (the page's button)",
    description="The change ends, nothing changes, and the guardians are told; 404 page as the GET.",
    produces=["text/html"],
    responses={200: {"description": "The page"}},
)
async def stop_by_heir(request: web.Request) -> web.Response:
    ctx = context(request)
    view = await heir_stops.stop(
        ctx.pool, ctx.redis, ctx.ring, token=request.match_info["token"], now=ctx.now()
    )
    if view is None:
        await _miss(request)
    with html.speaking(request, **view["reader"]):
        return html.render(
            "address_stop_done.html", reader=request, title=_("The change is stopped"), mode="stop", heir=""
        )


@routes.get(DOUBT_PAGE)
@public
@docs(
    tags=["pages"],
    summary="Another heir's \"This looks wrong\" about a change of an heir's address: nothing done on GET",
    description="What the link emailed to the other heirs opens while a corrected address holds. It "
    "stops nothing: its button tells the guardians and the heir concerned, and extends the hold once. "
    "A link for a change no longer holding is the 404 page.",
    produces=["text/html"],
    responses={200: {"description": "The page"}},
)
async def doubt_page(request: web.Request) -> web.Response:
    ctx = context(request)
    view = await heir_stops.doubt_view(ctx.pool, ctx.ring, token=request.match_info["token"])
    if view is None:
        await _miss(request)
    with html.speaking(request, **view["reader"]):
        return html.render(
            "address_stop.html",
            reader=request,
            title=_("Does this look wrong?"),
            action=request.path,
            mode="doubt",
            owner=view["owner"],
            heir=view["heir_name"] or "",
            until=_until(view),
            doubted=view["doubted"],
        )


@routes.post(DOUBT_PAGE)
@public
@docs(
    tags=["pages"],
    summary="Say a change of an heir's address looks wrong (the page's button)",
    description="The first time: the guardians and the heir concerned are told and the hold is extended "
    "once by 7 days; later, nothing more. 404 page as the GET.",
    produces=["text/html"],
    responses={200: {"description": "The page"}},
)
async def doubt(request: web.Request) -> web.Response:
    ctx = context(request)
    token = request.match_info["token"]
    view = await heir_stops.doubt_view(ctx.pool, ctx.ring, token=token)
    said = (
        None
        if view is None
        else await heir_stops.doubt(ctx.pool, ctx.redis, ctx.ring, token=token, now=ctx.now())
    )
    if view is None or said is None:
        await _miss(request)
    with html.speaking(request, **view["reader"]):
        return html.render(
            "address_stop_done.html",
            reader=request,
            title=_("Thank you"),
            mode=said,
            heir=view["heir_name"] or "",
        )
