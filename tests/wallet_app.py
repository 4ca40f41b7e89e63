"""A Stellar wallet app as the tests play it (stellar-sdk): it opens a SEP-7 `web+stellar:tx`
link from one of the service's pages, checks the request's signature against the key in the
served stellar.toml (SEP-1) as a wallet must before naming the requester, signs the
transaction with its key and posts it to the callback, form-encoded `xdr=`."""

from __future__ import annotations

import base64
import html
import re
import tomllib
from typing import Any
from urllib.parse import urlsplit

from aiohttp.test_utils import TestClient
from stellar_sdk import Keypair
from stellar_sdk.sep.stellar_uri import TransactionStellarUri

URI_RE = re.compile(r'href="(web\+stellar:tx\?[^"]+)"')
ORIGIN = "https://legacy.example.test"  # PUBLIC_BASE_URL in tests/conftest.py


def request_uri(page: str) -> str:
    """The one signing request link on a page."""
    found = URI_RE.findall(page)
    assert len(found) == 1, f"expected one web+stellar link, found {len(found)}"
    return html.unescape(found[0])


class WalletApp:
    def __init__(self, client: TestClient, keypair: Keypair) -> None:
        self.client = client
        self.keypair = keypair

    async def open(self, uri: str) -> TransactionStellarUri:
        """Parse the request and refuse it unless its signature is the origin domain's key."""
        request = TransactionStellarUri.from_uri(uri, None)
        assert request.origin_domain == urlsplit(ORIGIN).hostname
        assert request.callback is not None and request.callback.startswith(f"{ORIGIN}/")
        assert request.msg is not None and 0 < len(request.msg) <= 300
        # The test client stands in for DNS and TLS: the origin domain's stellar.toml.
        resp = await self.client.get("/.well-known/stellar.toml")
        assert resp.status == 200
        toml = tomllib.loads(await resp.text())
        assert toml["NETWORK_PASSPHRASE"] == request.network_passphrase
        assert request.signature is not None
        Keypair.from_public_key(toml["URI_REQUEST_SIGNING_KEY"]).verify(
            request._signature_payload, base64.b64decode(request.signature)
        )
        return request

    def sign(self, request: TransactionStellarUri, keypair: Keypair | None = None) -> str:
        envelope = request.transaction_envelope
        envelope.sign(keypair or self.keypair)
        return envelope.to_xdr()

    async def approve(self, uri: str, keypair: Keypair | None = None) -> Any:
        """Open, sign and post back, as a wallet does when its user taps Approve."""
        request = await self.open(uri)
        assert request.pubkey == self.keypair.public_key
        signed = self.sign(request, keypair)
        return await self.client.post(callback_path(request), data={"xdr": signed})


def callback_path(request: TransactionStellarUri) -> str:
    assert request.callback is not None
    return request.callback.removeprefix(ORIGIN)
