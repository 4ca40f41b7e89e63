"""`/plan/account` through the real app: the profile form (PATCH /api/users/me's schema and
model call), the time zone list and its one script, linking and removing wallets, and signing
out everywhere."""

from __future__ import annotations

import base64
import hashlib
import re

from stellar_sdk import Keypair

from api.owner.account import ZONE_SCRIPT
from tests.helpers import sign, sign_in
from tests.support.owner import challenge_text, form_token, sign_in_page


async def _account(client) -> str:
    resp = await client.get("/plan/account")
    assert resp.status == 200, await resp.text()
    return await resp.text()


async def test_the_profile_form_changes_what_the_api_reads(client):
    keypair = Keypair.random()
    api = await sign_in(client, keypair)
    await sign_in_page(client, keypair)
    token = form_token(await _account(client))
    form = {
        "formToken": token,
        "name": "Ana Owner",
        "email": "ana@example.org",
        "emailConfirmation": "ana@example.org",
        "locale": "fr",
        "timeZone": "Europe/Paris",
    }
    resp = await client.post("/plan/account", data=form, allow_redirects=False)
    assert (resp.status, resp.headers["Location"]) == (303, "/plan/account?done=profile")
    me = await (await client.get("/api/auth/me", headers=api.headers)).json()
    assert (me["name"], me["email"], me["locale"], me["timeZone"]) == (
        "Ana Owner",
        "ana@example.org",
        "fr",
        "Europe/Paris",
    )
    page = await _account(client)
    assert 'lang="fr"' in page  # the owner's language now
    activity = await (await client.get("/api/activity", headers=api.headers)).json()
    assert any(entry["kind"] == "user.updated" for entry in activity)


async def test_an_invalid_form_comes_back_with_each_error_beside_its_field(client):
    keypair = Keypair.random()
    api = await sign_in(client, keypair)
    await sign_in_page(client, keypair)
    token = form_token(await _account(client))
    form = {
        "formToken": token,
        "name": "Kept Name",
        "email": "not an address",
        "emailConfirmation": "other@example.org",
        "locale": "en",
        "timeZone": "Mars/Olympus",
    }
    resp = await client.post("/plan/account", data=form)
    assert resp.status == 422
    page = await resp.text()
    assert (
        'id="email-error"' in page
        and 'id="emailConfirmation-error"' in page
        and 'id="timeZone-error"' in page
    )
    assert 'value="Kept Name"' in page and 'value="not an address"' in page
    me = await (await client.get("/api/auth/me", headers=api.headers)).json()
    assert me["name"] is None  # nothing saved


async def test_the_zone_list_is_in_words_and_its_script_is_allowed_by_hash(client):
    await sign_in_page(client, Keypair.random())
    resp = await client.get("/plan/account", headers={"Accept-Language": "de"})
    page = await resp.text()
    digest = base64.b64encode(hashlib.sha256(ZONE_SCRIPT.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in resp.headers["Content-Security-Policy"]
    assert f"<script>{ZONE_SCRIPT}</script>" in page
    assert re.search(r'<option value="Europe/Berlin" selected>[^<]*Deutschland', page)
    assert 'data-recorded="false"' in page


async def test_link_a_wallet_then_remove_it_which_signs_out_everywhere(client):
    keypair, second = Keypair.random(), Keypair.random()
    api = await sign_in(client, keypair)
    await sign_in_page(client, keypair)
    token = form_token(await _account(client))
    asked = await client.post(
        "/plan/account/wallets", data={"formToken": token, "walletAddress": second.public_key}
    )
    assert asked.status == 200
    signature = sign(second, challenge_text(await asked.text()))
    linked = await client.post(
        "/plan/account/wallets/verify",
        data={"formToken": token, "walletAddress": second.public_key, "signature": signature},
        allow_redirects=False,
    )
    assert linked.status == 303, await linked.text()
    me = await (await client.get("/api/auth/me", headers=api.headers)).json()
    assert second.public_key in me["wallets"]
    removed = await client.post(
        "/plan/account/wallets/remove",
        data={"formToken": token, "walletAddress": second.public_key},
        allow_redirects=False,
    )
    assert (removed.status, removed.headers["Location"]) == (303, "/sign-in?signed-out=everywhere")
    assert (await client.get("/plan", allow_redirects=False)).status == 303
    assert (await client.get("/api/auth/me", headers=api.headers)).status == 401


async def test_sign_out_everywhere_ends_the_api_tokens_and_every_page_session(client, aiohttp_client):
    keypair = Keypair.random()
    api = await sign_in(client, keypair)
    await sign_in_page(client, keypair)
    other = await aiohttp_client(client.server)
    await sign_in_page(other, keypair)
    token = form_token(await _account(client))
    resp = await client.post(
        "/plan/account/sign-out-everywhere", data={"formToken": token}, allow_redirects=False
    )
    assert resp.status == 303
    assert (await client.get("/api/auth/me", headers=api.headers)).status == 401
    assert (await other.get("/plan", allow_redirects=False)).status == 303
    assert (await client.get("/plan", allow_redirects=False)).status == 303
    page = await (await client.get("/sign-in?signed-out=everywhere")).text()
    assert "Every session of your account has ended" in page


async def test_the_owner_door_and_account_pages_speak_plain_words(client):
    from tests.support.owner import browse_as_the_service, start_sign_in
    from tests.support.words import assert_plain, page_words

    browse_as_the_service(client)
    assert_plain(page_words(await (await client.get("/sign-in")).text()), "sign-in page")
    waiting = await start_sign_in(client, Keypair.random().public_key)
    assert_plain(page_words(waiting), "waiting page")
    await sign_in_page(client, Keypair.random())
    assert_plain(page_words(await _account(client)), "account page")
    token = form_token(await _account(client))
    refused = await client.post(
        "/plan/account/sign-out-everywhere", headers={"Origin": "null"}, data={"formToken": token}
    )
    assert_plain(page_words(await refused.text()), "refusal page")


async def test_link_a_wallet_by_its_signing_request_from_another_device(client, aiohttp_client):
    from tests.wallet_app import WalletApp, callback_path, request_uri

    keypair, second = Keypair.random(), Keypair.random()
    api = await sign_in(client, keypair)
    await sign_in_page(client, keypair)
    token = form_token(await _account(client))
    asked = await client.post(
        "/plan/account/wallets", data={"formToken": token, "walletAddress": second.public_key}
    )
    assert asked.status == 200
    phone = await aiohttp_client(client.server)
    wallet = WalletApp(phone, second)
    uri = request_uri(await asked.text())
    request = await wallet.open(uri)
    wrong = await phone.post(callback_path(request), data={"xdr": wallet.sign(request, Keypair.random())})
    assert wrong.status == 400  # another signer: nothing linked, the request still usable
    request = await wallet.open(uri)
    assert (await phone.post(callback_path(request), data={"xdr": wallet.sign(request)})).status == 200
    me = await (await client.get("/api/auth/me", headers=api.headers)).json()
    assert second.public_key in me["wallets"]
    request = await wallet.open(uri)
    assert (await phone.post(callback_path(request), data={"xdr": wallet.sign(request)})).status == 409
