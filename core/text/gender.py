"""Grammatical gender: how to refer to a person in the languages that mark it, as that person (or
the owner, for their people) chose, never guessed from a name.

A sentence whose translation agrees with one person (the heir it names "beneficiaria", the owner
whose plan is "خطتها") is written `gendered(msgid, gender)`: the catalog's form for that gender
(`msgctxt "feminine"` / `"masculine"`), else the sentence's own translation, which is written so
that it needs no gender. A person who said nothing (None) or `neutral` reads that one too. Each
such sentence agrees with one person only (its translator comment says whom); where another
person's gender would show in the same sentence, the translation is worded around it.

`make messages` learns which sentences carry a form per gender from the call itself: babel.cfg
extracts Python and templates through `extract_python` and `extract_jinja`, which pass every
other message through as Babel's own extractors find it and give each `gendered(...)` its plain
entry and one `msgctxt` entry per gender. Decisions: docs/pages.md, "Grammatical gender".
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping
from typing import IO, Any

from babel.messages.extract import extract_python as babel_python
from jinja2.ext import babel_extract

from core.errors import BadRequest
from core.text import i18n
from core.text.i18n import N_, _

FEMININE, MASCULINE, NEUTRAL = "feminine", "masculine", "neutral"
# What a person may choose (None: not said). The database's CHECK lists the same three.
GENDERS = (FEMININE, MASCULINE, NEUTRAL)
# The catalogs' contexts: neutral has none, it reads the sentence's own (gender-free) translation.
CONTEXTS = (FEMININE, MASCULINE)
KEYWORD = "gendered"

# What the forms offer (the owner's for themselves and their people, the heir's and the guardian's
# page for themselves), in this order: "" is not said.
CHOICES = (
    ("", N_("Not said")),
    # Translators: how we refer to a person where a language marks gender: your own pronouns in brackets.
    (FEMININE, N_("Feminine (she, her)")),
    # Translators: how we refer to a person where a language marks gender: your own pronouns in brackets.
    (MASCULINE, N_("Masculine (he, him)")),
    # Translators: wording that needs no gender; your language's way of saying it, and its pronoun if any.
    (NEUTRAL, N_("Neutral (they, them)")),
)


def choices() -> list[tuple[str, str]]:
    """The forms' options, in the reader's language."""
    return [(value, _(words)) for value, words in CHOICES]


NOT_A_CHOICE = N_("That is not one of the choices offered: go back and pick one from the list.")


def posted(value: str | None) -> str | None:
    """A page form's choice as stored: nothing chosen (not said) is None; anything but the
    choices is a 400 in words (the JSON API's schemas say it their own way)."""
    if not value:
        return None
    if value not in GENDERS:
        raise BadRequest(NOT_A_CHOICE)
    return value


def gendered(message: str, gender: str | None) -> str:
    """`message` in the reader's language, agreeing with a person of this `gender`: the catalog's
    form for it when the language has one, else the translation that needs no gender (also for
    None and neutral). English needs none: the msgid itself."""
    if not message:
        return message
    catalog = i18n.translations(i18n.language())
    if gender in CONTEXTS:
        found = catalog.pgettext(gender, message)
        if found != message:  # gettext answers a missing entry with the msgid itself
            return found
    return catalog.gettext(message)


_Result = tuple[int, str, Any, list[str]]
# Babel's and Jinja's extractors, whose signatures differ in their annotations, not in use.
_Extractor = Callable[..., Iterator[Any]]


def _with_contexts(results: Iterator[_Result]) -> Iterator[_Result]:
    """Babel's results as found, each `gendered(msgid, …)` as its plain entry (read as `_`) and one
    `pgettext` entry per context, with a word for the translator on each."""
    for lineno, funcname, messages, comments in results:
        if funcname != KEYWORD:
            yield lineno, funcname, messages, comments
            continue
        message = messages[0] if isinstance(messages, tuple | list) else messages
        if not isinstance(message, str):
            continue  # not a literal: nothing a catalog could carry
        yield (
            lineno,
            "_",
            message,
            [*comments, "Also given per gender (feminine, masculine): word this one so it needs no gender."],
        )
        for context in CONTEXTS:
            yield lineno, "pgettext", (context, message), [*comments, f"Said of a person who is {context}."]


def _extract(
    extractor: _Extractor, fileobj: IO[bytes], keywords: Collection[str], *args: Any
) -> Iterator[_Result]:
    return _with_contexts(extractor(fileobj, [*keywords, KEYWORD], *args))


def extract_python(
    fileobj: IO[bytes], keywords: Collection[str], comment_tags: Collection[str], options: Mapping[str, Any]
) -> Iterator[_Result]:
    """babel.cfg's extraction method for Python: Babel's own, and the gendered sentences' contexts."""
    return _extract(babel_python, fileobj, keywords, comment_tags, options)


def extract_jinja(
    fileobj: IO[bytes], keywords: Collection[str], comment_tags: Collection[str], options: Mapping[str, Any]
) -> Iterator[_Result]:
    """babel.cfg's extraction method for the templates: Jinja's own, and the gendered sentences'."""
    return _extract(babel_extract, fileobj, keywords, comment_tags, options)
