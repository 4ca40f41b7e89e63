"""`/plan/account`: the owner's name, email, language, time zone and how to refer to them (grammatical
gender); the wallets that sign in
(link, unlink); passkeys (add, remove); sign out everywhere. Each form calls the same model
function as its JSON route (PATCH /api/users/me, POST /api/auth/link-wallet, DELETE
/api/auth/wallets/{address}, POST /api/auth/logout-all), with the same schema.

The time zone is a list of zones in words, preselected with the zone recorded, else the
browser's own (`Intl`, read by one tiny inline script allowed by its hash), else one that
suits the page's language. docs/pages.md, "The owner's pages".
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from functools import cache

from aiohttp import web
from aiohttp_apigami import docs
from babel.dates import get_timezone_location

from api import html
from api.account.schemas import ProfileUpdateSchema
from api.common import client_ip, email_budget
from api.keys import context
from api.owner import forms
from api.owner import session as owner
from api.public import public
from api.schemas import error_responses
from api.sep import wallet_request
from core.errors import BadRequest
from core.stellar.wallet import is_valid_address
from core.text import gender, i18n
from core.text.i18n import N_, _
from models.account import passkeys, users
from models.flows import auth
from models.proofs import passkey

routes = web.RouteTableDef()

PATH = "/plan/account"
PAGE = {200: {"description": "The page"}}
SEE_OTHER = {303: {"description": "Done: back to the page"}}
PROFILE_FIELDS = ("name", "email", "locale", "timeZone", "grammaticalGender")
# Where a browser's zone is unknown: a zone that suits the page's language.
LANGUAGE_ZONES = {
    "en": "UTC",
    "es": "Europe/Madrid",
    "fr": "Europe/Paris",
    "de": "Europe/Berlin",
    "pt-BR": "America/Sao_Paulo",
    "ar": "Asia/Riyadh",
}
# The account page's one script: the browser's own zone preselected, when none is recorded.
ZONE_SCRIPT = (
    '(function(){var s=document.getElementById("timeZone");'
    'if(!s||s.getAttribute("data-recorded")==="true")return;'
    "try{var z=Intl.DateTimeFormat().resolvedOptions().timeZone;"
    "for(var i=0;i<s.options.length;i++){if(s.options[i].value===z){s.selectedIndex=i;return;}}}"
    "catch(e){}})();"
)
ZONE_SCRIPT_HASH = "sha256-" + base64.b64encode(hashlib.sha256(ZONE_SCRIPT.encode()).digest()).decode()
UTC_WORDS = N_("Coordinated Universal Time (UTC), the same everywhere")
DIFFERENT_EMAILS = N_("The two email addresses are not the same: type the same address in both.")


@cache
def _zone_names(language: str) -> tuple[tuple[str, str], ...]:
    """Every zone a person may record, named in words in `language` ("France Time (Paris)"),
    in the order of those words."""
    locale = i18n.babel_id(language)
    named = []
    for zone in i18n.place_zones():
        if zone == "UTC":  # no place: Babel calls it an unknown region
            named.append((zone, _(UTC_WORDS)))
            continue
        place = get_timezone_location(zone, locale=locale)
        city = get_timezone_location(zone, locale=locale, return_city=True)
        named.append((zone, place if city in place else f"{place} ({city})"))
    return tuple(sorted(named, key=lambda pair: pair[1].casefold()))


def zone_choices() -> tuple[tuple[str, str], ...]:
    return _zone_names(i18n.language())


def _profile_values(user: users.UserWithWallets) -> dict[str, str]:
    recorded = user["time_zone"] or LANGUAGE_ZONES.get(user["locale"] or i18n.language(), "UTC")
    return {
        "name": user["name"] or "",
        "email": user["email"] or "",
        "emailConfirmation": user["email"] or "",
        "locale": user["locale"] or i18n.language(),
        "timeZone": recorded,
        "grammaticalGender": user["grammatical_gender"] or "",
    }


def credential_text(credential_id: bytes) -> str:
    return base64.urlsafe_b64encode(credential_id).decode().rstrip("=")


def credential_bytes(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise BadRequest(N_("That passkey could not be found on your account.")) from None


async def _page(
    request: web.Request,
    *,
    status: int = 200,
    values: dict[str, str] | None = None,
    errors: dict[str, list[str]] | None = None,
) -> web.Response:
    ctx = context(request)
    session = owner.owner_session(request)
    user = await users.get_with_wallets(ctx.pool, ctx.ring, user_id=session.user_id)
    keys = await passkeys.of_owner(ctx.pool, user_id=session.user_id)
    with html.speaking(request):
        response = owner.render(
            "owner/account.html",
            request=request,
            status=status,
            title=N_("Your account"),
            user=user,
            values=values or _profile_values(user),
            errors=errors or {},
            zone_recorded=bool(user["time_zone"]) or values is not None,
            zones=zone_choices(),
            genders=gender.choices(),
            languages_offered=[(tag, html.LANGUAGE_NAMES[tag]) for tag in i18n.supported()],
            passkeys=[(credential_text(key["credential_id"]), key) for key in keys],
            this_passkey=session.passkey_id,
            done=request.query.get("done"),
            zone_script=ZONE_SCRIPT,
        )
    return html.with_inline_script(response, digest=ZONE_SCRIPT_HASH)


def _back(request: web.Request, done: str) -> web.Response:
    return web.Response(status=303, headers={"Location": html.carry_language(request, f"{PATH}?done={done}")})


def _signed_out(request: web.Request) -> web.Response:
    """Every session ended (this one too): the cookie cleared, to sign-in."""
    response = web.Response(
        status=303,
        headers={"Location": html.carry_language(request, f"{owner.SIGN_IN_PATH}?signed-out=everywhere")},
    )
    owner.clear_cookie(response, context(request).settings, base=owner.SESSION_COOKIE)
    return response


@routes.get(PATH)
@docs(tags=["pages"], summary="The owner's account page", produces=["text/html"], responses=PAGE)
@owner.owner_page
async def account_page(request: web.Request) -> web.Response:
    return await _page(request)


@routes.post(PATH)
@docs(
    tags=["pages"],
    summary="Change name, email, language, time zone or grammatical gender (HTML form)",
    description="Fields `name`, `email` (typed twice: `emailConfirmation`), `locale`, `timeZone`, "
    "`grammaticalGender`: "
    "PATCH /api/users/me's fields, loaded by its schema; an empty field clears it.",
    produces=["text/html"],
    responses={**SEE_OTHER, **error_responses(400, 403)},
)
@owner.owner_page
async def change_profile(request: web.Request) -> web.Response:
    ctx = context(request)
    form = await request.post()
    changes, state = forms.load(ProfileUpdateSchema(), form)
    if state.value("email").strip().casefold() != state.value("emailConfirmation").strip().casefold():
        state.refuse({"emailConfirmation": [DIFFERENT_EMAILS]})
    if changes is None or state.invalid:
        values = {name: state.value(name) for name in (*PROFILE_FIELDS, "emailConfirmation")}
        return await _page(request, status=422, values=values, errors=state.errors)
    await users.update_profile(
        ctx.pool,
        ctx.ring,
        ctx.redis,
        user_id=owner.owner_session(request).user_id,
        changes=changes,
        now=ctx.now(),
        budget=email_budget(request),
    )
    return _back(request, "profile")


@routes.post(f"{PATH}/wallets")
@docs(
    tags=["pages"],
    summary="Link another wallet: the text it must sign",
    description="Field `walletAddress`. Rate limited as POST /api/auth/wallet/challenge.",
    produces=["text/html"],
    responses={**PAGE, **error_responses(400, 403, 429)},
)
@owner.owner_page
async def link_wallet_page(request: web.Request) -> web.Response:
    ctx = context(request)
    form = await html.read_form(request)
    address = (form.get("walletAddress") or "").strip()
    if not is_valid_address(address):
        raise BadRequest(
            N_(
                "That is not a Stellar wallet address: it is 56 characters, starts with G, and your wallet "
                "app shows it. Go back and copy it again."
            )
        )
    message, prepared = await auth.start_wallet_link(
        ctx.redis,
        ctx.settings,
        user_id=owner.owner_session(request).user_id,
        wallet_address=address,
        client_ip=client_ip(request),
        now=ctx.now(),
    )
    with html.speaking(request):
        words = _(auth.LINK_WORDS)
    return owner.render(
        "owner/account_link_wallet.html",
        request=request,
        title=N_("Link another wallet"),
        wallet=address,
        challenge_text=message,
        request_shown=wallet_request.present(request, prepared, msg=words, page_path=f"{PATH}/wallets"),
    )


@routes.post(f"{PATH}/wallets/sep7/{{id}}")
@public
@docs(
    tags=["pages"],
    summary="The callback of a wallet link's signing request (SEP-7)",
    description="Form-encoded `xdr=`: the signed challenge, for the wallet the owner typed on the account "
    "page. Verified before anything is used up; then linked as POST /api/auth/link-wallet links. 200 JSON "
    "to a wallet; with `?via=page` (the paste-back form) 303 to the account page.",
    responses={200: {"description": "Linked"}, **error_responses(400, 404, 409)},
)
async def wallet_link_answer(request: web.Request) -> web.Response:
    ctx = context(request)
    xdr = await wallet_request.signed_xdr(request)
    await auth.answer_wallet_link(
        ctx.pool, ctx.redis, ctx.settings, request_id=request.match_info["id"], signed_xdr=xdr, now=ctx.now()
    )
    return wallet_request.answer(request, page_path=f"{PATH}?done=wallet-linked", outcome="linked")


@routes.post(f"{PATH}/wallets/verify")
@docs(
    tags=["pages"],
    summary="Link another wallet: its signature",
    description="Fields `walletAddress` and `signature`, as POST /api/auth/link-wallet takes them.",
    produces=["text/html"],
    responses={**SEE_OTHER, **error_responses(400, 401, 403, 409)},
)
@owner.owner_page
async def link_wallet(request: web.Request) -> web.Response:
    ctx = context(request)
    form = await html.read_form(request)
    await auth.link_wallet(
        ctx.pool,
        ctx.redis,
        ctx.ring,
        user_id=owner.owner_session(request).user_id,
        wallet_address=(form.get("walletAddress") or "").strip(),
        signature=(form.get("signature") or "").strip(),
        client_ip=client_ip(request),
        now=ctx.now(),
    )
    return _back(request, "wallet-linked")


@routes.post(f"{PATH}/wallets/remove")
@docs(
    tags=["pages"],
    summary="Remove a wallet from the account: every session ends",
    description="Field `walletAddress`; DELETE /api/auth/wallets/{address}'s rules. 303 to sign-in.",
    produces=["text/html"],
    responses={303: {"description": "Removed; signed out"}, **error_responses(403, 404, 409)},
)
@owner.owner_page
async def remove_wallet(request: web.Request) -> web.Response:
    ctx = context(request)
    form = await html.read_form(request)
    await users.remove_wallet(
        ctx.pool,
        ctx.ring,
        check=ctx.accounts,
        user_id=owner.owner_session(request).user_id,
        wallet_address=(form.get("walletAddress") or "").strip(),
        contract_configured=bool(ctx.settings.service_contract_id),
        now=ctx.now(),
    )
    return _signed_out(request)


@routes.post(f"{PATH}/sign-out-everywhere")
@docs(
    tags=["pages"],
    summary="Sign out everywhere: every session of the account ends (pages and tokens)",
    produces=["text/html"],
    responses={303: {"description": "Signed out"}, **error_responses(403)},
)
@owner.owner_page
async def sign_out_everywhere(request: web.Request) -> web.Response:
    ctx = context(request)
    await users.end_all_sessions(
        ctx.pool, check=ctx.accounts, user_id=owner.owner_session(request).user_id, now=ctx.now().timestamp()
    )
    return _signed_out(request)


@routes.post(f"{PATH}/passkeys")
@docs(
    tags=["pages"],
    summary="Add a passkey: the page that runs the ceremony",
    produces=["text/html"],
    responses={**PAGE, **error_responses(403, 503)},
)
@owner.owner_page
async def add_passkey_page(request: web.Request) -> web.Response:
    ctx = context(request)
    session = owner.owner_session(request)
    user = await users.get_with_wallets(ctx.pool, ctx.ring, user_id=session.user_id)
    existing = await passkeys.of_owner(ctx.pool, user_id=session.user_id)
    asked = await passkey.issue(
        ctx.redis,
        purpose="owner.add_passkey",
        ceremony="create",
        subject_id=session.user_id,
        plan_id="",
        round_=0,
        now=ctx.now(),
    )
    options = passkey.creation_options(
        settings=ctx.settings,
        request=asked,
        user_name=user["email"] or user["wallet_address"],
        display_name=user["name"] or user["wallet_address"],
        existing=[passkeys.as_proof(passkey=key) for key in existing],
    )
    response = owner.render(
        "owner/account_passkey.html",
        request=request,
        title=N_("Add a passkey"),
        options=options,
        post_to=f"{PATH}/passkeys/{asked['id']}",
        script=html.PASSKEY_SCRIPT_PATH,
        integrity=html.PASSKEY_SCRIPT_INTEGRITY,
    )
    return html.with_script(response, origin=passkey.relying_party(settings=ctx.settings)[1])


@routes.post(f"{PATH}/passkeys/{{id}}")
@docs(
    tags=["pages"],
    summary="Add a passkey: the new credential",
    description="Field `credential` (as the page's script serialises it).",
    produces=["text/html"],
    responses={**SEE_OTHER, **error_responses(400, 401, 403, 409)},
)
@owner.owner_page
async def add_passkey(request: web.Request) -> web.Response:
    ctx = context(request)
    form = await html.read_form(request)
    await auth.add_owner_passkey(
        ctx.pool,
        ctx.redis,
        ctx.settings,
        user_id=owner.owner_session(request).user_id,
        request_id=request.match_info["id"],
        answer=form.get("credential") or "",
        now=ctx.now(),
    )
    return _back(request, "passkey-added")


@routes.post(f"{PATH}/passkeys/remove")
@docs(
    tags=["pages"],
    summary="Remove a passkey: the sessions it opened end",
    description="Field `credentialId` (base64url).",
    produces=["text/html"],
    responses={**SEE_OTHER, **error_responses(403, 404)},
)
@owner.owner_page
async def remove_passkey(request: web.Request) -> web.Response:
    ctx = context(request)
    form = await html.read_form(request)
    credential_id = credential_bytes((form.get("credentialId") or "").strip())
    session = owner.owner_session(request)
    await passkeys.remove(ctx.pool, user_id=session.user_id, credential_id=credential_id)
    if session.passkey_id == credential_id:
        return _signed_out(request)
    return _back(request, "passkey-removed")
