"""`GET /claim/<token>`: the heir's capsule as a page on the service's own origin, so the link
in the email opens something in any browser even with no web client deployed.

The same gate and model as `GET /api/claim/:token` (the token lookup and its miss limit, the
release rules, what a locked capsule withholds); only the rendering differs. Media play from
the JSON routes' media URL (Range, so a video seeks) and documents download from theirs.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from aiohttp import web
from aiohttp_apigami import docs

from api import html
from api.claim.gate import claim_gate
from api.keys import context
from api.sep import wallet_request
from core.stellar import sep7
from models import plans
from models.account import users
from models.claim import capsules, shares
from models.flows import finishing

routes = web.RouteTableDef()


def owner_words(capsule: capsules.Capsule) -> str:
    """The owner as every guardian and heir text names them: their name, else their wallet."""
    return users.known_as(name=capsule["owner_name"], wallet=capsule["owner_wallet"])


MEDIA_WORDS = {"video": "A video", "voice": "A voice recording", "photo": "A photo"}
_CONTENT_WORDS = {
    "application/pdf": "PDF",
    "text/plain": "text",
    "application/zip": "ZIP archive",
}
_CATEGORY_WORDS = {"digital_accounts": "digital accounts"}


def kind_words(document: capsules.Document) -> str:
    """'Legal document, PDF': the item's own type and category, and the file's format."""
    category = _CATEGORY_WORDS.get(document["category"], document["category"])
    kind = document["type"] if category == "other" else f"{category} {document['type']}"
    content = document["content_type"].split(";")[0]
    family, _, subtype = content.partition("/")
    fmt = _CONTENT_WORDS.get(content) or (
        f"{subtype.upper()} {family}" if family in ("image", "audio", "video") else ""
    )
    return f"{kind.capitalize()}, {fmt}" if fmt else kind.capitalize()


def share_words(asset: capsules.CapsuleAsset) -> str:
    return shares.share_words(amount=asset["amount"], asset_code=asset["asset_code"], share=asset["share"])


def share(percentage: Decimal) -> str:
    return f"{percentage.normalize():f}"


@routes.get("/claim/{token}")
@docs(
    tags=["pages"],
    summary="The heir's capsule as a page (HTML, no JavaScript)",
    description="What `$PUBLIC_BASE_URL/claim/<token>`, the link in every claim email, opens: the "
    "capsule of `GET /api/claim/{token}` rendered on the server (locked, released), "
    "behind the same gate (token lookup, miss limit); an unknown or malformed token is the 404 page, "
    "past the limit the 429 page. docs/pages.md.",
    produces=["text/html"],
    responses={200: {"description": "The page"}},
)
@claim_gate
async def capsule_page(request: web.Request, capsule: capsules.Capsule) -> web.Response:
    ctx = context(request)
    shown, step = await finishing.page(
        ctx.pool,
        ctx.ring,
        gateway=ctx.soroban,
        capsule=capsule,
        now=ctx.now(),
        opened=request.method != "HEAD",
    )
    path = request.path.rstrip("/")
    pending = step["transaction"] is not None and step["transaction"]["status"] == "pending"
    signing: dict[str, Any] = {
        "step": step,
        "request": None,  # built only when the heir presses the button (POST …/sign)
        "sign_action": f"{path}/sign",
        "wallet_action": f"{path}/wallet",
        # While the network has not answered, the page looks again by itself (no script needed).
        "refresh": 10 if pending else None,
    }
    if shown["ready"] is not None:
        ready = shown["ready"]
        owner = owner_words(capsule)
        return html.render(
            "capsule_ready.html",
            title=f"From {owner}",
            owner=owner,
            ready=ready,
            sympathy=capsule["report_reason"] == "death",
            **signing,
        )
    contents = shown["contents"]
    if contents is None:
        # On an Active plan whose owner takes requests, the heir may ask the guardians to check.
        can_ask = capsule["plan_status"] == plans.ACTIVE and capsule["requests_allowed"]
        return html.render(
            "capsule_locked.html",
            title="Nothing here yet",
            owner=owner_words(capsule),
            ask_action=f"{path}/request" if can_ask else None,
            checking=capsule["plan_status"] in plans.FROZEN,
        )
    owner = owner_words(capsule)
    sections = [
        (anchor, label)
        for anchor, label, present in (
            ("letters", "Letters", contents["messages"]),
            ("later", "Still to come", contents["sealed_messages"]),
            ("documents", "Documents", contents["documents"]),
            ("assets", "What you were left", contents["assets"]),
            ("share", "Your share", True),
        )
        if present
    ]
    return html.render(
        "capsule_released.html",
        title=f"From {owner}",
        owner=owner,
        capsule=contents,
        base=f"/api/claim/{request.match_info['token']}",
        sections=sections,
        media_words=MEDIA_WORDS,
        kind_words=kind_words,
        share_words=share_words,
        share=share(contents["allocation_percentage"]),
        # Sympathy only when a guardian reported a death; otherwise neutral words, which presume no death.
        sympathy=capsule["report_reason"] == "death",
        **signing,
    )


def heir_request(
    request: web.Request, step: finishing.HeirStep, *, capsule: capsules.Capsule, page_path: str
) -> wallet_request.Shown | None:
    """The step's signing request as the page shows it, with the words the wallet shows."""
    prepared = step["request"]
    if prepared is None:
        return None
    owner = owner_words(capsule)
    if prepared["purpose"] == "heir.finalize_release":
        msg = sep7.message("Finalise the release of {owner}'s plan, for everyone it names", owner=owner)
    else:
        msg = sep7.message("Claim {heir}'s share of what {owner} left", heir=capsule["name"], owner=owner)
    return wallet_request.present(request, prepared, msg=msg, page_path=page_path)
