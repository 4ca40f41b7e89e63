"""Signing the aiohttp test client in to the owner's pages through a real door (the text-signature
form of /sign-in), never a forged cookie, and reading a page's form token; an `Owner` signed in
both ways (the pages' cookie and the API's bearer token), the words beside a refused field, and
an owner with a plan of a given size, as the owner's page suites share them.

`sign_in_page(client, keypair)` first makes the client a browser on PUBLIC_BASE_URL's host: every
request carries that `Host` (an owner page under another host redirects there) and that
`Origin` (a form posted from anywhere else is refused), and the cookie jar sends the session's
`Secure` cookie to the test server (plain http on 127.0.0.1). A test of those refusals passes
its own `Origin` or `Host` header, which wins over these.
"""

from __future__ import annotations

import html
import re
from typing import Any
from urllib.parse import urlsplit

from aiohttp.test_utils import TestClient
from stellar_sdk import Keypair

from api.keys import SETTINGS
from tests.helpers import Session, sign, sign_in
from tests.plan_helpers import create

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


class Owner:
    """One owner, in a browser (the client's cookie jar) and in the API (a bearer token)."""

    def __init__(self, client: TestClient, keypair: Keypair, api: Session) -> None:
        self.client, self.keypair, self.api = client, keypair, api

    async def page(self, path: str, status: int = 200) -> str:
        resp = await self.client.get(path, allow_redirects=False)
        text = await resp.text()
        assert resp.status == status, text
        return text

    async def post(
        self, path: str, fields: dict[str, Any] | list[tuple[str, str]], *, status: int = 303
    ) -> Any:
        page = await self.page("/plan")
        pairs = list(fields.items()) if isinstance(fields, dict) else list(fields)
        resp = await self.client.post(
            path, data=[("formToken", form_token(page)), *pairs], allow_redirects=False
        )
        text = await resp.text()
        assert resp.status == status, text
        return resp, text

    async def listed(self, collection: str) -> list[dict[str, Any]]:
        resp = await self.client.get(f"/api/{collection}", headers=self.api.headers)
        assert resp.status == 200
        rows: list[dict[str, Any]] = await resp.json()
        return rows


async def owner_in(client: TestClient, keypair: Keypair | None = None) -> Owner:
    keypair = keypair or Keypair.random()
    api = await sign_in(client, keypair)
    await sign_in_page(client, keypair)
    return Owner(client, keypair, api)


def beside(page: str, field: str) -> str:
    """The words shown beside a field (its error paragraph), unescaped."""
    found = re.search(rf'<p class="field-error" id="error-{field}">(.*?)</p>', page, re.S)
    assert found, f"no error beside {field}"
    return html.unescape(found.group(1))


async def owner_with(client: TestClient, *, heirs: int, guardians: int) -> Keypair:
    keypair = Keypair.random()
    owner = await sign_in(client, keypair)
    share = 100 // heirs
    for index in range(heirs):
        await create(
            client,
            owner,
            "beneficiaries",
            name=f"Heir {index}",
            email=f"heir{index}@example.org",
            allocationPercentage=share,
        )
    for index in range(guardians):
        await create(client, owner, "guardians", name=f"Guardian {index}", email=f"g{index}@example.org")
    return keypair


# The heir and guardian forms as an owner fills them in, each field a string as a browser sends it.
def heir(**overrides: str) -> dict[str, str]:
    return {
        "name": "Ana Souza",
        "relationship": "daughter",
        "email": "ana@example.org",
        "allocationPercentage": "60",
        "locale": "pt-BR",
        "timeZone": "America/Sao_Paulo",
        **overrides,
    }


def guardian(**overrides: str) -> dict[str, str]:
    return {"name": "Bo Lind", "email": "bo@example.org", "walletAddress": "", "locale": "en", **overrides}
