"""A lost wallet (#16, docs/soroban.md "A lost wallet"): an heir who no longer holds the wallet
the owner recorded proves a new one through their token; the plan's guardians approve it by
their threshold, and only then is it bound. HTTP, the real worker and the email capture server."""

from __future__ import annotations

from stellar_sdk import Keypair

from tests.helpers import sign_in
from tests.lifecycle_helpers import activate_plan, approve_plan, get_overview, guardian_session
from tests.plan_helpers import query
from tests.soroban_helpers import prove_wallet


async def test_guardians_approve_the_wallet_an_heir_proved_in_place_of_a_lost_one(
    client, clock, run_worker, email_provider, settings
):
    owner = await sign_in(client)
    recorded, lost_and_found, final = Keypair.random(), Keypair.random(), Keypair.random()
    setup = await activate_plan(client, owner, guardians=2, threshold=2)
    heir = setup.beneficiaries[0]
    resp = await client.patch(
        f"/api/beneficiaries/{heir['id']}", json={"walletAddress": recorded.public_key}, headers=owner.headers
    )
    assert resp.status == 200
    await approve_plan(client, setup)
    token = heir["claimToken"]
    # Before the release the owner decides the wallet: no proof is taken.
    assert (await prove_wallet_status(client, token, lost_and_found)) == 409
    clock.advance(seconds=setup.overview["settings"]["cancelWindowSeconds"] + 1)
    await run_worker(settings=email_provider.settings)
    assert (await get_overview(client, owner))["status"] == "Released"

    # The heir proves a new wallet: 409 (the recorded one stays bound), and the proof is kept.
    resp = await prove_wallet(client, token, lost_and_found)
    body = await resp.json()
    assert resp.status == 409 and "guardians have been asked" in body["message"]
    assert body["details"]["walletChange"] == {
        "status": "pending",
        "walletAddress": lost_and_found.public_key,
        "approvals": 0,
        "threshold": 2,
    }
    capsule = await (await client.get(f"/api/claim/{token}")).json()
    assert capsule["wallet"]["address"] == recorded.public_key and capsule["wallet"]["boundVia"] == "owner"
    await run_worker(settings=email_provider.settings)
    for address in ("guardian0@example.org", "guardian1@example.org"):
        asks = [r.body for r in email_provider.to(address) if "new wallet" in r.body["subject"]]
        assert len(asks) == 1 and "Heir 0" in asks[0]["subject"]
        assert lost_and_found.public_key[-6:] in asks[0]["text"] and "confirming" in asks[0]["text"]

    first, second = [await guardian_session(client, g) for g in setup.guardians]
    listed = await (await client.get("/api/legacy/guardianships", headers=first.headers)).json()
    [change] = listed[0]["walletChanges"]
    assert change["beneficiaryId"] == heir["id"] and change["name"] == "Heir 0"
    assert change["walletAddress"] == lost_and_found.public_key and change["approvals"] == 0
    path = f"/api/legacy/guardianships/{setup.plan_id}/wallet-changes/{change['id']}/approve"
    resp = await client.post(path, headers=first.headers)
    assert resp.status == 200 and await resp.json() == {"status": "pending", "approvals": 1, "threshold": 2}
    resp = await client.post(path, headers=first.headers)
    assert resp.status == 409 and "already approved" in (await resp.json())["message"]

    # Whoever holds the link proves yet another wallet while one waits: 409 each time, the
    # waiting request keeps its approval, and the guardians are not emailed again (#28 F2).
    before = len(email_provider.requests)
    for _ in range(5):
        resp = await prove_wallet(client, token, final)
        body = await resp.json()
        assert resp.status == 409 and "already waits for the guardians' approval" in body["message"]
        waiting = body["details"]["walletChange"]
        assert waiting["walletAddress"] == lost_and_found.public_key and waiting["approvals"] == 1
    resp = await prove_wallet(client, token, lost_and_found)  # the same wallet again: the same answer
    assert resp.status == 409 and (await resp.json())["message"].startswith("This wallet already waits")
    await run_worker(settings=email_provider.settings)
    assert len(email_provider.requests) == before
    listed = await (await client.get("/api/legacy/guardianships", headers=second.headers)).json()
    [change] = listed[0]["walletChanges"]
    assert change["walletAddress"] == lost_and_found.public_key and change["approvals"] == 1

    # Seven days on, undecided, it lapses: a new proof takes its place (and asks the guardians).
    clock.advance(days=7, seconds=1)
    resp = await prove_wallet(client, token, final)
    assert resp.status == 409 and "guardians have been asked" in (await resp.json())["message"]
    listed = await (await client.get("/api/legacy/guardianships", headers=second.headers)).json()
    [change] = listed[0]["walletChanges"]
    assert change["walletAddress"] == final.public_key and change["approvals"] == 0
    resp = await client.post(path, headers=second.headers)
    assert resp.status == 409 and "another wallet since" in (await resp.json())["message"]

    path = f"/api/legacy/guardianships/{setup.plan_id}/wallet-changes/{change['id']}/approve"
    stranger = await sign_in(client)
    assert (await client.post(path, headers=stranger.headers)).status == 404
    bad = f"/api/legacy/guardianships/{setup.plan_id}/wallet-changes/not-an-id/approve"
    assert (await client.post(bad, headers=first.headers)).status == 404
    assert (await client.post(path, headers=first.headers)).status == 200
    resp = await client.post(path, headers=second.headers)
    assert resp.status == 200 and await resp.json() == {"status": "applied", "approvals": 2, "threshold": 2}

    capsule = await (await client.get(f"/api/claim/{token}")).json()
    assert capsule["wallet"]["address"] == final.public_key and capsule["wallet"]["boundVia"] == "guardians"
    assert (await prove_wallet(client, token, final)).status == 200  # now simply theirs
    listed = await (await client.get("/api/legacy/guardianships", headers=first.headers)).json()
    assert listed[0]["walletChanges"] == []
    kinds = [r["kind"] for r in query(settings, "SELECT kind FROM activity ORDER BY created_at, id")]
    assert (
        kinds.count("beneficiary.wallet_change_requested") == 2
        and kinds.count("beneficiary.wallet_replaced") == 1
    )
    # Decided; a new proof the same day waits for the guardians, who were emailed about this heir
    # less than 24 hours ago: no second email (they see it on their page).
    await run_worker(settings=email_provider.settings)
    before = len(email_provider.requests)
    resp = await prove_wallet(client, token, Keypair.random())
    assert resp.status == 409 and "guardians have been asked" in (await resp.json())["message"]
    await run_worker(settings=email_provider.settings)
    assert len(email_provider.requests) == before
    listed = await (await client.get("/api/legacy/guardianships", headers=first.headers)).json()
    assert len(listed[0]["walletChanges"]) == 1


async def prove_wallet_status(client, token, keypair) -> int:
    resp = await client.post(
        f"/api/claim/{token}/wallet/challenge", json={"walletAddress": keypair.public_key}
    )
    return resp.status
