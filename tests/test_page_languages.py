"""Which language a page speaks (docs/translations.md "Pages: which language"), through real
requests: the language chosen on the page (`?lang=`) beats the one recorded for the person,
which beats the browser's Accept-Language, which beats English; an unknown `?lang` or a
malformed header is no choice and never an error. The page says its language and direction
(`<html lang dir>`), varies on Accept-Language, offers the same page in every language, and
every form and link of it keeps the language the reader chose (the pages set no cookies). Its
times are in the person's recorded zone, named."""

from __future__ import annotations

import io
import re
import zipfile
from typing import Any

import pytest

from api import html
from api.keys import SETTINGS
from core.text import i18n
from tests.capsule_helpers import Family, family  # noqa: F401 - the fixture
from tests.helpers import sign_in
from tests.i18n_helpers import PSEUDO, pseudo, pseudo_text
from tests.lifecycle_helpers import activate_plan
from tests.plan_helpers import query
from tests.support.guardian_page import draft_with_guardians, page_link
from tests.support.mail import DEV
from tests.support.words import page_words
from tests.wallet_app import WalletApp, request_uri

HTML_TAG = re.compile(r'<html lang="([^"]+)" dir="(ltr|rtl)">')


async def open_page(client: Any, path: str, *, status: int = 200, **headers: str) -> tuple[str, str, str]:
    """The page's language, direction and text, checking what every page response carries."""
    resp = await client.get(path, headers=headers, allow_redirects=False)
    text = await resp.text()
    assert resp.status == status, (path, resp.status, text[:300])
    found = HTML_TAG.search(text)
    assert found, text[:300]
    assert "Accept-Language" in resp.headers.get("Vary", "")
    assert resp.headers["Content-Language"] == found.group(1)
    return found.group(1), found.group(2), text


async def heir_with_asking(client: Any) -> tuple[Any, dict[str, Any]]:
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=2)
    resp = await client.patch("/api/legacy", json={"allowBeneficiaryRequests": True}, headers=owner.headers)
    assert resp.status == 200, await resp.text()
    return setup, setup.beneficiaries[0]


async def test_the_url_beats_the_record_beats_the_browser_beats_english(client) -> None:
    _setup, heir = await heir_with_asking(client)
    path = f"/claim/{heir['claimToken']}"
    settings = client.app[SETTINGS]
    assert (await open_page(client, path))[:2] == ("en", "ltr")
    assert (await open_page(client, path, **{"Accept-Language": "de-DE,de;q=0.9,en;q=0.5"}))[0] == "de"
    assert (await open_page(client, path, **{"Accept-Language": "pt-PT"}))[0] == "pt-BR"
    assert (await open_page(client, path, **{"Accept-Language": "es-MX, fr;q=0.1"}))[0] == "es"
    assert (await open_page(client, path, **{"Accept-Language": "ja, zh;q=0.8"}))[0] == "en"
    query(settings, "UPDATE beneficiaries SET locale = 'fr' WHERE id = %s", (heir["id"],))
    assert (await open_page(client, path, **{"Accept-Language": "de"}))[0] == "fr"
    assert (await open_page(client, f"{path}?lang=ar", **{"Accept-Language": "de"}))[:2] == ("ar", "rtl")
    # A language nobody ships, or no language at all, in the URL is no choice: the record stands.
    for unknown in ("xx", "EN", "pt_BR", "", "%00", "ar%0D%0ASet-Cookie:x=1", "e" * 5000):
        assert (await open_page(client, f"{path}?lang={unknown}"))[0] == "fr", unknown
    query(settings, "UPDATE beneficiaries SET locale = NULL WHERE id = %s", (heir["id"],))
    for header in ("", ",,,", ";q=1", "de;q=abc", "*", "de;q=0", "x" * 5000, "de-" * 200, "\u00e9s"):
        assert (await open_page(client, path, **{"Accept-Language": header}))[0] in ("en", "de"), header
    assert (await open_page(client, path, **{"Accept-Language": "de;q=0, fr;q=0.4"}))[0] == "fr"


async def test_the_chosen_language_rides_on_every_link_and_form(client) -> None:
    _setup, heir = await heir_with_asking(client)
    path = f"/claim/{heir['claimToken']}"
    _lang, _dir, page = await open_page(client, f"{path}?lang=es")
    # The switcher: the same page in each language, named in its own, the one read marked.
    for language, name in html.LANGUAGE_NAMES.items():
        link = f'<a href="{path}?lang={language}" hreflang="{language}" lang="{language}"'
        assert link in page and f">{name}</a>" in page, language
    assert 'hreflang="es" lang="es" aria-current="true"' in page
    assert f'action="{path}/request?lang=es"' in page
    # Without a choice, links stay as they were.
    _lang, _dir, page = await open_page(client, path, **{"Accept-Language": "fr"})
    assert f'action="{path}/request"' in page
    # The form's answer, and a refusal, are in the chosen language too.
    resp = await client.post(f"{path}/request?lang=es", data={"note": "x" * 1001})
    assert resp.status == 400 and '<html lang="es" dir="ltr">' in await resp.text()
    assert f'href="{path}?lang=es"' in await resp.text()  # back to the page, in Spanish
    resp = await client.post(f"{path}/request?lang=de", data={"note": "Is all well?"})
    answered = await resp.text()
    assert resp.status == 200 and '<html lang="de" dir="ltr">' in answered
    assert f'href="{path}?lang=de"' in answered
    assert "hreflang" not in answered  # a form's answer offers no switcher: it cannot be asked again


@pytest.mark.parametrize("language", i18n.SHIPPED)
async def test_each_page_says_its_language_and_direction(client, language: str) -> None:
    _setup, heir = await heir_with_asking(client)
    found = await open_page(client, f"/claim/{heir['claimToken']}?lang={language}")
    assert found[:2] == (language, "rtl" if language == "ar" else "ltr")
    # The pages that open nothing too, in the language asked for.
    found = await open_page(client, f"/guardian/{'0' * 64}?lang={language}", status=404)
    assert found[:2] == (language, "rtl" if language == "ar" else "ltr")


async def test_the_guardian_page_reads_the_guardians_language_and_zone(
    make_client, run_worker, email_provider
) -> None:
    client = await make_client()
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=2)
    await run_worker(settings=email_provider.settings)
    path = page_link(email_provider, "guardian0@example.org")
    settings = client.app[SETTINGS]
    lang, _dir, page = await open_page(client, path)
    assert lang == "en" and re.search(
        r"You accepted on \w+day \d+ \w+ \d{4}, \d\d:\d\d UTC", " ".join(page_words(page).split())
    )
    query(
        settings,
        "UPDATE guardians SET locale = 'de', time_zone = 'Europe/Madrid' WHERE id = %s",
        (setup.guardians[0].row["id"],),
    )
    lang, _dir, page = await open_page(client, path, **{"Accept-Language": "fr"})
    assert lang == "de" and "Madrid" in page  # the zone named with the time
    assert (await open_page(client, f"{path}?lang=es"))[0] == "es"
    # A refused answer's page speaks the guardian's language.
    resp = await client.post(f"{path}/ask", data={"action": "approve"})
    assert resp.status == 409 and '<html lang="de" dir="ltr">' in await resp.text()
    # And the paste-back form's refusal, which reads the guardian without the page.
    resp = await client.post(f"{path}/sep7/{'0' * 32}?via=page", data={"xdr": ""})
    assert resp.status == 400 and '<html lang="de" dir="ltr">' in await resp.text()


def test_file_sizes_in_decimal_units_as_each_language_writes_them() -> None:
    assert [html.file_size(n) for n in (1, 13, 999, 1000, 1_500_000, 25_000_000_000)] == [
        "1 byte",
        "13 bytes",
        "999 bytes",
        "1.0 KB",
        "1.5 MB",
        "25 GB",
    ]
    with i18n.speaking("de"):
        assert html.file_size(1_500_000).startswith("1,5")
        assert html.file_size(1_234).startswith("1,2")
    with i18n.speaking("fr"):
        assert html.file_size(12_345_678).startswith("12")


async def test_the_development_mailbox_stays_english(make_client) -> None:
    """A tool for developers, written in English: whatever the browser asks, it says so."""
    client = await make_client(**DEV)
    lang, _dir, page = await open_page(client, "/dev/mail?lang=de", **{"Accept-Language": "fr"})
    assert lang == "en" and "hreflang" not in page


@pytest.mark.parametrize("language", i18n.SHIPPED)
def test_an_empty_message_reads_empty_never_the_catalogs_header(language: str) -> None:
    """gettext translates "" as the catalog's header (Project-Id-Version, dates, the translator):
    an error page showing an exception's empty message must show nothing of it."""
    with i18n.speaking(language):
        assert i18n._("") == ""
        assert html.said("") == "" and "Project-Id-Version" not in html.said(["", "x"])


async def test_download_everything_keeps_the_language_chosen_on_the_page(fam: Family) -> None:
    """The heir's ZIP note (README.txt) is written in their page's language, the one chosen on it
    first: the page's "Download everything" link carries that choice like every other link."""
    ada = await fam.add_heir("Ada", 100)
    await fam.message("Hello")
    await fam.release()
    token = ada["claimToken"]
    with pseudo():
        page = await (await fam.client.get(f"/claim/{token}?lang={PSEUDO}")).text()
        found = re.search(r'href="(/api/claim/[0-9a-f]+/export[^"]*)" download', page)
        assert found, page
        href = found.group(1).replace("&amp;", "&")
        assert href == f"/api/claim/{token}/export?lang={PSEUDO}"
        resp = await fam.client.get(href)
        assert resp.status == 200
        note = zipfile.ZipFile(io.BytesIO(await resp.read())).read("README.txt").decode()
    assert pseudo_text("What is inside") in note and "What is inside" not in note


async def test_a_form_answered_by_a_redirect_goes_back_in_the_chosen_language(
    client, run_worker, email_provider
) -> None:
    """POST → 303 → GET: the paste-back form of a signing request, in the language chosen on the
    page, lands back on the page in that language (the URL is all that carries it)."""
    owner = await sign_in(client)
    _, guardians = await draft_with_guardians(client, owner, count=2)
    await run_worker(settings=email_provider.settings)
    path = page_link(email_provider, "guardian0@example.org")
    resp = await client.post(f"{path}/ask?lang=de", data={"action": "accept"})
    page = await resp.text()
    assert resp.status == 200 and '<html lang="de" dir="ltr">' in page
    form = re.search(r'<form method="post" action="([^"]+/sep7/[^"]+)"', page)
    assert form and form.group(1).endswith("?via=page&amp;lang=de"), page
    wallet = WalletApp(client, guardians[0].keypair)
    request = await wallet.open(request_uri(page))
    resp = await client.post(
        form.group(1).replace("&amp;", "&"), data={"xdr": wallet.sign(request)}, allow_redirects=False
    )
    assert resp.status == 303 and resp.headers["Location"] == f"{path}?lang=de"
    assert (await open_page(client, resp.headers["Location"], **{"Accept-Language": "fr"}))[0] == "de"
