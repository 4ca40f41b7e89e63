"""What every email's words share: times as a person reads them (in the reader's language and
zone, core.text.i18n), the owner as the emails name them, the template's signature, and the
on-chain release in words (the owner's and guardians' emails both say it)."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

from core.text import i18n
from core.text.i18n import N_, _
from models.account import users
from models.delivery.deliveries import Delivery


def when(*, value: Any) -> str:
    """A time as a person reads it: the full date and time in the reader's zone, the zone named
    (core.text.i18n.when: "Friday 27 November 2026, 12:07 UTC" in English with no zone)."""
    if not value:
        # Translators: stands in for a date not yet known, after "by", "on" or "until".
        return _("soon")
    return i18n.when(datetime.fromisoformat(str(value)))


Template = Callable[[Delivery, dict[str, str]], tuple[str, str]]


def owner_name(*, d: Delivery) -> str:
    return users.known_as(name=d["owner_name"], wallet=d["owner_wallet"])


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
_START = r"(^|[.!?\u061f]\s+|\n)([\"\u00ab\u201c\u00bf\u00a1]?)"


def _opening(language: str) -> re.Pattern[str]:
    """Each stand-in in `language`, at a sentence's start (the owner's wallet stand-in up to
    its key: the words before `{wallet}`)."""
    words = [_(s).split("{wallet}")[0] for s in STAND_INS]
    return re.compile(_START + "(" + "|".join(map(re.escape, sorted(words, key=len, reverse=True))) + ")")


def sentence_case(*, text: str) -> str:
    """`text` with every sentence that opens with stand-in words (the owner's: users.known_as,
    "the holder of the Stellar wallet G…"; another person's: "one of your guardians") starting
    with a capital, as the guardian's page does (api/templates/guardian.html `Owner`), in the
    reader's language: the stand-ins are matched as the language writes them, and a script with
    no capitals (Arabic) is left as it is. A name is left exactly as its person wrote it (names
    in a body are wrapped in isolation marks: never at a sentence's start here)."""
    opening = _opening(i18n.language())  # compiled once per language (re's own cache)
    return opening.sub(lambda m: m.group(1) + m.group(2) + m.group(3)[0].upper() + m.group(3)[1:], text)


def they_wrote(*, note: str) -> str:
    """A person's own note, quoted as they wrote it (a guardian's objection, an heir's request)."""
    # Translators: a person's own words quoted; use the quotation marks of your language.
    return _('They wrote: "{note}"').format(note=note)
