"""The guardian's page states of an objection and of where things stand, in headless Chromium at
390 px with axe at AA (tests/browser.py): the verification with the objection form (note field,
the deadline's sentence), the paste-back of the objection signed by the test wallet, the page
that then lists it and offers to withdraw it, and the page after the owner's check-in. Screenshots
land in .data/screenshots. A passkey guardian objects and withdraws with their passkey, the note
typed on their page carried to the passkey page."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from tests.helpers import sign_in
from tests.lifecycle_helpers import activate_plan, get_overview, report
from tests.passkey_helpers import localhost_client, with_authenticator
from tests.support.browser_pages import (
    assert_accessible,
    assert_fits,
    passkey_plan,
    press,
    record_requests,
    with_passkey,
)
from tests.support.guardian_page import page_link
from tests.wallet_app import WalletApp

NARROW = {"width": 390, "height": 844}
NOTE = "I saw her this morning at the market."
OBJECT = "This is a mistake: I know they are alive or able to act"
WHAT_YOU_KNOW = "What you know, for Olive Owner and the other guardians (optional)"


async def test_a_guardian_objects_in_a_browser_at_390_px(
    make_client: Any,
    run_worker: Any,
    email_provider: Any,
    browser: Any,
    axe_source: str,
    screenshots: Path,
) -> None:
    client = await make_client(plan_report_cooldown_seconds=24 * 3600)
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=2)
    assert (await report(client, setup, setup.guardians[0])).status == 200
    await run_worker(settings=email_provider.settings)
    origin = str(client.make_url("")).rstrip("/")
    url = origin + page_link(email_provider, "guardian1@example.org")
    wallet = WalletApp(client, setup.guardians[1].keypair)

    context = await browser.new_context(java_script_enabled=False, viewport=NARROW, device_scale_factor=2)
    page = await context.new_page()
    urls = record_requests(page)
    assert (await page.goto(url)).status == 200
    await assert_fits(page)
    await page.screenshot(path=str(screenshots / "guardian-verification-390.png"), full_page=True)
    main = await page.locator("main").inner_text()
    assert "This is the service\u2019s usual deadline" in main
    await page.get_by_label(WHAT_YOU_KNOW).fill(NOTE)
    async with page.expect_navigation():
        await page.get_by_role(
            "button", name="This is a mistake: I know they are alive or able to act"
        ).click()
    assert await page.locator("h1").inner_text() == "Object with your wallet"
    await assert_fits(page)
    link = await page.locator("a.wallet-link").get_attribute("href")
    assert link is not None
    request = await wallet.open(html.unescape(link))
    await page.locator("summary").click()
    await page.get_by_label("The signed transaction").fill(wallet.sign(request))
    async with page.expect_navigation():
        await page.get_by_role("button", name="Send the signed transaction").click()
    assert page.url == url
    main = await page.locator("main").inner_text()
    assert "You said on" in main and NOTE in main
    await assert_fits(page)
    await page.screenshot(path=str(screenshots / "guardian-objected-390.png"), full_page=True)
    assert [u for u in urls if not u.startswith(origin + "/")] == []
    await context.close()
    assert (await get_overview(client, owner))["approvals"]["objections"] == 1

    # axe needs script: the same states checked with it on.
    checker = await browser.new_context(viewport=NARROW)
    page = await checker.new_page()
    assert (await page.goto(url)).status == 200
    await assert_accessible(page, axe_source)
    other = origin + page_link(email_provider, "guardian0@example.org")
    assert (await page.goto(other)).status == 200
    assert NOTE in await page.locator("main").inner_text()
    await assert_accessible(page, axe_source)
    await page.screenshot(path=str(screenshots / "guardian-others-objection-390.png"), full_page=True)
    # After the owner's check-in: when, and from when a report is possible again.
    assert (await client.post("/api/legacy/check-in", headers=owner.headers)).status == 200
    assert (await page.goto(url)).status == 200
    main = await page.locator("main").inner_text()
    assert "a new report is possible from" in main and "You accepted on" in main
    await assert_fits(page)
    await assert_accessible(page, axe_source)
    await page.screenshot(path=str(screenshots / "guardian-cooldown-390.png"), full_page=True)
    await checker.close()


async def test_a_passkey_guardian_objects_and_withdraws_with_their_passkey(
    aiohttp_client: Any,
    settings: Any,
    clock: Any,
    run_worker: Any,
    email_provider: Any,
    browser: Any,
    axe_source: str,
    screenshots: Path,
) -> None:
    client, origin = await localhost_client(aiohttp_client, settings, clock)
    owner, paths = await passkey_plan(client, run_worker, email_provider)
    contexts = [await browser.new_context(viewport=NARROW) for _ in paths]
    pages = [(await with_authenticator(c))[0] for c in contexts]
    for page, path in zip(pages, paths, strict=True):
        assert (await page.goto(origin + path)).status == 200
        await press(page, "Accept")
        await with_passkey(page, "Create a passkey and accept")
    assert (await client.post("/api/legacy/activate", headers=owner.headers)).status == 200
    await pages[0].reload()
    await press(pages[0], "Report")
    await with_passkey(pages[0], "Use my passkey to report")
    assert (await get_overview(client, owner))["status"] == "PendingVerification"

    # The note typed on the guardian page is shown on the passkey page as it will be sent (the
    # passkey signs it too), and is posted with it unchanged.
    await pages[1].reload()
    await (
        pages[1].get_by_label("What you know, for Olive Owner and the other guardians (optional)").fill(NOTE)
    )
    await press(pages[1], OBJECT)
    assert await pages[1].locator("h1").inner_text() == "Object with your passkey"
    assert await pages[1].locator("input[type=hidden][name=note]").input_value() == NOTE
    assert NOTE in await pages[1].locator("main").inner_text()
    await assert_fits(pages[1])
    await assert_accessible(pages[1], axe_source)
    await pages[1].screenshot(path=str(screenshots / "guardian-passkey-object-390.png"), full_page=True)
    await with_passkey(pages[1], "Use my passkey to object")
    overview = await get_overview(client, owner)
    assert overview["approvals"]["objections"] == 1
    assert "You said on" in await pages[1].locator("main").inner_text()
    await run_worker(settings=email_provider.settings)
    [told] = [m.body for m in email_provider.to("owner@example.org") if "mistake" in m.body["subject"]]
    assert NOTE in told["text"] and "Guardian 1" in told["text"]

    await press(pages[1], "Withdraw my objection")
    assert await pages[1].locator("h1").inner_text() == "Withdraw your objection with your passkey"
    await with_passkey(pages[1], "Use my passkey to withdraw it")
    assert (await get_overview(client, owner))["approvals"]["objections"] == 0
    for context in contexts:
        await context.close()
