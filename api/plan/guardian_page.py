"""`/guardian/<token>`: each guardian's own page, linked from every guardian email, so a guardian
acts without an account or a web client.

GET shows the plan's state and what is asked of the guardian now, with one button per answer
(mail scanners fetch every link: a GET builds nothing and changes nothing). A button's POST
(`/ask`) answers with that one answer as a SEP-7 signing request for the guardian's wallet;
the wallet (or the paste-back form) posts the signed envelope to `/sep7/<id>`, which runs the
JSON routes' model functions (models.flows.answers.guardian). An unknown token is the calm 404
page, misses counted per IP as for claim links. docs/pages.md "The guardian's page".
"""

from __future__ import annotations

from typing import NoReturn, cast

from aiohttp import web
from aiohttp_apigami import docs

from api import html
from api.common import client_ip, refuse_miss
from api.keys import context
from api.public import public
from api.schemas import error_responses
from api.sep import wallet_request
from core.errors import BadRequest
from core.text import gender
from core.text.cleaning import clean_block
from core.text.i18n import N_, _
from models import address_links
from models.account import users
from models.contents import guardians
from models.flows import guardian_pages
from models.flows.answers import declared, guardian, passkey
from models.plan.guardianships import address_suggestions
from models.plan.guardianships.membership import Answerer
from models.proofs.passkey import relying_party
from models.wallet_requests import Prepared

routes = web.RouteTableDef()

PATH = "/guardian/{token}"


async def _page(request: web.Request) -> guardian_pages.GuardianPage:
    ctx = context(request)
    found = await guardian_pages.open_by_token(
        ctx.pool,
        ctx.ring,
        token=request.match_info["token"],
        now=ctx.now(),
        report_cooldown_seconds=ctx.settings.plan_report_cooldown_seconds,
    )
    if found is None:
        await _miss(request)
    # The page speaks the guardian's language from here on, its error pages too; the owner's
    # stand-in words (a name cleared since) are written in it.
    html.negotiate(request, locale=found["locale"], time_zone=found["time_zone"])
    with html.speaking(request):
        owned = found["plan"]
        found["owner"] = users.known_as(name=owned["owner_name"], wallet=owned["owner_wallet"])
    return found


async def _answerer(request: web.Request) -> Answerer:
    """Who answers behind this link: all a signed answer needs (one read, not the page)."""
    found = await guardian_pages.answerer_by_token(context(request).pool, token=request.match_info["token"])
    if found is None:
        await _miss(request)
    html.negotiate(request, locale=found["locale"], time_zone=found["time_zone"])  # its error pages'
    return found


async def _miss(request: web.Request) -> NoReturn:
    await refuse_miss(
        request,
        kind="guardian",
        limit=context(request).settings.rate_limit_claim_misses_per_ip,
        what="Guardian page",
        too_many="Too many unknown guardian links from this address; try again later.",
    )


def _path(request: web.Request) -> str:
    return f"/guardian/{request.match_info['token']}"


@routes.get(PATH)
@public
@docs(
    tags=["pages"],
    summary="A guardian's page: whose plan, its state, what is asked of them now (HTML)",
    description="The link in every guardian email. Shows the owner's name, the plan's state, a running "
    "verification to a guardian who accepted (who reported, when, the note, approvals so far and needed, "
    "the deadline; to anyone else the state in one line) and one "
    "button per answer asked now; heirs' names and their links' delivery only once the guardian has "
    "accepted and the plan is released or ready. Nothing of the plan's contents. Unknown token: 404 "
    "page (429 past the per-IP miss limit).",
    produces=["text/html"],
    responses={200: {"description": "The page"}},
)
async def guardian_page(request: web.Request) -> web.Response:
    page = await _page(request)
    with html.speaking(request, locale=page["locale"], time_zone=page["time_zone"]):
        return html.render(
            "guardian.html",
            reader=request,
            title=_("Your guardian page"),
            page=page,
            path=_path(request),
            words=declared.BY_NAME,
            wallet_only=[
                name
                for name in page["asks"]
                if declared.needs_a_wallet(
                    answer=declared.BY_NAME[name],
                    page=page,
                    contract_id=context(request).settings.service_contract_id,
                )
            ],
            uncorrectable=html.naming(address_links.uncorrectable),
            unreachable=html.naming(address_links.unreachable),
            gender_form=html.own_gender_form(
                request, action=f"{_path(request)}/gender", now=page["guardian"]["grammatical_gender"]
            ),
        )


@routes.post(PATH + "/gender")
@public
@docs(
    tags=["pages"],
    summary="The guardian says how we refer to them (their page's form)",
    description="Form-encoded, one field `grammaticalGender`: feminine, masculine, neutral, or empty for "
    "not said (anything else is the 400 page). Recorded for the guardian as the owner's "
    "`grammaticalGender` of them is (`PATCH /api/guardians/:id`), whatever they have answered, and on the "
    "owner's timeline (the field, not its value); 303 back to the page, which says it is saved. An "
    "unknown token: the 404 page (429 past the per-IP miss limit).",
    produces=["text/html"],
    responses={303: {"description": "Saved: back to the page"}, **error_responses(400)},
)
async def guardian_gender(request: web.Request) -> web.Response:
    who = await _answerer(request)
    form = await html.read_form(request)
    chosen = gender.posted(form.get("grammaticalGender"))
    await guardians.choose_own_gender(context(request).pool, guardian_id=who["guardian_id"], gender=chosen)
    back = html.carry_language(request, f"{_path(request)}?saved=gender")
    return web.Response(status=303, headers={"Location": back + "#refer"})


@routes.post(PATH + "/ask")
@public
@docs(
    tags=["pages"],
    summary="A guardian's answer as a signing request for their wallet (HTML form)",
    description="Form fields `action` (accept, decline, reconfirm, report, approve, object, "
    "withdraw_objection, resend, propose_address, suggest_address, agree_address, stop_address), "
    "`beneficiaryId` (resend, propose_address), `changeId` (agree_address, stop_address), `email` "
    "(propose_address: an heir's new address; suggest_address, before the heirs hold their links: the "
    "address, with `heirName`, the person as the guardian knows them, at most 200 characters, and an "
    "optional `note`, at most 500, all three sent to the owner, who decides; docs/lifecycle.md, A "
    "corrected heir address), "
    "`reason` (report, optional: death, incapacity, "
    "unreachable, other) and `note` (report and object, optional, at most 2000 characters: kept sealed "
    "beside the signing request until the wallet signs; for a passkey its SHA-256 is bound into the "
    "challenge and the passkey page shows it and carries it unchanged). "
    "`object` says the verification is a mistake (the guardian knows the owner is "
    "alive or able to act), as `POST /api/legacy/guardianships/:planId/object` does. "
    "The page shows that answer as a SEP-7 signing request for the guardian wallet the owner recorded: "
    "a SEP-10-style challenge (approve off-chain: carrying the attestation's SHA-256), "
    "or approve_guardian built through the RPC node in contract mode. A guardian without a wallet gets the "
    "passkey page instead: the WebAuthn ceremony for that answer (creating their first passkey when they "
    "accept), whose one script posts the result to `/passkey/<id>`; declining before any passkey exists "
    "needs only the link (303 back to the page). 409 page when that answer is not "
    "asked now (and, for a passkey guardian, approving in contract mode: the owner must record a wallet); "
    "RATE_LIMIT_CHALLENGE_PER_IP a minute per client address (429 page).",
    produces=["text/html"],
    responses={200: {"description": "The page"}, **error_responses(400, 409, 429, 503)},
)
async def guardian_ask(request: web.Request) -> web.Response:
    ctx = context(request)
    page = await _page(request)
    form = await html.read_form(request)
    action, heir_id, reason = form.get("action"), form.get("beneficiaryId"), form.get("reason")
    answer = declared.BY_NAME.get(action or "")
    note, suggestion = _posted_note(request, form, answer)
    with html.speaking(request):  # a refusal written with its figures is in the page's language
        prepared = await guardian.ask(
            ctx.pool,
            ctx.redis,
            ctx.settings,
            gateway=ctx.soroban,
            page=page,
            action=action or "",
            beneficiary_id=heir_id or None,
            reason=reason or None,
            client_ip=client_ip(request),
            now=ctx.now(),
            note=note,
            change_id=form.get("changeId") or None,
        )
    if page["guardian"]["wallet_address"] is None:
        return _ceremony(request, page, cast(passkey.Ceremony | str, prepared), note=note)
    prepared = cast(Prepared, prepared)
    assert answer is not None  # asked now: declared
    heir = suggestion["heir"] if suggestion else _heir_named(page, form)
    with html.speaking(request):
        msg = guardian_pages.message(page=page, action=answer.name, heir=heir)
        shown = wallet_request.present(request, prepared, msg=msg, page_path=_path(request))
        return html.render(
            "guardian_ask.html",
            reader=request,
            title=_(answer.wallet_title or ""),
            request=shown,
            back=_path(request),
            page=page,
            # A fee only for a network call (contract mode): a signed message costs nothing.
            fee=prepared["purpose"].endswith("_onchain"),
        )


@routes.post(PATH + "/sep7/{id}")
@public
@docs(
    tags=["pages"],
    summary="SEP-7 callback of a guardian's signing requests (a wallet, or the page's paste-back form)",
    description="Form-encoded `xdr=<signed envelope>`. Checked (the transaction asked for, signed by "
    "the guardian wallet: 400 otherwise, the request still usable), used once, then the JSON "
    "route's model function runs for the wallet's account (accept/decline, report, resend, approve "
    "with the attestation challenge, or the on-chain approve_guardian relayed). 200 `{status}` to a "
    "wallet, 303 to the page for the form; a used or expired request 409, another guardian's 404.",
    responses={200: {"description": "Taken"}, **error_responses(400, 401, 403, 409, 503)},
)
async def guardian_callback(request: web.Request) -> web.Response:
    ctx = context(request)
    who = await _answerer(request)
    signed = await wallet_request.signed_xdr(request)
    outcome = await guardian.take_signed(
        ctx.pool,
        ctx.redis,
        ctx.settings,
        gateway=ctx.soroban,
        guardian=who,
        request_id=request.match_info["id"],
        signed_xdr=signed,
        now=ctx.now(),
    )
    return wallet_request.answer(request, page_path=_path(request), outcome=outcome)


def _posted_note(
    request: web.Request, form: dict[str, str], answer: declared.Declared | None
) -> tuple[str | None, address_suggestions.Suggestion | None]:
    """The note the answer binds, as its declaration says what rides as one: a report's or
    objection's words, a proposed heir address (kept sealed until the proof comes), or, before
    the release, an heir as the guardian knows them, for the owner (with the suggestion)."""
    kind = answer.note if answer else None
    if kind == "address":
        return _note(form.get("email")), None
    note = _note(form.get("note"))
    if kind != "suggestion":
        return note, None
    with html.speaking(request):  # its refusals name a limit: written in the page's language
        suggestion = address_suggestions.checked(
            heir=form.get("heirName"), email=form.get("email"), note=form.get("note")
        )
    return address_suggestions.packed(suggestion=suggestion), suggestion


def _heir_named(page: guardian_pages.GuardianPage, form: dict[str, str]) -> str | None:
    """The heir a wallet's request names: the one posted, or the one of the change posted."""
    changed = (c["beneficiary_id"] for c in page["heirs"]["changes"] if c["id"] == form.get("changeId"))
    about = next(changed, form.get("beneficiaryId"))
    return next((b["name"] for b in page["heirs"]["links"] if b["beneficiary_id"] == about), None)


def _note(value: str | None) -> str | None:
    """A note typed with a report or an objection: cleaned, at most 2000 characters (400)."""
    note = clean_block(value or "").strip()
    if len(note) > 2000:
        raise BadRequest(N_("The note is longer than 2000 characters; shorten it and try again."))
    return note or None


def _ceremony(
    request: web.Request,
    page: guardian_pages.GuardianPage,
    ceremony: passkey.Ceremony | str,
    *,
    note: str | None = None,
) -> web.Response:
    """The passkey page for one answer, or back to the guardian's page once it is recorded."""
    if isinstance(ceremony, str):
        return web.Response(status=303, headers={"Location": html.carry_language(request, _path(request))})
    answer = declared.BY_NAME[ceremony["action"]]
    title, button = answer.passkey_title, answer.passkey_button
    if answer.name == "add_passkey" and ceremony["ceremony"] == "create":
        title, button = declared.NEW_PASSKEY
    with html.speaking(request, locale=page["locale"], time_zone=page["time_zone"]):
        rendered = html.render(
            "guardian_passkey.html",
            reader=request,
            title=_(title),
            button=_(button),
            ceremony=ceremony,
            page=page,
            back=_path(request),
            note=note,
            suggestion=address_suggestions.unpacked(note=note) if answer.note == "suggestion" else None,
            post_to=f"{_path(request)}/passkey/{ceremony['request_id']}",
            script=html.PASSKEY_SCRIPT_PATH,
            integrity=html.PASSKEY_SCRIPT_INTEGRITY,
        )
    return html.with_script(rendered, origin=relying_party(settings=context(request).settings)[1])


@routes.post(PATH + "/passkey/{id}")
@public
@docs(
    tags=["pages"],
    summary="A guardian's passkey answer (the passkey page's form)",
    description="Form fields `credential` (the WebAuthn result as JSON, put there by the page's script) and "
    "`note` (report and object: the one the request was made with, as the page carries it; another is "
    "401). Checked once (py_webauthn): this"
    " request's challenge (bound to the answer, the plan and its verification round), this origin "
    "and RP ID (the host of PUBLIC_BASE_URL), user verification, a passkey of this guardian whose "
    "counter went up (or stays 0 for a passkey that never counts); then the request is used up and "
    "the answer recorded: 303 back to "
    "the page. A refusal records nothing and is a page in words: 400 nothing sent (or JSON past "
    "64 KiB or 32 levels), or a key the service cannot verify (only ES256 on P-256, EdDSA, RS256 of "
    "2048 bits or more with exponent 65537); 401 a ceremony from another site's frame "
    "(`crossOrigin`), not this "
    "guardian's passkey or not this answer's challenge or a counter that went back (logged as a "
    "possibly copied passkey), 409 used or expired. Adding a passkey: proved with one, the answer is"
    " the page that creates the next.",
    produces=["text/html"],
    responses={200: {"description": "The next step"}, **error_responses(400, 401, 404, 409, 503)},
)
async def guardian_passkey(request: web.Request) -> web.Response:
    ctx = context(request)
    who = await _answerer(request)
    form = await html.read_form(request)
    note = _note(form.get("note"))
    outcome = await passkey.take(
        ctx.pool,
        ctx.redis,
        ctx.settings,
        guardian=who,
        request_id=request.match_info["id"],
        answer=form.get("credential") or "",
        note=note,
        now=ctx.now(),
    )
    if isinstance(outcome, str):
        return web.Response(status=303, headers={"Location": html.carry_language(request, _path(request))})
    return _ceremony(request, await _page(request), outcome)
