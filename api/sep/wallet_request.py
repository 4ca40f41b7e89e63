"""One way to ask a wallet, on every page (docs/pages.md "Asking a wallet"): a signing request
shown four ways (a `web+stellar:tx` link, the same URI as a QR code, the unsigned XDR, and a
form to paste the signed XDR back), and its callback's two answers: 200 JSON to a wallet,
303 back to the page for the form.

The request itself (what the service keeps, single use, until its time bound) is
models.wallet_requests; the URI and QR code, core.stellar.sep7.
"""

from __future__ import annotations

from typing import Any, TypedDict

from aiohttp import web

from api import html
from api.keys import context
from core.errors import BadRequest
from core.stellar import sep7
from core.text.i18n import N_
from models.wallet_requests import Prepared

# The paste-back form posts to the callback with this query: its answers, the claim gate's and
# every other error included, are pages; a wallet's (no query) are JSON.
PAGE_QUERY = "via=page"
MAX_XDR = 20_000


class Shown(TypedDict):
    uri: str
    qr: str  # inline SVG markup, made here (not user input)
    xdr: str
    action: str  # the callback path with `?via=page`, for the paste-back form
    msg: str
    signer: str
    valid_until: Any


def present(request: web.Request, prepared: Prepared, *, msg: str, page_path: str) -> Shown:
    """The request as the page shows it; its callback is `<PUBLIC_BASE_URL><page>/sep7/<id>`."""
    ctx = context(request)
    settings = ctx.settings
    action = f"{page_path}/sep7/{prepared['id']}"
    uri = sep7.signing_uri(
        prepared["xdr"],
        callback=f"{settings.public_base_url}{action}",
        msg=msg,
        public_base_url=settings.public_base_url,
        passphrase=settings.stellar_network_passphrase,
        pubkey=prepared["signer"],
        signer=settings.uri_request_signing_key,
    )
    return {
        "uri": uri,
        "qr": sep7.qr_svg(uri),
        "xdr": prepared["xdr"],
        "action": f"{action}?{PAGE_QUERY}",
        "msg": msg,
        "signer": prepared["signer"],
        "valid_until": prepared["valid_until"],
    }


async def signed_xdr(request: web.Request) -> str:
    """The signed envelope a wallet (or the page's form) posted: form-encoded `xdr=`."""
    if request.content_type != html.FORM:
        raise BadRequest(
            N_(
                "The signed transaction could not be read: paste it into the box on the page and press its"
                " button."
            ),
            details={"xdr": ["Post it form-encoded, as xdr=<the signed envelope, base64>."]},
        )
    form = await html.read_form(request)
    xdr = form.get("xdr")
    if not isinstance(xdr, str) or not xdr.strip():
        raise BadRequest(
            N_(
                "Nothing was pasted. Copy the signed transaction from your wallet (a long block of letters "
                "and numbers) and paste it into the box."
            ),
            details={"xdr": ["Missing."]},
        )
    if len(xdr) > MAX_XDR:
        raise BadRequest(
            N_(
                "What was pasted is far longer than a signed transaction. Copy only the signed transaction "
                "from your wallet and paste it again."
            ),
            details={"xdr": [f"Longer than {MAX_XDR} characters."]},
        )
    return xdr.strip()


def answer(request: web.Request, *, page_path: str, outcome: str) -> web.Response:
    """200 JSON to a wallet; 303 back to the page (which now shows what happened) for the form."""
    if from_page(request):
        return web.Response(status=303, headers={"Location": html.carry_language(request, page_path)})
    return web.json_response({"status": outcome})


def from_page(request: web.Request) -> bool:
    """The post came from the page's paste-back form (its action carries PAGE_QUERY)."""
    return request.query.get("via") == "page"  # and `lang`, the language chosen on the page


def is_wallet_callback(request: web.Request) -> bool:
    """A wallet posting to a callback gets JSON errors; the page's form gets error pages, from
    the first check on (the URL says so before the body is read or the token looked up)."""
    return "/sep7/" in request.path and not from_page(request)
