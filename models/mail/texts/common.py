"""What every email's words share: the declaration of a kind (`Kind`), the Jinja environment its
template is written for (`environment`: times as a person reads them, in the reader's language
and zone, core.text.i18n), the owner as the emails name them, and sentences that open with a
stand-in written with a capital. The words are markup (`_`, `ngettext` and `gendered` of
core.text.markup: translated, escaped, ready for a `<bdi>` name or a link)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import jinja2
from markupsafe import Markup

from core.text import i18n, markup
from core.text.i18n import N_
from core.text.markup import _, escaped
from models import address_links
from models.account import users
from models.delivery.deliveries import Delivery


def environment() -> jinja2.Environment:
    """The emails' Jinja environment, over models/mail/templates/: the pages' settings
    (core.text.markup), with `_`, `ngettext` and `gendered` giving the translated sentence as
    markup, as in Python (so `.format()` escapes what it is given and keeps a `<bdi>` name or a
    link), and what the kinds' templates choose with: the stand-ins for a person the email
    cannot name, times and sizes as a person reads them, and the sentences the pages share about
    an heir's address (models.address_links)."""
    env = markup.environment(jinja2.PackageLoader("models.mail", "templates"))
    env.globals.update(
        _=_,
        ngettext=markup.ngettext,
        gendered=markup.gendered,
        uncorrectable=address_links.uncorrectable,
        unreachable=address_links.unreachable,
        **{name: globals()[name] for name in _STAND_IN_NAMES},
    )
    env.filters.update(moment=_moment, day=_day, megabytes=i18n.megabytes)
    return env


def _moment(value: Any) -> str:
    """A time stored in a row's context (ISO 8601), in full in the reader's language and zone."""
    return i18n.when(datetime.fromisoformat(str(value)))


def _day(value: Any) -> str:
    """A stored time's day, in the reader's language."""
    return i18n.day(datetime.fromisoformat(str(value)))


# Who an email is to (the outbox row's recipient_type).
OWNER, GUARDIAN, HEIR = "owner", "guardian", "beneficiary"


@dataclass(frozen=True)
class Kind:
    """One email kind, all of it in one place: the template of its words (its path under
    models/mail/templates/, `kinds/<kind>.html`), who it is to, the links its words use and the
    paragraphs that follow them (models/mail/emails.py builds each by its name: `LINKS`,
    `FOOTERS`). A link or footer that does not apply to a row (no web client, a recipient who
    answered already, an email without a check-in link) is left out for it.

    The template sets `subject` and `body`, both markup (paragraphs separated by a blank line),
    from the row `d` (every name already in `<bdi>`), its context `ctx`, the owner as the emails
    name them (`owner`) and the `links` it names (each already an `<a>`)."""

    template: str
    audience: tuple[str, ...]
    links: tuple[str, ...] = ()
    footers: tuple[str, ...] = ()


def owner_name(*, d: Delivery) -> Markup:
    """The owner as the emails name them: their name (isolated), or the words standing in."""
    name = d["owner_name"]
    if isinstance(name, Markup):
        return name
    return escaped(users.known_as(name=name, wallet=d["owner_wallet"]))


# The words that stand in for a person the email cannot name, lower-case for the middle of a
# sentence; sentence_case capitalises them where they open one (a translation the same way: an
# email that opens a sentence with one writes its first letter as a capital). The owner's are
# users.STAND_INS.
# (Each translator comment below says the same: the catalog shows it beside each stand-in.)
# Translators: stands in for a name, in any sentence and grammatical case; lower-case.
ONE_OF_YOUR_GUARDIANS = N_("one of your guardians")
# Translators: stands in for a name, in any sentence and grammatical case; lower-case.
ONE_OF_YOUR_BENEFICIARIES = N_("one of your beneficiaries")
# Translators: stands in for a name, in any sentence and grammatical case; lower-case.
ONE_OF_THE_GUARDIANS = N_("one of the guardians")
# Translators: stands in for a name, in any sentence and grammatical case; lower-case.
ANOTHER_GUARDIAN = N_("another guardian")
# Translators: stands in for a name, in any sentence and grammatical case; lower-case.
ONE_OF_THE_BENEFICIARIES = N_("one of the beneficiaries")
# Translators: stands in for a name, in any sentence and grammatical case; lower-case.
ONE_OF_THE_PEOPLE_THEY_NAMED = N_("one of the people they named")
_STAND_IN_NAMES = (
    "ONE_OF_YOUR_GUARDIANS",
    "ONE_OF_YOUR_BENEFICIARIES",
    "ONE_OF_THE_GUARDIANS",
    "ANOTHER_GUARDIAN",
    "ONE_OF_THE_BENEFICIARIES",
    "ONE_OF_THE_PEOPLE_THEY_NAMED",
)
STAND_INS = (
    *users.STAND_INS,
    ONE_OF_YOUR_GUARDIANS,
    ONE_OF_YOUR_BENEFICIARIES,
    ONE_OF_THE_GUARDIANS,
    ANOTHER_GUARDIAN,
    ONE_OF_THE_BENEFICIARIES,
    ONE_OF_THE_PEOPLE_THEY_NAMED,
)
# Where a sentence starts: the text's start, a new line, or after a sentence's end in any
# shipped language (Arabic's question mark included), past an opening quote or Spanish's
# inverted marks.
# (The text is markup: a straight quote is escaped.)
_START = r"(^|[.!?\u061f]\s+|\n)((?:&#34;|[\u00ab\u201c\u00bf\u00a1])?)"


def _opening(language: str) -> re.Pattern[str]:
    """Each stand-in in `language`, at a sentence's start (the owner's wallet stand-in up to
    its key: the words before `{wallet}`), as markup writes it."""
    words = [str(_(s)).split("{wallet}")[0] for s in STAND_INS]
    return re.compile(_START + "(" + "|".join(map(re.escape, sorted(words, key=len, reverse=True))) + ")")


def sentence_case(*, text: Markup) -> Markup:
    """`text` with every sentence that opens with stand-in words (the owner's: users.known_as,
    "the holder of the Stellar wallet G…"; another person's: "one of your guardians") starting
    with a capital, as the guardian's page does (api/templates/guardian.html `Owner`), in the
    reader's language: the stand-ins are matched as the language writes them, and a script with
    no capitals (Arabic) is left as it is. A name is left exactly as its person wrote it (names
    are in `<bdi>`: never at a sentence's start here)."""
    opening = _opening(i18n.language())  # compiled once per language (re's own cache)
    text = escaped(text)  # (markup already: unchanged)
    capitalised = opening.sub(lambda m: m[1] + m[2] + m[3][0].upper() + m[3][1:], text)
    return Markup(capitalised)  # noqa: S704 - the same markup, one letter made a capital
