"""`/plan/messages`: the owner's letters, each change the JSON route's own model call
(`/api/messages`: write, change, delete), the form read by the route's schema. Each letter says
who reads it and when, in words; a photo, a recording or a video is one of the owner's archive
files (`mediaId`), uploaded from this page through the archive page's form (api/owner/contents/archive.py).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from typing import Any

from aiohttp import web
from aiohttp_apigami import docs
from multidict import MultiDict

from api import html
from api.contents.schemas import MessageCreateSchema
from api.keys import context
from api.owner.contents import archive, audience
from api.owner.forms import FormState, load, refused
from api.owner.plan_pages import DONE, done, owner_id, posted, show
from api.owner.session import owner_page
from core.errors import BadRequest, Conflict
from core.text import i18n
from core.text.i18n import N_, _, ngettext
from models import plans
from models.archive import items
from models.contents import messages
from models.contents.messages import Message, ReleaseRule
from models.plan import contents_pages

routes = web.RouteTableDef()

LETTERS = "/plan/messages"
LETTER = "/plan/messages/{id}"
KIND = "releaseRule.kind"
VALUE = "releaseRule.value"
REMOVED = N_("Nobody will ever read it. This cannot be undone.")
DONE.update(
    {
        "letter-added": N_(
            "Your letter was saved. Only the heirs it is for can read it, and only when you chose."
        ),
        "letter-saved": N_("Your changes to this letter were saved."),
        "letter-removed": N_("The letter was deleted."),
        "media-added": N_("The file was stored: it is being sealed, then you can add it to a letter below."),
    }
)
MEDIA_WORDS = {
    "photo": N_("With a photo: {title}."),
    "video": N_("With a video: {title}."),
    "voice": N_("With a voice recording: {title}."),
}


def rule_words(rule: ReleaseRule) -> str:
    """When its heirs can read it, in a sentence (the capsule's rule: models.contents.messages.opens_at)."""
    value = rule["value"]
    if rule["kind"] == "on_date" and isinstance(value, date):
        return _("They can read it from {day}, or from the release if that comes later.").format(
            day=i18n.day(datetime.combine(value, time(0), tzinfo=UTC))
        )
    if rule["kind"] == "after_release" and isinstance(value, int):
        return ngettext(
            "They can read it {count} day after your plan is released; until then they see only its "
            "title and the day it opens.",
            "They can read it {count} days after your plan is released; until then they see only its "
            "title and the day it opens.",
            value,
        ).format(count=i18n.number(value))
    return _("They can read it as soon as your plan is released.")


def _picked(form: MultiDict[str]) -> MultiDict[str]:
    """The release rule's value from the field of the kind chosen: the form has a date field and a
    days field, both named `releaseRule.value` (the date first); the other one is left out."""
    read = audience.chosen(form)
    values = read.popall(VALUE, [])
    kind = read.get(KIND, "")
    if kind == "on_date" and values:
        read.add(VALUE, values[0])
    elif kind == "after_release" and values:
        read.add(VALUE, values[-1])
    return read


def _wire(letter: Message) -> dict[str, Any]:
    rule, value = letter["release_rule"], letter["release_rule"]["value"]
    return {
        "title": letter["title"],
        "content": letter["content"],
        KIND: rule["kind"],
        VALUE: value.isoformat() if isinstance(value, date) else value,
        "mediaId": letter["media_id"],
        **audience.wire(letter["audience"]),
    }


def _media(documents: list[items.ArchiveItem]) -> list[items.ArchiveItem]:
    return [item for item in documents if item["type"] in items.MESSAGE_MEDIA_TYPES]


async def _page(request: web.Request, template: str, form: FormState | None, **extra: Any) -> web.Response:
    ctx = context(request)
    view = await contents_pages.letters(ctx.pool, ctx.ring, user_id=owner_id(request), now=ctx.now())
    heirs, media = view["heirs"], _media(view["documents"])
    titles = {item["id"]: item for item in media}
    with html.speaking(request):
        listed = [
            {
                "letter": letter,
                "who": audience.words(letter["audience"], heirs),
                "when": rule_words(letter["release_rule"]),
                "media": _(MEDIA_WORDS[titles[letter["media_id"]]["type"]]).format(
                    title=titles[letter["media_id"]]["title"]
                )
                if letter["media_id"] in titles
                else None,
            }
            for letter in view["messages"][::-1]
        ]
    letter = extra.get("letter")
    shown = (
        form
        if form is not None
        else FormState.of(_wire(letter) if letter else {audience.ALL: "true", KIND: "on_release"})
    )
    return show(
        request,
        template,
        listed=listed,
        media_choices=[(item["id"], item["title"]) for item in media],
        upload_limit=archive.upload_limit(request),
        heirs=heirs,
        media=media,
        open=view["status"] != plans.RELEASED,
        form=shown,
        **extra,
    )


@routes.get(LETTERS)
@docs(tags=["pages"], summary="The owner's letters, and a form to write one", produces=["text/html"])
@owner_page
async def letters_page(request: web.Request) -> web.Response:
    return await _page(request, "owner/messages.html", None, title=N_("Your letters"))


@routes.post(LETTERS)
@docs(tags=["pages"], summary="Write a letter (the form of /plan/messages)", produces=["text/html"])
@owner_page
async def add_letter(request: web.Request) -> web.Response:
    ctx = context(request)
    data, form = load(MessageCreateSchema(), _picked(await posted(request)))
    if data is not None:
        try:
            await messages.create(ctx.pool, ctx.ring, user_id=owner_id(request), data=data)
        except (BadRequest, Conflict) as error:
            refused(form, error)
        else:
            done(request, LETTERS, "letter-added")
    return await _page(request, "owner/messages.html", form, title=N_("Your letters"), status=422)


async def _letter(request: web.Request) -> Message:
    ctx = context(request)
    return await messages.get_for_owner(
        ctx.pool, ctx.ring, user_id=owner_id(request), raw_id=request.match_info["id"], now=ctx.now()
    )


@routes.get(LETTER)
@docs(tags=["pages"], summary="Change a letter", produces=["text/html"])
@owner_page
async def letter_page(request: web.Request) -> web.Response:
    letter = await _letter(request)
    return await _page(request, "owner/message_edit.html", None, title=N_("Change a letter"), letter=letter)


@routes.post(LETTER)
@docs(tags=["pages"], summary="Save a letter", produces=["text/html"])
@owner_page
async def change_letter(request: web.Request) -> web.Response:
    """Every field is on the form, so it is read as a whole letter (the create schema); the model
    changes only what differs, as a PATCH."""
    ctx = context(request)
    letter = await _letter(request)
    changes, form = load(MessageCreateSchema(), _picked(await posted(request)))
    if changes is not None:
        changes.setdefault("media_id", None)  # "none" chosen: the letter carries no file
        try:
            await messages.update(
                ctx.pool, ctx.ring, user_id=owner_id(request), raw_id=letter["id"], changes=changes
            )
        except (BadRequest, Conflict) as error:
            refused(form, error)
        else:
            done(request, LETTERS, "letter-saved")
    return await _page(
        request, "owner/message_edit.html", form, title=N_("Change a letter"), letter=letter, status=422
    )


@routes.get(LETTER + "/remove")
@docs(tags=["pages"], summary="Confirm deleting a letter", produces=["text/html"])
@owner_page
async def remove_letter_page(request: web.Request) -> web.Response:
    """The confirmation step: a GET shows it and changes nothing."""
    letter = await _letter(request)
    return show(
        request,
        "owner/remove.html",
        title=N_("Delete a letter"),
        name=letter["title"] or _("your letter without a title"),
        consequence=REMOVED,
        action=f"{LETTERS}/{letter['id']}/remove",
        back=LETTERS,
        back_words=N_("Your letters"),
    )


@routes.post(LETTER + "/remove")
@docs(tags=["pages"], summary="Delete a letter", produces=["text/html"])
@owner_page
async def remove_letter(request: web.Request) -> web.Response:
    ctx = context(request)
    await messages.delete(ctx.pool, user_id=owner_id(request), raw_id=request.match_info["id"])
    done(request, LETTERS, "letter-removed")
