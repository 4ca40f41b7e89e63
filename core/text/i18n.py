"""People's languages and time zones: what the service writes for a person is in their language
and their zone, with the field's tools (gettext catalogs through Babel, CLDR formats, zoneinfo).

The catalogs are `core/text/locale/<lang>/LC_MESSAGES/messages.po`, kept in the repository and
compiled in memory when the process starts (`configure`), so no compiled file can go stale.
Which language a piece of text is written in is decided once, at the edge (an email's
recipient, a page's reader, the owner reading their plan), with `speaking(...)`; everything
below reads it from a context variable, so a model function writing a sentence needs no
`locale` argument threaded through it. Source strings are English; English needs no catalog.
Decisions (glossary, tone, negotiation, how to add a language): docs/translations.md.
"""

from __future__ import annotations

import gettext
import io
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from babel import Locale, UnknownLocaleError, dates, lists, numbers, units
from babel.core import negotiate_locale
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

SOURCE = "en"
# The languages shipped with the service (LANGUAGES narrows or widens it: core/settings.py).
SHIPPED = ("en", "es", "fr", "de", "pt-BR", "ar")
DOMAIN = "messages"
CATALOGS = resources.files("core.text").joinpath("locale")

_languages: tuple[str, ...] = SHIPPED


@dataclass(frozen=True)
class Reader:
    """Whom the text is for: a language (BCP 47, one of the supported ones) and a zone."""

    language: str = SOURCE
    zone: ZoneInfo | None = None  # None: UTC, said so


_reader: ContextVar[Reader] = ContextVar("reader", default=Reader())  # noqa: B039 - frozen


def babel_id(language: str) -> str:
    """`pt-BR` as Babel and gettext name it (`pt_BR`)."""
    return language.replace("-", "_")


def catalog_path(language: str) -> str:
    return f"{babel_id(language)}/LC_MESSAGES/{DOMAIN}.po"


def has_catalog(language: str) -> bool:
    return language == SOURCE or CATALOGS.joinpath(catalog_path(language)).is_file()


@cache
def translations(language: str) -> gettext.NullTranslations:
    """The language's catalog, compiled from its .po file (fuzzy entries are left out, as
    msgfmt does); English, and a language with no catalog, read the source strings."""
    if language == SOURCE or not has_catalog(language):
        return gettext.NullTranslations()
    with CATALOGS.joinpath(catalog_path(language)).open("rb") as po:
        catalog = read_po(po, locale=babel_id(language), domain=DOMAIN)
    compiled = io.BytesIO()
    write_mo(compiled, catalog, use_fuzzy=False)
    compiled.seek(0)
    return gettext.GNUTranslations(compiled)


def configure(languages: Sequence[str]) -> None:
    """At start: the languages people may choose, each catalog compiled once now (a broken
    catalog stops the process before any traffic, not on the first email in that language).
    Each tag is read as LANGUAGES' check reads it (core/settings.py): spaces around it dropped."""
    global _languages
    _languages = tuple(tag.strip() for tag in languages if tag.strip())
    for language in _languages:
        translations(language)


def supported() -> tuple[str, ...]:
    return _languages


def locale_problem(value: object) -> str | None:
    """What is wrong with a `locale` someone sent, naming the supported ones, or None."""
    if value in _languages:
        return None
    return "Use one of the supported languages: " + ", ".join(_languages)


def zone_problem(value: object) -> str | None:
    """What is wrong with a `timeZone` someone sent (an IANA name, as `Europe/Madrid`), or None."""
    if isinstance(value, str) and value in _zones():
        return None
    return "Use an IANA time zone name, such as Europe/Madrid or America/Sao_Paulo"


# Names the zone database may carry that are no place a person lives: the host's own zone (its
# meaning would change with the server) and tzdata's placeholder for "no zone".
_NOT_PLACES = frozenset({"localtime", "posixrules", "Factory"})


@cache
def _zones() -> frozenset[str]:
    return frozenset(available_timezones()) - _NOT_PLACES


# Old names kept in the zone database for compatibility: each is another name of a place's zone.
_ALIAS_PREFIXES = ("Etc/", "US/", "Canada/", "Brazil/", "Chile/", "Mexico/", "SystemV/")


@cache
def place_zones() -> tuple[str, ...]:
    """The zones a person picks from a list: one per place (`Region/City`), and UTC."""
    return tuple(
        sorted(z for z in _zones() if z == "UTC" or ("/" in z and not z.startswith(_ALIAS_PREFIXES)))
    )


def zone(name: str | None) -> ZoneInfo | None:
    if not name:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


@contextmanager
def speaking(language: str | None, zone_name: str | None = None) -> Iterator[Reader]:
    """Write for this reader until the block ends: a language nobody set (None) or no longer
    supported reads English; a zone nobody set reads UTC."""
    reader = Reader(language if language in _languages else SOURCE, zone(zone_name))
    token = _reader.set(reader)
    try:
        yield reader
    finally:
        _reader.reset(token)


def reader() -> Reader:
    return _reader.get()


def language() -> str:
    return _reader.get().language


def direction() -> str:
    """`rtl` for a language written right to left (Arabic), else `ltr`: the page's `dir`."""
    return "rtl" if _locale(language()).character_order == "right-to-left" else "ltr"


def _(message: str) -> str:
    """`message` in the reader's language. Nothing stays nothing: gettext answers the empty
    string with the catalog's header (its project, dates and translator), which no page, email or
    error should ever show."""
    if not message:
        return message
    return translations(language()).gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    """The form for `n` in the reader's language (Arabic has six)."""
    return translations(language()).ngettext(singular, plural, n)


def N_(message: str) -> str:
    """Marks a string for the catalog where it is defined; `_()` translates it where it is used."""
    return message


@cache
def _locale(language: str) -> Locale:
    try:
        return Locale.parse(babel_id(language))
    except (UnknownLocaleError, ValueError):
        return Locale.parse(SOURCE)


def when(moment: datetime) -> str:
    """A time in a sentence for a person: the full date and the time in the reader's zone, the
    zone named ("Friday 27 November 2026, 13:07 Madrid time"; "viernes, 27 de noviembre de 2026,
    13:07, hora de Madrid"), UTC said so when the reader set no zone. No numeric date a reader
    could take either way."""
    reader = _reader.get()
    aware = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    local = aware.astimezone(reader.zone or UTC)
    loc = _locale(reader.language)
    if reader.language == SOURCE:
        date_text = dates.format_date(local, "EEEE d MMMM y", locale=loc)
        time_text = dates.format_time(local, "HH:mm", locale=loc)
    else:
        date_text = dates.format_date(local, "full", locale=loc)
        time_text = dates.format_time(local, "short", locale=loc)
    if reader.zone is None or (_placeless(reader.zone) and not local.utcoffset()):
        zone_text = "UTC"
    elif _placeless(reader.zone):
        # No city to name: the offset as the language writes it ("GMT-05:00"; Etc/GMT+5 is behind UTC).
        zone_text = dates.get_timezone_gmt(local, width="long", locale=loc)
    else:
        city = dates.get_timezone_location(reader.zone, locale=loc, return_city=True)
        # Translators: a time zone named by its city, as "Madrid time" / "hora de Madrid".
        zone_text = _("{city} time").format(city=city)
    # Translators: a moment in a sentence: "Friday 27 November 2026, 13:07 Madrid time".
    return _("{date}, {time} {zone}").format(date=date_text, time=time_text, zone=zone_text)


# Zones that are an offset, not a place (UTC's aliases, POSIX's Etc/GMT±N): Babel would name
# their "city" after the zone's own name, GMT+5 for a zone five hours behind UTC.
_OFFSET_NAMES = frozenset({"UTC", "UCT", "Universal", "Zulu", "GMT", "GMT0", "GMT+0", "GMT-0", "Greenwich"})


def _placeless(zone: ZoneInfo) -> bool:
    return zone.key in _OFFSET_NAMES or zone.key.startswith("Etc/")


def day(moment: datetime) -> str:
    """A date alone, in the reader's zone ("27 November 2026")."""
    reader = _reader.get()
    aware = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    local = aware.astimezone(reader.zone or UTC)
    return dates.format_date(
        local, "long" if reader.language != SOURCE else "d MMMM y", locale=_locale(reader.language)
    )


def number(value: float | int) -> str:
    """A count or a figure as the reader's language writes it (1,234.5 in English, 1.234,5 in German)."""
    return numbers.format_decimal(value, locale=_locale(language()))


def either(items: Sequence[str]) -> str:
    """Alternatives as the reader's language lists them ("a, b or c"; Arabic "a أو b")."""
    return lists.format_list(list(items), style="or", locale=_locale(language()))


def percent(value: float) -> str:
    """A share (0.25) as a percentage in the reader's language."""
    return numbers.format_percent(value, locale=_locale(language()))


def parse_accept_language(header: str | None) -> list[str]:
    """The languages an `Accept-Language` header asks for, best first (RFC 9110 q-values); a
    malformed part is skipped, never an error."""
    ranked: list[tuple[float, int, str]] = []
    for index, part in enumerate((header or "").split(",")[:32]):
        tag, _sep, params = part.strip().partition(";")
        tag = tag.strip()
        if not tag or tag == "*" or len(tag) > 35 or not tag.replace("-", "").isalnum():
            continue
        quality = 1.0
        for param in params.split(";"):
            key, _eq, value = param.strip().partition("=")
            if key.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if quality > 0:
            ranked.append((-quality, index, tag))
    return [tag for _q, _i, tag in sorted(ranked)]


def negotiate(*, chosen: str | None, recorded: str | None, accept_language: str | None) -> str:
    """A page's language: the one the reader chose on the page (carried in the URL), else the
    one recorded for them, else the first of their browser's Accept-Language languages we write
    (each in turn: Babel's match, else the same language in another region: `pt-PT` reads
    `pt-BR`, before an `en` the browser lists after it), else English."""
    for language in (chosen, recorded):
        if language in _languages:
            return language
    for tag in parse_accept_language(accept_language):
        found = negotiate_locale([tag], list(_languages), sep="-")
        if found:
            return next(language for language in _languages if language.lower() == found.lower())
        base = tag.split("-")[0].lower()
        for language in _languages:
            if language.split("-")[0].lower() == base:
                return language
    return SOURCE


def megabytes(value: float) -> str:
    """A file's size in megabytes, one decimal, as the reader's language writes it ("2.5 MB")."""
    return units.format_unit(round(value, 1), "digital-megabyte", length="short", locale=_locale(language()))
