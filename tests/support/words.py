"""Reading a page or an email for its words, as several suites do: the machine words a sentence
for people must not carry (a route, a field name, an ISO timestamp, None, a placeholder), the
words a page shows or reads aloud, the text a reader sees, and a page read in the
pseudo-language for any string never marked for translation (tests/i18n_helpers.py).

One scan shared by the emails', the pages' and the languages' tests, so a word allowed or
caught is allowed or caught everywhere alike.
"""

from __future__ import annotations

import html
import re
from typing import Any

from api.html import LANGUAGE_NAMES
from tests.i18n_helpers import PSEUDO, ascii_words, pseudo

# What a machine wrote, and what it is.
MACHINE = [
    (re.compile(r"/api/"), "a route"),
    (re.compile(r"\b(?:GET|POST|PATCH|PUT|DELETE) /"), "a route"),
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}"), "an ISO timestamp"),
    (re.compile(r"\b(?:None|null|undefined|NaN)\b"), "None/null"),
    (re.compile(r"\{\{|\}\}|\{%|%\}|\{[A-Za-z_]+\}|%\(|%s\b"), "a template placeholder"),
    (re.compile(r"\b[a-z]+[A-Z][A-Za-z]*\b"), "a camelCase field name"),
    (re.compile(r"\b[a-z]+_[a-z_]+\b"), "a snake_case field name"),
]


URL = re.compile(r"https?://\S+")


# Names people write that look like a machine's: a wallet app's own spelling.
MACHINE_LOOKING_NAMES = {"xBull"}


def machine_words(text: str) -> list[str]:
    """Each machine word in `text` (links are the recipient's to follow and are left out)."""
    words = URL.sub(" ", text)
    found = [(what, m.group(0)) for pattern, what in MACHINE for m in pattern.finditer(words)]
    return [f"{what}: {word!r}" for what, word in found if word not in MACHINE_LOOKING_NAMES]


def page_words(page: str) -> str:
    """The words a page shows or reads aloud: its title and body with the labels, alternative
    texts and placeholders in its tags; scripts, styles, a QR code and a transaction to copy (a
    textarea's contents: data, not a sentence) left out."""
    page = re.sub(r"<(script|style|svg|textarea)\b.*?</\1>", " ", page, flags=re.S)
    said = re.findall(r'\b(?:aria-label|alt|title|placeholder)="([^"]*)"', page)
    return html.unescape(" ".join([re.sub(r"<[^>]+>", " ", page), *said]))


def assert_plain(text: str, where: str) -> None:
    found = machine_words(text)
    assert not found, f"{where}: {found}\n{text}"


# What a page shows that the service did not write: the journeys' names, the languages' own names.
JOURNEY_NAMES = [
    "Olive Owner",
    *(f"Guardian {i}" for i in range(4)),
    *(f"Heir {i}" for i in range(4)),
    "daughter",
    *LANGUAGE_NAMES.values(),
]


async def assert_marked(
    client: Any, path: str, *, status: int = 200, allowed: list[str] = JOURNEY_NAMES
) -> None:
    """The page at `path` read in the pseudo-language leaves no plain word: every string on it
    went through gettext (tests/i18n_helpers.py)."""
    with pseudo():
        resp = await client.get(f"{path}{'&' if '?' in path else '?'}lang={PSEUDO}")
        text = await resp.text()
    assert resp.status == status, (path, resp.status, text[:300])
    left = ascii_words(page_words(text), allowed=allowed)
    assert not left, f"{path}, never marked: {sorted(set(left))}"


def visible_text(markup: str) -> str:
    """The words a reader sees: tags dropped, entities decoded, whitespace collapsed."""
    markup = re.sub(r"</?bdi>", "", markup)  # a name's isolation sits inside a word ("Olive Owner's")
    words = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", markup)).split())
    return re.sub(r" ([.,;:])", r"\1", words)  # "…</time>." reads as "….", not "… ."
