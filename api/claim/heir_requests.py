"""An heir asks the guardians to verify: `POST /api/claim/:token/request` (JSON) and its page
twin `POST /claim/<token>/request` (the locked page's form). Behind the claim gate (an unknown
token is its 404); models.flows.heir_requests decides, for both. docs/pages.md."""

from __future__ import annotations

from aiohttp import web
from aiohttp_apigami import docs, request_schema, response_schema

from api import html
from api.claim import capsule_page
from api.claim.gate import claim_gate
from api.claim.schemas import HeirRequestedSchema, HeirRequestSchema, heir_requested_schema
from api.common import json_response
from api.keys import context
from api.schemas import error_responses
from core.errors import BadRequest
from core.text import i18n
from core.text.cleaning import clean_block
from core.text.i18n import _
from models.claim import capsules
from models.flows import heir_requests

routes = web.RouteTableDef()


@routes.post("/api/claim/{token}/request")
@docs(
    tags=["capsule"],
    summary="Ask the guardians to verify",
    description="For an heir who believes the owner has died or can no longer act: on an `Active` plan "
    "this starts a verification, as a guardian's report does (actor `beneficiary`, reason "
    "`beneficiary_request`). The owner is emailed with a check-in link and told which heir asked, and can "
    "stop it at any time by checking in; the accepted guardians are emailed your name and note and asked "
    "to verify; the plan's verification deadline then applies. 409 with a plain sentence when the plan is "
    "not `Active`, when a verification already runs, or when the owner turned requests off "
    "(`allowBeneficiaryRequests`). Within PLAN_REPORT_COOLDOWN_SECONDS of the owner's last check-in that "
    "stopped a verification, 429 with `Retry-After`.",
    responses={202: {"description": "Requested"}, **error_responses(400, 409)},
)
@request_schema(HeirRequestSchema)
@response_schema(HeirRequestedSchema, 202)
@claim_gate
async def request_verification(request: web.Request, capsule: capsules.Capsule) -> web.Response:
    ctx = context(request)
    await heir_requests.request(
        ctx.pool,
        ctx.redis,
        ctx.settings,
        capsule=capsule,
        note=(request.get("data") or {}).get("note") or None,
        now=ctx.now(),
    )
    return json_response(heir_requested_schema.dump({"status": "requested"}), status=202)


NOTE_LIMIT = 1000


@routes.post("/claim/{token}/request")
@docs(
    tags=["pages"],
    summary="Ask the guardians to check (the locked page's form)",
    description="Form-encoded, one optional field `note` (up to 1,000 characters; any other field is "
    "ignored). Exactly `POST /api/claim/{token}/request`: the same model call and rules. 200: a page "
    "saying what happens next (the owner can check in at any time; the deadline and what it does; the "
    "heir is emailed a receipt now and the outcome later). Its refusals are pages in words: 409 (the "
    "plan is not `Active`, a verification already runs, or the owner turned requests off) and 429 "
    "(the owner checked in a short while ago: when, and from when a request is possible).",
    produces=["text/html"],
    responses={200: {"description": "The page"}, **error_responses(400, 409, 429)},
)
@claim_gate
async def request_page(request: web.Request, capsule: capsules.Capsule) -> web.Response:
    ctx = context(request)
    form = await html.read_form(request)
    note = clean_block(form.get("note") or "").strip()
    with html.speaking(request, locale=capsule["locale"], time_zone=capsule["time_zone"]):
        if len(note) > NOTE_LIMIT:
            # This form's own refusal (a page only): written in the page's language.
            raise BadRequest(
                _(
                    "Your note is {count} characters long; it can be at most {limit}. Go back, shorten it, "
                    "and send it again."
                ).format(count=i18n.number(len(note)), limit=i18n.number(NOTE_LIMIT))
            )
    with html.speaking(request, locale=capsule["locale"], time_zone=capsule["time_zone"]):
        # Inside the heir's language: a refusal's words (a wait with its dates) are theirs.
        asked = await heir_requests.request(
            ctx.pool, ctx.redis, ctx.settings, capsule=capsule, note=note or None, now=ctx.now()
        )
        deadline = asked["deadline_at"]
        return html.render(
            "capsule_asked.html",
            reader=request,
            title=_("We have your request"),
            owner=capsule_page.owner_words(capsule),
            deadline=None if deadline is None else i18n.when(deadline),
            releases=asked["releases"],
            back=f"/claim/{request.match_info['token']}",
        )
