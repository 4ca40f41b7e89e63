"""Reading rendered text for English left behind.

Two checks, for two questions:
- `pseudo()` speaks a pseudo-language whose every translated string comes out in accented
  look-alike letters ("Ýöûŕ ļîñķ"), so any plain ASCII word left in a rendering (`ascii_words`)
  never went through gettext: a string for people that is not marked.
- `english_words` finds English function words ("the", "your", "please") in a real language's
  rendering: a marked string whose translation is missing.
Names, addresses, links and wallet keys are the caller's to pass in `allowed`; they are not words
the service wrote.
"""

from __future__ import annotations

import gettext
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from unittest import mock

from babel import Locale

from core.text import i18n

PSEUDO = "en-XA"
_PLAIN = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_ACCENTED = "åƀçđéƒĝĥîĵķļɱñöþǫŕšŧûṽŵẋýžÅƁÇĐÉƑĜĤÎĴĶĻṀÑÖÞǪŔŠŦÛṼŴẊÝŽ"
_TABLE = str.maketrans(_PLAIN, _ACCENTED)
# What a translation must keep as it is: placeholders, markup, entities, links.
_KEEP = re.compile(r"\{[^{}]*\}|%\([^)]*\)[sd]|%[sd]|<[^>]*>|&[#\w]+;|https?://\S+")


def pseudo_text(message: str) -> str:
    parts, last = [], 0
    for kept in _KEEP.finditer(message):
        parts.append(message[last : kept.start()].translate(_TABLE))
        parts.append(kept.group(0))
        last = kept.end()
    parts.append(message[last:].translate(_TABLE))
    return "".join(parts)


class PseudoTranslations(gettext.NullTranslations):
    def gettext(self, message: str) -> str:
        return pseudo_text(message)

    def ngettext(self, msgid1: str, msgid2: str, n: int) -> str:
        return pseudo_text(msgid1 if n == 1 else msgid2)


@contextmanager
def pseudo() -> Iterator[None]:
    """The pseudo-language is supported and has its catalog while the block runs."""
    real = i18n.translations

    def translations(language: str) -> gettext.NullTranslations:
        return PseudoTranslations() if language == PSEUDO else real(language)

    with (
        mock.patch.object(i18n, "translations", translations),
        mock.patch.object(i18n, "_languages", (*i18n.supported(), PSEUDO)),
    ):
        yield


# CLDR's own English words for a date in the pseudo-language (Babel writes it in English).
_CLDR = {
    word
    for names in (Locale.parse("en").days["format"]["wide"], Locale.parse("en").months["format"]["wide"])
    for word in names.values()
} | {"UTC", "AM", "PM"}
_WORD = re.compile(r"[A-Za-z]{2,}")
_LINK = re.compile(r"https?://\S+|\b[\w.+-]+@[\w-]+\.[\w.-]+\b|\bG[A-Z2-7]{55}\b|\bC[A-Z2-7]{55}\b")


def _without(text: str, allowed: Iterable[str]) -> str:
    text = _LINK.sub(" ", text)
    for value in sorted((a for a in allowed if a), key=len, reverse=True):
        text = text.replace(value, " ")
    return text


def ascii_words(text: str, *, allowed: Iterable[str] = ()) -> list[str]:
    """Plain ASCII words in a pseudo-language rendering: strings that were never marked."""
    return [w for w in _WORD.findall(_without(text, allowed)) if w not in _CLDR]


# English words no shipped language writes as a word of its own (not "was"/"will" (German), not
# "has" (Spanish), not "for" (Portuguese)).
ENGLISH = frozenset(
    [
        "the",
        "you",
        "your",
        "and",
        "please",
        "this",
        "with",
        "have",
        "were",
        "are",
        "our",
        "been",
        "what",
        "when",
        "who",
        "from",
        "that",
        "of",
        "to",
        "we",
        "it",
        "is",
        "wallet",
    ]
)


def english_words(text: str, *, allowed: Iterable[str] = ()) -> list[str]:
    """English function words in a real language's rendering: a translation that is missing."""
    return [w for w in re.findall(r"[A-Za-z]+", _without(text, allowed)) if w.lower() in ENGLISH]
