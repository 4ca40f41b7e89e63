"""A translation that would break a page or an email when it is used, checked for each entry a
catalog has translated (tests/test_translations.py's placeholder check sits in a test that fails
while strings await translation, so it hides these).

The pages trust a translation as HTML (Jinja's newstyle gettext marks it safe and %-formats a
`{% trans %}` block's variables into it; autoescaped variables, the catalog's own words as they
are), and the Python side formats `{name}` placeholders with str.format. So a translation must:
- format with its msgid's own placeholders: a bare `%` in a page's string, or a stray brace in a
  Python one, is a 500 on the page that shows it (or an email that never renders);
- keep its msgid's markup exactly (`<a href="%(href)s">`, `<time …>`, `<bdi>` come from the
  msgid), adding none and dropping none;
- in a string the pages put inside an attribute (aria-label, the passkey script's words, a
  photo's alt), hold no `"`, `<` or `&`: it would end the attribute or start markup.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

from core.text import i18n

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "api" / "templates"
MARKUP = re.compile(r"<[^>]*>|&[#\w]+;")
BRACES = re.compile(r"\{[A-Za-z_]+\}")
LANGUAGES = [language for language in i18n.SHIPPED if language != i18n.SOURCE]


def _attribute_msgids() -> set[str]:
    """The msgids a template writes inside an attribute's quotes."""
    found: set[str] = set()
    for template in TEMPLATES.glob("*.html"):
        text = template.read_text()
        found |= {m[1] for m in re.findall(r'[a-z-]+="\{\{ _\((["\'])(.*?)\1\) \}\}"', text)}
        for value in re.findall(r'[a-z-]+="([^"]*\{% trans .*?)">', text):
            for body in re.findall(r"\{% trans [^%]*%\}(.*?)\{% endtrans %\}", value):
                found.add(re.sub(r"\{\{ (\w+) \}\}", r"%(\1)s", body))
    return found


ATTRIBUTES = _attribute_msgids()


def _entries(language: str) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    with (ROOT / "core" / "text" / "locale" / i18n.catalog_path(language)).open("rb") as f:
        catalog = read_po(f, locale=i18n.babel_id(language))
    entries = []
    for m in catalog:
        if not m.id or m.fuzzy:
            continue
        ids = tuple(m.id) if isinstance(m.id, (tuple, list)) else (m.id,)
        strings = tuple(s for s in (m.string if isinstance(m.string, (tuple, list)) else (m.string,)) if s)
        entries.append((ids, strings))
    return entries


def problems_of(ids: tuple[str, ...], translation: str) -> list[str]:
    found = []
    if any("%(" in i or "%%" in i for i in ids):
        try:
            translation % defaultdict(lambda: "x")
        except (ValueError, TypeError, KeyError) as exc:
            found.append(f"does not %-format ({exc})")
    if any(BRACES.search(i) for i in ids):
        try:
            translation.format_map(defaultdict(lambda: "x"))
        except (ValueError, IndexError, KeyError) as exc:
            found.append(f"does not format ({exc})")
    if sorted(MARKUP.findall(translation)) != sorted(MARKUP.findall(ids[0])):
        found.append("markup differs from the msgid's")
    if ids[0] in ATTRIBUTES and re.search(r'["<&]', translation):
        found.append('holds " < or & inside an attribute')
    return found


def test_the_checks_catch_what_they_are_for() -> None:
    assert "%(title)s, from %(owner)s" in ATTRIBUTES and "Languages" in ATTRIBUTES
    assert problems_of(("%(n)s of 60 %%",), "%(n)s de 60 %")  # a bare percent sign
    assert problems_of(("{count} letters",), "{count} cartas}")
    assert problems_of(('<a href="%(href)s">Go back</a>',), "Volver")
    assert problems_of(("Languages",), '"Sprachen"')
    assert not problems_of(
        ('<a href="%(href)s">Go back</a> and 60 %%',), '<a href="%(href)s">Volver</a>, 60 %%'
    )


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_translation_renders_where_it_is_used(language: str) -> None:
    problems = [
        f"{ids[0]!r} -> {translation!r}: {problem}"
        for ids, strings in _entries(language)
        for translation in strings
        for problem in problems_of(ids, translation)
    ]
    assert not problems, f"{language}: {len(problems)} problems:\n" + "\n".join(problems[:30])
