"""A guardian confirms a release independently of the owner: the owner's account is never a
guardian of its own plan, even after linking a wallet the plan lists as a guardian (review)."""

from __future__ import annotations

from tests.helpers import challenge, sign, sign_in
from tests.lifecycle_helpers import activate_plan, get_overview


async def test_owner_linking_a_guardian_wallet_does_not_make_them_their_own_guardian(client):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=1, threshold=1)
    guardian = setup.guardians[0].keypair
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
