"""An heir confirms their address before it is needed, while the owner can still correct it:
the owner's request, the heir's one-time link as a page (`/confirm-email/<token>`: a GET shows
one button, its POST confirms), and the JSON twin `POST /api/beneficiaries/confirm-email
{"token"}`. Public routes: the token is the credential; every miss is the same 404 (429 past the
per-IP miss limit). docs/capsule.md.
"""

from __future__ import annotations

from typing import NoReturn

from aiohttp import web
from aiohttp_apigami import docs, request_schema, response_schema

from api import html
from api.common import email_budget, json_response, refuse_miss
from api.contents.schemas import ConfirmationSentSchema, ConfirmedSchema, ConfirmTokenSchema
from api.keys import USER_ID, context
from api.public import public
from api.schemas import error_responses
from core.text.i18n import _
from models.contents import email_confirmations
from models.delivery import outbox

routes = web.RouteTableDef()

PAGE = "/confirm-email/{token}"


async def refuse_confirmation_miss(request: web.Request) -> NoReturn:
    """404 for a link that confirms nothing (malformed, unknown, expired, or the address changed
    since: one answer for all), 429 past the per-IP miss limit; shared with the page."""
    ctx = context(request)
    await refuse_miss(
        request,
        kind="confirm-email",
        limit=ctx.settings.rate_limit_check_in_misses_per_ip,
        what="Confirmation link",
        too_many="Too many unknown confirmation links from this address; try again later.",
    )


@routes.post("/api/beneficiaries/{id}/confirm-email")
@docs(
    tags=["beneficiaries"],
    summary="Ask a beneficiary to confirm their email address",
    description="Sends the heir a neutral email at their registered address: you have listed it to "
    "receive something in the future; a one-time link `$PUBLIC_BASE_URL/confirm-email/<token>` (30 days, "
    "single use) confirms that it reaches them, and `emailConfirmedAt` then shows on the beneficiary. "
    "Changing the address clears it. At most 3 a day per beneficiary (429 with Retry-After); 409 once "
    "the plan is released. Until confirmed (or when the address bounced) readiness carries a warning, "
    "never a block: some owners will not tell their heirs. The email counts against your daily budget "
    "of emails to addresses you typed (see `POST /api/guardians`): past it, `status` is `deferred` and it "
    'goes as the day frees; until the heir confirms, it carries an "I don\'t know this person" link.',
    responses={202: {"description": "Queued"}, **error_responses(401, 404, 409, 429)},
)
@response_schema(ConfirmationSentSchema, 202)
async def ask_to_confirm(request: web.Request) -> web.Response:
    ctx = context(request)
    sent = await email_confirmations.request(
        ctx.pool,
        ctx.ring,
        user_id=request[USER_ID],
        raw_id=request.match_info["id"],
        now=ctx.now(),
        budget=email_budget(request),
    )
    await outbox.enqueue(ctx.redis, row_ids=[sent["outbox_id"]])
    return json_response(
        ConfirmationSentSchema().dump({"status": sent["status"], "expiresAt": sent["expires_at"]}), status=202
    )


@routes.post("/api/beneficiaries/confirm-email")
@public  # the token in the body is the credential
@docs(
    tags=["beneficiaries"],
    summary="Confirm an address with the token of its link (the page's twin)",
    description="What the button of `/confirm-email/<token>` does, for a web client. A link used "
    "before answers 200 again with `alreadyConfirmed: true` and when it confirmed the address (nothing "
    "is recorded twice). Unknown, expired and malformed tokens, and a link whose address the owner "
    "changed since, are the same 404; past RATE_LIMIT_CHECK_IN_MISSES_PER_IP of them a minute from one "
    "address, 429.",
    responses=error_responses(400, 404, 429),
)
@request_schema(ConfirmTokenSchema, required=True)
@response_schema(ConfirmedSchema, 200)
async def confirm_by_token(request: web.Request) -> web.Response:
    ctx = context(request)
    confirmed = await email_confirmations.confirm(ctx.pool, token=request["data"]["token"], now=ctx.now())
    if confirmed is None:
        await refuse_confirmation_miss(request)
    return json_response(
        ConfirmedSchema().dump(
            {
                "confirmed": True,
                "emailConfirmedAt": confirmed["email_confirmed_at"],
                "alreadyConfirmed": confirmed["already"],
            }
        )
    )


@routes.get(PAGE)
@public
@docs(
    tags=["pages"],
    summary="The heir's address confirmation link as a page: one button, nothing done on GET",
    description="What `$PUBLIC_BASE_URL/confirm-email/<token>` opens. A live link shows one button "
    "that posts the form back here; opening it changes nothing (mail scanners fetch links). A link "
    "used before says the address was already confirmed, and when. A link that confirms nothing is the "
    "404 page (429 page past the miss limit).",
    produces=["text/html"],
    responses={200: {"description": "The page"}},
)
async def confirm_page(request: web.Request) -> web.Response:
    ctx = context(request)
    token = request.match_info["token"]
    heir = await email_confirmations.reader_if_live(ctx.pool, token=token, now=ctx.now())
    if heir is not None:
        with html.speaking(request, **heir):
            return html.render(
                "confirm_email.html", reader=request, title=_("Confirm your address"), action=request.path
            )
    confirmed = await email_confirmations.confirmed_before(ctx.pool, token=token)
    if confirmed is None:
        await refuse_confirmation_miss(request)
    return _done(request, confirmed)


def _done(request: web.Request, confirmed: email_confirmations.Confirmed) -> web.Response:
    with html.speaking(request, **confirmed["reader"]):
        title = _("Your address is already confirmed") if confirmed["already"] else _("Thank you")
        return html.render("confirm_email_done.html", reader=request, title=title, confirmed=confirmed)


@routes.post(PAGE)
@public
@docs(
    tags=["pages"],
    summary="Confirm the address from the page's button (an HTML form post)",
    description="The same as `POST /api/beneficiaries/confirm-email` with this token; 404/429 pages "
    "as the GET.",
    produces=["text/html"],
    responses={200: {"description": "The page"}},
)
async def confirm_from_page(request: web.Request) -> web.Response:
    ctx = context(request)
    confirmed = await email_confirmations.confirm(ctx.pool, token=request.match_info["token"], now=ctx.now())
    if confirmed is None:
        await refuse_confirmation_miss(request)
    return _done(request, confirmed)
