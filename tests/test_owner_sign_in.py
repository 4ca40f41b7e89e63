"""Signing in from `/sign-in` through the real app: any wallet by SEP-7 (answered by a test wallet
from another client), the challenge text, a passkey, the rate limits, and the development test
owner. The session's own rules: tests/test_owner_session.py."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlsplit

from stellar_sdk import Keypair

from tests.helpers import sign, sign_in
from tests.soft_passkey import SoftPasskey, ceremony_of
from tests.support.owner import (
    browse_as_the_service,
    challenge_text,
    form_token,
    sign_in_code,
    sign_in_page,
    start_sign_in,
)
from tests.wallet_app import ORIGIN, WalletApp, callback_path, request_uri


async def _signed_in(client) -> bool:
    return (await client.get("/plan", allow_redirects=False)).status == 200


async def test_a_wallet_answering_from_another_device_signs_in_the_browser_that_asked(client, aiohttp_client):
    keypair = Keypair.random()
    waiting = await start_sign_in(client, keypair.public_key)
    code = sign_in_code(waiting)
    assert 'http-equiv="refresh"' not in waiting and "Continue" in waiting  # axe: no timed reload
    uri = request_uri(waiting)
    pending = client.session.cookie_jar.filter_cookies(client.make_url("/"))["__Host-lps_sign_in"].value
    assert pending not in uri
    phone = await aiohttp_client(client.server)  # another client: no cookie of the browser
    wallet = WalletApp(phone, keypair)
    request = await wallet.open(uri)
    assert code in (request.msg or "") and "your own screen" in (request.msg or "")
    assert not await _signed_in(client)
    answered = await phone.post(callback_path(request), data={"xdr": wallet.sign(request)})
    assert answered.status == 200, await answered.text()
    assert not await _signed_in(phone)  # the wallet's client is signed in to nothing
    # The browser's next request signs it in, and goes where it was going.
    resp = await client.get("/sign-in/wait", allow_redirects=False)
    assert (resp.status, resp.headers["Location"]) == (303, "/plan")
    assert await _signed_in(client)
    # Single use: the same answer again is refused, and signs in nothing more.
    request = await wallet.open(uri)
    again = await phone.post(callback_path(request), data={"xdr": wallet.sign(request)})
    assert again.status == 409


async def test_a_request_started_by_one_browser_never_signs_in_another(client, aiohttp_client):
    keypair = Keypair.random()
    waiting = await start_sign_in(client, keypair.public_key)
    other = await aiohttp_client(client.server)
    browse_as_the_service(other)
    await start_sign_in(other, Keypair.random().public_key)  # the other browser has its own sign-in
    wallet = WalletApp(other, keypair)
    request = await wallet.open(request_uri(waiting))
    assert (await other.post(callback_path(request), data={"xdr": wallet.sign(request)})).status == 200
    assert (await other.get("/sign-in/wait", allow_redirects=False)).status == 200  # still waiting
    assert not await _signed_in(other)
    assert (await client.get("/sign-in/wait", allow_redirects=False)).status == 303
    assert await _signed_in(client)


async def test_an_envelope_that_does_not_verify_uses_nothing_up(client, aiohttp_client):
    keypair = Keypair.random()
    waiting = await start_sign_in(client, keypair.public_key)
    phone = await aiohttp_client(client.server)
    wallet = WalletApp(phone, keypair)
    uri = request_uri(waiting)
    request = await wallet.open(uri)
    wrong = await phone.post(callback_path(request), data={"xdr": wallet.sign(request, Keypair.random())})
    assert wrong.status == 400
    assert (await phone.post(callback_path(request), data={"xdr": "not an envelope"})).status == 400
    request = await wallet.open(uri)
    assert (await phone.post(callback_path(request), data={"xdr": wallet.sign(request)})).status == 200
    assert (await client.get("/sign-in/wait", allow_redirects=False)).status == 303


async def test_a_request_expires_after_the_challenge_lifetime(client, aiohttp_client, clock, settings):
    keypair = Keypair.random()
    waiting = await start_sign_in(client, keypair.public_key)
    phone = await aiohttp_client(client.server)
    wallet = WalletApp(phone, keypair)
    request = await wallet.open(request_uri(waiting))
    clock.advance(timedelta(seconds=settings.challenge_ttl_seconds + 1))
    assert (await phone.post(callback_path(request), data={"xdr": wallet.sign(request)})).status == 409
    resp = await client.get("/sign-in/wait", allow_redirects=False)
    assert resp.status == 409 and "expired" in await resp.text()
    assert not await _signed_in(client)


async def test_the_paste_back_form_signs_in_too(client):
    keypair = Keypair.random()
    waiting = await start_sign_in(client, keypair.public_key)
    wallet = WalletApp(client, keypair)
    request = await wallet.open(request_uri(waiting))
    resp = await client.post(
        f"{callback_path(request)}?via=page", data={"xdr": wallet.sign(request)}, allow_redirects=False
    )
    assert (resp.status, resp.headers["Location"]) == (303, "/sign-in/wait")
    assert (await client.get("/sign-in/wait", allow_redirects=False)).status == 303
    assert await _signed_in(client)


async def test_the_challenge_text_signed_any_way_the_api_accepts(client):
    for encoding, sep53 in (("base64", False), ("hex", True), ("hex", False), ("base64", True)):
        client.session.cookie_jar.clear()
        keypair = Keypair.random()
        waiting = await start_sign_in(client, keypair.public_key)
        text = challenge_text(waiting)
        assert keypair.public_key in text
        signature = sign(keypair, text, encoding=encoding, sep53=sep53)
        resp = await client.post("/sign-in/signature", data={"signature": signature}, allow_redirects=False)
        assert resp.status == 303, (encoding, sep53, await resp.text())
        assert await _signed_in(client)


async def test_a_wrong_signature_or_a_used_sign_in_is_a_page_in_words(client):
    keypair = Keypair.random()
    waiting = await start_sign_in(client, keypair.public_key)
    wrong = sign(Keypair.random(), challenge_text(waiting))
    resp = await client.post("/sign-in/signature", data={"signature": wrong})
    assert resp.status == 401 and "does not sign the text" in await resp.text()
    good = sign(keypair, challenge_text(waiting))
    assert (
        await client.post("/sign-in/signature", data={"signature": good}, allow_redirects=False)
    ).status == 303
    again = await client.post("/sign-in/signature", data={"signature": good})
    assert again.status == 409


async def test_a_page_sign_in_finds_the_same_account_as_the_api(client):
    keypair = Keypair.random()
    api = await sign_in(client, keypair)
    await sign_in_page(client, keypair)
    page = await (await client.get("/plan/account")).text()
    assert keypair.public_key in page
    me = await (await client.get("/api/auth/me", headers=api.headers)).json()
    assert me["id"] == api.user["id"]


async def test_sign_in_is_rate_limited_per_address_and_per_address_and_wallet(make_client):
    client = await make_client(rate_limit_challenge_per_ip=3, rate_limit_challenge_per_wallet=2)
    browse_as_the_service(client)
    wallet = Keypair.random().public_key
    statuses = [
        (await client.post("/sign-in/wallet", data={"walletAddress": wallet}, allow_redirects=False)).status
        for _ in range(3)
    ]
    assert statuses == [303, 303, 429]  # the address and wallet's own budget
    other = await client.post("/sign-in/wallet", data={"walletAddress": Keypair.random().public_key})
    assert other.status == 429  # the address's budget, whatever the wallet
    passkey = await client.post("/sign-in/passkey", data={})
    assert passkey.status == 429


async def test_a_passkey_added_on_the_account_page_signs_in_and_its_removal_ends_its_sessions(
    client, aiohttp_client
):
    keypair = Keypair.random()
    await sign_in_page(client, keypair)
    token = form_token(await (await client.get("/plan/account")).text())
    page = await client.post("/plan/account/passkeys", data={"formToken": token})
    assert page.status == 200, await page.text()
    csp = page.headers["Content-Security-Policy"]
    assert f"script-src {ORIGIN}/guardian-passkey.js;" in csp
    action, options = ceremony_of(await page.text())
    device = SoftPasskey(origin=ORIGIN)
    added = await client.post(
        action, data={"formToken": token, "credential": device.create(options)}, allow_redirects=False
    )
    assert added.status == 303, await added.text()
    # Another browser signs in with the passkey alone: no address typed.
    other = await aiohttp_client(client.server)
    browse_as_the_service(other)
    asked = await other.post("/sign-in/passkey", data={"next": "/plan/account"})
    assert asked.status == 200
    action, options = ceremony_of(await asked.text())
    assert options.get("allowCredentials") in (None, [])  # discoverable
    assert options["rpId"] == urlsplit(ORIGIN).hostname
    resp = await other.post(action, data={"credential": device.get(options)}, allow_redirects=False)
    assert (resp.status, resp.headers["Location"]) == (303, "/plan/account")
    assert await _signed_in(other)
    # A replay of that assertion signs in nothing.
    assert (await other.post(action, data={"credential": device.get(options)})).status == 409
    # Removing the passkey ends the session it opened, not the wallet's.
    account = await (await client.get("/plan/account")).text()
    credential = account.split('name="credentialId" value="')[1].split('"')[0]
    removed = await client.post(
        "/plan/account/passkeys/remove",
        data={"formToken": token, "credentialId": credential},
        allow_redirects=False,
    )
    assert removed.status == 303
    assert not await _signed_in(other)
    assert await _signed_in(client)


async def test_a_passkey_of_no_account_signs_in_nothing(client):
    browse_as_the_service(client)
    asked = await client.post("/sign-in/passkey", data={})
    action, options = ceremony_of(await asked.text())
    resp = await client.post(action, data={"credential": SoftPasskey(origin=ORIGIN).get(options)})
    assert resp.status == 401 and "does not sign in to any account" in await resp.text()
    assert not await _signed_in(client)


async def test_the_test_wallet_is_absent_outside_development(make_client):
    for environment in ("test", "production"):
        client = await make_client(environment=environment)
        browse_as_the_service(client)
        assert (await client.post("/sign-in/test-wallet", data={})).status == 404, environment
        assert "test wallet" not in await (await client.get("/sign-in")).text()


async def _dev_client(make_client, tmp_path, port: int = 8080):
    client = await make_client(
        environment="development", public_base_url=f"http://localhost:{port}", data_dir=tmp_path
    )
    client.session.headers["Host"] = f"localhost:{port}"
    client.session.headers["Origin"] = f"http://localhost:{port}"
    return client


async def test_the_test_wallet_signs_in_on_this_machine_only(make_client, tmp_path):
    client = await _dev_client(make_client, tmp_path)
    offered = await (await client.get("/sign-in")).text()
    assert "Sign in with a test wallet" in offered and "a sample plan" in offered
    resp = await client.post("/sign-in/test-wallet", data={}, allow_redirects=False)
    assert (resp.status, resp.headers["Location"]) == (303, "/plan")
    assert await _signed_in(client)
    kept = (tmp_path / "test-wallet.json").stat()
    assert kept.st_mode & 0o777 == 0o600
    # Another Host (a page of another site rebound to 127.0.0.1), or a proxy's header: refused.
    for headers in ({"Host": "evil.example:8080"}, {"X-Forwarded-For": "203.0.113.9"}):
        refused = await client.post("/sign-in/test-wallet", headers=headers, data={}, allow_redirects=False)
        assert refused.status == 404, headers


async def test_the_sample_plan_has_two_heirs_and_two_guardians(make_client, tmp_path):
    client = await _dev_client(make_client, tmp_path)
    resp = await client.post("/sign-in/test-wallet", data={"sample": "true"}, allow_redirects=False)
    assert resp.status == 303
    from models.account import dev_wallet

    keypair = dev_wallet.keypair(data_dir=tmp_path)
    client.session.headers.pop("Origin")
    api = await sign_in(client, keypair)
    heirs = await (await client.get("/api/beneficiaries", headers=api.headers)).json()
    guardians = await (await client.get("/api/guardians", headers=api.headers)).json()
    assert sorted(h["email"] for h in heirs) == ["ana@example.org", "ben@example.org"]
    assert sorted(g["email"] for g in guardians) == ["carla@example.org", "david@example.org"]
    # Once: signing in again with the sample keeps the same people.
    client.session.headers["Origin"] = "http://localhost:8080"
    await client.post("/sign-in/test-wallet", data={"sample": "true"}, allow_redirects=False)
    assert len(await (await client.get("/api/beneficiaries", headers=api.headers)).json()) == 2


async def test_the_browser_is_signed_in_on_its_next_request_whatever_page_it_opens(client, aiohttp_client):
    keypair = Keypair.random()
    waiting = await start_sign_in(client, keypair.public_key, next_path="/plan/account")
    phone = await aiohttp_client(client.server)
    wallet = WalletApp(phone, keypair)
    request = await wallet.open(request_uri(waiting))
    assert (await phone.post(callback_path(request), data={"xdr": wallet.sign(request)})).status == 200
    resp = await client.get("/plan/heirs", allow_redirects=False)
    assert (resp.status, resp.headers["Location"]) == (303, "/plan/heirs")
    assert "__Host-lps_session" in resp.cookies
    assert await _signed_in(client)
    # The waiting page, opened again, leads home rather than to a spent sign-in.
    resp = await client.get("/sign-in/wait", allow_redirects=False)
    assert (resp.status, resp.headers["Location"]) == (303, "/plan")


async def test_the_sign_in_pages_speak_the_readers_language(client):
    browse_as_the_service(client)
    page = await (await client.get("/sign-in?lang=fr")).text()
    assert "<h1>Connectez-vous à votre plan de succession</h1>" in page and 'lang="fr"' in page
    waiting = await start_sign_in(client, Keypair.random().public_key)
    del waiting
    page = await (await client.get("/sign-in/wait", headers={"Accept-Language": "de"})).text()
    assert "<h1>Mit Ihrer Wallet anmelden</h1>" in page and "Anmeldecode" in page
