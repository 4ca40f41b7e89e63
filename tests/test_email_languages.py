"""Every email is written in its recipient's language and time zone (docs/translations.md).

- In the pseudo-language every email template, in every variant tests/test_plain_words renders,
  has no plain English word left beyond the names, addresses and links it was given: every
  string for people in the emails is marked.
- In every shipped language, every template has no English function word left: every marked
  string is translated (this fails, per language and template, while a catalog waits for its
  translator; the same check passes in the pseudo-language and catches an untranslated one).
- Times come out in the recipient's zone with the zone named; UTC, said so, when none is set.
- Each email says its language (Content-Language, and the HTML part's lang and dir), through
  the provider and the development mailbox.
- Counts take their language's plural forms (Arabic's six).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest

from core import mailer
from core.mailer import Email
from core.text import i18n
from models.delivery import mailbox
from models.mail import emails
from tests.i18n_helpers import PSEUDO, ascii_words, english_words, pseudo, pseudo_text
from tests.support.emails import AUDIENCE, BASE_CONTEXT, RING, WALLET, delivery, variants

LANGUAGES = [language for language in i18n.SHIPPED if language != i18n.SOURCE]
KINDS = sorted(emails.KINDS)
# A unit's CLDR symbol, written as the language writes it (a damaged file's size), and the word
# CLDR joins a list of alternatives with (the hosts an email's links lead to), which the
# pseudo-language takes from English.
UNITS = ["MB", " or "]
# The glossary's own word for a language that borrows it (docs/translations.md: German "Wallet").
BORROWED = {"de": ["Wallet"]}


# Who runs the service, as the emails' last paragraphs name them (OPERATOR_NAME, OPERATOR_CONTACT):
# nobody configured, or an operator with an address or with a page to write to.
OPERATORS: list[dict[str, str]] = [
    {},
    {"operator_name": "Vance Family Office", "operator_contact": "help@vance.example"},
    {"operator_name": "Vance Family Office", "operator_contact": "https://vance.example/contact"},
]
# The hosts the emails name as where their links lead: the service's, the web client's.
HOSTS = ["legacy.example", "app.example", "vance.example"]


def renderings(kind: str, **row: Any) -> Iterator[tuple[str, Email, list[str]]]:
    """Each variant of the email of `kind`, to each of its recipients, with `row`'s changes (the
    recipient's locale and zone): where, the email, and the words it was given (names, notes,
    a wallet's end), which no translation changes. An email met before with the same words
    given is not yielded again: the checks read nothing else, so it would pass or fail alike."""
    met: set[tuple[str, ...]] = set()
    for recipient in AUDIENCE[kind]:
        for n, (where, changes, app_url) in enumerate(variants(kind)):
            d = delivery(kind, recipient, **{**changes, **row})
            if d["context"].get("beneficiaryId") == "the recipient's":
                d["context"]["beneficiaryId"] = d["beneficiary_id"]
            if recipient != "guardian":
                d.update(guardian_id=None, guardian_page_version=None, guardian_page_key_id=None)  # type: ignore[typeddict-item]
            operator = OPERATORS[n % len(OPERATORS)]  # none, or one with each kind of contact
            email = emails.render(
                d=d, ring=RING, base_url="https://legacy.example", app_url=app_url, **operator
            )
            given = [
                *HOSTS,
                *operator.values(),
                d["owner_name"],
                d["recipient_name"],
                d["subject_name"],
                d["about_guardian_name"],
                d["request_note"],
                d["context"].get("note"),
                d["context"].get("walletEnd"),
                *(change.get("name") for change in BASE_CONTEXT["changes"]),
            ]
            words = [str(g) for g in given if g]
            seen = (email.subject, email.text, email.html, *words)
            if seen not in met:
                met.add(seen)
                yield f"{where} to {recipient}", email, words


def parts(email: Email) -> list[tuple[str, str]]:
    """The subject, the text part, and the words the HTML part shows."""
    shown = html.unescape(re.sub(r"<[^>]+>", " ", email.html))
    return [("subject", email.subject), ("text", email.text), ("html", shown)]


@pytest.mark.parametrize("kind", KINDS)
def test_every_email_in_every_variant_is_marked_for_translation(kind: str) -> None:
    """Rendered in the pseudo-language, no plain word is left but the ones the row gave."""
    with pseudo():
        for where, email, given in renderings(kind, locale=PSEUDO):
            for part, text in parts(email):
                left = ascii_words(text, allowed=[*given, *UNITS])
                assert not left, f"{where} {part}: {left}\n{text}"


def _english_left(kind: str, language: str) -> list[str]:
    found = []
    for where, email, given in renderings(kind, locale=language):
        for part, text in parts(email):
            left = english_words(text, allowed=[*given, *BORROWED.get(language, [])])
            if left:
                found.append(f"{where} {part}: {sorted(set(left))}\n{text}")
    return found


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("language", LANGUAGES)
def test_every_email_in_every_shipped_language_is_translated(language: str, kind: str) -> None:
    """No English function word left in the language's rendering: each failure names the
    language and the template whose strings wait for their translation."""
    found = _english_left(kind, language)
    assert not found, f"{len(found)} renderings of {kind} in {language} keep English; the first:\n{found[0]}"


def test_the_translation_check_passes_a_translated_email_and_catches_an_untranslated_one() -> None:
    """The check above, run on the pseudo-language (every string 'translated'), finds nothing;
    run on a supported language with no catalog (every string left in English), it finds them."""
    with pseudo():
        assert not _english_left("claim_link", PSEUDO)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(i18n, "_languages", (*i18n.supported(), "xx-untranslated"))
        assert _english_left("claim_link", "xx-untranslated")


RELEASE_AT = "2026-11-27T12:07:00+00:00"  # winter: Madrid is UTC+1, São Paulo UTC-3
SUMMER = "2026-07-01T12:07:00+00:00"  # Madrid is UTC+2


def _approved(release_at: str = RELEASE_AT, **row: Any) -> Email:
    d = delivery("plan_approved_guardian", "guardian", owner_name="Olive", **row)
    d["context"]["releaseAt"] = release_at
    return emails.render(d=d, ring=RING, base_url="https://legacy.example", app_url="")


def test_times_are_in_the_recipients_zone_with_the_zone_named() -> None:
    assert "released on Friday 27 November 2026, 12:07 UTC, unless" in _approved().text
    utc = _approved(time_zone="UTC").text
    assert "Friday 27 November 2026, 12:07 UTC" in utc
    madrid = _approved(time_zone="Europe/Madrid").text
    assert "Friday 27 November 2026, 13:07 Madrid time" in madrid and "12:07" not in madrid
    summer = _approved(SUMMER, time_zone="Europe/Madrid").text
    assert "Wednesday 1 July 2026, 14:07 Madrid time" in summer
    sao_paulo = _approved(time_zone="America/Sao_Paulo").text
    assert "Friday 27 November 2026, 09:07 São Paulo time" in sao_paulo
    # The day moves with the zone: 01:30 UTC is still the evening before in São Paulo.
    late = _approved("2026-11-28T01:30:00+00:00", time_zone="America/Sao_Paulo").text
    assert "Friday 27 November 2026, 22:30 São Paulo time" in late
    # A zone nobody can read (a row written with a name since removed from tzdata): UTC, said so.
    assert "12:07 UTC" in _approved(time_zone="Mars/Olympus_Mons").text


@pytest.mark.parametrize("language", LANGUAGES)
def test_times_in_each_language_are_in_the_recipients_zone(language: str) -> None:
    text = _approved(locale=language, time_zone="Europe/Madrid").text
    with i18n.speaking(language, "Europe/Madrid"):
        moment = i18n.when(datetime(2026, 11, 27, 12, 7, tzinfo=UTC))
    assert moment in text, text
    assert re.search(r"\b(13|1):07\b", moment) and "12:07" not in text, moment  # UTC+1 (1:07 PM)
    assert "UTC" not in text


@pytest.mark.parametrize("language", [None, *i18n.SHIPPED])
def test_each_email_says_its_language(language: str | None, settings) -> None:
    email = _approved(locale=language)
    said = language or "en"
    assert email.headers["Content-Language"] == said
    direction = "rtl" if said == "ar" else "ltr"
    assert email.html.startswith(f'<!doctype html><html lang="{said}" dir="{direction}">')
    # The provider is sent it with the email; the development mailbox keeps it.
    sent = orjson.loads(mailer.body(settings, email))
    assert sent["headers"]["Content-Language"] == said


def test_a_language_no_longer_supported_reads_english(settings) -> None:
    email = _approved(locale="xx")
    assert email.headers["Content-Language"] == "en"
    assert email.subject == "Olive's plan has been approved"


def test_the_unsubscribe_headers_keep_their_place_beside_the_language() -> None:
    d = delivery("guardian_invitation", "guardian", locale="fr")
    email = emails.render(d=d, ring=RING, base_url="https://legacy.example", app_url="")
    assert email.headers["Content-Language"] == "fr"
    assert email.headers["List-Unsubscribe"].startswith("<https://legacy.example/stop-emails/")


def test_the_development_mailbox_keeps_the_language(tmp_path) -> None:
    email = _approved(locale="ar")
    outbox_id = "5f0c2c1e-6b1d-4c36-9d8e-2f0b8a1f6a10"
    mailbox.keep(
        data_dir=tmp_path,
        outbox_id=outbox_id,
        kind="plan_approved_guardian",
        email=email,
        now=datetime.now(UTC),
    )
    kept = mailbox.one(data_dir=tmp_path, mail_id=outbox_id)
    assert kept is not None and kept.email.headers["Content-Language"] == "ar"


COUNTS = (1, 2, 3, 11, 100)


def _letters(count: int, language: str) -> Email:
    d = delivery("letter_opened", "beneficiary", owner_name="Olive", locale=language)
    d["context"]["letters"] = count
    return emails.render(d=d, ring=RING, base_url="https://legacy.example", app_url="")


def test_letters_opened_in_english_take_one_form_for_one_and_another_for_more() -> None:
    one = _letters(1, "en")
    assert one.subject == "A letter from Olive opened today"
    assert "Olive asked that it reach you now, and it is waiting for you" in one.text
    for count in COUNTS[1:]:
        email = _letters(count, "en")
        assert email.subject == f"{count} letters from Olive opened today"
        assert "Olive asked that they reach you now, and they are waiting for you" in email.text


def test_letters_opened_in_arabic_take_each_of_its_plural_forms() -> None:
    """1, 2, 3, 11 and 100 are Arabic's one, two, few, many and other: five different forms,
    each the catalog's own for its count, the count written as Arabic writes numbers."""
    catalog = i18n.translations("ar")
    forms = {catalog.plural(count) for count in COUNTS}  # type: ignore[attr-defined]
    assert len(forms) == len(COUNTS)
    for count in COUNTS:
        with i18n.speaking("ar"):
            expected = catalog.ngettext(
                "A letter from {owner} opened today", "{count} letters from {owner} opened today", count
            ).format(owner="Olive", count=i18n.number(count))
        subject = _letters(count, "ar").subject
        assert subject == expected, (count, subject)
        assert not english_words(subject, allowed=["Olive"])
    subjects = [_letters(count, "ar").subject for count in COUNTS]
    assert len(set(subjects[:3])) == 3  # one, two (the dual) and few differ in their words


def test_a_stand_in_opening_a_sentence_is_capitalised_in_the_readers_language() -> None:
    """The owner's stand-in words, as the language writes them, start a subject with a capital
    (in the pseudo-language, its accented look-alike); in the middle of a sentence they do not."""
    words = pseudo_text("the holder of the Stellar wallet {wallet}").format(wallet=WALLET)
    with pseudo():
        released = delivery("plan_released_guardian", "guardian", locale=PSEUDO)
        subject = emails.render(d=released, ring=RING, base_url="https://legacy.example", app_url="").subject
        invited = delivery("guardian_invitation", "guardian", locale=PSEUDO)
        text = emails.render(d=invited, ring=RING, base_url="https://legacy.example", app_url="").text
    assert subject.startswith(words[0].upper() + words[1:])
    assert pseudo_text("What a guardian does: if ") + words in text
