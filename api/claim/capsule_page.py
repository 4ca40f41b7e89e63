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
from markupsafe import Markup

from api import html
from api.claim.gate import claim_gate
from api.keys import context
from api.schemas import error_responses
from api.sep import wallet_request
from core.stellar import sep7
from core.text import gender
from core.text.i18n import N_, _
from models import plans
from models.account import users
from models.claim import capsules, shares
from models.contents import beneficiaries
from models.flows import finishing

routes = web.RouteTableDef()


def owner_words(capsule: capsules.Capsule) -> str:
    """The owner as every guardian and heir text names them: their name, else their wallet."""
    return users.known_as(name=capsule["owner_name"], wallet=capsule["owner_wallet"])


# A letter's media under it, and the same when its stored copy was found damaged.
MEDIA_WORDS = {
    "video": N_("A video, {size}."),
    "voice": N_("A voice recording, {size}."),
    "photo": N_("A photo, {size}."),
}
DAMAGED_MEDIA = {
    "video": N_(
        "A video came with this letter, but the stored copy was found damaged and can no longer be played."
    ),
    "voice": N_(
        "A voice recording came with this letter, but the stored copy was found damaged"
        " and can no longer be played."
    ),
    "photo": N_(
        "A photo came with this letter, but the stored copy was found damaged and can no longer be played."
    ),
}
# A document's kind: its category (the owner's filing, models/archive/items.py CATEGORIES) and
# its type, as one phrase each language writes whole.
_KINDS = {
    "legal": N_("Legal document"),
    "financial": N_("Financial document"),
    "medical": N_("Medical document"),
    "insurance": N_("Insurance document"),
    "property": N_("Property document"),
    "digital_accounts": N_("Digital accounts document"),
    "personal": N_("Personal document"),
    "other": N_("Document"),
}
_TYPES = {"photo": N_("Photo"), "video": N_("Video"), "voice": N_("Voice recording"), "other": N_("File")}
_CONTENT_WORDS = {
    "application/pdf": N_("PDF"),
    "text/plain": N_("text"),
    "application/zip": N_("ZIP archive"),
}
_FAMILIES = {"image": N_("{format} image"), "audio": N_("{format} audio"), "video": N_("{format} video")}


def kind_words(document: capsules.Document) -> str:
    """'Legal document, PDF': the item's own category (a document) or type, and the file's format."""
    if document["type"] == "document":
        kind = _(_KINDS.get(document["category"], _KINDS["other"]))
    else:
        kind = _(_TYPES.get(document["type"], _TYPES["other"]))
    content = document["content_type"].split(";")[0]
    family, _slash, subtype = content.partition("/")
    if content in _CONTENT_WORDS:
        fmt = _(_CONTENT_WORDS[content])
    elif family in _FAMILIES:
        fmt = _(_FAMILIES[family]).format(format=subtype.upper())
    else:
        return kind
    # Translators: a document's kind and its file's format, as "Legal document, PDF".
    return _("{kind}, {format}").format(kind=kind, format=fmt)


def share_words(asset: capsules.CapsuleAsset) -> str:
    """The heir's part of an asset in words; a thing's, with the names of whoever it goes to."""
    if asset["amount"] is None or asset["share"] is None:
        return _thing_words(asset["shared_with"] or [])
    return shares.share_words(amount=asset["amount"], asset_code=asset["asset_code"], share=asset["share"])


def _thing_words(names: list[str]) -> str:
    """`shares.thing_words` with each name in `<bdi>` (escaped there), the sentence escaped."""
    if not names:
        return _(shares.THING_ALONE)
    listed = Markup(shares.names_list(names=[str(html.bdi(name)) for name in names]))  # noqa: S704 - each escaped
    return Markup.escape(_(shares.THING_TOGETHER)).format(names=listed)


def share(percentage: Decimal) -> str:
    """The heir's part of the plan as a percentage, every decimal kept, in the reader's language."""
    return _("{percentage}\u00a0%").format(percentage=shares.exact_figure(value=percentage.normalize()))


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
    with html.speaking(request, locale=capsule["locale"], time_zone=capsule["time_zone"]):
        return _render(request, capsule, shown, signing)


def _render(
    request: web.Request, capsule: capsules.Capsule, shown: finishing.View, signing: dict[str, Any]
) -> web.Response:
    owner = owner_words(capsule)
    people: dict[str, Any] = {
        "owner_gender": capsule["owner_gender"],
        "heir_gender": capsule["grammatical_gender"],
        "gender_form": html.own_gender_form(
            request, action=f"{request.path.rstrip('/')}/gender", now=capsule["grammatical_gender"]
        ),
    }
    if shown["ready"] is not None:
        return html.render(
            "capsule_ready.html",
            reader=request,
            title=_("From {owner}").format(owner=owner),
            owner=owner,
            ready=shown["ready"],
            sympathy=capsule["report_reason"] == "death",
            **people,
            **signing,
        )
    contents = shown["contents"]
    if contents is None:
        # On an Active plan whose owner takes requests, the heir may ask the guardians to check.
        can_ask = capsule["plan_status"] == plans.ACTIVE and capsule["requests_allowed"]
        return html.render(
            "capsule_locked.html",
            reader=request,
            title=_("Nothing here yet"),
            owner=owner,
            ask_action=f"{request.path.rstrip('/')}/request" if can_ask else None,
            checking=capsule["plan_status"] in plans.FROZEN,
            **people,
        )
    sections = [
        (anchor, _(label))
        for anchor, label, present in (
            ("letters", N_("Letters"), contents["messages"]),
            ("later", N_("Still to come"), contents["sealed_messages"]),
            ("documents", N_("Documents"), contents["documents"]),
            ("assets", N_("What you were left"), contents["assets"]),
            ("share", N_("Your share"), True),
        )
        if present
    ]
    return html.render(
        "capsule_released.html",
        reader=request,
        title=_("From {owner}").format(owner=owner),
        owner=owner,
        capsule=contents,
        base=f"/api/claim/{request.match_info['token']}",
        sections=sections,
        media_words={kind: _(words) for kind, words in MEDIA_WORDS.items()},
        damaged_media={kind: _(words) for kind, words in DAMAGED_MEDIA.items()},
        kind_words=kind_words,
        share_words=share_words,
        share=share(contents["allocation_percentage"]),
        # Sympathy only when a guardian reported a death; otherwise neutral words, which presume no death.
        sympathy=capsule["report_reason"] == "death",
        **people,
        **signing,
    )


@routes.post("/claim/{token}/gender")
@docs(
    tags=["pages"],
    summary="The heir says how we refer to them (their page's form)",
    description="Form-encoded, one field `grammaticalGender`: feminine, masculine, neutral, or empty for "
    "not said (anything else is the 400 page). Recorded for the heir as the owner's `grammaticalGender` "
    "of them is (`PATCH /api/beneficiaries/:id`), in any state of the plan, and on the owner's timeline "
    "(the field, not its value); 303 back to the page, which says it is saved.",
    produces=["text/html"],
    responses={303: {"description": "Saved: back to the page"}, **error_responses(400)},
)
@claim_gate
async def own_gender(request: web.Request, capsule: capsules.Capsule) -> web.Response:
    html.negotiate(request, locale=capsule["locale"], time_zone=capsule["time_zone"])  # its refusal's
    form = await html.read_form(request)
    chosen = gender.posted(form.get("grammaticalGender"))
    await beneficiaries.choose_own_gender(
        context(request).pool, beneficiary_id=capsule["beneficiary_id"], gender=chosen
    )
    back = html.carry_language(request, f"/claim/{request.match_info['token']}?saved=gender")
    return web.Response(status=303, headers={"Location": back + "#refer"})


def heir_request(
    request: web.Request, step: finishing.HeirStep, *, capsule: capsules.Capsule, page_path: str
) -> wallet_request.Shown | None:
    """The step's signing request as the page shows it, with the words the wallet shows."""
    prepared = step["request"]
    if prepared is None:
        return None
    owner = owner_words(capsule)
    if prepared["purpose"] == "heir.finalize_release":
        msg = sep7.message(_("Finalise the release of {owner}'s plan, for everyone it names"), owner=owner)
    else:
        msg = sep7.message(_("Claim {heir}'s share of what {owner} left"), heir=capsule["name"], owner=owner)
    return wallet_request.present(request, prepared, msg=msg, page_path=page_path)
