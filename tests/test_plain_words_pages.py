"""The plain-words scan (tests/support/words.py, one pattern list) over the pages in the states
a single journey does not pass: the guardian's page for each report reason, before and after the
deadline, the owner's deadline and the usual one, with an objection, for a wallet and a passkey
guardian; the check-in page's states; the heir's page locked (asking allowed or not, the asked
page, its refusals); the pages for links that open nothing. The on-chain heir's states are read in
tests/test_heir_finishes_page.py, the paste-back errors in tests/test_error_pages.py, each
through `page_words`. docs/pages.md, "Words for people"."""

from __future__ import annotations

import itertools
import re
import zlib
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from datetime import timedelta
from typing import Any

import pytest

from api import html
from core.text import i18n
from tests.capsule_helpers import Family, family  # noqa: F401 - the fixture
from tests.helpers import sign_in
from tests.i18n_helpers import PSEUDO, ascii_words, english_words, pseudo
from tests.lifecycle_helpers import activate_plan, approve, approve_plan, guardian_session, report
from tests.plan_helpers import create
from tests.soft_passkey import ceremony_of
from tests.support.guardian_page import accept_with_passkey, page_link, post_answer
from tests.support.words import assert_plain, machine_words, page_words

DAY = 86400


# The words a page shows that are not the service's: the people's names and notes the journeys
# give, and the languages of the switcher, each named in its own. A tuple: a test that shows more
# names passes them to `read` (a list extended by one test would let every later test pass them).
ALLOWED = (
    "Olive Owner",
    *(f"Guardian {i}" for i in range(3)),
    *(f"Heir {i}" for i in range(3)),
    "Sister",
    "Gus",
    "I saw them",
    "Is all well?",
    *html.LANGUAGE_NAMES.values(),
)
SHIPPED = [language for language in i18n.SHIPPED if language != i18n.SOURCE]
# The glossary's own word for a language that borrows it (docs/translations.md: German "Wallet").
BORROWED = {"de": ["Wallet"]}


@pytest.fixture(autouse=True, params=["en", PSEUDO, "shipped"])
def reading(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each journey three times: in English, read for machine words; in the pseudo-language,
    read for any plain word left (a string for people never marked); and in every shipped
    language, read for English words (a translation missing: these fail while the catalogs
    await their translators).

    A form's answer is read in the next shipped language in turn; each test's turn starts where
    its own id puts it, so which language reads which form never depends on the tests that ran
    before, and different tests still start on different languages."""
    token = _READING.set(request.param)
    turn = _TURN.set(itertools.count(zlib.crc32(request.node.nodeid.encode())))
    try:
        yield request.param
    finally:
        _TURN.reset(turn)
        _READING.reset(token)


_READING: ContextVar[str] = ContextVar("reading", default="en")
_TURN: ContextVar[Iterator[int]] = ContextVar("turn")


def _in(path: str, language: str) -> str:
    return f"{path}{'&' if '?' in path else '?'}lang={language}"


async def read(
    client: Any,
    path: str,
    where: str,
    *,
    method: str = "GET",
    status: int = 200,
    names: Iterable[str] = (),
    **kw: Any,
) -> str:
    """Open a page as its reader would and fail on any machine word in it, or, read in the
    pseudo-language, any word never marked, or, in a shipped language, any English word. A page
    opened by a link (GET) is read in every shipped language; a form's answer, which cannot be
    asked twice, in one of them, in turn. `names`: words of this page's people, besides ALLOWED."""
    mode = _READING.get()
    where = f"{where} ({method} {path.split('/')[1]})"
    languages = SHIPPED if mode == "shipped" and method == "GET" else [language_now()]
    for language in languages:
        text = await _open(client, in_language(path, language), where, method, status, **kw)
        check(text, where, language, names)
    return text


def language_now() -> str:
    """The language a page is read in now: the mode's, a shipped one in turn for "shipped"."""
    mode = _READING.get()
    return SHIPPED[next(_TURN.get()) % len(SHIPPED)] if mode == "shipped" else mode


def in_language(path: str, language: str) -> str:
    return path if language == "en" else f"{path}{'&' if '?' in path else '?'}lang={language}"


def check(text: str, where: str, language: str, names: Iterable[str] = ()) -> None:
    """The page's words as the language asks: no machine word (English), no plain word (the
    pseudo-language), no English word (a shipped language); ALLOWED and `names` are not ours."""
    if language == "en":
        assert_plain(page_words(text), where)
    elif language == PSEUDO:
        left = ascii_words(page_words(text), allowed=[*ALLOWED, *names])
        assert not left, f"{where}, never marked: {sorted(set(left))}\n{page_words(text)}"
    else:
        left = english_words(page_words(text), allowed=[*ALLOWED, *names, *BORROWED.get(language, [])])
        assert not left, f"{where} in {language}, untranslated: {sorted(set(left))}"


def assert_no_wallet(page: str, where: str) -> None:
    """A passkey guardian's page speaks of no wallet of theirs: only of an heir's, or, where this
    browser cannot use passkeys at all (scripts off), of a wallet as the way out."""
    page = re.sub(r"<noscript>.*?</noscript>", " ", page, flags=re.S)
    words = page_words(page)
    own = re.findall(r"[^.]*\b(?:your|guardian) (?:Stellar )?wallet\b[^.]*|[^.]*wallet app[^.]*", words, re.I)
    assert not own, f"{where}: {own}"


async def _open(client: Any, path: str, where: str, method: str, status: int, **kw: Any) -> str:
    resp = await fetch(client, method, path, **kw)
    text = await resp.text()
    assert resp.status == status, (where, resp.status, text[:500])
    return text


async def fetch(client: Any, method: str, path: str, **kw: Any) -> Any:
    """A request, the pseudo-language supported while it runs when the path asks for it (the
    app's start set the supported languages: the patch goes on after it)."""
    if f"lang={PSEUDO}" not in path:
        return await client.request(method, path, allow_redirects=False, **kw)
    with pseudo():
        resp = await client.request(method, path, allow_redirects=False, **kw)
        await resp.read()
        return resp


def test_the_page_scan_catches_a_planted_machine_word() -> None:
    planted = (
        '<main><p>Due <time datetime="x">2026-11-27T12:00:43Z</time> (POST /api/legacy/check-in)'
        '<img alt="dueAt" src="/x"></p></main>'
    )
    assert len(machine_words(page_words(planted))) == 4
    quiet = '<p class="next_due">Due <a href="/api/x">Friday</a></p><textarea>AAAAbase64Xdr</textarea>'
    assert not machine_words(page_words(quiet))


@pytest.mark.parametrize("chosen", [True, False], ids=["owner-chosen-deadline", "usual-deadline"])
@pytest.mark.parametrize("reason", [None, "death", "incapacity", "unreachable"])
async def test_the_guardian_page_in_each_state_speaks_plain_words(
    make_client, clock, run_worker, email_provider, chosen: bool, reason: str | None
) -> None:
    client = await make_client(plan_report_cooldown_seconds=DAY)
    owner = await sign_in(client)
    settings: dict[str, Any] = {"checkInIntervalSeconds": 30 * DAY, "gracePeriodSeconds": DAY}
    if chosen:
        settings.update(verificationTimeoutSeconds=3 * DAY, onVerificationTimeout="wait")
    setup = await activate_plan(client, owner, guardians=3, accepting=2, threshold=2, settings=settings)
    resp = await client.post(
        "/api/guardians", json={"name": "Sister", "email": "sister@example.org"}, headers=owner.headers
    )
    assert resp.status == 201, await resp.text()
    await run_worker(settings=email_provider.settings)
    paths = {f"guardian{i}": page_link(email_provider, f"guardian{i}@example.org") for i in range(3)}
    paths["sister"] = page_link(email_provider, "sister@example.org")
    ask = f"{paths['sister']}/ask"
    await read(client, ask, "asked what is not asked", method="POST", data={"action": "approve"}, status=409)
    await read(client, ask, "the passkey page to accept", method="POST", data={"action": "accept"})
    device = await accept_with_passkey(client, paths["sister"])
    invitation = email_provider.to("sister@example.org")[0].body["text"]
    [stop] = re.findall(r"https://legacy\.example\.test(/stop-emails/\S+)", invitation)
    await read(client, stop, "stop-emails page of a guardian who accepted")
    answered = await read(client, stop, "stop-emails answered", method="POST")
    assert _READING.get() != "en" or "Nothing changed: you are part of this plan" in answered

    async def every_page(state: str) -> None:
        for who, path in paths.items():
            text = await read(client, path, f"{who}'s page, {state}")
            if who == "sister" and _READING.get() == "en":  # she answers with a passkey
                assert_no_wallet(text, f"{who}'s page, {state}")

    await every_page("active")
    await read(client, f"{paths['guardian0']}/ask", "ask report", method="POST", data={"action": "report"})
    session = await guardian_session(client, setup.guardians[0])
    resp = await client.post(
        f"/api/legacy/guardianships/{setup.plan_id}/report",
        json={"reason": reason} if reason else {},
        headers=session.headers,
    )
    assert resp.status == 200, await resp.text()
    await run_worker(settings=email_provider.settings)
    await every_page(f"reported ({reason})")
    for action in ("approve", "object"):
        asked = await read(
            client, f"{paths['guardian1']}/ask", f"ask {action}", method="POST", data={"action": action}
        )
        # No contract: a signed message, which costs nothing, so no fee is spoken of.
        assert _READING.get() != "en" or not re.search(r"\bfee\b", page_words(asked)), asked
    assert (await approve(client, setup, setup.guardians[0])).status == 200
    await every_page("one approval")
    note = "I saw them"
    language = language_now()
    resp = await fetch(
        client,
        "POST",
        in_language(f"{paths['sister']}/ask", language),
        data={"action": "object", "note": note},
    )
    passkey_page = await resp.text()
    assert resp.status == 200, passkey_page
    check(passkey_page, "the passkey page of an objection", language)
    action, options = ceremony_of(passkey_page)
    assert await post_answer(client, action, credential=device.get(options), note=note) == (303, "")
    await every_page("an objection")
    clock.advance(days=31)
    await run_worker(settings=email_provider.settings)
    await run_worker(settings=email_provider.settings)
    await every_page("past the deadline")
    assert (await client.post("/api/legacy/check-in", headers=owner.headers)).status == 200
    await every_page("after the owner's check-in")
    assert (await report(client, setup, setup.guardians[0])).status in (200, 409, 429)
    await every_page("a report again in the cooldown")


async def test_the_guardian_page_past_a_deadline_that_releases(
    make_client, clock, run_worker, email_provider
):
    client = await make_client()
    owner = await sign_in(client)
    resp = await client.patch("/api/users/me", json={"name": "Olive Owner"}, headers=owner.headers)
    assert resp.status == 200, await resp.text()
    setup = await activate_plan(
        client, owner, guardians=2, threshold=2, settings={"checkInIntervalSeconds": 30 * DAY}
    )
    await run_worker(settings=email_provider.settings)
    path = page_link(email_provider, "guardian1@example.org")
    assert (await report(client, setup, setup.guardians[0])).status == 200
    clock.advance(days=31)
    await run_worker(settings=email_provider.settings)
    await run_worker(settings=email_provider.settings)
    await read(client, path, "guardian page, the usual deadline released")
    clock.advance(days=3)
    await run_worker(settings=email_provider.settings)
    await read(client, path, "guardian page, approved")
    clock.advance(days=30)  # past the waiting time the owner had to stop it: released
    await run_worker(settings=email_provider.settings)
    await run_worker(settings=email_provider.settings)
    released = await read(client, path, "guardian page, released")
    if _READING.get() == "en":  # nobody left to ask: the owner is not named as someone who can act
        assert "has been released" in page_words(released)
        assert not re.search(r"\bask\s+Olive Owner", page_words(released)), page_words(released)


async def test_the_check_in_confirm_and_stop_pages_and_links_that_open_nothing(
    make_client, clock, run_worker, email_provider
) -> None:
    client = await make_client()
    owner = await sign_in(client)
    setup = await activate_plan(
        client, owner, settings={"checkInIntervalSeconds": 2 * DAY, "gracePeriodSeconds": DAY}
    )
    resp = await client.post(
        "/api/guardians", json={"name": "Gus", "email": "gus@example.org"}, headers=owner.headers
    )
    assert resp.status == 201, await resp.text()
    heir = setup.beneficiaries[0]
    resp = await client.post(f"/api/beneficiaries/{heir['id']}/confirm-email", headers=owner.headers)
    assert resp.status == 202, await resp.text()
    clock.advance(days=1, seconds=1)
    await run_worker(settings=email_provider.settings)
    mail = email_provider.to("owner@example.org")[-1].body["text"]
    [check_in] = re.findall(r"https://legacy\.example\.test(/check-in/\S+)", mail)
    await read(client, check_in, "check-in page")
    await read(client, check_in, "checked in", method="POST")
    await read(client, check_in, "a used check-in link", status=404)
    confirmation = email_provider.to(heir["email"])[-1].body["text"]
    [confirm] = re.findall(r"https://legacy\.example\.test(/confirm-email/\S+)", confirmation)
    await read(client, confirm, "confirm-email page")
    await read(client, confirm, "confirmed", method="POST")
    await read(client, confirm, "confirm-email page again")
    invitation = email_provider.to("gus@example.org")[0].body["text"]
    [stop] = re.findall(r"https://legacy\.example\.test(/stop-emails/\S+)", invitation)
    await read(client, stop, "stop-emails page")
    await read(client, stop, "stop-emails done", method="POST")
    await read(client, stop, "stop-emails again")
    await read(client, "/claim", "the lost-link page")
    await read(client, "/claim", "the lost-link page's answer", method="POST", data={"email": heir["email"]})
    await read(
        client, "/claim", "the lost-link page, not an address", method="POST", data={"email": "x"}, status=400
    )
    zeros = "0" * 64
    for path in ("/claim", "/guardian", "/check-in", "/confirm-email", "/confirm-address", "/stop-emails"):
        await read(client, f"{path}/{zeros}", f"{path} unknown", status=404)


@pytest.mark.parametrize("asking", [True, False], ids=["asking-allowed", "asking-off"])
async def test_the_heirs_page_locked_asked_and_ready(make_client, asking: bool) -> None:
    client = await make_client()
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=2)
    token = setup.beneficiaries[0]["claimToken"]
    resp = await client.patch("/api/legacy", json={"allowBeneficiaryRequests": asking}, headers=owner.headers)
    assert resp.status == 200, await resp.text()
    locked = await read(client, f"/claim/{token}", f"locked page (asking {asking})")
    assert ("/request" in locked) is asking
    if asking:
        await read(
            client, f"/claim/{token}/request", "the asked page", method="POST", data={"note": "Is all well?"}
        )
        await read(client, f"/claim/{token}", "locked page after asking")
        language = language_now()
        again = await fetch(client, "POST", in_language(f"/claim/{token}/request", language), data={})
        assert again.status in (409, 429), await again.text()
        check(await again.text(), f"asking again ({again.status})", language)
    await approve_plan(client, setup)
    await read(client, f"/claim/{token}", f"ready page (asking {asking})")


async def test_the_heirs_released_page_with_everything_on_it(fam: Family) -> None:
    """The released page with each thing it can show: letters with and without a title, a photo
    and a recording, a letter still to come, a document, assets with and without a currency."""
    ada = await fam.add_heir("Ada", 60)
    await fam.add_heir("Ben", 40)
    await create(
        fam.client, fam.owner, "assets", label="The cottage", amount="1", description="Keys with Ben."
    )
    await create(fam.client, fam.owner, "assets", label="Savings", amount="1250.50", assetCode="XLM")
    await fam.message("Dear Ada, the garden is yours.", title="First")
    await fam.message("A second letter.", title=None)
    photo = await fam.vault.upload_ok(
        b"\x89PNG fake", filename="p.png", content_type="image/png", type="photo"
    )
    voice = await fam.vault.upload_ok(b"OggS fake", filename="v.ogg", content_type="audio/ogg", type="voice")
    await fam.vault.work()
    await fam.message("Look at us.", title="Summer", mediaId=photo["id"])
    await fam.message("Listen.", title="My voice", mediaId=voice["id"])
    opens = (fam.clock.now() + timedelta(days=400)).date()
    await fam.message("Not yet.", title="For your wedding day", rule=("on_date", opens.isoformat()))
    await fam.document(
        b"%PDF-1.7 will",
        filename="will.pdf",
        content_type="application/pdf",
        title="My will",
        category="legal",
    )
    await fam.release()
    await read(
        fam.client,
        f"/claim/{ada['claimToken']}",
        "the released page",
        names=[
            "Ada",
            "Ben",
            "daughter",
            "First",
            "Dear Ada, the garden is yours.",
            "A second letter.",
            "Summer",
            "Look at us.",
            "My voice",
            "Listen.",
            "For your wedding day",
            "My will",
            "will.pdf",
            "The cottage",
            "Keys with Ben.",
            "Savings",
            "XLM",
        ],
    )
