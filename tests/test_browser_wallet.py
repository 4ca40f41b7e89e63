"""Signing requests in a real browser (headless Chromium, tests/browser.py), with JavaScript
off as a careful heir might have it: the QR code read back from a screenshot (zxing-cpp) is
exactly the page's `web+stellar:` link, and the paste-back form, signed by the test wallet
(tests/wallet_app.py), binds the wallet and brings the finalise request. axe-core passes on
every page with a request. Screenshots land in .data/screenshots."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from stellar_sdk import Keypair
from stellar_sdk.sep.stellar_uri import TransactionStellarUri

from tests.browser import read_qr_codes
from tests.helpers import sign_in
from tests.support.browser_pages import DESKTOP, SMALL_PHONE, assert_accessible, assert_fits, record_requests
from tests.support.guardian_page import draft_with_guardians, page_link
from tests.support.onchain import ready, worker_settings
from tests.wallet_app import WalletApp


async def assert_qr_is_the_link(page: Any, screenshot: Path) -> str:
    """Screenshot the request; the QR code in it must decode to the link's URI. Returns it."""
    link = await page.locator("a.wallet-link").get_attribute("href")
    assert link is not None and link.startswith("web+stellar:tx?")
    png = await page.locator(".qr").screenshot(path=str(screenshot))
    assert read_qr_codes(png) == [html.unescape(link)]
    return link


async def test_the_heir_signs_with_a_wallet_app_through_qr_codes_and_the_paste_back_form(
    onchain: Any,
    soroban_rpc: Any,
    clock: Any,
    run_worker: Any,
    email_provider: Any,
    browser: Any,
    axe_source: str,
    screenshots: Path,
) -> None:
    setup = await ready(onchain, soroban_rpc, clock, run_worker, email_provider)
    origin = str(onchain.make_url("")).rstrip("/")
    url = f"{origin}/claim/{setup.beneficiaries[0]['claimToken']}"
    key = Keypair.random()
    soroban_rpc.fund(key.public_key)
    wallet = WalletApp(onchain, key)

    context = await browser.new_context(java_script_enabled=False, viewport=DESKTOP, device_scale_factor=2)
    page = await context.new_page()
    urls = record_requests(page)
    assert (await page.goto(url)).status == 200
    await page.locator("#walletAddress").fill(key.public_key)
    async with page.expect_navigation():
        await page.get_by_role("button", name="Continue").click()
    assert await page.locator("h1").inner_text() == "Prove this wallet is yours"
    await page.screenshot(path=str(screenshots / "claim-prove-1280.png"), full_page=True)
    link = await assert_qr_is_the_link(page, screenshots / "claim-prove-qr.png")
    request = await wallet.open(html.unescape(link))
    assert request.pubkey == key.public_key

    # The paste-back form, scripts off: the wallet signs the XDR from the textarea.
    unsigned = await page.locator("textarea[readonly]").input_value()
    assert unsigned == request.transaction_envelope.to_xdr()
    signed = wallet.sign(TransactionStellarUri.from_uri(html.unescape(link), None))
    await page.locator("summary").click()
    await page.get_by_label("The signed transaction").fill(signed)
    async with page.expect_navigation():
        await page.get_by_role("button", name="Send the signed transaction").click()
    assert page.url == url  # 303 back to the heir's page
    assert await page.get_by_role("heading", name="Confirm the release").count() == 1
    assert await page.locator("a.wallet-link").count() == 0  # opening the page builds nothing
    await page.screenshot(path=str(screenshots / "claim-ready-1280.png"), full_page=True)
    async with page.expect_navigation():
        await page.get_by_role("button", name="Ask my wallet to sign").click()
    assert await page.locator("h1").inner_text() == "Confirm the release with your wallet"
    await page.screenshot(path=str(screenshots / "claim-finalise-1280.png"), full_page=True)
    link = await assert_qr_is_the_link(page, screenshots / "claim-finalise-qr.png")
    assert (await wallet.open(html.unescape(link))).msg.startswith("Finalise the release of Olive Owner")
    assert [u for u in urls if not u.startswith(origin + "/")] == []
    await context.close()

    # The same pages on a phone, through axe (which needs script; the button shows the request
    # shown before, building nothing).
    checker = await browser.new_context(viewport=SMALL_PHONE)
    page = await checker.new_page()
    assert (await page.goto(url)).status == 200
    await assert_fits(page)
    await assert_accessible(page, axe_source)
    await page.screenshot(path=str(screenshots / "claim-ready-360.png"), full_page=True)
    async with page.expect_navigation():
        await page.get_by_role("button", name="Ask my wallet to sign").click()
    await assert_fits(page)
    await assert_accessible(page, axe_source)
    await page.screenshot(path=str(screenshots / "claim-finalise-360.png"), full_page=True)
    assert await page.locator("a.wallet-link").get_attribute("href") == link

    # The wallet app signs the finalise request from the phone; once confirmed, the released
    # page asks for the claim the same way.
    resp = await wallet.approve(html.unescape(link))
    assert resp.status == 200 and await resp.json() == {"status": "pending"}
    assert (await page.reload()).status == 200
    assert "has not confirmed it yet" in await page.locator("main").inner_text()
    await run_worker(**worker_settings(soroban_rpc, email_provider))
    desktop = await browser.new_context(java_script_enabled=False, viewport=DESKTOP, device_scale_factor=2)
    page = await desktop.new_page()
    assert (await page.goto(url)).status == 200
    assert await page.get_by_role("heading", name="Claim it on the Stellar network").count() == 1
    async with page.expect_navigation():
        await page.get_by_role("button", name="Ask my wallet to sign").click()
    assert await page.locator("h1").inner_text() == "Claim your share"
    await page.screenshot(path=str(screenshots / "claim-share-1280.png"), full_page=True)
    link = await assert_qr_is_the_link(page, screenshots / "claim-share-qr.png")
    assert (await wallet.open(html.unescape(link))).msg == "Claim Heir 0's share of what Olive Owner left"
    await desktop.close()
    await checker.close()


async def test_a_guardian_answers_from_their_page_in_a_browser(
    client: Any,
    run_worker: Any,
    email_provider: Any,
    browser: Any,
    axe_source: str,
    screenshots: Path,
) -> None:
    owner = await sign_in(client)
    _, guardians = await draft_with_guardians(client, owner, count=1)
    await run_worker(settings=email_provider.settings)
    origin = str(client.make_url("")).rstrip("/")
    url = origin + page_link(email_provider, "guardian0@example.org")
    wallet = WalletApp(client, guardians[0].keypair)

    context = await browser.new_context(java_script_enabled=False, viewport=DESKTOP, device_scale_factor=2)
    page = await context.new_page()
    urls = record_requests(page)
    assert (await page.goto(url)).status == 200
    await page.screenshot(path=str(screenshots / "guardian-invited-1280.png"), full_page=True)
    async with page.expect_navigation():
        await page.get_by_role("button", name="Accept").click()
    assert await page.locator("h1").inner_text() == "Accept with your wallet"
    await page.screenshot(path=str(screenshots / "guardian-accept-1280.png"), full_page=True)
    link = await assert_qr_is_the_link(page, screenshots / "guardian-accept-qr.png")
    request = await wallet.open(html.unescape(link))
    assert request.msg == "Accept being a guardian for Olive Owner's plan"
    await page.locator("summary").click()
    await page.get_by_label("The signed transaction").fill(wallet.sign(request))
    async with page.expect_navigation():
        await page.get_by_role("button", name="Send the signed transaction").click()
    assert page.url == url
    assert "not answered the invitation" not in await page.locator("main").inner_text()
    assert [u for u in urls if not u.startswith(origin + "/")] == []
    await context.close()
    rows = await (await client.get("/api/guardians", headers=owner.headers)).json()
    assert rows[0]["acceptedAt"] is not None

    checker = await browser.new_context(viewport=SMALL_PHONE)
    page = await checker.new_page()
    assert (await page.goto(url)).status == 200
    await assert_fits(page)
    await assert_accessible(page, axe_source)
    await page.screenshot(path=str(screenshots / "guardian-360.png"), full_page=True)
    async with page.expect_navigation():
        await page.get_by_role("button", name="Decline").click()
    await assert_fits(page)
    await assert_accessible(page, axe_source)
    await checker.close()
