"""The owner's whole journey in a real browser (headless Chromium, tests/browser.py), from an empty
account to a release: the owner signs in through the SEP-7 request (a wallet on another device
answering it), gives their name, records two heirs, two guardians, an asset, a letter and a
document and sets the plan's rules, all from the pages, and the JSON API for the same wallet
finds each of them; the guardians accept from their emails' links, one with a passkey (a CDP
virtual authenticator), one with a wallet; the owner activates from /plan and rehearses an
heir's page; the guardians report and approve from their pages, the test clock and the real
worker carry the plan to Released; and the heir, from the link in their email, sees the very
letters, documents and shares the owner's rehearsal showed.

The app is served at http://localhost:<port>, its PUBLIC_BASE_URL: a secure context where
`localhost` is a valid passkey RP ID, with file storage for the document."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

from stellar_sdk import Keypair

from api.app import create_app
from tests.conftest import ServiceTestServer
from tests.helpers import Session, sign_in
from tests.lifecycle_helpers import get_overview
from tests.passkey_helpers import guardian_path, with_authenticator
from tests.support.owner_browser import PHONE, add, free_port, sections, sign_in_in_the_browser, wallet_signs

HEIR_SECTIONS = ("letters", "documents", "assets", "share")
LETTER = "Dear Ana and Rui,\nThe key is under the blue pot."
CLAIM = re.compile(r"/claim/[A-Za-z0-9_-]{20,}")


async def _press(page: Any, name: str) -> None:
    async with page.expect_navigation():
        await page.get_by_role("button", name=name, exact=True).click()


async def _passkey(page: Any, name: str) -> None:
    """The passkey page's button: the ceremony runs, the answer is posted, back to the page."""
    async with page.expect_navigation(url="**/guardian/*"):
        await page.get_by_role("button", name=name).click()
    await page.wait_for_load_state()


async def _status(page: Any) -> str:
    text: str = await page.get_by_role("status").inner_text()
    return text


async def _downloaded(page: Any, title: str) -> bytes:
    """The bytes behind the document's link on the heir's page (or its rehearsal)."""
    href = await page.get_by_role("link", name=title, exact=True).get_attribute("href")
    assert href is not None
    resp = await page.request.get(urljoin(page.url, href))
    assert resp.status == 200, await resp.text()
    body: bytes = await resp.body()
    return body


async def _records_the_plan(page: Any, origin: str, guardian_wallet: str, document: Path) -> None:
    """Everything the owner records, each from its own page."""
    await page.goto(f"{origin}/plan/account", wait_until="load")
    await add(
        page,
        {
            "Your name": "Olive Owner",
            "Your email address": "olive@example.org",
            "Your email address again, to be sure": "olive@example.org",
        },
        "Save my details",
    )
    await page.goto(f"{origin}/plan/heirs", wait_until="load")
    for name, relation, email, share in (
        ("Ana Souza", "daughter", "ana@example.org", "60"),
        ("Rui Souza", "son", "rui@example.org", "40"),
    ):
        fields = {
            "Their name": name,
            "Who they are to you": relation,
            "Their email address": email,
            "Their share of the plan, in percent": share,
            "The language of the emails they receive": "en",
        }
        await add(page, fields, "Add this heir")
        assert await _status(page) == "The heir was added."
    await page.goto(f"{origin}/plan/guardians", wait_until="load")
    for name, email, wallet in (
        ("Bo Lind", "bo@example.org", guardian_wallet),
        ("Cy Park", "cy@example.org", ""),
    ):
        fields = {
            "Their name": name,
            "Their email address": email,
            "Their Stellar wallet address (optional)": wallet,
        }
        await add(page, fields, "Add this guardian and invite them")
        assert await page.get_by_role("status").count() == 1
    await page.goto(f"{origin}/plan/assets", wait_until="load")
    fields = {
        "What it is": "Savings",
        "Its amount (leave empty for a thing)": "25000",
        "Its Stellar asset (optional)": "XLM",
    }
    await add(page, fields, "Add it")
    assert await _status(page) == "It was added to what you leave."
    await page.goto(f"{origin}/plan/messages", wait_until="load")
    await page.get_by_label("Its title (optional)").fill("The key")
    await page.get_by_label("Your letter").fill(LETTER)
    await page.get_by_label("When the plan is released").check()
    await page.get_by_role("button", name="Save this letter").click()
    assert "Your letter was saved" in await _status(page)
    await page.goto(f"{origin}/plan/archive", wait_until="load")
    await page.get_by_label("Its title").fill("My will")
    await page.set_input_files("#field-file", str(document))
    await page.get_by_role("button", name="Upload it").click()
    await page.wait_for_url("**/plan/archive?done=uploaded*")
    await page.goto(f"{origin}/plan/settings", wait_until="load")
    for field, value in (
        ("checkInIntervalSeconds", "7776000"),
        ("gracePeriodSeconds", "1209600"),
        ("cancelWindowSeconds", "86400"),
        ("verificationTimeoutSeconds", "2592000"),
        ("guardianThreshold", "2"),
    ):
        await page.locator(f"#field-{field}").select_option(value)
    await page.get_by_role("button", name="Save these rules").click()
    await page.wait_for_url("**/plan/settings?done=settings-saved*")


async def _the_api_finds_it_all(client: Any, keypair: Keypair, guardian_wallet: str) -> Session:
    """The same wallet, through the JSON API with a bearer token, sees what the pages recorded."""
    api = await sign_in(client, keypair)

    async def listed(path: str) -> Any:
        resp = await client.get(path, headers=api.headers)
        assert resp.status == 200, await resp.text()
        return await resp.json()

    heirs = await listed("/api/beneficiaries")
    assert sorted((b["name"], b["allocationPercentage"], b["locale"]) for b in heirs) == [
        ("Ana Souza", 60, "en"),
        ("Rui Souza", 40, "en"),
    ]
    guardians = await listed("/api/guardians")
    assert sorted((g["name"], g["walletAddress"]) for g in guardians) == [
        ("Bo Lind", guardian_wallet),
        ("Cy Park", None),
    ]
    assets = await listed("/api/assets")
    assert [(a["label"], a["amount"], a["assetCode"]) for a in assets] == [("Savings", "25000", "XLM")]
    letters = await listed("/api/messages")
    assert [(m["title"], m["releaseRule"]["kind"]) for m in letters] == [("The key", "on_release")]
    files = await listed("/api/archive")
    assert [(f["title"], f["status"]) for f in files] == [("My will", "available")]
    plan = await listed("/api/legacy")
    assert plan["status"] == "Draft"
    assert {name: plan["settings"][name] for name in ("checkInIntervalSeconds", "cancelWindowSeconds")} == {
        "checkInIntervalSeconds": 7776000,
        "cancelWindowSeconds": 86400,
    }
    assert plan["settings"]["guardianThreshold"] == 2
    return api


async def test_an_owner_goes_from_an_empty_account_to_a_release_their_heir_reads(
    aiohttp_client: Any,
    settings: Any,
    clock: Any,
    run_worker: Any,
    email_provider: Any,
    file_backend: dict[str, Any],
    browser: Any,
    screenshots: Path,
    tmp_path: Path,
) -> None:
    port = free_port()
    origin = f"http://localhost:{port}"
    app = create_app(dataclasses.replace(settings, public_base_url=origin, **file_backend), clock)
    client = await aiohttp_client(ServiceTestServer(app, port=port))
    worker = {**email_provider.settings, **file_backend, "public_base_url": origin}
    owner, guardian_key = Keypair.random(), Keypair.random()
    document = tmp_path / "will.pdf"
    document.write_bytes(b"%PDF-1.4 " + b"x" * 50_000)

    # 1. Signed in through the SEP-7 request, the owner records the whole plan from the pages.
    context = await browser.new_context(viewport=PHONE)
    page = await context.new_page()
    await sign_in_in_the_browser(page, client, owner, origin=origin)
    await _records_the_plan(page, origin, guardian_key.public_key, document)
    await run_worker(settings=worker)  # seals the document, sends the invitations
    api = await _the_api_finds_it_all(client, owner, guardian_key.public_key)

    # 2. The guardians accept from their emails: Cy with a passkey, Bo with a wallet.
    cy_context = await browser.new_context(viewport=PHONE)
    cy, _cdp, _authenticator = await with_authenticator(cy_context)
    cy_path = guardian_path(email_provider, "cy@example.org")
    assert (await cy.goto(origin + cy_path)).status == 200
    await _press(cy, "Accept")
    await _passkey(cy, "Create a passkey and accept")
    assert "with the passkey you created for it" in await cy.locator("main").inner_text()
    bo_context = await browser.new_context(viewport=PHONE)
    bo = await bo_context.new_page()
    bo_path = guardian_path(email_provider, "bo@example.org")
    assert (await bo.goto(origin + bo_path)).status == 200
    await _press(bo, "Accept")
    await wallet_signs(client, await bo.content(), guardian_key)
    rows = await (await client.get("/api/guardians", headers=api.headers)).json()
    assert sorted((r["name"], r["proof"], r["acceptedAt"] is not None) for r in rows) == [
        ("Bo Lind", "wallet", True),
        ("Cy Park", "passkey", True),
    ]

    # 3. The owner activates from /plan, then rehearses Ana's page.
    await page.goto(f"{origin}/plan", wait_until="load")
    await page.get_by_role("button", name="Activate my plan").click()
    await page.wait_for_url("**/plan?done=activated*")
    assert (await get_overview(client, api))["status"] == "Active"
    await page.goto(f"{origin}/plan/heirs", wait_until="load")
    await page.get_by_role("link", name="See Ana Souza\u2019s page as they will see it").click()
    assert urlsplit(page.url).path.endswith("/preview")
    assert await page.locator(".preview-mark").count() > 0
    rehearsed = await sections(page, HEIR_SECTIONS)
    assert "The key" in rehearsed["letters"] and "under the blue pot" in rehearsed["letters"]
    assert "My will" in rehearsed["documents"]
    assert "Savings" in rehearsed["assets"] and "15000" in rehearsed["assets"]
    await page.screenshot(path=str(screenshots / "journey-preview-en-390.png"), full_page=True)
    assert await _downloaded(page, "My will") == document.read_bytes()  # the owner's own download

    # 4. Cy reports and both approve from their pages; the cancel window passes; Released.
    await cy.reload()
    await _press(cy, "Report")
    await _passkey(cy, "Use my passkey to report")
    assert (await get_overview(client, api))["status"] == "PendingVerification"
    await cy.reload()
    await _press(cy, "Approve the release")
    await _passkey(cy, "Use my passkey to approve the release")
    await bo.goto(origin + bo_path)
    await _press(bo, "Approve the release")
    await wallet_signs(client, await bo.content(), guardian_key)
    overview = await get_overview(client, api)
    assert overview["status"] == "Approved", overview
    clock.advance(seconds=overview["settings"]["cancelWindowSeconds"] + 1)
    await run_worker(settings=worker)
    assert (await get_overview(client, api))["status"] == "Released"

    # 5. Ana opens the capsule from her email: the same letters, documents and shares.
    await run_worker(settings=worker)
    mails = [m.body["text"] for m in email_provider.to("ana@example.org")]
    links = [found for text in mails for found in CLAIM.findall(text)]
    assert links, mails
    heir_context = await browser.new_context(viewport=PHONE)
    heir = await heir_context.new_page()
    assert (await heir.goto(origin + links[-1], wait_until="load")).status == 200
    assert await heir.locator(".preview-mark").count() == 0
    await heir.screenshot(path=str(screenshots / "journey-heir-en-390.png"), full_page=True)
    assert await sections(heir, HEIR_SECTIONS) == rehearsed
    assert await _downloaded(heir, "My will") == document.read_bytes()
    for opened in (heir_context, bo_context, cy_context, context):
        await opened.close()
