"""The heir finishes from their own page with any Stellar wallet (#26): names a wallet, proves it
with a SEP-10-style challenge sent as a SEP-7 signing request, then signs finalize_release and
claim_assets the same way; the wallet (tests/wallet_app.py) verifies each request against the
served stellar.toml and posts to the callback. The RPC emulator, the real worker, the claim gate."""

from __future__ import annotations

from typing import Any

import redis as redis_sync
from stellar_sdk import Account, Asset, Keypair, TransactionBuilder
from stellar_sdk.sep.stellar_uri import TransactionStellarUri

from api import html
from tests.i18n_helpers import PSEUDO, ascii_words, pseudo
from tests.plan_helpers import query
from tests.soroban_helpers import contract_overrides, prove_wallet
from tests.support.onchain import emailed_token, ready, worker_settings
from tests.support.words import assert_plain, page_words
from tests.wallet_app import WalletApp, callback_path, request_uri


async def page(client: Any, token: str) -> str:
    resp = await client.get(f"/claim/{token}")
    assert resp.status == 200, await resp.text()
    text = plain(await resp.text(), "the heir's page")
    # The same state in the pseudo-language: every word on it went through gettext.
    with pseudo():
        resp = await client.get(f"/claim/{token}?lang={PSEUDO}")
        left = ascii_words(page_words(await resp.text()), allowed=NAMES)
    assert not left, f"the heir's page, never marked: {sorted(set(left))}"
    return text


# What the heir's page shows that the service did not write: names, and the languages' own names.
NAMES = ["Olive Owner", "Heir 0", "Heir 1", "Heir 2", "daughter", *html.LANGUAGE_NAMES.values()]


def plain(text: str, where: str) -> str:
    """Each state of the heir's page this suite reaches is read for machine words too."""
    assert_plain(page_words(text), where)
    return text


async def sign_page(client: Any, token: str) -> str:
    """The page's button: the step's call as a signing request."""
    resp = await client.post(f"/claim/{token}/sign")
    assert resp.status == 200, await resp.text()
    return plain(await resp.text(), "the heir's signing page")


async def prove_page(client: Any, token: str, address: str) -> str:
    resp = await client.post(f"/claim/{token}/wallet", data={"walletAddress": address})
    assert resp.status == 200, await resp.text()
    return plain(await resp.text(), "the heir's wallet proof page")


async def not_a_contract_call(rpc: Any, key: Keypair) -> str:
    """A payment signed by the heir's own wallet: what a person might paste by mistake."""
    account = Account(key.public_key, 1)
    tx = (
        TransactionBuilder(account, network_passphrase=rpc.passphrase, base_fee=100)
        .append_payment_op(Keypair.random().public_key, Asset.native(), "1")
        .set_timeout(300)
        .build()
    )
    tx.sign(key)
    return str(tx.to_xdr())


async def test_an_heir_proves_a_wallet_finalises_and_claims_from_the_page(
    onchain, soroban_rpc, clock, run_worker, email_provider
):
    await ready(onchain, soroban_rpc, clock, run_worker, email_provider)
    token = emailed_token(email_provider, "heir0@example.org")
    first = await page(onchain, token)
    assert f'action="/claim/{token}/wallet"' in first and "web+stellar" not in first

    key = Keypair.random()
    soroban_rpc.fund(key.public_key)
    wallet = WalletApp(onchain, key)
    proving = await prove_page(onchain, token, key.public_key)
    uri = request_uri(proving)
    request = await wallet.open(uri)
    assert request.msg == "Prove this wallet is yours, Heir 0, to receive what Olive Owner left you"
    resp = await wallet.approve(uri)
    assert resp.status == 200, await resp.text()
    assert await resp.json() == {"status": "bound"}
    capsule = await (await onchain.get(f"/api/claim/{token}")).json()
    assert capsule["wallet"]["address"] == key.public_key and capsule["wallet"]["boundVia"] == "proven"

    # Bound: the page offers finalize_release for that wallet, behind its button.
    ready_page = await page(onchain, token)
    assert f'action="/claim/{token}/sign"' in ready_page and "web+stellar" not in ready_page
    uri = request_uri(await sign_page(onchain, token))
    request = await wallet.open(uri)
    assert request.msg == "Finalise the release of Olive Owner's plan, for everyone it names"
    # Another transaction of the same wallet pasted back (a payment): refused in words, and the
    # request stays usable.
    other = await not_a_contract_call(soroban_rpc, key)
    resp = await onchain.post(callback_path(request) + "?via=page", data={"xdr": other})
    assert resp.status == 400
    said = plain(await resp.text(), "another transaction pasted back")
    assert "This is not the transaction this request asked the wallet" in said
    resp = await wallet.approve(uri)
    assert resp.status == 200, await resp.text()
    assert await resp.json() == {"status": "pending"}
    pending = await page(onchain, token)
    assert "has not confirmed it yet" in pending and '<meta http-equiv="refresh" content="10">' in pending
    assert "web+stellar" not in pending
    # Pending: the button has nothing to build and leads back to the page.
    resp = await onchain.post(f"/claim/{token}/sign", allow_redirects=False)
    assert resp.status == 303 and resp.headers["Location"] == f"/claim/{token}"
    # The same request again: used.
    again = await onchain.post(callback_path(request), data={"xdr": wallet.sign(request)})
    assert again.status == 409

    await run_worker(**worker_settings(soroban_rpc, email_provider))
    released = await page(onchain, token)
    assert "left this for you" in released and "Claim it on the Stellar network" in released
    uri = request_uri(await sign_page(onchain, token))
    assert (await wallet.open(uri)).msg == "Claim Heir 0's share of what Olive Owner left"
    resp = await wallet.approve(uri)
    assert resp.status == 200 and await resp.json() == {"status": "pending"}
    await run_worker(**worker_settings(soroban_rpc, email_provider))
    done = await page(onchain, token)
    assert "web+stellar" not in done and "Claim it on the Stellar network" not in done
    claims = await (await onchain.get(f"/api/claim/{token}")).json()
    assert claims["status"] == "released"


async def test_the_paste_back_form_binds_and_answers_with_the_page(
    onchain, soroban_rpc, clock, run_worker, email_provider
):
    await ready(onchain, soroban_rpc, clock, run_worker, email_provider)
    token = emailed_token(email_provider, "heir0@example.org")
    key = Keypair.random()
    wallet = WalletApp(onchain, key)
    request = await wallet.open(request_uri(await prove_page(onchain, token, key.public_key)))
    signed = wallet.sign(request)
    resp = await onchain.post(
        callback_path(request) + "?via=page", data={"xdr": signed}, allow_redirects=False
    )
    assert resp.status == 303 and resp.headers["Location"] == f"/claim/{token}"
    assert (await (await onchain.get(f"/api/claim/{token}")).json())["wallet"]["address"] == key.public_key
    # The form's post under a token that opens nothing is the 404 page, from the claim gate on
    # (the URL says it is the form); a wallet's post there is the JSON error.
    unknown = callback_path(request).replace(token, "0" * 64)
    resp = await onchain.post(unknown + "?via=page", data={"xdr": signed})
    assert resp.status == 404 and resp.content_type == "text/html"
    assert "This link does not open anything" in await resp.text()
    resp = await onchain.post(unknown, data={"xdr": signed})
    assert resp.status == 404 and (await resp.json())["statusCode"] == 404


async def test_refusals_expired_wrong_signer_another_token_and_a_siblings_wallet(
    onchain, soroban_rpc, clock, run_worker, email_provider
):
    await ready(onchain, soroban_rpc, clock, run_worker, email_provider)
    token = emailed_token(email_provider, "heir0@example.org")
    sibling_token = emailed_token(email_provider, "heir1@example.org")
    key = Keypair.random()
    wallet = WalletApp(onchain, key)
    uri = request_uri(await prove_page(onchain, token, key.public_key))
    request = await wallet.open(uri)

    # Signed by another key: 400 (the envelope is wrong; no session is involved), and the
    # request stays usable. The same from the page's form: the 400 page, in words.
    resp = await onchain.post(callback_path(request), data={"xdr": wallet.sign(request, Keypair.random())})
    assert resp.status == 400, await resp.text()
    body = await resp.json()
    assert body["statusCode"] == 400
    assert f"not signed by the wallet asked for, {key.public_key}" in body["message"]
    resp = await onchain.post(
        callback_path(request) + "?via=page", data={"xdr": wallet.sign(request, Keypair.random())}
    )
    assert resp.status == 400 and f"not signed by the wallet asked for, {key.public_key}" in await resp.text()
    # Posted under the sibling's token: another heir's request is nothing there.
    fresh = TransactionStellarUri.from_uri(uri, None)
    other = callback_path(fresh).replace(token, sibling_token)
    resp = await onchain.post(other, data={"xdr": wallet.sign(fresh)})
    assert resp.status == 404
    # Not a form: 400. Garbage: 400. Then the real one still works.
    assert (await onchain.post(callback_path(fresh), json={"xdr": "x"})).status == 400
    assert (await onchain.post(callback_path(fresh), data={"xdr": "AAAA"})).status == 400
    resp = await wallet.approve(uri)
    assert resp.status == 200, await resp.text()

    # Expired: the request lives as long as its transaction's time bound.
    late = await wallet.open(request_uri(await prove_page(onchain, token, key.public_key)))
    clock.advance(minutes=6)
    resp = await onchain.post(callback_path(late), data={"xdr": wallet.sign(late)})
    assert resp.status == 409

    # A sibling's wallet: the sibling proves it first; this heir's proof of it is refused.
    sibling_key = Keypair.random()
    resp = await prove_wallet(onchain, sibling_token, sibling_key)
    assert resp.status == 200
    theirs = await WalletApp(onchain, sibling_key).open(
        request_uri(await prove_page(onchain, token, sibling_key.public_key))
    )
    resp = await onchain.post(
        callback_path(theirs), data={"xdr": WalletApp(onchain, sibling_key).sign(theirs)}
    )
    assert resp.status == 409, await resp.text()
    assert "another" in (await resp.json())["message"].lower()


async def test_the_claim_page_without_a_token_asks_for_the_address_and_answers_the_same(
    onchain, soroban_rpc, clock, run_worker, email_provider
):
    await ready(onchain, soroban_rpc, clock, run_worker, email_provider)
    before = len(email_provider.to("heir0@example.org"))
    resp = await onchain.get("/claim")
    assert resp.status == 200 and resp.headers["Referrer-Policy"] == "no-referrer"
    assert "Content-Security-Policy" in resp.headers
    assert '<form method="post" action="/claim">' in await resp.text()
    answers = []
    for address in ("HEIR0@example.org ", "nobody@example.org"):
        resp = await onchain.post("/claim", data={"email": address})
        assert resp.status == 200
        answers.append(await resp.text())
    assert answers[0] == answers[1] and "a new link is on its way" in answers[0]
    await run_worker(**worker_settings(soroban_rpc, email_provider))
    assert len(email_provider.to("heir0@example.org")) == before + 1
    assert emailed_token(email_provider, "heir0@example.org")
    resp = await onchain.post("/claim", data={"email": "not an address"})
    assert resp.status == 400 and "not an email address" in await resp.text()


async def test_page_forms_that_cannot_be_read_are_400_pages_never_500(client):
    """Raw bytes that are not UTF-8, NULs, other body types: the calm 400 page (or 404 for a token
    that opens nothing), on every form the pages post."""
    token = "0" * 64
    for path in ("/claim", f"/claim/{token}/wallet", f"/guardian/{token}/ask", f"/claim/{token}/sep7/x"):
        for body, kind in (
            (b"email=%ff%fe", "application/x-www-form-urlencoded"),
            (b"\xff\xfe=\x00", "application/x-www-form-urlencoded"),
            (b"xdr=%00&email=a%00", "application/x-www-form-urlencoded"),
            (b'{"xdr": "x"}', "application/json"),
        ):
            resp = await client.post(path, data=body, headers={"Content-Type": kind})
            assert resp.status in (400, 404), (path, body, resp.status)
    resp = await client.post(
        "/claim", data=b"\xff\xfe=\x00", headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert resp.status == 400 and "could not be read" in await resp.text()


async def test_an_envelope_with_signatures_beyond_the_wallets_is_refused_and_the_request_stays_usable(
    onchain, soroban_rpc, clock, run_worker, email_provider, settings
):
    # The network refuses a signature it does not need (txBAD_AUTH_EXTRA): the service must not
    # relay such an envelope, nor use the signing request up on it.
    await ready(onchain, soroban_rpc, clock, run_worker, email_provider)
    token = emailed_token(email_provider, "heir0@example.org")
    key = Keypair.random()
    soroban_rpc.fund(key.public_key)
    wallet = WalletApp(onchain, key)
    assert (await wallet.approve(request_uri(await prove_page(onchain, token, key.public_key)))).status == 200
    uri = request_uri(await sign_page(onchain, token))
    request = await wallet.open(uri)
    envelope = request.transaction_envelope
    envelope.sign(key)
    for _ in range(19):
        envelope.sign(Keypair.random())
    padded = envelope.to_xdr()
    resp = await onchain.post(callback_path(request), data={"xdr": padded})
    assert resp.status == 400, await resp.text()
    assert "more signatures than your wallet" in (await resp.json())["message"]
    resp = await onchain.post(callback_path(request) + "?via=page", data={"xdr": padded})
    assert resp.status == 400 and resp.content_type == "text/html"
    assert "Sign it with your wallet alone" in await resp.text()
    # The wallet's own signature twice is one too many as well.
    twice = TransactionStellarUri.from_uri(uri, None).transaction_envelope
    twice.sign(key)
    twice.signatures.append(twice.signatures[0])
    assert (await onchain.post(callback_path(request), data={"xdr": twice.to_xdr()})).status == 400
    assert query(settings, "SELECT hash FROM transactions WHERE function = 'finalize_release'") == []
    # The request was not used up: the wallet's envelope now goes through.
    resp = await wallet.approve(uri)
    assert resp.status == 200 and await resp.json() == {"status": "pending"}


def sep7_keys(settings: Any) -> list[bytes]:
    client = redis_sync.Redis.from_url(settings.redis_url)
    try:
        return sorted(client.scan_iter("sep7:*"))
    finally:
        client.close()


async def test_opening_the_ready_page_builds_nothing_the_button_builds_once_and_is_limited(
    make_client, soroban_rpc, clock, run_worker, email_provider, settings
):
    # Mail scanners prefetch links: a GET must not reach the RPC node nor store a request.
    client = await make_client(**contract_overrides(soroban_rpc), rate_limit_heir_builds_per_hour=2)
    await ready(client, soroban_rpc, clock, run_worker, email_provider)
    token = emailed_token(email_provider, "heir0@example.org")
    key = Keypair.random()
    soroban_rpc.fund(key.public_key)
    wallet = WalletApp(client, key)
    assert (await wallet.approve(request_uri(await prove_page(client, token, key.public_key)))).status == 200
    calls, keys = len(soroban_rpc.calls), sep7_keys(settings)
    for _ in range(20):
        shown = await page(client, token)
        assert f'action="/claim/{token}/sign"' in shown and "web+stellar" not in shown
        assert (await client.head(f"/claim/{token}")).status == 200
    assert len(soroban_rpc.calls) == calls and sep7_keys(settings) == keys

    # The button builds the call once (two RPC calls); pressed again, the same request is shown.
    first = request_uri(await sign_page(client, token))
    assert len(soroban_rpc.calls) == calls + 2
    for _ in range(3):
        assert request_uri(await sign_page(client, token)) == first
    assert len(soroban_rpc.calls) == calls + 2
    # Close to its time bound, a fresh one is built; past the limit (the JSON build routes count
    # against it too), the 429 page says when, and nothing reaches the node.
    clock.advance(minutes=4, seconds=30)
    second = request_uri(await sign_page(client, token))
    assert second != first and len(soroban_rpc.calls) == calls + 4
    resp = await client.post(f"/api/claim/{token}/release/build", json={})
    assert resp.status == 429 and (await resp.json())["statusCode"] == 429
    assert request_uri(await sign_page(client, token)) == second  # reuse is not a build
    clock.advance(minutes=5)
    resp = await client.post(f"/claim/{token}/sign")
    text = await resp.text()
    assert resp.status == 429 and int(resp.headers["Retry-After"]) > 0, text
    assert "new signing request many times in the last hour" in text and "web+stellar" not in text
    assert len(soroban_rpc.calls) == calls + 4
