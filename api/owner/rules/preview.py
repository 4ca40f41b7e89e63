"""`/plan/heirs/<id>/preview`: the owner's rehearsal of an heir's page, the heir's own page
(api/claim/capsule_page.py, capsule_released.html) in the heir's language and zone, built from
the model of `GET /api/legacy/preview/:beneficiaryId` (the capsule as if released now). Marked,
in the owner's language, as a preview at its top and foot and in its title; never the claim
token (the page has none: its links are the owner's own downloads, under this path and the
session). docs/pages.md.
"""

from __future__ import annotations

from aiohttp import web
from aiohttp_apigami import docs
from markupsafe import Markup

from api import html
from api.archive import routes as archive_routes
from api.archive.files import require_storage, send_file
from api.claim import capsule_page
from api.keys import USER_ID, context
from api.owner.plan_pages import owner_id
from api.owner.session import owner_page
from core.errors import NotFound
from core.text import i18n
from core.text.i18n import N_, _
from models.account import users
from models.archive import serving
from models.claim import capsules
from models.contents import beneficiaries, messages

routes = web.RouteTableDef()

PREVIEW = "/plan/heirs/{id}/preview"
FILES = "/plan/heirs/{heir}/preview"  # its downloads: `id` is the file's, as the JSON route reads it
SECTIONS = (
    ("letters", N_("Letters"), "messages"),
    ("later", N_("Still to come"), "sealed_messages"),
    ("documents", N_("Documents"), "documents"),
    ("assets", N_("What you were left"), "assets"),
)


@routes.get(PREVIEW)
@docs(
    tags=["pages"],
    summary="Rehearse an heir's page, as they will see it",
    produces=["text/html"],
)
@owner_page
async def preview_page(request: web.Request) -> web.Response:
    ctx = context(request)
    heir = await beneficiaries.get(
        ctx.pool, ctx.ring, user_id=owner_id(request), raw_id=request.match_info["id"]
    )
    contents = await capsules.preview(
        ctx.pool, ctx.ring, owner_id=owner_id(request), raw_beneficiary_id=heir["id"], now=ctx.now()
    )
    with html.speaking(request):  # the owner's language: the marks that say it is a rehearsal
        marks = {
            "mark": _("Preview: this is not the real page."),
            "explained": Markup.escape(
                _(
                    "This is how {heir} will see their page if your plan is released now, in their "
                    "language. Nobody else sees it, and nothing has been sent."
                )
            ).format(heir=html.bdi(heir["name"])),
            "back": _("Back to your heirs"),
            "title_mark": _("Preview"),
            "lang": i18n.language(),
            "dir": i18n.direction(),
        }
    with html.speaking(request, locale=heir["locale"], time_zone=heir["time_zone"]):
        owner = users.known_as(name=contents["owner_name"], wallet=None)
        sections = [(anchor, _(label)) for anchor, label, key in SECTIONS if contents[key]]  # type: ignore[literal-required]
        sections.append(("share", _("Your share")))
        return html.render(
            "owner/preview.html",
            reader=request,
            title=f"{marks['title_mark']}: " + _("From {owner}").format(owner=owner),
            owner=owner,
            capsule=contents,
            base=request.path.rstrip("/"),
            sections=sections,
            media_words={kind: _(words) for kind, words in capsule_page.MEDIA_WORDS.items()},
            damaged_media={kind: _(words) for kind, words in capsule_page.DAMAGED_MEDIA.items()},
            kind_words=capsule_page.kind_words,
            share_words=capsule_page.share_words,
            share=capsule_page.share(contents["allocation_percentage"]),
            sympathy=False,
            step={"function": None},
            marks=marks,
            owner_gender=contents["owner_gender"],
            heir_gender=heir["grammatical_gender"],
            gender_form=None,  # the heir's own choice is theirs, on their page
        )


def _as_owner(request: web.Request) -> None:
    """The owner's own JSON download handlers read the account from the request: the session's."""
    request[USER_ID] = owner_id(request)


@routes.get(FILES + "/documents/{id}/download")
@docs(
    tags=["pages"],
    summary="A document of the rehearsal: the owner's own download",
    produces=["application/octet-stream"],
)
@owner_page
async def document(request: web.Request) -> web.StreamResponse:
    """The owner's download of their file (GET /api/archive/:id/download), not the heir's."""
    _as_owner(request)
    return await archive_routes.download(request)


@routes.get(FILES + "/messages/{message}/media")
@docs(
    tags=["pages"],
    summary="A letter's media in the rehearsal, as the owner's own file",
    produces=["image/*", "audio/*", "video/*"],
)
@owner_page
async def media(request: web.Request) -> web.StreamResponse:
    ctx = context(request)
    storage = require_storage(request)
    letter = await messages.get_for_owner(
        ctx.pool, ctx.ring, user_id=owner_id(request), raw_id=request.match_info["message"], now=ctx.now()
    )
    if letter["media_id"] is None:
        raise NotFound("Media")
    item = await serving.get_sealed(
        ctx.pool, ctx.ring, user_id=owner_id(request), raw_id=letter["media_id"], now=ctx.now()
    )
    serving.require_available(item=item)
    return await send_file(request, storage, item, inline=True)


@routes.get(FILES + "/export")
@docs(
    tags=["pages"],
    summary="The rehearsal's 'download everything': the owner's own export",
    produces=["text/html"],
)
@owner_page
async def export(request: web.Request) -> web.Response:
    """The heir's "download everything" is, for the owner, their own zip: a GET changes nothing
    (an export is counted and recorded), so this leads to its button on the account page."""
    raise web.HTTPSeeOther(html.carry_language(request, "/plan/account#export"))
