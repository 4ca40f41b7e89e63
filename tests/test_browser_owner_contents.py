"""The plan's contents pages in a real browser (headless Chromium, tests/browser.py): an owner
signed in through the SEP-7 request adds an amount and a thing, writes a letter and uploads a
document from the pages (the upload through the page's own script, with its progress bar), then
/plan/assets, /plan/messages and /plan/archive in each shipped language at a phone's 390 px
through axe at AA, nothing past the screen's edges, the pseudo-language check, and screenshots
for a person to look at."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest_asyncio
from stellar_sdk import Keypair

from api.app import create_app
from api.html import LANGUAGE_NAMES
from tests.conftest import ServiceTestServer
from tests.helpers import sign_in
from tests.i18n_helpers import PSEUDO, ascii_words, pseudo
from tests.plan_helpers import create
from tests.support.browser_pages import check_in_every_language, open_at_phone
from tests.support.owner_browser import add, free_port, sign_in_in_the_browser

PAGES = ("/plan/assets", "/plan/messages", "/plan/archive")


@pytest_asyncio.fixture
async def served(aiohttp_client: Any, settings: Any, clock: Any, file_backend: dict[str, Any]) -> Any:
    """The service on a port chosen first, its PUBLIC_BASE_URL that very address, with storage."""
    port = free_port()
    origin = f"http://127.0.0.1:{port}"
    app = create_app(dataclasses.replace(settings, public_base_url=origin, **file_backend), clock)
    return await aiohttp_client(ServiceTestServer(app, port=port))


async def test_an_owner_records_what_they_leave_their_letters_and_documents_from_the_pages(
    served: Any,
    browser: Any,
    axe_source: str,
    screenshots: Path,
    run_worker: Any,
    file_backend: Any,
    tmp_path: Path,
) -> None:
    keypair = Keypair.random()
    context, page = await open_at_phone(browser)
    await sign_in_in_the_browser(page, served, keypair)
    api = await sign_in(served, keypair)
    await create(
        served, api, "beneficiaries", name="Ana Souza", email="ana@example.org", allocationPercentage=60
    )
    await create(
        served, api, "beneficiaries", name="Rui Souza", email="rui@example.org", allocationPercentage=40
    )
    origin = str(served.make_url("")).rstrip("/")

    await page.goto(f"{origin}/plan/assets", wait_until="load")
    await add(
        page,
        {
            "What it is": "Savings",
            "Its amount (leave empty for a thing)": "25000",
            "Its Stellar asset (optional)": "XLM",
        },
        "Add it",
    )
    assert await page.get_by_role("status").inner_text() == "It was added to what you leave."
    await add(page, {"What it is": "The piano"}, "Add it")
    shown = await page.evaluate("document.body.innerText")
    assert "Your share: 15000 XLM, which is 60\u00a0% of the whole 25000 XLM." in shown
    assert "It goes to you, together with Rui Souza." in shown
    await page.screenshot(path=str(screenshots / "owner-assets-en-390.png"), full_page=True)

    await page.goto(f"{origin}/plan/messages", wait_until="load")
    await page.get_by_label("Its title (optional)").fill("For later")
    await page.get_by_label("Your letter").fill("Dear Ana and Rui,\nLook after each other.")
    await page.get_by_label("A number of days after the release").check()
    await page.get_by_label("How many days").fill("30")
    await page.get_by_role("button", name="Save this letter").click()
    assert "Your letter was saved" in await page.get_by_role("status").inner_text()
    await page.screenshot(path=str(screenshots / "owner-messages-en-390.png"), full_page=True)

    document = tmp_path / "will.pdf"
    document.write_bytes(b"%PDF-1.4 " + b"x" * 2_000_000)
    await page.goto(f"{origin}/plan/archive", wait_until="load")
    await page.get_by_label("Its title").fill("My will")
    await page.set_input_files("#field-file", str(document))
    await page.get_by_role("button", name="Upload it").click()
    await page.wait_for_url("**/plan/archive?done=uploaded*")
    assert "Being sealed and stored" in await page.evaluate("document.body.innerText")
    await page.screenshot(path=str(screenshots / "owner-archive-pending-en-390.png"), full_page=True)
    await run_worker(settings=file_backend)
    await page.goto(f"{origin}/plan/archive", wait_until="load")
    assert "Sealed and stored" in await page.evaluate("document.body.innerText")
    await page.screenshot(path=str(screenshots / "owner-archive-en-390.png"), full_page=True)

    resp = await served.get("/api/archive", headers=api.headers)
    assert [(i["title"], i["size"]) for i in await resp.json()] == [("My will", 2_000_009)]

    for path in PAGES:
        await check_in_every_language(
            page, origin + path, axe_source, screenshots, "owner-" + path.rsplit("/", 1)[-1]
        )
    names = [
        "Ana Souza",
        "Rui Souza",
        "Savings",
        "The piano",
        "XLM",
        "For later",
        "My will",
        "will.pdf",
        "Dear",
        "MB",
        "Ana",
        "Rui",
        "Look",
        "after",
        "each",
        "other",
        *LANGUAGE_NAMES.values(),
    ]
    with pseudo():
        for path in PAGES:
            await page.goto(f"{origin}{path}?lang={PSEUDO}", wait_until="load")
            shown = await page.evaluate("document.body.innerText")
            left = ascii_words(shown, allowed=names)
            assert not left, (path, sorted(set(left)))
    await context.close()
