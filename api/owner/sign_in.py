"""`/sign-in`: the owner signs in from a browser, with any Stellar wallet (a SEP-7 signing
request answered from their phone, or the spec's challenge text signed by a wallet that signs
messages) or with a passkey; `/sign-out` ends this browser's session; `/` leads to `/plan`.

Every way ends in the same functions as `POST /api/auth/wallet/verify` (models.flows.auth:
`users.sign_in`, the check-in while Active), then a page session in a cookie
(api/owner/session.py). The pending sign-in a browser starts is bound to it by a cookie of its
own, never by anything in a URL, the SEP-7 URI or its QR code. Decisions: docs/pages.md, "The
owner's pages"; docs/security.md, "Signing in from the pages".
"""

from __future__ import annotations

from aiohttp import web
from aiohttp_apigami import docs

from api import html
from api.common import client_ip
from api.keys import context
from api.owner import session as owner
from api.public import public
from api.schemas import error_responses
from api.sep import wallet_request
from core.errors import BadRequest, Conflict
from core.stellar.wallet import is_valid_address
from core.text.i18n import N_
from models.account import pending_sign_ins, sessions
from models.flows import auth
from models.proofs import passkey
from models.wallet_requests import Prepared

routes = web.RouteTableDef()

WAIT_PATH = "/sign-in/wait"
NOT_AN_ADDRESS = N_(
    "That is not a Stellar wallet address: it is 56 characters, starts with G, and your wallet "
    "app shows it. Go back and copy it again."
)
PAGE = {200: {"description": "The page"}}


def _dev_offers(request: web.Request) -> dict[str, bool]:
    settings = context(request).settings
    return {"test_wallet": settings.environment == "development", "sample_plan": settings.dev_mailbox}


@routes.get("/")
@docs(tags=["pages"], summary="The service's front door: leads to the owner's plan", produces=["text/html"])
@owner.owner_door
async def front_door(request: web.Request) -> web.Response:
    return web.Response(status=303, headers={"Location": html.carry_language(request, owner.HOME_PATH)})


@routes.get(owner.SIGN_IN_PATH)
@docs(
    tags=["pages"],
    summary="The owner's sign-in page",
    description="Any Stellar wallet (by its address: a SEP-7 request, or the challenge text to sign), or a "
    "passkey added on the account page. `?next=` keeps a path under /plan to come back to.",
    produces=["text/html"],
    responses=PAGE,
)
@owner.owner_door
async def sign_in_page(request: web.Request) -> web.Response:
    next_path = owner.return_path(request.query.get("next"))
    if owner.maybe_session(request) is not None:
        return web.Response(status=303, headers={"Location": html.carry_language(request, next_path)})
    return owner.render(
        "owner/sign_in.html",
        request=request,
        title=N_("Sign in to your legacy plan"),
        next=next_path,
        signed_out=request.query.get("signed-out"),
        **_dev_offers(request),
    )


@routes.post("/sign-in/wallet")
@docs(
    tags=["pages"],
    summary="The owner names their wallet: the answer asks the wallet to sign in",
    description="Form field `walletAddress` (and `next`). Rate limited as POST /api/auth/wallet/challenge "
    "(per client address, and per client address and wallet). 303 to the waiting page, which shows a SEP-7 "
    "request for a SEP-10-style challenge and the challenge text to sign.",
    produces=["text/html"],
    responses={303: {"description": "To the waiting page"}, **error_responses(400, 403, 429)},
)
@owner.owner_door
async def name_wallet(request: web.Request) -> web.Response:
    ctx = context(request)
    form = await html.read_form(request)
    address = (form.get("walletAddress") or "").strip()
    if not is_valid_address(address):
        raise BadRequest(NOT_AN_ADDRESS)
    started = await auth.start_page_sign_in(
        ctx.redis,
        ctx.settings,
        wallet_address=address,
        client_ip=client_ip(request),
        next_path=owner.return_path(form.get("next")),
        replacing=owner.cookie(request, base=owner.PENDING_COOKIE),
        now=ctx.now(),
    )
    response = web.Response(status=303, headers={"Location": html.carry_language(request, WAIT_PATH)})
    lifetime = int((started["pending"]["valid_until"] - ctx.now()).total_seconds())
    owner.set_cookie(
        response, ctx.settings, base=owner.PENDING_COOKIE, value=started["cookie"], max_age=max(1, lifetime)
    )
    return response


def _shown(request: web.Request, pending: pending_sign_ins.PendingSignIn) -> wallet_request.Shown:
    prepared: Prepared = {
        "id": pending["request_id"] or "",
        "purpose": auth.SIGN_IN_PURPOSE,
        "signer": pending["wallet"] or "",
        "xdr": pending["xdr"] or "",
        "valid_until": pending["valid_until"],
    }
    with html.speaking(request):
        words = auth.sign_in_words(code=pending["code"])
    return wallet_request.present(request, prepared, msg=words, page_path=owner.SIGN_IN_PATH)


@routes.get(WAIT_PATH)
@docs(
    tags=["pages"],
    summary="The owner's sign-in, waiting for the wallet",
    description="Signs this browser in once its wallet has answered (303 to where it was going); until then "
    "the request to sign (link, QR code, paste-back), the short code the wallet shows too, and the "
    "challenge text with a field for its signature, and Continue (a link here: no script).",
    produces=["text/html"],
    responses={**PAGE, 303: {"description": "Signed in"}},
)
@owner.owner_door
async def waiting(request: web.Request) -> web.Response:
    ctx = context(request)
    pending_cookie = owner.cookie(request, base=owner.PENDING_COOKIE)
    if pending_cookie is not None:
        finished = await auth.finish_wallet_sign_in(
            ctx.pool,
            ctx.redis,
            ctx.settings,
            pending_cookie=pending_cookie,
            replacing=owner.cookie(request, base=owner.SESSION_COOKIE),
            now=ctx.now(),
        )
        if finished is not None:
            return owner.signed_in(request, finished[0], to=finished[1])
    pending = await pending_sign_ins.of_cookie(ctx.redis, cookie=pending_cookie, now=ctx.now())
    if (pending is None or pending["wallet"] is None) and owner.maybe_session(request) is not None:
        return web.Response(status=303, headers={"Location": html.carry_language(request, owner.HOME_PATH)})
    if pending is None or pending["wallet"] is None:
        raise Conflict(auth.NO_PENDING)
    return owner.render(
        "owner/sign_in_wait.html",
        request=request,
        title=N_("Sign in with your wallet"),
        pending=pending,
        request_shown=_shown(request, pending),
        challenge_text=pending["text"] or "",
    )


@routes.post("/sign-in/signature")
@docs(
    tags=["pages"],
    summary="The owner pastes the signature of the challenge text",
    description="Form field `signature`: base64 or hex, over the text as shown or SEP-53 style, as POST "
    "/api/auth/wallet/verify accepts. For the wallet this browser named; 303 to where it was going.",
    produces=["text/html"],
    responses={303: {"description": "Signed in"}, **error_responses(400, 401, 403, 409)},
)
@owner.owner_door
async def signature(request: web.Request) -> web.Response:
    ctx = context(request)
    form = await html.read_form(request)
    opened, to = await auth.sign_in_by_signature(
        ctx.pool,
        ctx.redis,
        ctx.settings,
        pending_cookie=owner.cookie(request, base=owner.PENDING_COOKIE),
        signature=(form.get("signature") or "").strip(),
        client_ip=client_ip(request),
        replacing=owner.cookie(request, base=owner.SESSION_COOKIE),
        now=ctx.now(),
    )
    return owner.signed_in(request, opened, to=to)


@routes.post("/sign-in/sep7/{id}")
@public
@docs(
    tags=["pages"],
    summary="The callback of a sign-in's signing request (SEP-7)",
    description="Form-encoded `xdr=`: the signed challenge. Verified before anything is used up; then the "
    "browser that started the sign-in is signed in on its next request. 200 JSON to a wallet; with "
    "`?via=page` (the paste-back form) 303 to the waiting page.",
    responses={200: {"description": "Accepted"}, **error_responses(400, 404, 409)},
)
async def wallet_answer(request: web.Request) -> web.Response:
    ctx = context(request)
    xdr = await wallet_request.signed_xdr(request)
    await auth.answer_sign_in_request(
        ctx.redis, ctx.settings, request_id=request.match_info["id"], signed_xdr=xdr, now=ctx.now()
    )
    return wallet_request.answer(request, page_path=WAIT_PATH, outcome="signed_in")


@routes.post(owner.SIGN_OUT_PATH)
@docs(
    tags=["pages"],
    summary="Sign this browser out",
    description="Ends this browser's page session (other sessions stay; the account page signs out "
    "everywhere). 303 to the sign-in page.",
    produces=["text/html"],
    responses={303: {"description": "Signed out"}, **error_responses(403)},
)
@owner.owner_page
async def sign_out(request: web.Request) -> web.Response:
    ctx = context(request)
    await sessions.end(ctx.pool, cookie=owner.cookie(request, base=owner.SESSION_COOKIE) or "")
    response = web.Response(
        status=303, headers={"Location": html.carry_language(request, f"{owner.SIGN_IN_PATH}?signed-out=1")}
    )
    owner.clear_cookie(response, ctx.settings, base=owner.SESSION_COOKIE)
    return response


@routes.post("/sign-in/passkey")
@docs(
    tags=["pages"],
    summary="The owner signs in with a passkey: the page that runs the ceremony",
    description="No address: a discoverable credential added on the account page. Rate limited per client "
    "address like the wallet's challenge. The page's one script (by its exact URL and integrity) runs "
    "`navigator.credentials.get` and posts the assertion to `/sign-in/passkey/{id}`.",
    produces=["text/html"],
    responses={**PAGE, **error_responses(403, 429)},
)
@owner.owner_door
async def passkey_page(request: web.Request) -> web.Response:
    ctx = context(request)
    form = await html.read_form(request)
    started, asked = await auth.start_passkey_sign_in(
        ctx.redis,
        ctx.settings,
        client_ip=client_ip(request),
        next_path=owner.return_path(form.get("next")),
        replacing=owner.cookie(request, base=owner.PENDING_COOKIE),
        now=ctx.now(),
    )
    rp_origin = passkey.relying_party(settings=ctx.settings)[1]
    response = owner.render(
        "owner/sign_in_passkey.html",
        request=request,
        title=N_("Sign in with a passkey"),
        options=passkey.request_options(settings=ctx.settings, request=asked, passkeys=[]),
        post_to=f"/sign-in/passkey/{asked['id']}",
        script=html.PASSKEY_SCRIPT_PATH,
        integrity=html.PASSKEY_SCRIPT_INTEGRITY,
    )
    lifetime = int((started["pending"]["valid_until"] - ctx.now()).total_seconds())
    owner.set_cookie(
        response, ctx.settings, base=owner.PENDING_COOKIE, value=started["cookie"], max_age=max(1, lifetime)
    )
    return html.with_script(response, origin=rp_origin)


@routes.post("/sign-in/passkey/{id}")
@docs(
    tags=["pages"],
    summary="The passkey's answer: the owner is signed in",
    description="Form field `credential` (the assertion, as the page's script serialises it). For this "
    "browser's pending passkey sign-in; 303 to where it was going. 401 page for a passkey of no account.",
    produces=["text/html"],
    responses={303: {"description": "Signed in"}, **error_responses(400, 401, 403, 409)},
)
@owner.owner_door
async def passkey_answer(request: web.Request) -> web.Response:
    ctx = context(request)
    form = await html.read_form(request)
    opened, to = await auth.sign_in_by_passkey(
        ctx.pool,
        ctx.redis,
        ctx.settings,
        pending_cookie=owner.cookie(request, base=owner.PENDING_COOKIE),
        request_id=request.match_info["id"],
        answer=form.get("credential") or "",
        replacing=owner.cookie(request, base=owner.SESSION_COOKIE),
        now=ctx.now(),
    )
    return owner.signed_in(request, opened, to=to)
