"""Guardian approvals come from someone other than the owner, for one verification round: the
owner's account is never a guardian of its own plan, even after linking a wallet the plan lists
as a guardian, and an attestation issued before a veto cannot approve the next round (review)."""

from __future__ import annotations

from tests.helpers import challenge, sign, sign_in
from tests.lifecycle_helpers import activate_plan, get_overview, guardian_session, report


async def test_owner_linking_a_guardian_wallet_does_not_make_them_their_own_guardian(client):
    owner = await sign_in(client)
    # The second guardian has never signed in, so its wallet is free to link.
    setup = await activate_plan(client, owner, guardians=2, threshold=1, accepting=1)
    guardian = setup.guardians[1].keypair
    message = await challenge(client, guardian.public_key)
    resp = await client.post(
        "/api/auth/link-wallet",
        headers=owner.headers,
        json={"walletAddress": guardian.public_key, "signature": sign(guardian, message)},
    )
    assert resp.status == 200, await resp.text()

    resp = await client.get("/api/legacy/guardianships", headers=owner.headers)
    assert resp.status == 200 and await resp.json() == []
    plan = setup.plan_id
    resp = await client.post(f"/api/legacy/guardianships/{plan}/report", json={}, headers=owner.headers)
    assert resp.status == 404
    resp = await client.get(f"/api/legacy/guardianships/{plan}/attestation", headers=owner.headers)
    assert resp.status == 404
    assert (await get_overview(client, owner))["status"] == "Active"


async def test_an_attestation_from_before_the_veto_cannot_approve_the_next_round(client):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=2, threshold=2)
    first, second = setup.guardians
    assert (await report(client, setup, first)).status == 200  # round 1
    session = await guardian_session(client, first)
    path = f"/api/legacy/guardianships/{setup.plan_id}"
    resp = await client.get(f"{path}/attestation", headers=session.headers)
    signature = sign(first.keypair, (await resp.json())["message"])
    assert (await client.post("/api/legacy/check-in", headers=owner.headers)).status == 200  # veto
    assert (await report(client, setup, second)).status == 200  # round 2, minutes later

    resp = await client.post(f"{path}/approve", json={"signature": signature}, headers=session.headers)
    assert resp.status == 401, await resp.text()
    assert (await get_overview(client, owner))["approvals"]["count"] == 0
    # A fresh attestation in this round works.
    resp = await client.get(f"{path}/attestation", headers=session.headers)
    signature = sign(first.keypair, (await resp.json())["message"])
    resp = await client.post(f"{path}/approve", json={"signature": signature}, headers=session.headers)
    assert resp.status == 200, await resp.text()
    assert (await get_overview(client, owner))["approvals"]["count"] == 1
