"""The catalogs: every string marked for people is translated in every shipped language, none
fuzzy, every placeholder kept, plural forms as the language has them; and the reader's language
and zone as the rest of the service reads them (core/text/i18n.py). docs/translations.md."""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

from core.text import i18n

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = [language for language in i18n.SHIPPED if language != i18n.SOURCE]
PLACEHOLDER = re.compile(r"\{[A-Za-z_]*\}|%\([A-Za-z_]+\)[sd]")


@pytest.fixture(scope="module")
def extracted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """What `make messages` extracts now, by msgid."""
    pot = tmp_path_factory.mktemp("pot") / "messages.pot"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "babel.messages.frontend",
            "-q",
            "extract",
            "-F",
            "babel.cfg",
            "-k",
            "N_",
            "--no-location",
            "-o",
            str(pot),
            ".",
        ],
        cwd=ROOT,
        check=True,
    )
    with pot.open("rb") as f:
        return {_key(m): m for m in read_po(f) if m.id}


def _key(message) -> tuple[str | None, str]:
    """An entry by its context (a gendered sentence's `feminine` / `masculine`) and its msgid."""
    return message.context, message.id if isinstance(message.id, str) else message.id[0]


def catalog(language: str):
    with (ROOT / "core" / "text" / "locale" / i18n.catalog_path(language)).open("rb") as f:
        return read_po(f, locale=i18n.babel_id(language))


@pytest.mark.parametrize("language", SHIPPED)
def test_every_marked_string_is_translated(language: str, extracted: dict[str, object]) -> None:
    po = catalog(language)
    entries = {_key(m): m for m in po if m.id}
    missing = sorted(set(extracted) - set(entries))
    assert not missing, f"{language}: not in the catalog (run `make messages`): {missing[:10]}"
    stale = sorted(set(entries) - set(extracted))
    assert not stale, f"{language}: no longer marked anywhere (run `make messages`): {stale[:10]}"
    problems = []
    for key, m in entries.items():
        strings = list(m.string) if isinstance(m.string, (tuple, list)) else [m.string]
        if m.fuzzy:
            problems.append(f"fuzzy: {key!r}")
        if not all(strings):
            problems.append(f"untranslated: {key!r}")
            continue
        wanted = set(PLACEHOLDER.findall(" ".join(m.id if isinstance(m.id, (tuple, list)) else [m.id])))
        for s in strings:
            if set(PLACEHOLDER.findall(s)) - wanted or not set(PLACEHOLDER.findall(s)) >= (
                wanted - {"{count}", "%(count)s", "%(num)s"}
            ):
                problems.append(f"placeholders differ: {key!r} -> {s!r}")
    assert not problems, f"{language}: {len(problems)} problems:\n" + "\n".join(problems[:30])


def test_arabic_has_six_plural_forms() -> None:
    po = catalog("ar")
    assert po.num_plurals == 6
    plurals = [m for m in po if isinstance(m.id, (tuple, list))]
    assert all(len(m.string) == 6 for m in plurals)


def test_time_in_the_readers_zone_with_the_zone_named() -> None:
    moment = datetime(2026, 11, 27, 12, 7, tzinfo=UTC)
    with i18n.speaking("en"):
        assert i18n.when(moment) == "Friday 27 November 2026, 12:07 UTC"
    with i18n.speaking("en", "Europe/Madrid"):
        assert i18n.when(moment) == "Friday 27 November 2026, 13:07 Madrid time"
    with i18n.speaking("es", "Europe/Madrid"):
        spanish = i18n.when(moment)
    assert "13:07" in spanish and "Madrid" in spanish and "noviembre" in spanish
    with i18n.speaking("pt-BR", "America/Sao_Paulo"):
        brazilian = i18n.when(moment)
    assert "09:07" in brazilian and "São Paulo" in brazilian and "novembro" in brazilian


def test_a_zone_with_no_place_is_named_by_its_offset() -> None:
    """Etc/GMT+5 is five hours behind UTC (POSIX's sign): named as a city would be, it read
    "07:07 GMT+5 time", an offset the other way round; the UTC aliases read "UTC time"."""
    moment = datetime(2026, 11, 27, 12, 7, tzinfo=UTC)
    with i18n.speaking("en", "Etc/GMT+5"):
        assert i18n.when(moment) == "Friday 27 November 2026, 07:07 GMT-05:00"
    with i18n.speaking("fr", "Etc/GMT-3"):
        assert "15:07" in i18n.when(moment) and "UTC+03:00" in i18n.when(moment)
    for name in ("Etc/UTC", "UCT", "Zulu", "Universal", "GMT", "Etc/Greenwich"):
        with i18n.speaking("en", name):
            assert i18n.when(moment) == "Friday 27 November 2026, 12:07 UTC", name


def test_an_unknown_or_unset_language_reads_english() -> None:
    with i18n.speaking(None):
        assert i18n.language() == "en" and i18n.direction() == "ltr"
    with i18n.speaking("xx"):
        assert i18n.language() == "en"
    with i18n.speaking("ar"):
        assert i18n.direction() == "rtl"


@pytest.mark.parametrize(
    ("chosen", "recorded", "header", "expected"),
    [
        ("fr", "de", "es", "fr"),  # the page's own switcher first
        ("zz", "de", "es", "de"),  # an unknown choice is ignored; then the recorded locale
        (None, None, "es-MX,es;q=0.9,en;q=0.5", "es"),
        (None, None, "pt-PT;q=0.8, de;q=0.9", "de"),
        (None, None, "pt-PT", "pt-BR"),  # another region of a shipped language
        (None, None, "pt", "pt-BR"),
        # A browser in Portugal: Portuguese first, so Brazil's before the English it also reads.
        (None, None, "pt-PT,pt;q=0.9,en-US;q=0.8,en;q=0.7", "pt-BR"),
        (None, None, "pt-PT, es-ES;q=0.5", "pt-BR"),
        (None, None, "ja, ar;q=0.1", "ar"),
        (None, None, "ja", "en"),
        (None, None, ";;;, q=, \x00\udcff", "en"),  # malformed: English, never an error
        (None, None, None, "en"),
        (None, None, "fr;q=0, de;q=0.5", "de"),  # q=0 means "not this one"
    ],
)
def test_page_language_negotiation_order(chosen, recorded, header, expected) -> None:
    assert i18n.negotiate(chosen=chosen, recorded=recorded, accept_language=header) == expected


def test_locale_and_zone_problems_name_what_is_supported() -> None:
    assert i18n.locale_problem("pt-BR") is None
    problem = i18n.locale_problem("pt")
    assert problem and all(language in problem for language in i18n.SHIPPED)
    assert i18n.locale_problem(None) and i18n.locale_problem(["en"])
    assert i18n.zone_problem("Europe/Madrid") is None
    assert i18n.zone_problem("Mars/Olympus") and i18n.zone_problem("../../etc/passwd")


def test_the_languages_setting_reads_as_its_check_reads_it() -> None:
    """LANGUAGES passes its check with spaces after the commas ("en, es"): the languages people
    may choose are the same tags, not " es", which nobody could choose and no email would speak."""
    from core.settings import _languages as languages_problem

    assert languages_problem("en, es,  pt-BR") is None
    before = i18n.supported()
    try:
        i18n.configure(["en", " es", "  pt-BR"])  # as "en, es,  pt-BR".split(",") gives them
        assert i18n.supported() == ("en", "es", "pt-BR")
        assert i18n.locale_problem("es") is None
        with i18n.speaking("es"):
            assert i18n.language() == "es"
    finally:
        i18n.configure(before)
