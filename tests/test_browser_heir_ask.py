"""An heir asks from the locked page in a real browser (headless Chromium, tests/browser.py):
the form, the page that says what happens next, axe-core's WCAG 2.2 AA rules, no sideways
scroll at 390 px. Screenshots land in .data/screenshots for a person to look at."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers import sign_in
from tests.lifecycle_helpers import activate_plan, get_overview
from tests.test_browser_pages import assert_accessible, assert_fits

PHONE = {"width": 390, "height": 780}


async def test_an_heir_asks_the_guardians_from_the_page(
    client: Any, browser: Any, axe_source: str, screenshots: Path
) -> None:
    owner = await sign_in(client)
    setup = await activate_plan(client, owner)
    token = setup.beneficiaries[0]["claimToken"]
    origin = str(client.make_url("")).rstrip("/")
    context = await browser.new_context(viewport=PHONE)
    page = await context.new_page()
    await page.goto(f"{origin}/claim/{token}")
    assert await page.locator("h1").inner_text() == "Nothing here yet"
    await assert_fits(page)
    await assert_accessible(page, axe_source)
    await page.screenshot(path=str(screenshots / "capsule-locked-ask-390.png"), full_page=True)

    await page.get_by_label("A few words for the guardians (optional)").fill(
        "She has not answered for a week."
    )
    await page.get_by_role("button", name="Ask the guardians to check").click()
    await page.wait_for_load_state()
    assert await page.locator("h1").inner_text() == "We have your request"
    assert "the plan is released, unless Olive Owner checks in" in await page.locator("main").inner_text()
    await assert_fits(page)
    await assert_accessible(page, axe_source)
    await page.screenshot(path=str(screenshots / "capsule-asked-390.png"), full_page=True)
    assert (await get_overview(client, owner))["status"] == "PendingVerification"

    # Asking again is a page in words; the locked page now says the guardians are checking.
    await page.goto(f"{origin}/claim/{token}")
    assert "checking now" in await page.locator("main").inner_text()
    await assert_accessible(page, axe_source)
    await page.screenshot(path=str(screenshots / "capsule-checking-390.png"), full_page=True)
    await context.close()
