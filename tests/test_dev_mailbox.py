"""`/dev/mail`, the development mailbox, over HTTP with the real worker: in development with no
email provider, every email is kept (models/delivery/mailbox.py) and listed newest first; each opens with
its HTML inline under the pages' strict CSP, and its links open what they name. Only a loopback
peer is answered (a real server on a non-loopback address of this machine is refused, whatever
X-Forwarded-For says), and not through a tunnel on this machine (a proxy's header: 404); in
production the paths are 404 and nothing is kept."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import secrets
import socket
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from aiohttp.test_utils import TestClient, TestServer

from api.app import create_app
from api.delivery.dev_mail import clean_html
from api.html import PAGE_CSP
from api.keys import SETTINGS
from core.settings import GENERATED_IN_DEV, Settings, load_settings
from models.delivery import mailbox
from service.dev import log_generated_secrets
from tests.helpers import sign_in
from tests.lifecycle_helpers import SETTING_UP_NOTICES, activate_plan, approve, get_overview, report
from tests.plan_helpers import query
from tests.support.browser_pages import assert_accessible, assert_fits, record_requests
from tests.support.mail import DEV
from tests.support.words import assert_plain, page_words

DAY = 86400
HREF = re.compile(r'href="([^"]+)"')
URL_IN_TEXT = re.compile(r"https?://\S+")


@pytest.fixture(autouse=True)
def empty_mailbox(settings: Settings) -> None:
    for path in mailbox.folder(data_dir=settings.data_dir).glob("*.json"):
        path.unlink()


async def dev_client(make_client: Any) -> tuple[TestClient, dict[str, Any]]:
    """A development app, and the worker settings whose links point at it as localhost:$PORT."""
    client = await make_client(**DEV)
    worker = {**DEV, "public_base_url": f"http://localhost:{client.port}"}
    return client, worker


async def some_journey(client: TestClient, clock: Any, run_worker: Any, worker: dict[str, Any]) -> None:
    """Invitations, confirmations and a check-in reminder, through the API and the worker."""
    owner = await sign_in(client)
    await activate_plan(
        client, owner, settings={"checkInIntervalSeconds": 2 * DAY, "gracePeriodSeconds": DAY}
    )
    await run_worker(settings=worker)
    clock.advance(days=1, seconds=1)
    await run_worker(settings=worker)


async def test_every_email_is_kept_listed_newest_first_and_opens_with_links_that_work(
    make_client, clock, run_worker, settings
) -> None:
    client, worker = await dev_client(make_client)
    await some_journey(client, clock, run_worker, worker)
    rows = query(settings, "SELECT id::text, kind, status FROM outbox ORDER BY created_at")
    assert rows and all(r["status"] == "sent" for r in rows)
    kinds = {r["kind"] for r in rows}
    assert {"guardian_invitation", "check_in_reminder"} <= kinds

    resp = await client.get("/dev/mail")
    assert resp.status == 200 and resp.headers["Content-Security-Policy"] == PAGE_CSP
    listing = await resp.text()
    ids = re.findall(r'href="/dev/mail/([0-9a-f-]{36})"', listing)
    assert sorted(ids) == sorted(r["id"] for r in rows)
    reminder = next(r["id"] for r in rows if r["kind"] == "check_in_reminder")
    assert ids[0] == reminder  # kept a day after the others: first
    assert "To owner@example.org" in listing and "guardian0@example.org" in listing
    assert re.search(r"\w+day \d{1,2} \w+ \d{4}, \d\d:\d\d UTC", listing)  # the time in words

    followed, notices = 0, 0
    for mail_id in ids:
        resp = await client.get(f"/dev/mail/{mail_id}")
        page = await resp.text()
        assert resp.status == 200, page
        assert resp.headers["Content-Security-Policy"] == PAGE_CSP
        assert "<iframe" not in page and "<script" not in page.lower()
        kept = mailbox.one(data_dir=settings.data_dir, mail_id=mail_id)
        assert kept is not None
        assert f"<h1>{kept.email.subject}</h1>".replace("'", "&#39;") in page
        # The text part is on the page as written (escaped), and so is the HTML part, inline.
        assert kept.email.text.splitlines()[0] in page
        links = [link for link in HREF.findall(page) if link.startswith("http")]
        if kept.kind in SETTING_UP_NOTICES:
            assert not links  # a notice to the owner, with nothing to open (tested for its words)
            notices += 1
            continue
        assert links, f"{kept.kind} carries no link"
        for link in links:
            url = urlsplit(link)
            assert f"{url.scheme}://{url.netloc}" == f"http://localhost:{client.port}", link
            opened = await client.get(url.path)
            assert opened.status == 200, (kept.kind, url.path, await opened.text())
            followed += 1
    assert notices == 3 and followed >= len(ids) - notices  # two acceptances and the activation

    resp = await client.get("/dev/mail/00000000-0000-0000-0000-000000000000")
    assert resp.status == 404 and resp.content_type == "text/html"
    resp = await client.get("/dev/mail/..%2F..%2Fdev-secrets.json")
    assert resp.status == 404


async def test_a_check_in_link_from_the_mailbox_checks_in(make_client, clock, run_worker) -> None:
    client, worker = await dev_client(make_client)
    await some_journey(client, clock, run_worker, worker)
    reminder = next(
        k for k in mailbox.newest(data_dir=client.app[SETTINGS].data_dir) if k.kind == "check_in_reminder"
    )
    [link] = [u for u in HREF.findall(reminder.email.html) if "/check-in/" in u]
    resp = await client.post(urlsplit(link).path)
    assert resp.status == 200
    assert "you are checked in" in (await resp.text())


def this_machines_other_address() -> str | None:
    """A non-loopback address of this machine (the one its default route leaves from)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # no packet is sent: this only picks a route
        except OSError:
            return None
        address: str = probe.getsockname()[0]
    return None if address.startswith("127.") else address


async def test_only_this_machine_is_answered_whatever_the_forwarded_headers_say(
    settings, clock, make_client, run_worker
) -> None:
    address = this_machines_other_address()
    if address is None:
        pytest.skip("this machine has no non-loopback address to serve from")
    client, worker = await dev_client(make_client)
    await some_journey(client, clock, run_worker, worker)
    [mail_id, *_] = [k.id for k in mailbox.newest(data_dir=settings.data_dir)]
    app = create_app(client.app[SETTINGS], clock)
    server = TestServer(app, host=address)
    async with TestClient(server) as remote:
        for path in ("/dev/mail", f"/dev/mail/{mail_id}"):
            for forwarded in ({}, {"X-Forwarded-For": "127.0.0.1", "X-Real-IP": "127.0.0.1"}):
                resp = await remote.get(path, headers=forwarded)
                text = await resp.text()
                assert resp.status == 403, text
                assert "only on this machine" in text and "/dev/mail/" not in text
                assert "/guardian/" not in text and "/check-in/" not in text
    resp = await client.get("/dev/mail")
    assert resp.status == 200


async def test_through_a_tunnel_on_this_machine_the_mailbox_is_not_found(
    settings, clock, make_client, run_worker
) -> None:
    """ngrok or cloudflared deliver every request from loopback, with a proxy's header: the
    mailbox is the 404 page then, whatever the header says (loopback included)."""
    client, worker = await dev_client(make_client)
    await some_journey(client, clock, run_worker, worker)
    [mail_id, *_] = [k.id for k in mailbox.newest(data_dir=settings.data_dir)]
    for path in ("/dev/mail", f"/dev/mail/{mail_id}"):
        assert (await client.get(path)).status == 200
        for header in (
            {"X-Forwarded-For": "203.0.113.9"},
            {"X-Forwarded-For": "127.0.0.1"},
            {"Forwarded": "for=198.51.100.7;proto=https"},
            {"X-Real-IP": "127.0.0.1"},
        ):
            resp = await client.get(path, headers=header)
            text = await resp.text()
            assert resp.status == 404, (header, text)
            assert "/dev/mail/" not in text and "/guardian/" not in text and "/check-in/" not in text


LOCAL_HOSTS = ("localhost", "localhost:8080", "LocalHost:1", "127.0.0.1", "127.0.0.1:80", "[::1]", "[::1]:80")
OTHER_HOSTS = (
    "rebind.evil.example:8080",
    "rebind.evil.example",
    "localhost.evil.example",
    "127.0.0.1.nip.io:8080",
    "evil.localhost",
    "10.0.0.7:8080",
    "[::2]:8080",
    "localhost:",
    "localhost:80:80",
    "localhost:http",
    "[::1]evil",
    "",
)
FORWARDING = (
    {"Forwarded": "for=127.0.0.1"},
    {"X-Forwarded-For": "127.0.0.1"},
    {"X-Forwarded-Host": "localhost"},
    {"X-Forwarded-Proto": "http"},
    {"x-forwarded-port": "8080"},
    {"X-Real-IP": "127.0.0.1"},
    {"CF-Connecting-IP": "127.0.0.1"},
    {"True-Client-IP": "127.0.0.1"},
    {"X-Client-IP": "127.0.0.1"},
)


async def raw_get(port: int, head: str) -> tuple[int, str]:
    """Sends a request written by hand (what a client library will not write) to the app."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(head.encode() + b"Connection: close\r\n\r\n")
    await writer.drain()
    answer = (await reader.read()).decode(errors="replace")
    writer.close()
    return int(answer.split(" ", 2)[1]), answer


async def test_a_loopback_peer_naming_another_host_or_forwarded_is_the_404_page(
    settings, clock, make_client, run_worker
) -> None:
    """DNS rebinding: a page of another site, its name now resolving to 127.0.0.1, reaches the
    mailbox from this machine's browser with its own name in Host. Only localhost, 127.0.0.1 and
    [::1] (any port) open it, and no forwarding header at all."""
    client, worker = await dev_client(make_client)
    await some_journey(client, clock, run_worker, worker)
    [mail_id, *_] = [k.id for k in mailbox.newest(data_dir=settings.data_dir)]
    for path in ("/dev/mail", f"/dev/mail/{mail_id}"):
        for host in LOCAL_HOSTS:
            resp = await client.get(path, headers={"Host": host})
            assert resp.status == 200, (host, await resp.text())
        refusals = [{"Host": host} for host in OTHER_HOSTS]
        refusals += [{"Host": "localhost:8080", **header} for header in FORWARDING]
        for headers in refusals:
            resp = await client.get(path, headers=headers)
            text = await resp.text()
            assert resp.status == 404, (headers, text)
            assert "/dev/mail/" not in text and "/guardian/" not in text and "/check-in/" not in text
    port = client.port
    assert port is not None
    ok, _ = await raw_get(port, "GET /dev/mail HTTP/1.1\r\nHost: localhost\r\n")
    assert ok == 200
    for head in (
        "GET /dev/mail HTTP/1.1\r\n",  # no Host at all
        "GET /dev/mail HTTP/1.0\r\n",
        "GET /dev/mail HTTP/1.1\r\nHost: localhost\r\nHost: rebind.evil.example\r\n",
        f"GET http://rebind.evil.example/dev/mail HTTP/1.1\r\nHost: localhost:{port}\r\n",
    ):
        status, answer = await raw_get(port, head)
        assert status in (400, 404), (head, answer)
        assert "/dev/mail/" not in answer and "/guardian/" not in answer


async def test_production_has_no_mailbox_and_keeps_nothing(make_client, clock, run_worker, settings) -> None:
    production = {**DEV, "environment": "production"}
    client = await make_client(**production)
    await some_journey(client, clock, run_worker, production)
    rows = query(settings, "SELECT status FROM outbox")
    assert rows and {r["status"] for r in rows} == {"skipped"}
    assert mailbox.newest(data_dir=settings.data_dir) == []
    assert not list(mailbox.folder(data_dir=settings.data_dir).glob("*"))
    for path in ("/dev/mail", "/dev/mail/00000000-0000-0000-0000-000000000000"):
        resp = await client.get(path)
        assert resp.status == 404


async def test_tests_and_a_configured_provider_keep_nothing_either(
    make_client, clock, run_worker, settings, email_provider
) -> None:
    client = await make_client(environment="development", **email_provider.settings)
    assert (await client.get("/dev/mail")).status == 404
    await some_journey(client, clock, run_worker, {"environment": "development", **email_provider.settings})
    assert email_provider.requests and mailbox.newest(data_dir=settings.data_dir) == []


def test_an_emails_html_keeps_its_words_and_links_and_nothing_that_runs() -> None:
    markup = (
        '<!doctype html><html><head><title>t</title><style>p{}</style></head><body onload="x()">'
        '<p style="color:red">Dear <b>Sam</b>,</p><script>alert(1)</script>'
        '<p><a href="https://legacy.example/claim/abc" onclick="x()">https://legacy.example/claim/abc</a> '
        '<a href="javascript:alert(1)">click</a> <img src=x onerror=alert(1)><iframe src="/x"></iframe>'
        "<form action=/x><button>go</button></form> &lt;script&gt; <p>unclosed <em>text"
    )
    cleaned = str(clean_html(markup))
    assert cleaned == (
        "<p>Dear <b>Sam</b>,</p>"
        '<p><a href="https://legacy.example/claim/abc">https://legacy.example/claim/abc</a> '
        "<a>click</a> go &lt;script&gt; <p>unclosed <em>text</em></p></p>"
    )


async def test_the_mailbox_in_chromium_reads_at_phone_width_passes_axe_and_its_links_open(
    make_client, clock, run_worker, browser, axe_source, screenshots
) -> None:
    client, worker = await dev_client(make_client)
    await some_journey(client, clock, run_worker, worker)
    origin = f"http://localhost:{client.port}"
    context = await browser.new_context(viewport={"width": 390, "height": 800})
    page = await context.new_page()
    page.set_default_timeout(15_000)
    urls = record_requests(page)
    response = await page.goto(f"{origin}/dev/mail")
    assert response.status == 200 and await page.locator("h1").inner_text() == "Development mailbox"
    await assert_fits(page)
    await assert_accessible(page, axe_source)
    await page.screenshot(path=str(screenshots / "dev-mail-list-390.png"), full_page=True)
    await page.get_by_role("link", name=re.compile("asks you to be a guardian")).first.click()
    await page.wait_for_load_state()
    assert "/dev/mail/" in page.url
    await assert_fits(page)
    await assert_accessible(page, axe_source)
    await page.screenshot(path=str(screenshots / "dev-mail-invitation-390.png"), full_page=True)
    # The guardian's link, followed from the email as the guardian would.
    await page.locator(".email a[href*='/guardian/']").first.click()
    await page.wait_for_load_state()
    assert "/guardian/" in page.url and await page.locator("h1").count() == 1
    assert [url for url in urls if not url.startswith(origin + "/")] == []
    await context.close()


@pytest.fixture
def generated_in_dev() -> Iterator[set[str]]:
    """core.settings.GENERATED_IN_DEV, the process's record of what it generated, emptied for a
    test and given back as it was: another test's settings never read what this one generated."""
    kept = set(GENERATED_IN_DEV)
    GENERATED_IN_DEV.clear()
    try:
        yield GENERATED_IN_DEV
    finally:
        GENERATED_IN_DEV.clear()
        GENERATED_IN_DEV.update(kept)


def test_start_up_says_which_dev_secrets_it_generated_and_never_their_values(
    tmp_path, caplog, generated_in_dev
) -> None:
    first = load_settings({"APP_ENV": "development", "DATA_DIR": str(tmp_path)})
    with caplog.at_level(logging.INFO, logger="legacy_planning"):
        log_generated_secrets(first, {})
    said = caplog.text
    assert "ENCRYPTION_KEYS, JWT_SECRET, URI_REQUEST_SIGNING_SEED unset: generated into" in said
    assert str(tmp_path / "dev-secrets.json") in said
    secrets_written = json.loads((tmp_path / "dev-secrets.json").read_text())
    assert not any(value in said for value in secrets_written.values())

    caplog.clear()
    generated_in_dev.clear()
    own = secrets.token_urlsafe(48)
    again = load_settings({"APP_ENV": "development", "DATA_DIR": str(tmp_path), "JWT_SECRET": own})
    with caplog.at_level(logging.INFO, logger="legacy_planning"):
        log_generated_secrets(again, {"JWT_SECRET": own})
    assert "ENCRYPTION_KEYS, URI_REQUEST_SIGNING_SEED unset: using the ones generated earlier" in caplog.text
    assert "JWT_SECRET" not in caplog.text and "generated into" not in caplog.text


async def test_every_link_in_every_email_of_a_whole_journey_opens(
    make_client, clock, run_worker, settings
) -> None:
    """Invitations, reminders, a report, approvals, the release and the heirs' links: after each
    step, each link in each kept email, followed through the app as its recipient would, opens a
    page, and the page's words are plain (tests/test_plain_words.py): the guardian's page, the
    check-in page and the capsule page in each state the journey passes through."""
    client, worker = await dev_client(make_client)
    owner = await sign_in(client)
    opened: set[str] = set()

    async def work_and_follow() -> None:
        await run_worker(settings=worker)
        for mail in mailbox.newest(data_dir=settings.data_dir):
            for link in {*HREF.findall(mail.email.html), *URL_IN_TEXT.findall(mail.email.text)}:
                url = urlsplit(link)
                assert f"{url.scheme}://{url.netloc}" == f"http://localhost:{client.port}", (mail.kind, link)
                # As the browser at the app's own origin would (an owner page under another host redirects).
                host = urlsplit(client.server.app[SETTINGS].public_base_url).netloc
                resp = await client.get(url.path, headers={"Host": host})
                page = await resp.text()
                assert resp.status == 200, (mail.kind, url.path, resp.status, page)
                assert_plain(page_words(page), f"{url.path.split('/')[1]} page from {mail.kind}")
                opened.add(url.path.split("/")[1])

    short = {"checkInIntervalSeconds": 2 * DAY, "gracePeriodSeconds": DAY}
    setup = await activate_plan(client, owner, settings=short)
    heir = setup.beneficiaries[0]
    # A guardian with no wallet: their page offers a passkey instead (the other proof kind).
    resp = await client.post(
        "/api/guardians", json={"name": "Sister", "email": "sister@example.org"}, headers=owner.headers
    )
    assert resp.status == 201, await resp.text()
    resp = await client.post(f"/api/beneficiaries/{heir['id']}/confirm-email", headers=owner.headers)
    assert resp.status in (200, 202), await resp.text()
    await work_and_follow()
    clock.advance(days=1, seconds=1)  # a reminder
    await work_and_follow()
    resp = await client.patch("/api/users/me", json={"email": "olive@example.org"}, headers=owner.headers)
    assert resp.status == 200  # the key-compromise notices: to the old address and the digest
    assert (await report(client, setup, setup.guardians[0])).status == 200
    await work_and_follow()
    for guardian_ in setup.guardians:
        assert (await approve(client, setup, guardian_)).status == 200
    clock.advance(minutes=2)
    await work_and_follow()
    clock.advance(seconds=setup.overview["settings"]["cancelWindowSeconds"] + 1)
    await run_worker(settings=worker)
    await work_and_follow()
    assert (await get_overview(client, owner))["status"] == "Released"
    resp = await client.post("/api/claim/resend", json={"email": heir["email"]})
    assert resp.status == 202, await resp.text()
    await work_and_follow()

    kept = mailbox.newest(data_dir=settings.data_dir)
    kinds = {k.kind for k in kept}
    assert any(k.email.to == "sister@example.org" and k.kind == "guardian_invitation" for k in kept)
    assert {"guardian_invitation", "check_in_reminder", "verification_started", "plan_approved"} <= kinds
    assert {"claim_link", "account_changes", "owner_email_changed", "verification_requested"} <= kinds
    assert {"email_confirmation", "plan_released_guardian"} <= kinds
    assert {"guardian", "check-in", "claim", "confirm-email"} <= opened
