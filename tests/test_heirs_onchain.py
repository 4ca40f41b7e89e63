"""Every heir reached, on-chain (#16): the plan becomes ready to finalise by itself, the heir's
only source of their token is the email, the heir proves a wallet before using it, and a
sibling cannot take another heir's claim. HTTP routes, the real worker, the RPC emulator and
the email capture server; the test clock moves the cancel window."""

from __future__ import annotations

import re

from stellar_sdk import Keypair

from tests.helpers import sign
from tests.lifecycle_helpers import get_overview
from tests.plan_helpers import query
from tests.soroban_helpers import prove_wallet, sign_xdr
from tests.support.onchain import (
    approved_on_chain,
    build_sign_submit,
    emailed_token,
    ready,
    worker_settings,
)


async def test_the_heirs_only_source_of_the_token_is_their_email(
    onchain, soroban_rpc, clock, run_worker, email_provider, settings
):
    setup = await approved_on_chain(onchain, soroban_rpc, run_worker, email_provider)
    # The approval emails promise no date that will not come: the heirs finalise it.
    owner_mail = email_provider.to("owner@example.org")[-1].body["text"]
    assert "each beneficiary will be sent their link" in owner_mail and "released on" not in owner_mail
    guardian_mail = email_provider.to("guardian1@example.org")[-1].body["text"]
    assert "confirms it with their wallet" in guardian_mail and "released on" not in guardian_mail
    assert not email_provider.to("heir0@example.org")  # nothing for the heirs yet

    # Still inside the window: exactly locked.
    heir = setup.beneficiaries[0]
    assert await (await onchain.get(f"/api/claim/{heir['claimToken']}")).json() == {"status": "locked"}

    clock.advance(seconds=setup.overview["settings"]["cancelWindowSeconds"] + 1)
    await run_worker(**worker_settings(soroban_rpc, email_provider))
    await run_worker(**worker_settings(soroban_rpc, email_provider))  # a second scan sends nothing again
    assert len(email_provider.to("heir0@example.org")) == 1
    mail = email_provider.to("heir0@example.org")[0].body
    assert "one last step" in mail["text"] and "wallet" in mail["text"]
    token = emailed_token(email_provider, "heir0@example.org")
    assert "ready to be released" in email_provider.to("guardian0@example.org")[-1].body["subject"]

    overview = await get_overview(onchain, setup.owner)
    assert overview["status"] == "Approved" and overview["readyToFinalize"] is True
    journey = await (await onchain.get("/api/legacy/journey", headers=setup.owner.headers)).json()
    steps = {s["status"]: s for s in journey["steps"]}
    assert steps["ReadyToFinalize"]["state"] == "current" and steps["Released"]["at"] is None
    kinds = [r["kind"] for r in query(settings, "SELECT kind FROM activity WHERE kind LIKE 'plan.%'")]
    assert kinds.count("plan.ready_to_finalize") == 1

    capsule = await (await onchain.get(f"/api/claim/{token}")).json()
    assert capsule == {
        "status": "ready",
        "readySince": overview["readySince"],
        "owner": {"name": "Olive Owner"},
        "beneficiary": {"name": "Heir 0"},
        "wallet": None,
    }

    wallet = Keypair.random()
    soroban_rpc.fund(wallet.public_key)
    resp = await prove_wallet(onchain, token, wallet, sep53=True)
    assert resp.status == 200, await resp.text()
    bound = (await resp.json())["wallet"]
    assert bound["address"] == wallet.public_key and bound["boundVia"] == "proven"
    tx = await build_sign_submit(
        onchain,
        f"/api/claim/{token}/release/build",
        f"/api/claim/{token}/submit",
        wallet,
        soroban_rpc,
        json={},
    )
    assert tx["function"] == "finalize_release"
    await run_worker(**worker_settings(soroban_rpc, email_provider))
    assert (await get_overview(onchain, setup.owner))["status"] == "Released"
    released = await (await onchain.get(f"/api/claim/{token}")).json()
    assert released["status"] == "released" and released["wallet"]["address"] == wallet.public_key
    # Released: a second email with the same link says it is open.
    assert emailed_token(email_provider, "heir0@example.org") == token

    tx = await build_sign_submit(
        onchain, f"/api/claim/{token}/claim/build", f"/api/claim/{token}/submit", wallet, soroban_rpc, json={}
    )
    await run_worker(**worker_settings(soroban_rpc, email_provider))
    assert (await (await onchain.get(f"/api/claim/{token}/transactions/{tx['id']}")).json())[
        "status"
    ] == "confirmed"
    claims = await (await onchain.get("/api/legacy/claims", headers=setup.owner.headers)).json()
    mine = next(c for c in claims["claims"] if c["beneficiaryId"] == heir["id"])
    assert mine["claim"]["status"] == "confirmed"
    assert mine["wallet"] == {"address": wallet.public_key, "boundVia": "proven", "boundAt": bound["boundAt"]}


async def test_a_sibling_cannot_take_another_heirs_claim(
    onchain, soroban_rpc, clock, run_worker, email_provider, settings
):
    setup = await ready(onchain, soroban_rpc, clock, run_worker, email_provider)
    heir_a, heir_b = setup.beneficiaries
    token_a, token_b = heir_a["claimToken"], heir_b["claimToken"]
    w = Keypair.random()
    soroban_rpc.fund(w.public_key)
    assert (await prove_wallet(onchain, token_a, w)).status == 200
    await build_sign_submit(
        onchain,
        f"/api/claim/{token_a}/release/build",
        f"/api/claim/{token_a}/submit",
        w,
        soroban_rpc,
        json={},
    )
    await run_worker(**worker_settings(soroban_rpc, email_provider))
    assert (await get_overview(onchain, setup.owner))["status"] == "Released"

    # A builds and signs claim_assets(owner, W); B relays A's envelope through B's own token.
    built = await (await onchain.post(f"/api/claim/{token_a}/claim/build")).json()
    signed = sign_xdr(built["xdr"], w, soroban_rpc.passphrase)
    sent_before = len(soroban_rpc.sent)
    resp = await onchain.post(f"/api/claim/{token_b}/submit", json={"signedXdr": signed})
    assert resp.status == 400 and "Prove your wallet first" in (await resp.json())["message"]
    assert not query(settings, "SELECT id FROM transactions WHERE function = 'claim_assets'")
    await run_worker(**worker_settings(soroban_rpc, email_provider))
    assert len(soroban_rpc.sent) == sent_before  # nothing went to the network
    # B cannot build with W, nor prove it (W signs for A only, and is A's).
    resp = await onchain.post(f"/api/claim/{token_b}/claim/build", json={"walletAddress": w.public_key})
    assert resp.status == 409 and "/wallet/challenge" in (await resp.json())["message"]
    resp = await prove_wallet(onchain, token_b, w)
    assert resp.status == 409 and "another beneficiary" in (await resp.json())["message"]

    # A still claims with the same envelope, and nothing is bound to B.
    resp = await onchain.post(f"/api/claim/{token_a}/submit", json={"signedXdr": signed})
    assert resp.status == 202, await resp.text()
    await run_worker(**worker_settings(soroban_rpc, email_provider))
    claims = await (await onchain.get("/api/legacy/claims", headers=setup.owner.headers)).json()
    by_id = {c["beneficiaryId"]: c for c in claims["claims"]}
    assert by_id[heir_a["id"]]["claim"]["status"] == "confirmed"
    assert by_id[heir_a["id"]]["wallet"]["address"] == w.public_key
    assert by_id[heir_b["id"]]["wallet"] is None and by_id[heir_b["id"]]["walletAddress"] is None
    assert by_id[heir_b["id"]]["claim"]["status"] == "none"


async def test_wallet_challenges_are_single_use_expire_and_several_live_at_once(
    onchain, soroban_rpc, clock, run_worker, email_provider
):
    setup = await ready(onchain, soroban_rpc, clock, run_worker, email_provider)
    token = setup.beneficiaries[0]["claimToken"]
    wallet = Keypair.random()
    challenge = f"/api/claim/{token}/wallet/challenge"
    verify = f"/api/claim/{token}/wallet/verify"
    body = {"walletAddress": wallet.public_key}
    first = (await (await onchain.post(challenge, json=body)).json())["message"]
    second = (await (await onchain.post(challenge, json=body)).json())["message"]
    assert first != second and wallet.public_key in first
    assert "claim as beneficiary of Olive Owner's plan" in first
    nonce = re.search(r"Nonce: ([0-9a-f]+)", first)
    assert nonce and len(nonce.group(1)) == 64  # 256 bits

    # A signature by another key, or over another text, is refused.
    resp = await onchain.post(verify, json={**body, "signature": sign(Keypair.random(), first)})
    assert resp.status == 401
    resp = await onchain.post(verify, json={**body, "signature": "not a signature"})
    assert resp.status == 400 and "signature" in (await resp.json())["details"]
    # The first of two live challenges, signed: bound; the same signature again: 401 (single use).
    signature = sign(wallet, first)
    resp = await onchain.post(verify, json={**body, "signature": signature})
    assert resp.status == 200, await resp.text()
    resp = await onchain.post(verify, json={**body, "signature": signature})
    assert resp.status == 401  # it signs no live challenge any more
    # The second is still live (the same wallet again: 200, unchanged) until it expires.
    clock.advance(seconds=5 * 60 + 1)
    resp = await onchain.post(verify, json={**body, "signature": sign(wallet, second)})
    assert resp.status == 401 and "expired" in (await resp.json())["message"]
    third = (await (await onchain.post(challenge, json=body)).json())["message"]
    resp = await onchain.post(verify, json={**body, "signature": sign(wallet, third, encoding="hex")})
    assert resp.status == 200
    assert (await resp.json())["wallet"]["boundVia"] == "proven"


async def test_wallet_proof_refused_until_the_capsule_is_open_and_for_bad_input(
    onchain, soroban_rpc, run_worker, email_provider
):
    setup = await approved_on_chain(onchain, soroban_rpc, run_worker, email_provider)
    token = setup.beneficiaries[0]["claimToken"]
    wallet = Keypair.random().public_key
    resp = await onchain.post(f"/api/claim/{token}/wallet/challenge", json={"walletAddress": wallet})
    assert resp.status == 409 and "not open yet" in (await resp.json())["message"]
    assert resp.headers["Referrer-Policy"] == "no-referrer"
    for path in ("challenge", "verify"):
        resp = await onchain.post(
            f"/api/claim/{'0' * 64}/wallet/{path}", json={"walletAddress": wallet, "signature": "A" * 88}
        )
        assert resp.status == 404
    for bad in (
        {},
        {"walletAddress": "G" + "A" * 55},
        {"walletAddress": wallet.lower()},
        {"walletAddress": 7},
    ):
        resp = await onchain.post(f"/api/claim/{token}/wallet/challenge", json=bad)
        assert resp.status == 400 and "walletAddress" in (await resp.json())["details"]
    resp = await onchain.post(f"/api/claim/{token}/wallet/verify", json={"walletAddress": wallet})
    assert resp.status == 400 and "signature" in (await resp.json())["details"]
    resp = await onchain.post(
        f"/api/claim/{token}/wallet/challenge", data="{", headers={"Content-Type": "application/json"}
    )
    assert resp.status == 400


async def test_an_owner_check_in_while_ready_locks_the_capsule_again(
    onchain, soroban_rpc, clock, run_worker, email_provider
):
    setup = await ready(onchain, soroban_rpc, clock, run_worker, email_provider)
    token = setup.beneficiaries[0]["claimToken"]
    assert (await (await onchain.get(f"/api/claim/{token}")).json())["status"] == "ready"
    resp = await onchain.post("/api/legacy/check-in", headers=setup.owner.headers)
    assert resp.status == 200 and (await resp.json())["readyToFinalize"] is False
    assert await (await onchain.get(f"/api/claim/{token}")).json() == {"status": "locked"}
    resp = await onchain.post(f"/api/claim/{token}/release/build", json={})
    assert resp.status == 409
    # The heirs who received the "ready" link are told, in neutral words (#24 section 5).
    await run_worker(**worker_settings(soroban_rpc, email_provider))
    for index in range(len(setup.beneficiaries)):
        mail = email_provider.to(f"heir{index}@example.org")[-1].body
        assert "no longer ready" in mail["subject"] and "nothing for you to do" in mail["text"]
        assert "alive" not in mail["text"] and "check" not in mail["text"].lower()
