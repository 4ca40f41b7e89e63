"""Driving the owner's pages in a real browser (tests/browser.py): a wallet on another device
answering the SEP-7 sign-in request, a form filled by its labels, and the heir's page read by its
sections, shared by the owner's browser tests."""

from __future__ import annotations

import html
import socket
from typing import Any
from urllib.parse import urlsplit

from stellar_sdk import Keypair
from stellar_sdk.sep.stellar_uri import TransactionStellarUri

from tests.wallet_app import URI_RE

PHONE = {"width": 390, "height": 844}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def wallet_signs(client: Any, page_html: str, keypair: Keypair) -> None:
    """A wallet app on another device: it opens the page's request, signs, posts it back."""
    uri = html.unescape(URI_RE.findall(page_html)[0])
    request = TransactionStellarUri.from_uri(uri, None)
    assert request.pubkey == keypair.public_key and request.callback is not None
    envelope = request.transaction_envelope
    envelope.sign(keypair)
    resp = await client.post(urlsplit(request.callback).path, data={"xdr": envelope.to_xdr()})
    assert resp.status == 200, await resp.text()


async def sign_in_in_the_browser(page: Any, client: Any, keypair: Keypair, origin: str | None = None) -> None:
    """Sign the browser in to the owner's pages with this wallet, through the SEP-7 request."""
    origin = origin or str(client.make_url("")).rstrip("/")
    await page.goto(f"{origin}/plan", wait_until="load")
    assert urlsplit(page.url).path == "/sign-in"
    await page.fill("#walletAddress", keypair.public_key)
    await page.click("button[type=submit] >> nth=0")
    assert urlsplit(page.url).path == "/sign-in/wait"
    await wallet_signs(client, await page.content(), keypair)
    await page.get_by_role("link", name="Continue").click()
    assert urlsplit(page.url).path == "/plan", page.url


async def add(page: Any, fields: dict[str, str], button: str) -> None:
    """Fill a form's fields by their labels (a select by its value), then press its button."""
    for label, value in fields.items():
        field = page.get_by_label(label, exact=True)
        if await field.evaluate("e => e.tagName") == "SELECT":
            await field.select_option(value)
        else:
            await field.fill(value)
    await page.get_by_role("button", name=button).click()


async def sections(page: Any, names: tuple[str, ...]) -> dict[str, str]:
    """The words of the heir's page's sections (the real page's or the owner's rehearsal)."""
    return {name: await page.locator(f'section[aria-labelledby="{name}"]').inner_text() for name in names}
