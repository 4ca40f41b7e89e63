"""What the owner's plan pages share (`/plan`, `/plan/heirs`, `/plan/guardians`): the page in
the owner's language, the form read as posted, and the answer to a change made (303 back to the
list, which says in a sentence what was done: a reload never repeats it).
"""

from __future__ import annotations

from decimal import Decimal
from functools import cache
from typing import Any, NoReturn
from zoneinfo import available_timezones

from aiohttp import web
from multidict import MultiDict

from api import html
from api.owner import session
from api.owner.session import owner_session
from core.errors import BadRequest
from core.text import i18n
from core.text.i18n import N_, _
from models.contents.guardians import Guardian

# What a change made says on the page it comes back to (`?done=`): words, never a name typed.
DONE = {
    "heir-added": N_("The heir was added."),
    "heir-saved": N_("Your changes to this heir were saved."),
    "heir-removed": N_("The heir was removed."),
    "heir-asked": N_("We emailed them a short note asking them to confirm their address."),
    "heir-asked-later": N_(
        "Your note asking them to confirm their address goes out within a day: your account has sent "
        "as many emails to the people you named as it may today."
    ),
    "heir-new-link": N_("They have a new link: the old one opens nothing from now on."),
    "guardian-added": N_("The guardian was added, and we emailed them an invitation."),
    # An owner with no name yet: the invitation would not say whose plan it is, so it waits.
    "guardian-waiting": N_(
        "The guardian is saved. Their invitation goes as soon as your name is on your account."
    ),
    "guardian-saved": N_("Your changes to this guardian were saved."),
    "guardian-removed": N_("The guardian was removed."),
    "guardian-invited": N_("We emailed them a new invitation: their old link opens nothing from now on."),
    "checked-in": N_("You checked in. Thank you: your plan stays as it is."),
    "checked-in-stopped": N_(
        "You checked in: the release is stopped, your plan is active again, and your guardians are told "
        "it was a false alarm."
    ),
    "settings-saved": N_("Your plan's rules were saved."),
    "activated": N_("Your plan is active."),
    "not-ready": N_(
        "Your plan could not be activated yet: each reason is listed below, with the page that fixes it."
    ),
    "not-active": N_("Only an active plan can be returned to a draft."),
    "deactivated": N_("Your plan is a draft again: nothing happens until you activate it."),
}


def owner_id(request: web.Request) -> str:
    return owner_session(request).user_id


def show(
    request: web.Request, template: str, *, title: str, status: int = 200, **context: Any
) -> web.Response:
    """An owner page (`session.render`: in the owner's language and zone unless the picker chose
    another, with the form token and the Sign out button) under its `title` (marked, said here),
    saying what a change just did."""
    said = DONE.get(request.query.get("done", "")) if request.method == "GET" else None
    with html.speaking(request):
        return session.render(
            template,
            request=request,
            status=status,
            title=_(title),
            done=_(said) if said else None,
            day=i18n.day,
            language_names=html.LANGUAGE_NAMES,
            **context,
        )


def done(request: web.Request, path: str, what: str) -> NoReturn:
    """303 to `path`, which then says `DONE[what]`, in the language the page was read in, shown
    at its sentence (`#done`: a form posted from the foot of a long list would otherwise come
    back scrolled there, the browser keeping the form's `#add`)."""
    raise web.HTTPSeeOther(html.carry_language(request, f"{path}?done={what}") + "#done")


async def posted(request: web.Request) -> MultiDict[str]:
    """The page's form as posted, every repeated name kept (a list is the same name repeated);
    anything but a form's text is a 400 page, never a 500."""
    if request.content_type != html.FORM:
        raise BadRequest("This did not come from the page's form: open the page again and use its form.")
    try:
        form = await request.post()
    except (UnicodeDecodeError, ValueError):
        raise BadRequest("The form's text could not be read") from None
    fields: MultiDict[str] = MultiDict((key, value) for key, value in form.items() if isinstance(value, str))
    if any("\x00" in value for value in fields.values()):
        raise BadRequest("The form's text could not be read")
    return fields


def share(value: Decimal) -> str:
    """A share as the form shows it again: 25, 12.5, 33.33 (either decimal sign is read back)."""
    return format(Decimal(value).normalize(), "f")


def language_choices() -> list[tuple[str, str]]:
    """Each shipped language, named in its own words (the pages' picker's names)."""
    return [(tag, html.LANGUAGE_NAMES[tag]) for tag in i18n.supported() if tag in html.LANGUAGE_NAMES]


@cache
def _zones() -> tuple[str, ...]:
    return tuple(sorted(zone for zone in available_timezones() if i18n.zone_problem(zone) is None))


def zone_choices() -> list[tuple[str, str]]:
    """Every time zone a person may record, as its place reads ("America/Sao Paulo"), after
    "not chosen" (their emails then give times in UTC, and say so)."""
    return [("", _("Not chosen: times in UTC")), *((zone, zone.replace("_", " ")) for zone in _zones())]


def answer(guardian: Guardian) -> str:
    """What a guardian has answered to their invitation, in a sentence."""
    if guardian["accepted_at"] is not None:
        return _("Accepted on {day}.").format(day=i18n.day(guardian["accepted_at"]))
    if guardian["declined_at"] is not None:
        return _("Declined on {day}.").format(day=i18n.day(guardian["declined_at"]))
    if guardian["invited_at"] is None:
        return _("Not invited yet: the invitation goes as soon as your name is on your account.")
    return _("Invited on {day}; no answer yet.").format(day=i18n.day(guardian["invited_at"]))
