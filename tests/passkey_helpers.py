"""Guardians with a passkey in a real browser: headless Chromium (tests/browser.py) with a CDP
virtual authenticator (ctap2, internal, resident keys, user verification), on an app whose
PUBLIC_BASE_URL is http://localhost:<port> (a secure context, and `localhost` a valid RP ID).

`python -m tests.passkey_helpers` records one registration and one assertion from the virtual
authenticator into tests/fixtures/passkey_ceremony.json, the unit tests' recorded ceremony."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from api.app import create_app
from core.clock import Clock
from core.settings import Settings
from tests.browser import CHROMIUM, CHROMIUM_ARGS

FIXTURE = Path(__file__).parent / "fixtures" / "passkey_ceremony.json"
GUARDIAN_PATH = re.compile(r"/guardian/[0-9a-f]{64}")
AUTHENTICATOR = {
    "protocol": "ctap2",
    "transport": "internal",
    "hasResidentKey": True,
    "hasUserVerification": True,
    "isUserVerified": True,
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def localhost_client(
    aiohttp_client: Any, settings: Settings, clock: Clock, **overrides: Any
) -> tuple[Any, str]:
    """The app served at http://localhost:<port>, with that as its PUBLIC_BASE_URL."""
    from tests.conftest import ServiceTestServer

    port = free_port()
    origin = f"http://localhost:{port}"
    app = create_app(dataclasses.replace(settings, public_base_url=origin, **overrides), clock)
    client = await aiohttp_client(ServiceTestServer(app, port=port))
    return client, origin


def guardian_path(email_provider: Any, address: str) -> str:
    """The guardian page's path in the last email to this address."""
    found = GUARDIAN_PATH.findall(email_provider.to(address)[-1].body["text"])
    assert found, f"no guardian page link in the email to {address}"
    return str(found[-1])


async def with_authenticator(context: Any) -> tuple[Any, Any, str]:
    """A page of `context` with its own virtual authenticator (a device of one guardian): the
    page, its CDP session and the authenticator's id."""
    page = await context.new_page()
    cdp = await context.new_cdp_session(page)
    await cdp.send("WebAuthn.enable")
    added = await cdp.send("WebAuthn.addVirtualAuthenticator", {"options": AUTHENTICATOR})
    return page, cdp, added["authenticatorId"]


async def capture_answer(page: Any, press: Callable[[], Awaitable[Any]]) -> tuple[str, dict[str, str]]:
    """Run a ceremony on the passkey page but keep its answer from reaching the server:
    returns the form's action and fields, as the script would have posted them."""
    caught: dict[str, Any] = {}

    async def hold(route: Any) -> None:
        caught["url"], caught["body"] = route.request.url, route.request.post_data
        await route.fulfill(status=204, body="")

    await page.route("**/passkey/*", hold)
    await press()
    for _ in range(100):
        if caught:
            break
        await asyncio.sleep(0.05)
    await page.unroute("**/passkey/*")
    assert caught, "the passkey page posted nothing"
    from urllib.parse import parse_qsl, urlsplit

    return urlsplit(caught["url"]).path, dict(parse_qsl(caught["body"] or ""))


async def _record() -> dict[str, Any]:
    """One registration and one assertion by a virtual authenticator on http://localhost:8123."""
    from playwright.async_api import async_playwright

    from models.proofs import passkey

    origin = "http://localhost:8123"
    settings = dataclasses.replace(_settings(), public_base_url=origin)
    request: passkey.PasskeyRequest = {
        "id": "recorded",
        "purpose": "guardian.accept",
        "ceremony": "create",
        "subject_id": "00000000-0000-4000-8000-000000000001",
        "plan_id": "00000000-0000-4000-8000-000000000002",
        "round": 0,
        "extra": None,
        "nonce": "0" * 32,
        "expires_at": Clock().now(),
    }
    created = passkey.creation_options(
        settings=settings, request=request, user_name="Grace", display_name="Grace", existing=[]
    )
    asked = {**request, "purpose": "guardian.reconfirm", "ceremony": "get", "round": 1}
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        context = await browser.new_context()
        page, _cdp, _id = await with_authenticator(context)
        await page.route(
            f"{origin}/", lambda route: route.fulfill(body="<title>x</title>", content_type="text/html")
        )
        await page.goto(f"{origin}/")
        await page.add_script_tag(content=SERIALISE)
        registration = await page.evaluate("(o) => window.ceremony('create', o)", json.loads(created))
        new = passkey.check_registration(settings=settings, request=request, answer=registration)
        got = passkey.request_options(settings=settings, request=asked, passkeys=[new])  # type: ignore[arg-type]
        assertion = await page.evaluate("(o) => window.ceremony('get', o)", json.loads(got))
        await browser.close()
    return {
        "origin": origin,
        "registration": {"request": {**request, "expires_at": None}, "answer": registration},
        "assertion": {"request": {**asked, "expires_at": None}, "answer": assertion},
    }


# The page script's own conversion, for the recorder (api/templates/passkey.js does the same).
SERIALISE = """
window.ceremony = async (kind, options) => {
  const bytes = (t) => Uint8Array.from(
    atob(t.replace(/-/g, '+').replace(/_/g, '/') + '==='.slice((t.length + 3) % 4)),
    (c) => c.charCodeAt(0)).buffer;
  const text = (b) => btoa(String.fromCharCode(...new Uint8Array(b)))
    .replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
  options.challenge = bytes(options.challenge);
  if (options.user) options.user.id = bytes(options.user.id);
  const listed = [...(options.excludeCredentials || []), ...(options.allowCredentials || [])];
  for (const c of listed) c.id = bytes(c.id);
  const cred = kind === 'create'
    ? await navigator.credentials.create({publicKey: options})
    : await navigator.credentials.get({publicKey: options});
  const r = cred.response;
  const response = {clientDataJSON: text(r.clientDataJSON)};
  if (r.attestationObject) {
    response.attestationObject = text(r.attestationObject);
    response.transports = r.getTransports();
  } else {
    response.authenticatorData = text(r.authenticatorData);
    response.signature = text(r.signature);
    if (r.userHandle) response.userHandle = text(r.userHandle);
  }
  const out = {id: cred.id, rawId: text(cred.rawId), type: cred.type, response};
  return JSON.stringify({...out, clientExtensionResults: {}});
};
"""


def _settings() -> Settings:
    import secrets

    from stellar_sdk import Keypair

    from core.files.crypto import KeyRing
    from core.settings import load_settings

    return load_settings(
        {
            "APP_ENV": "test",
            "JWT_SECRET": secrets.token_urlsafe(48),
            "ENCRYPTION_KEYS": KeyRing.generate_entry("k1"),
            "URI_REQUEST_SIGNING_SEED": Keypair.random().secret,
            "SERVICE_NAME": "Legacy Planning Service",
        }
    )


if __name__ == "__main__":
    FIXTURE.parent.mkdir(exist_ok=True)
    FIXTURE.write_text(json.dumps(asyncio.run(_record()), indent=1) + "\n")
    print(f"recorded {FIXTURE}")
