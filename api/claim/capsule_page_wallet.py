"""The heir finishes from their page (contract mode), with any Stellar wallet and no script:
`POST /claim/<token>/wallet` answers with a SEP-10-style challenge for the wallet they name, as
a SEP-7 signing request; `POST /claim/<token>/sep7/<id>` is every request's callback (the
proof binds the wallet; a signed `finalize_release` or `claim_assets` is relayed). All behind
the claim gate, through the same model functions as the JSON routes. docs/pages.md.
"""

from __future__ import annotations

import contextlib

from aiohttp import web
from aiohttp_apigami import docs

from api import html
from api.claim import capsule_page
from api.claim.gate import claim_gate
from api.common import client_ip
from api.keys import context
from api.schemas import error_responses
from api.sep import wallet_request
from core.errors import BadRequest, TooManyRequests
from core.stellar import sep7
from core.stellar.wallet import is_valid_address
from core.text.i18n import N_, _
from models.claim import heir_wallets
from models.claim.capsules import Capsule
from models.flows import finishing

routes = web.RouteTableDef()


def _page_path(request: web.Request) -> str:
    return f"/claim/{request.match_info['token']}"


@routes.post("/claim/{token}/wallet")
@docs(
    tags=["pages"],
    summary="The heir names their wallet (HTML form): the answer asks the wallet to prove it",
    description="Form field `walletAddress`. Once the capsule is ready or released (409 page before). "
    "The page shows a SEP-10-style challenge for that wallet as a SEP-7 signing request (link, QR code, "
    "XDR, paste-back form); signing it binds the wallet with the rules of `POST /api/claim/{token}/wallet/"
    "verify`. Rate limited per client address like `/wallet/challenge` (429 page).",
    produces=["text/html"],
    responses={200: {"description": "The page"}, **error_responses(400, 409)},
)
@claim_gate
async def name_wallet(request: web.Request, capsule: Capsule) -> web.Response:
    ctx = context(request)
    form = await html.read_form(request)
    address = form.get("walletAddress")
    if not isinstance(address, str) or not is_valid_address(address.strip()):
        raise BadRequest(
            N_(
                "That is not a Stellar wallet address: it is 56 characters, starts with G, and your wallet "
                "app shows it. Go back and copy it again."
            )
        )
    prepared = await heir_wallets.challenge_transaction(
        ctx.redis,
        ctx.settings,
        capsule=capsule,
        wallet_address=address.strip(),
        client_ip=client_ip(request),
        now=ctx.now(),
    )
    page = _page_path(request)
    with html.speaking(request, locale=capsule["locale"], time_zone=capsule["time_zone"]):
        msg = sep7.message(
            _("Prove this wallet is yours, {heir}, to receive what {owner} left you"),
            heir=capsule["name"],
            owner=capsule["owner_name"],
        )
        shown = wallet_request.present(request, prepared, msg=msg, page_path=page)
        return html.render(
            "claim_prove.html",
            reader=request,
            title=_("Prove this wallet is yours"),
            request=shown,
            back=page,
        )


SIGN_TITLES = {
    "finalize_release": N_("Confirm the release with your wallet"),
    "claim_assets": N_("Claim your share"),
}


@routes.post("/claim/{token}/sign")
@docs(
    tags=["pages"],
    summary="The heir's button: the step's contract call as a signing request (HTML form)",
    description="Contract mode, a wallet bound, `finalize_release` (ready) or `claim_assets` (released, "
    "unclaimed) due and none pending: the page shows that call, built through the RPC node for the "
    "bound wallet, as a SEP-7 signing request. The request shown last is shown again while it is unused "
    "and more than a minute from its time bound; a new build counts against "
    "RATE_LIMIT_HEIR_BUILDS_PER_HOUR (429 page, with Retry-After). Opening the page (GET) builds "
    "nothing. Nothing to sign now: 303 back to the page, which says why.",
    produces=["text/html"],
    responses={
        200: {"description": "The page"},
        303: {"description": "Back to the page"},
        **error_responses(429),
    },
)
@claim_gate
async def sign_step(request: web.Request, capsule: Capsule) -> web.Response:
    ctx = context(request)
    back = _page_path(request)
    try:
        with html.speaking(request, locale=capsule["locale"], time_zone=capsule["time_zone"]):
            step = await finishing.prepare(  # its refusal's words (how long to wait) in the heir's
                ctx.pool,
                ctx.redis,
                gateway=ctx.soroban,
                capsule=capsule,
                limit=ctx.settings.rate_limit_heir_builds_per_hour,
                now=ctx.now(),
            )
    except TooManyRequests as exc:
        with html.speaking(request, locale=capsule["locale"], time_zone=capsule["time_zone"]):
            return html.render(
                "claim_sign.html",
                reader=request,
                status=429,
                headers=exc.headers,
                title=_("Please wait a little"),
                too_many=html.said(exc.message),
                back=back,
            )
    if step["request"] is None and step["problem"] is None:
        return web.Response(status=303, headers={"Location": html.carry_language(request, back)})
    function = step["function"] or ""
    with html.speaking(request, locale=capsule["locale"], time_zone=capsule["time_zone"]):
        return html.render(
            "claim_sign.html",
            reader=request,
            title=_(SIGN_TITLES.get(function, N_("Sign with your wallet"))),
            request=capsule_page.heir_request(request, step, capsule=capsule, page_path=back),
            problem=None if step["problem"] is None else html.said(step["problem"]),
            function=function,
            owner=capsule_page.owner_words(capsule),
            too_many=None,
            back=back,
        )


@routes.post("/claim/{token}/sep7/{id}")
@docs(
    tags=["pages"],
    summary="SEP-7 callback of the heir's signing requests (a wallet, or the page's paste-back form)",
    description="Form-encoded `xdr=<signed envelope>` (what SEP-7 wallets send). A signed challenge "
    "binds the wallet as `POST /api/claim/{token}/wallet/verify`; a signed `finalize_release` or "
    "`claim_assets` is checked and relayed as `POST /api/claim/{token}/submit`. 200 `{status}` to a "
    "wallet; 303 back to the page for the form (`?via=page`). Another transaction or another signer: "
    "400, the request stays usable; a used or expired request: 409; another heir's request: 404.",
    responses={
        200: {"description": "Taken"},
        303: {"description": "Back to the page"},
        **error_responses(400, 409, 503),
    },
)
@claim_gate
async def signed_callback(request: web.Request, capsule: Capsule) -> web.Response:
    ctx = context(request)
    signed = await wallet_request.signed_xdr(request)
    # From the page's paste-back form, a refusal's words are in the heir's language; a wallet's
    # JSON stays English.
    page = wallet_request.from_page(request)
    reader = {"locale": capsule["locale"], "time_zone": capsule["time_zone"]} if page else None
    with html.speaking(request, **reader) if reader else contextlib.nullcontext():
        result = await finishing.take_signed(
            ctx.pool,
            ctx.redis,
            ctx.settings,
            gateway=ctx.soroban,
            capsule=capsule,
            request_id=request.match_info["id"],
            signed_xdr=signed,
            now=ctx.now(),
        )
    outcome = "bound" if "bound_via" in result else str(result.get("status"))
    return wallet_request.answer(request, page_path=_page_path(request), outcome=outcome)
