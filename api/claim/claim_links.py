"""POST /api/claim/resend: an heir asks for their claim link again, by their registered address.

Public, with no token (losing the token is why they ask). The answer is always the same 202
body, whatever the address: the lookup runs in the worker (models.claim.claim_links), so
neither the response nor its timing nor the logs say whether it matched. Per client address,
RATE_LIMIT_CLAIM_RESEND_PER_IP an hour (429 with Retry-After); per beneficiary, 3 emails a day
(silently: the answer must not differ). Decisions: docs/capsule.md "A link is never lost".
"""

from __future__ import annotations

from aiohttp import web
from aiohttp_apigami import docs, request_schema, response_schema
from marshmallow import ValidationError

from api import html
from api.claim.schemas import ResendAcceptedSchema, ResendRequestSchema
from api.common import client_ip, json_response
from api.keys import context
from api.public import public
from api.schemas import error_responses
from core.errors import BadRequest
from core.text.i18n import N_, _
from models.claim import claim_links

routes = web.RouteTableDef()


@routes.post("/api/claim/resend")
@public
@docs(
    tags=["capsule"],
    summary="Ask for your claim link again",
    description="Always 202 with the same body, whatever the address. When a beneficiary of a plan "
    "that is `Released` (or ready to finalise on-chain) is registered with this address (trimmed, "
    "case-insensitive), a new email with their link goes to that registered address only; at most 3 "
    "a day per beneficiary (beyond that nothing is sent, and the answer is the same). Per client "
    "address RATE_LIMIT_CLAIM_RESEND_PER_IP an hour: 429 with Retry-After.",
    responses={202: {"description": "Accepted (says nothing about a match)"}, **error_responses(400, 429)},
)
@request_schema(ResendRequestSchema, required=True)
@response_schema(ResendAcceptedSchema, 202)
async def resend(request: web.Request) -> web.Response:
    ctx = context(request)
    await claim_links.request(
        ctx.pool,
        ctx.redis,
        ctx.ring,
        ctx.settings,
        email=request["data"]["email"],
        client_ip=client_ip(request),
        now=ctx.now(),
    )
    # Nobody is known here (the answer must not say whether the address matched): the sentence
    # follows the asker's Accept-Language, the same for every address.
    with html.speaking(request):
        return json_response({"status": "accepted", "message": _(claim_links.ACCEPTED)}, status=202)


# The same, as a page (docs/pages.md): what an heir without their email reaches at /claim.


@routes.get("/claim")
@public
@docs(
    tags=["pages"],
    summary="Lost your link? A page asking for your address (HTML twin of POST /api/claim/resend)",
    produces=["text/html"],
    responses={200: {"description": "The page"}},
)
async def resend_page(request: web.Request) -> web.Response:
    with html.speaking(request):
        return html.render("claim_resend.html", reader=request, title=_("Find your link again"), done=None)


@routes.post("/claim")
@public
@docs(
    tags=["pages"],
    summary="Ask for your link again from the page (HTML form, field `email`)",
    description="Exactly `POST /api/claim/resend`: the same answer whatever the address, the same limits "
    "(429 page past them).",
    produces=["text/html"],
    responses={200: {"description": "The page"}, **error_responses(400, 429)},
)
async def resend_from_page(request: web.Request) -> web.Response:
    ctx = context(request)
    form = await html.read_form(request)
    raw = form.get("email")
    try:
        email = ResendRequestSchema().load({"email": raw if isinstance(raw, str) else ""})["email"]
    except ValidationError:
        raise BadRequest(N_("That is not an email address. Please check it and try again.")) from None
    await claim_links.request(
        ctx.pool,
        ctx.redis,
        ctx.ring,
        ctx.settings,
        email=email,
        client_ip=client_ip(request),
        now=ctx.now(),
    )
    with html.speaking(request):
        return html.render(
            "claim_resend.html", reader=request, title=_("Find your link again"), done=_(claim_links.ACCEPTED)
        )
