"""The owner's door in headless Chromium (tests/browser.py): a SEP-7 sign-in answered by a test
wallet from another client, while another browser stays signed out; a passkey added on the
account page, then signing in alone (CDP virtual authenticator, tests/passkey_helpers.py); the
cookie's flags as the browser keeps them; sign-out and sign-out everywhere; forms posted from
another site or with `Origin: null` refused; /sign-in and the waiting page at 390 px through axe
at AA in every language, with screenshots in .data/screenshots."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from stellar_sdk import Keypair

from tests.passkey_helpers import localhost_client, with_authenticator
from tests.support.browser_pages import (
    assert_accessible,
    assert_within,
    check_in_every_language,
    open_at_phone,
)
from tests.support.owner_browser import PHONE, wallet_signs


async def _sign_in_with_wallet(
    page: Any, client: Any, origin: str, keypair: Keypair, shots: Path | None = None
) -> None:
    await page.goto(f"{origin}/plan/account", wait_until="load")
    assert urlsplit(page.url).path == "/sign-in"
    await page.fill("#walletAddress", keypair.public_key)
    await page.get_by_role("button", name="Continue with this wallet").click()
    assert urlsplit(page.url).path == "/sign-in/wait"
    if shots is not None:
        await page.screenshot(path=str(shots / "owner-sign-in-wait-en-390.png"), full_page=True)
    await wallet_signs(client, await page.content(), keypair)
    await page.get_by_role("link", name="Continue", exact=True).click()
    assert urlsplit(page.url).path == "/plan/account", page.url


async def test_a_wallet_signs_in_the_browser_that_asked_and_no_other(
    aiohttp_client: Any, settings: Any, clock: Any, browser: Any, axe_source: str, screenshots: Path
) -> None:
    client, origin = await localhost_client(aiohttp_client, settings, clock)
    context, page = await open_at_phone(browser)
    await page.goto(f"{origin}/sign-in", wait_until="load")
    await assert_within(page)
    await assert_accessible(page, axe_source)
    await page.screenshot(path=str(screenshots / "owner-sign-in-en-390.png"), full_page=True)
    other_context, other = await open_at_phone(browser)
    await other.goto(f"{origin}/sign-in", wait_until="load")

    keypair = Keypair.random()
    await page.fill("#walletAddress", keypair.public_key)
    await page.get_by_role("button", name="Continue with this wallet").click()
    await assert_within(page)
    await assert_accessible(page, axe_source)
    await page.screenshot(path=str(screenshots / "owner-sign-in-wait-en-390.png"), full_page=True)
    code = await page.locator("strong.code").inner_text()
    assert await page.locator('meta[http-equiv="refresh"]').count() == 0
    await wallet_signs(client, await page.content(), keypair)
    # The other browser, at the waiting page's address, is not signed in by that answer.
    await other.goto(f"{origin}/sign-in/wait", wait_until="load")
    assert urlsplit(other.url).path == "/sign-in/wait"
    await other.goto(f"{origin}/plan", wait_until="load")
    assert urlsplit(other.url).path == "/sign-in"
    await page.get_by_role("link", name="Continue", exact=True).click()
    assert urlsplit(page.url).path == "/plan", (page.url, code)

    cookies = {c["name"]: c for c in await context.cookies()}
    session = cookies["lps_session"]
    assert session["httpOnly"] and session["sameSite"] == "Lax" and session["path"] == "/"
    assert "lps_sign_in" not in cookies  # the pending sign-in's cookie is cleared
    await other_context.close()
    await context.close()


async def test_the_sign_in_pages_in_every_language(
    aiohttp_client: Any, settings: Any, clock: Any, browser: Any, axe_source: str, screenshots: Path
) -> None:
    _client, origin = await localhost_client(aiohttp_client, settings, clock)
    context, page = await open_at_phone(browser)
    await check_in_every_language(page, f"{origin}/sign-in", axe_source, screenshots, "owner-sign-in")
    await page.goto(f"{origin}/sign-in", wait_until="load")
    await page.fill("#walletAddress", Keypair.random().public_key)
    await page.get_by_role("button", name="Continue with this wallet").click()
    await check_in_every_language(
        page, f"{origin}/sign-in/wait", axe_source, screenshots, "owner-sign-in-wait"
    )
    await context.close()


async def test_a_passkey_added_on_the_account_page_signs_in_alone_and_sign_out_ends_it(
    aiohttp_client: Any, settings: Any, clock: Any, browser: Any, axe_source: str, screenshots: Path
) -> None:
    client, origin = await localhost_client(aiohttp_client, settings, clock)
    context = await browser.new_context(viewport=PHONE)
    page, _cdp, _authenticator = await with_authenticator(context)
    await _sign_in_with_wallet(page, client, origin, Keypair.random())
    await page.get_by_role("button", name="Add a passkey").click()
    assert urlsplit(page.url).path == "/plan/account/passkeys"
    await assert_accessible(page, axe_source)
    async with page.expect_navigation(url="**/plan/account?done=passkey-added"):
        await page.get_by_role("button", name="Create a passkey").click()
    assert (
        await page.get_by_role("status").first.inner_text()
        == "The passkey is added: next time, sign in with it."
    )
    await page.screenshot(path=str(screenshots / "owner-account-en-390.png"), full_page=True)
    await assert_accessible(page, axe_source)

    await page.get_by_role("button", name="Sign out", exact=True).click()
    assert urlsplit(page.url).path == "/sign-in"
    await page.goto(f"{origin}/plan", wait_until="load")
    assert urlsplit(page.url).path == "/sign-in"

    await page.get_by_role("button", name="Sign in with a passkey").click()
    await assert_accessible(page, axe_source)
    await page.screenshot(path=str(screenshots / "owner-sign-in-passkey-en-390.png"), full_page=True)
    async with page.expect_navigation(url="**/plan"):
        await page.get_by_role("button", name="Use my passkey").click()
    assert urlsplit(page.url).path == "/plan"

    # Sign out everywhere, from the account page: this browser is signed out too.
    await page.goto(f"{origin}/plan/account", wait_until="load")
    await page.get_by_role("button", name="Sign out everywhere").click()
    assert urlsplit(page.url).path == "/sign-in"
    assert "Every session of your account has ended" in await page.content()
    await page.goto(f"{origin}/plan", wait_until="load")
    assert urlsplit(page.url).path == "/sign-in"
    await context.close()


async def test_forms_posted_from_another_site_or_with_a_null_origin_are_refused(
    aiohttp_client: Any, settings: Any, clock: Any, browser: Any
) -> None:
    client, origin = await localhost_client(aiohttp_client, settings, clock)
    context, page = await open_at_phone(browser)
    await _sign_in_with_wallet(page, client, origin, Keypair.random())
    attack = (
        f'<form method="post" action="{origin}/plan/account/sign-out-everywhere">'
        '<input name="formToken" value="guess"><button>Go</button></form>'
    )

    async def evil(route: Any) -> None:
        await route.fulfill(
            status=200, content_type="text/html", body=f"<!doctype html><title>x</title>{attack}"
        )

    await page.route("http://evil.example/**", evil)
    await page.goto("http://evil.example/", wait_until="load")
    async with page.expect_navigation():
        await page.get_by_role("button", name="Go").click()
    assert "Nothing was done" in await page.content()

    # A page under `Referrer-Policy: no-referrer` posts its forms with `Origin: null`.
    async def no_referrer(route: Any) -> None:
        body = f'<!doctype html><title>x</title><meta name="referrer" content="no-referrer">{attack}'
        await route.fulfill(status=200, content_type="text/html", body=body)

    await page.route("http://null.example/**", no_referrer)
    await page.goto("http://null.example/", wait_until="load")
    async with page.expect_response(lambda r: r.url.endswith("/sign-out-everywhere")) as answered:
        await page.get_by_role("button", name="Go").click()
    response = await answered.value
    assert response.status == 403 and (await response.request.all_headers()).get("origin") == "null"
    assert "Nothing was done" in await page.content()
    # Still signed in: nothing was done.
    await page.goto(f"{origin}/plan", wait_until="load")
    assert urlsplit(page.url).path == "/plan"
    await context.close()
