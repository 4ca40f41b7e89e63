"""Error pages a person can act on: a paste-back or a form that goes wrong says what went wrong
in plain words, names the wallet that was asked for when another one signed, and links back to
the page the person came from. Over HTTP (a stellar-sdk test wallet, tests/wallet_app.py) and
in Chromium with axe at AA, looked at 390 px wide."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

from stellar_sdk import Keypair

from tests.capsule_helpers import Family
from tests.helpers import sign_in
from tests.support.browser_pages import assert_accessible, assert_fits
from tests.support.guardian_page import ask, draft_with_guardians, page_link
from tests.support.mail import link_in
from tests.support.plans import ask_to_confirm, heir_of
from tests.support.words import assert_plain, page_words
from tests.wallet_app import WalletApp, callback_path, request_uri

NARROW = {"width": 390, "height": 844}
# What a person must never read on an error page.
MACHINE_WORDS = re.compile(r"xdr:|signedXdr|base64|application/x-www|reason: one of|Go back to the page from")


def words(markup: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", markup)).split())


async def heir_request(fam: Family) -> tuple[str, WalletApp, str]:
    """A released capsule's heir, and the signing request (its URI) proving a wallet they named."""
    ada = await fam.add_heir("Ada", 100)
    await fam.release()
    key = Keypair.random()
    page = f"/claim/{ada['claimToken']}"
    resp = await fam.client.post(f"{page}/wallet", data={"walletAddress": key.public_key})
    assert resp.status == 200, await resp.text()
    wallet = WalletApp(fam.client, key)
    return page, wallet, request_uri(await resp.text())


async def signed(wallet: WalletApp, uri: str, keypair: Keypair | None = None) -> str:
    """The request signed by `keypair` (the wallet's own by default), from a fresh copy of it."""
    return wallet.sign(await wallet.open(uri), keypair)


def assert_actionable(text: str, *, back: str, back_words: str) -> str:
    assert not MACHINE_WORDS.search(text), MACHINE_WORDS.search(text)
    assert f'<a href="{back}">Go back to {back_words}</a> and try again.' in text
    assert_plain(page_words(text), f"the error page back to {back_words}")
    return words(text)


async def test_the_heirs_paste_back_errors_say_what_went_wrong_and_link_back(fam: Family):
    page, wallet, uri = await heir_request(fam)
    request = await wallet.open(uri)
    action = f"{callback_path(request)}?via=page"
    signer = wallet.keypair.public_key

    resp = await fam.client.post(action, data={"xdr": "  "})
    assert resp.status == 400 and resp.content_type == "text/html"
    said = assert_actionable(await resp.text(), back=page, back_words="your page")
    assert "Nothing was pasted. Copy the signed transaction from your wallet" in said

    resp = await fam.client.post(action, data={"xdr": "AAAA"})
    assert resp.status == 400
    said = assert_actionable(await resp.text(), back=page, back_words="your page")
    assert f"This is not what the service asked the wallet {signer} to sign." in said

    resp = await fam.client.post(action, data={"xdr": "x" * 20_001})
    assert resp.status == 400
    assert "far longer than a signed transaction" in assert_actionable(
        await resp.text(), back=page, back_words="your page"
    )

    # Signed by another wallet: the page names the one that was asked for.
    stranger = Keypair.random()
    resp = await fam.client.post(action, data={"xdr": await signed(wallet, uri, stranger)})
    assert resp.status == 400
    said = assert_actionable(await resp.text(), back=page, back_words="your page")
    assert f"This was not signed by the wallet asked for, {signer}." in said
    assert stranger.public_key not in said
    # A wallet posting the same gets the same words as JSON, its details for programs.
    resp = await fam.client.post(callback_path(request), data={"xdr": await signed(wallet, uri, stranger)})
    assert resp.status == 400 and signer in (await resp.json())["message"]
    resp = await fam.client.post(callback_path(request), data={"xdr": ""})
    body = await resp.json()
    assert resp.status == 400 and body["details"] == {"xdr": ["Missing."]}

    # Each refusal left the request usable: the right signature still goes through.
    resp = await fam.client.post(action, data={"xdr": await signed(wallet, uri)}, allow_redirects=False)
    assert resp.status == 303 and resp.headers["Location"] == page


async def test_the_heirs_forms_link_back_to_where_they_were_posted_from(fam: Family):
    ada = await fam.add_heir("Ada", 100)
    await fam.release()
    page = f"/claim/{ada['claimToken']}"
    resp = await fam.client.post(f"{page}/wallet", data={"walletAddress": "GNOPE"})
    assert resp.status == 400
    said = assert_actionable(await resp.text(), back=page, back_words="your page")
    assert "That is not a Stellar wallet address" in said
    resp = await fam.client.post(f"{page}/wallet", json={"walletAddress": "GNOPE"})
    assert resp.status == 400
    said = assert_actionable(await resp.text(), back=page, back_words="your page")
    assert "This did not come from the page's form" in said
    resp = await fam.client.post("/claim", data={"email": "not an address"})
    assert resp.status == 400
    assert_actionable(await resp.text(), back="/claim", back_words="the form")


async def test_the_guardians_paste_back_names_the_guardian_wallet_and_links_back(
    client, run_worker, email_provider
):
    owner = await sign_in(client)
    _, guardians = await draft_with_guardians(client, owner, count=1)
    await run_worker(settings=email_provider.settings)
    path = page_link(email_provider, "guardian0@example.org")
    wallet = WalletApp(client, guardians[0].keypair)
    request = await wallet.open(await ask(client, path, "accept"))
    resp = await client.post(
        f"{callback_path(request)}?via=page", data={"xdr": wallet.sign(request, Keypair.random())}
    )
    assert resp.status == 400
    said = assert_actionable(await resp.text(), back=path, back_words="your guardian page")
    assert f"This was not signed by the wallet asked for, {guardians[0].keypair.public_key}." in said
    resp = await client.post(f"{path}/ask", data={"action": "report", "reason": "bored"})
    assert resp.status in (400, 409)
    assert_actionable(await resp.text(), back=path, back_words="your guardian page")


async def test_a_wrong_wallet_page_reads_well_at_390_px_and_passes_axe(
    fam: Family, browser: Any, axe_source: str, screenshots: Path
) -> None:
    page_path, wallet, uri = await heir_request(fam)
    request = await wallet.open(uri)
    origin = str(fam.client.make_url("")).rstrip("/")
    wrong = await signed(wallet, uri, Keypair.random())
    context = await browser.new_context(viewport=NARROW)
    try:
        page = await context.new_page()
        # The paste-back form, as the prove page shows it, posted with another wallet's signature.
        await page.set_content(
            f'<form method="post" action="{origin}{callback_path(request)}?via=page">'
            f'<input name="xdr" value="{wrong}"><button>Send</button></form>'
        )
        async with page.expect_navigation():
            await page.get_by_role("button", name="Send").click()
        assert await page.title() == "That could not be used"
        text = await page.locator("main").inner_text()
        assert wallet.keypair.public_key in text
        await assert_fits(page)
        await assert_accessible(page, axe_source)
        await page.screenshot(path=str(screenshots / "error-wrong-wallet-390.png"), full_page=True)
        async with page.expect_navigation():
            await page.get_by_role("link", name="Go back to your page").click()
        assert page.url == f"{origin}{page_path}"
        assert "left this for you" in await page.locator("h1").inner_text()
    finally:
        await context.close()


async def test_a_confirmation_link_opened_again_reads_well_at_390_px_and_passes_axe(
    client, run_worker, email_provider, browser: Any, axe_source: str, screenshots: Path
) -> None:
    owner = await sign_in(client)
    await client.patch("/api/users/me", json={"name": "Olive Owner"}, headers=owner.headers)
    heir = await heir_of(client, owner)
    await ask_to_confirm(client, owner, heir)
    await run_worker(settings=email_provider.settings)
    url = f"{str(client.make_url('')).rstrip('/')}/confirm-email/{link_in(email_provider, 'ada@example.org')}"
    context = await browser.new_context(java_script_enabled=False, viewport=NARROW)
    try:
        page = await context.new_page()
        assert (await page.goto(url)).status == 200
        async with page.expect_navigation():
            await page.get_by_role("button", name="Yes, this address reaches me").click()
        assert await page.locator("h1").inner_text() == "Thank you, your address is confirmed"
        again = await page.goto(url)  # a reload, the back button, the email opened again
        assert again is not None and again.status == 200
        assert await page.locator("h1").inner_text() == "Your address is already confirmed"
        assert "You confirmed it on " in await page.locator("main").inner_text()
        await assert_fits(page)
        await page.screenshot(path=str(screenshots / "confirm-email-again-390.png"), full_page=True)
    finally:
        await context.close()
    context = await browser.new_context(viewport=NARROW)  # axe runs as a script
    try:
        page = await context.new_page()
        await page.goto(url)
        await assert_accessible(page, axe_source)
    finally:
        await context.close()


async def test_a_form_sent_too_often_says_which_limit_and_links_back(make_client, settings):
    client = await make_client(rate_limit_claim_resend_per_ip=1)
    assert (await client.post("/claim", data={"email": "ada@example.org"})).status == 200
    resp = await client.post("/claim", data={"email": "ada@example.org"})
    assert resp.status == 429 and resp.headers["Retry-After"]
    text = await resp.text()
    assert "Too many link requests from this address" in text  # its own sentence, not a token miss's
    assert "links that open nothing" not in text
    assert '<a href="/claim">go back to the form</a> and try again.' in text
