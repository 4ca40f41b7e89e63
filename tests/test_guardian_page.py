"""Each guardian's own page (#26): linked from every guardian email, the link a capability
(HMAC-derived, looked up by digest, replaced when the email or wallet changes), and every answer
a SEP-7 signing request for the guardian wallet, taken back through the JSON routes' model
functions. A stellar-sdk test wallet (tests/wallet_app.py) verifies each request against the
served stellar.toml, signs it and posts it to the callback; the real worker sends the email."""

from __future__ import annotations

import logging

import redis as redis_sync
from stellar_sdk import Keypair

from core.logging import JsonFormatter, redact_path
from tests.helpers import sign_in
from tests.lifecycle_helpers import activate_plan, get_overview
from tests.plan_helpers import query
from tests.support.guardian_page import PAGE_RE, ask, draft_with_guardians, page_link, words
from tests.support.onchain import approving, worker_settings
from tests.wallet_app import WalletApp, callback_path


async def test_a_guardian_accepts_and_approves_off_chain_from_their_page(
    client, run_worker, email_provider, settings
):
    owner = await sign_in(client)
    _, guardians = await draft_with_guardians(client, owner, count=2)
    await run_worker(settings=email_provider.settings)
    path = page_link(email_provider, "guardian0@example.org")
    assert "open your page for this plan" in email_provider.to("guardian0@example.org")[-1].body["text"]
    first = words(await (await client.get(path)).text())
    assert "You are a guardian of Olive Owner\u2019s plan" in first and "still preparing the plan" in first
    assert "not answered the invitation" in first and 'value="accept"' in first
    assert "Heir" not in first  # no heir to a guardian who has not accepted
    # The digest is stored, never the token.
    token = path.rsplit("/", 1)[1]
    rows = query(
        settings, "SELECT page_token_digest, page_key_id FROM guardians WHERE page_key_id IS NOT NULL"
    )
    assert len(rows) == 2 and all(token.encode() not in bytes(r["page_token_digest"]) for r in rows)

    wallet = WalletApp(client, guardians[0].keypair)
    uri = await ask(client, path, "accept")
    assert (await wallet.open(uri)).msg == "Accept being a guardian for Olive Owner's plan"
    resp = await wallet.approve(uri)
    assert resp.status == 200, await resp.text()
    assert await resp.json() == {"status": "accepted"}
    rows = await (await client.get("/api/guardians", headers=owner.headers)).json()
    assert sorted(r["acceptedAt"] is not None for r in rows) == [False, True]
    # Used once.
    request = await wallet.open(uri)
    assert (await client.post(callback_path(request), data={"xdr": wallet.sign(request)})).status == 409

    # The second guardian accepts with the paste-back form (303 back to the page).
    second = page_link(email_provider, "guardian1@example.org")
    other = WalletApp(client, guardians[1].keypair)
    request = await other.open(await ask(client, second, "accept"))
    resp = await client.post(
        callback_path(request) + "?via=page", data={"xdr": other.sign(request)}, allow_redirects=False
    )
    assert resp.status == 303 and resp.headers["Location"] == second
    assert (await client.post("/api/legacy/activate", headers=owner.headers)).status == 200

    # Guardian 0 reports from the page; the verification shows on both pages.
    uri = await ask(client, path, "report")
    assert (await wallet.open(uri)).msg == "Report that Olive Owner has died or can no longer act"
    resp = await wallet.approve(uri)
    assert resp.status == 200 and await resp.json() == {"status": "reported"}
    assert (await get_overview(client, owner))["status"] == "PendingVerification"
    # Every guardian email carries the same link: the verification request too.
    await run_worker(settings=email_provider.settings)
    asked = email_provider.to("guardian1@example.org")[-1].body["text"]
    assert "Your page for this plan" in asked and page_link(email_provider, "guardian1@example.org") == second
    seen = words(await (await client.get(second)).text())
    assert "The verification" in seen and "Guardian 0 reported on" in seen and "0 of the 2 approvals" in seen

    # Approve off-chain: the attestation's SHA-256 in the challenge, signed by the guardian wallet.
    uri = await ask(client, path, "approve")
    # Someone holding only the link asks again: the guardian's own request still proves its text.
    await ask(client, path, "approve")
    request = await wallet.open(uri)
    assert request.msg == "Approve the release of Olive Owner's plan, as their guardian"
    # Signed by another key: 400 and nothing recorded; the request stays usable.
    resp = await client.post(callback_path(request), data={"xdr": wallet.sign(request, Keypair.random())})
    assert resp.status == 400
    resp = await wallet.approve(uri)
    assert resp.status == 200, await resp.text()
    assert await resp.json() == {"status": "approved"}
    [approval] = query(settings, "SELECT source, message, signature FROM plan_approvals")
    assert approval["source"] == "attestation" and "guardian attestation" in approval["message"]
    after = await (await client.get(path)).text()
    assert "1 of the 2 approvals needed so far, yours included" in after and 'value="approve"' not in after

    # A callback for another guardian's page: nothing there.
    uri = await ask(client, second, "approve")
    request = await other.open(uri)
    resp = await client.post(callback_path(request).replace(second, path), data={"xdr": other.sign(request)})
    assert resp.status == 404


async def test_an_unknown_token_is_the_calm_404_page_and_a_new_wallet_replaces_the_link(
    client, run_worker, email_provider
):
    resp = await client.get("/guardian/" + "0" * 64)
    assert resp.status == 404 and "This link does not open anything" in await resp.text()
    assert resp.headers["Referrer-Policy"] == "no-referrer" and "script-src" not in resp.headers.get(
        "Content-Security-Policy", "x"
    )
    owner = await sign_in(client)
    _, guardians = await draft_with_guardians(client, owner, count=1)
    await run_worker(settings=email_provider.settings)
    old = page_link(email_provider, "guardian0@example.org")
    assert (await client.get(old)).status == 200
    resp = await client.patch(
        f"/api/guardians/{guardians[0].row['id']}",
        json={"walletAddress": Keypair.random().public_key},
        headers=owner.headers,
    )
    assert resp.status == 200
    assert (await client.get(old)).status == 404  # the old link opens nothing at once
    await run_worker(settings=email_provider.settings)
    new = page_link(email_provider, "guardian0@example.org")
    assert new != old and (await client.get(new)).status == 200


async def test_a_guardian_approves_on_chain_from_their_page(
    onchain, soroban_rpc, clock, run_worker, email_provider, settings
):
    setup = await approving(onchain, soroban_rpc, guardians=2, threshold=1)
    await onchain.patch("/api/users/me", json={"email": "owner@example.org"}, headers=setup.owner.headers)
    await run_worker(**worker_settings(soroban_rpc, email_provider))
    path = page_link(email_provider, "guardian1@example.org")
    wallet = WalletApp(onchain, setup.guardians[1].keypair)
    words(await (await onchain.get(path)).text())  # each on-chain state's words are plain
    uri = await ask(onchain, path, "approve")
    request = await wallet.open(uri)
    assert request.msg == "Approve the release of Olive Owner's plan, as their guardian"
    resp = await wallet.approve(uri)
    assert resp.status == 200, await resp.text()
    assert await resp.json() == {"status": "pending"}
    words(await (await onchain.get(path)).text())
    await run_worker(**worker_settings(soroban_rpc, email_provider))
    words(await (await onchain.get(path)).text())
    assert (await get_overview(onchain, setup.owner))["status"] == "Approved"
    [row] = query(settings, "SELECT function, status FROM transactions")
    assert (row["function"], row["status"]) == ("approve_guardian", "confirmed")


async def test_guardian_tokens_and_signing_requests_never_reach_a_log_or_redis_text(
    client, run_worker, email_provider, settings, caplog
):
    """The page token is redacted from every log line; what Redis keeps of a request names no one."""
    owner = await sign_in(client)
    _, guardians = await draft_with_guardians(client, owner, count=1)
    with caplog.at_level(logging.DEBUG):
        await run_worker(settings=email_provider.settings)
        path = page_link(email_provider, "guardian0@example.org")
        await client.get(path)
        uri = await ask(client, path, "accept")
        resp = await WalletApp(client, guardians[0].keypair).approve(uri)
        assert resp.status == 200
        await client.get("/guardian/" + "ab" * 32)
    token = path.rsplit("/", 1)[1]
    text = "\n".join(JsonFormatter().format(r) for r in caplog.records)
    assert "/guardian/<redacted>" in text and token not in text
    assert redact_path(f"/guardian/{token}/sep7/x") == "/guardian/<redacted>/sep7/x"
    # A request kept in Redis: ids, a public key, a hash, a time; no name.
    uri = await ask(client, path, "decline")
    keys = redis_sync.Redis.from_url(settings.redis_url).keys("sep7:request:*")
    values = [redis_sync.Redis.from_url(settings.redis_url).get(k) for k in keys]
    assert values and all(b"Olive" not in v and b"Guardian 0" not in v for v in values if v)


async def test_a_guardian_reconfirms_and_reports_with_a_reason_from_the_page(
    make_client, clock, run_worker, settings, email_provider
):
    """#24's reconfirmation and #25's report reasons, both on main, answered from the page."""
    reconfirm = {"guardian_reconfirm_interval_seconds": 1800, "guardian_reconfirm_grace_seconds": 600}
    client = await make_client(**reconfirm)
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=2)
    clock.advance(seconds=1801)
    # The sweep runs with the lifecycle scan and queues the email; a second run delivers what
    # the first queued late (as tests/test_guardian_reconfirm.py runs it).
    await run_worker(settings={**email_provider.settings, **reconfirm})
    await run_worker(settings={**email_provider.settings, **reconfirm})
    mail = [m.body for m in email_provider.to("guardian0@example.org") if "still able" in m.body["subject"]][
        -1
    ]
    path = PAGE_RE.findall(mail["text"])[-1][0]
    shown = await (await client.get(path)).text()
    assert "to confirm that you can still act" in shown and 'value="reconfirm"' in shown
    wallet = WalletApp(client, setup.guardians[0].keypair)
    uri = await ask(client, path, "reconfirm")
    assert (await wallet.open(uri)).msg == "Confirm you can still act as a guardian for Olive Owner's plan"
    resp = await wallet.approve(uri)
    assert resp.status == 200 and await resp.json() == {"status": "reconfirmed"}
    rows = await (await client.get("/api/guardians", headers=owner.headers)).json()
    assert {r["name"]: r["reconfirmedAt"] is not None for r in rows} == {
        "Guardian 0": True,
        "Guardian 1": False,
    }
    assert 'value="reconfirm"' not in await (await client.get(path)).text()

    # A report with its reason (one of four words, carried by the request; no free text).
    bad = await client.post(f"{path}/ask", data={"action": "report", "reason": "bored"})
    assert bad.status == 400
    uri = await ask(client, path, "report", reason="death")
    resp = await wallet.approve(uri)
    assert resp.status == 200 and await resp.json() == {"status": "reported"}
    [row] = query(settings, "SELECT reason FROM plan_reports")
    assert row["reason"] == "death"
    assert "Guardian 0 reported that Olive Owner has died on" in words(await (await client.get(path)).text())


async def test_a_guardian_sends_an_heirs_link_again_from_their_page(
    onchain, soroban_rpc, clock, run_worker, email_provider
):
    """Once the plan is ready, an accepted guardian's page names the heirs and their links'
    delivery, and resends one, to the heir's registered address only (heirs.resend_link)."""
    from tests.support.onchain import ready

    setup = await ready(onchain, soroban_rpc, clock, run_worker, email_provider)
    path = page_link(email_provider, "guardian0@example.org")
    shown = words(await (await onchain.get(path)).text())
    assert "The heirs\u2019 links" in shown and "Heir 0: sent" in shown
    before = len(email_provider.to("heir0@example.org"))
    heir_id = setup.beneficiaries[0]["id"]
    uri = await ask(onchain, path, "resend", beneficiaryId=heir_id)
    wallet = WalletApp(onchain, setup.guardians[0].keypair)
    assert (await wallet.open(uri)).msg == "Send Heir 0's link again, for Olive Owner's plan"
    resp = await wallet.approve(uri)
    assert resp.status == 200 and await resp.json() == {"status": "sent"}
    await run_worker(**worker_settings(soroban_rpc, email_provider))
    assert len(email_provider.to("heir0@example.org")) == before + 1
    # Another plan's heir, or none: nothing to ask for.
    resp = await onchain.post(f"{path}/ask", data={"action": "resend", "beneficiaryId": "x"})
    assert resp.status == 404
