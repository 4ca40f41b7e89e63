"""An heir asks from the locked page in a real browser (headless Chromium, tests/browser.py):
the form, the page that says what happens next, axe-core's WCAG 2.2 AA rules, no sideways
scroll at 390 px. Screenshots land in .data/screenshots for a person to look at."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers import sign_in
from tests.lifecycle_helpers import activate_plan, get_overview
from tests.support.browser_pages import assert_accessible, assert_fits

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


async def test_a_bounced_link_and_a_corrected_address_in_the_browser(
    make_client: Any,
    clock: Any,
    run_worker: Any,
    email_provider: Any,
    settings: Any,
    browser: Any,
    axe_source: str,
    screenshots: Path,
) -> None:
    """The guardian page with a bounced link and the form beside it, and the new address's
    confirmation page, at 390 px through axe."""
    from tests.lifecycle_helpers import guardian_session, release_plan
    from tests.support.guardian_page import PAGE_RE
    from tests.support.mail import SECRET, event, post, provider_id
    from tests.support.plans import CONFIRM, NEW

    client = await make_client(email_webhook_secret=SECRET)
    owner = await sign_in(client)
    work = email_provider.settings
    setup = await release_plan(client, owner, clock, lambda: run_worker(settings=work), guardians=1)
    heir = setup.beneficiaries[0]
    await post(
        client,
        event("email.bounced", provider_id(settings, "claim_link", "beneficiary", recipient_id=heir["id"])),
    )
    await run_worker(settings=work)
    [alert] = [
        m.body for m in email_provider.to("guardian0@example.org") if "has not received" in m.body["subject"]
    ]
    origin = str(client.make_url("")).rstrip("/")
    context = await browser.new_context(viewport=PHONE)
    page = await context.new_page()
    await page.goto(origin + PAGE_RE.findall(alert["text"])[-1][0])
    assert "bounced" in await page.locator("main").inner_text()
    await assert_fits(page)
    await assert_accessible(page, axe_source)
    await page.screenshot(path=str(screenshots / "guardian-bounced-390.png"), full_page=True)

    # One guardian is the threshold: the proposal holds at once; past the hold, the link.
    session = await guardian_session(client, setup.guardians[0])
    resp = await client.post(
        f"/api/legacy/guardianships/{setup.plan_id}/beneficiaries/{heir['id']}/address",
        json={"email": NEW},
        headers=session.headers,
    )
    assert (await resp.json())["status"] == "holding"
    await page.reload()
    assert "It waits until" in await page.locator("main").inner_text()
    await assert_accessible(page, axe_source)
    await page.screenshot(path=str(screenshots / "guardian-address-holding-390.png"), full_page=True)
    clock.advance(days=7, seconds=1)
    await run_worker(settings=work)
    [ask] = email_provider.to(NEW)
    await page.goto(origin + CONFIRM.search(ask.body["text"])[1])
    assert await page.locator("h1").inner_text() == "Confirm your address"
    await assert_fits(page)
    await assert_accessible(page, axe_source)
    await page.screenshot(path=str(screenshots / "confirm-address-390.png"), full_page=True)
    await page.get_by_role("button", name="Yes, this address is mine").click()
    await page.wait_for_load_state()
    assert await page.locator("h1").inner_text() == "Thank you, your address is confirmed"
    await assert_accessible(page, axe_source)
    await context.close()
