"""Signing the aiohttp test client in to the owner's pages through a real door (the text-signature
form of /sign-in), never a forged cookie, and reading a page's form token.

`sign_in_page(client, keypair)` first makes the client a browser on PUBLIC_BASE_URL's host: every
request carries that `Host` (an owner page under another host redirects there) and that
`Origin` (a form posted from anywhere else is refused), and the cookie jar sends the session's
`Secure` cookie to the test server (plain http on 127.0.0.1). A test of those refusals passes
its own `Origin` or `Host` header, which wins over these.
"""

from __future__ import annotations

import html
import re
from urllib.parse import urlsplit

from aiohttp.test_utils import TestClient
from stellar_sdk import Keypair

from api.keys import SETTINGS
from tests.helpers import sign

_TOKEN = re.compile(r'name="formToken" value="([^"]*)"')
_CHALLENGE = re.compile(r'<textarea id="challenge-text"[^>]*>(.*?)</textarea>', re.S)
_CODE = re.compile(r'<strong class="code">([^<]+)</strong>')


def service_origin(client: TestClient) -> str:
    split = urlsplit(client.server.app[SETTINGS].public_base_url)
    return f"{split.scheme}://{split.netloc}"


def browse_as_the_service(client: TestClient) -> None:
    """The client's requests look like a browser's on PUBLIC_BASE_URL (see the module's doc)."""
    origin = service_origin(client)
    client.session.headers["Host"] = urlsplit(origin).netloc
    client.session.headers["Origin"] = origin
    jar = client.session.cookie_jar
    # The jar's own switch for an origin served over plain http that counts as secure.
    jar._treat_as_secure_origin = frozenset({client.make_url("/").origin()})  # type: ignore[attr-defined]


def form_token(page: str) -> str:
    """The `formToken` a page's forms carry (the session's)."""
    found = _TOKEN.search(page)
    assert found, "no formToken on the page"
    return html.unescape(found.group(1))


def challenge_text(page: str) -> str:
    """The spec's challenge text the waiting page shows for a wallet that signs messages."""
    found = _CHALLENGE.search(page)
    assert found, "no challenge text on the page"
    return html.unescape(found.group(1))


def sign_in_code(page: str) -> str:
    found = _CODE.search(page)
    assert found, "no sign-in code on the page"
    return found.group(1)


async def start_sign_in(client: TestClient, address: str, *, next_path: str = "/plan") -> str:
    """Name the wallet on /sign-in; returns the waiting page."""
    browse_as_the_service(client)
    named = await client.post(
        "/sign-in/wallet", data={"walletAddress": address, "next": next_path}, allow_redirects=False
    )
    assert named.status == 303, await named.text()
    waiting = await client.get("/sign-in/wait", allow_redirects=False)
    assert waiting.status == 200, await waiting.text()
    return await waiting.text()


async def sign_in_page(client: TestClient, keypair: Keypair) -> None:
    """Sign the client in to the owner's pages with this wallet (the challenge text, signed)."""
    waiting = await start_sign_in(client, keypair.public_key)
    signed = await client.post(
        "/sign-in/signature",
        data={"signature": sign(keypair, challenge_text(waiting))},
        allow_redirects=False,
    )
    assert signed.status == 303, await signed.text()
