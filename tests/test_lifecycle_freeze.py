"""Plan contents freeze while guardians verify ("check in first") and for good after release;
guardians see only the plans they guard, and nothing of their contents."""

from __future__ import annotations

import psycopg2

from tests.helpers import assert_error, sign_in
from tests.lifecycle_helpers import (
    activate_plan,
    approve_plan,
    get_overview,
    guardian_session,
    release_plan,
    report,
)
from tests.plan_helpers import body_for, create, query

COLLECTIONS = ("beneficiaries", "guardians", "assets", "messages")


async def _mutations(client, owner, rows):
    """Every content mutation once: (label, response)."""
    results = []
    for collection in COLLECTIONS:
        body = (
            body_for(collection, allocationPercentage=1)
            if collection == "beneficiaries"
            else body_for(collection)
        )
        results.append(
            (
                f"create {collection}",
                await client.post(f"/api/{collection}", json=body, headers=owner.headers),
            )
        )
        row_id = rows[collection]["id"]
        patch = {"name": "Changed"} if collection in ("beneficiaries", "guardians") else {"title": "Changed"}
        if collection == "assets":
            patch = {"label": "Changed"}
        results.append(
            (
                f"patch {collection}",
                await client.patch(f"/api/{collection}/{row_id}", json=patch, headers=owner.headers),
            )
        )
        results.append(
            (
                f"delete {collection}",
                await client.delete(f"/api/{collection}/{row_id}", headers=owner.headers),
            )
        )
    beneficiary = rows["beneficiaries"]["id"]
    results.append(
        (
            "rotate claim token",
            await client.post(f"/api/beneficiaries/{beneficiary}/claim-token/rotate", headers=owner.headers),
        )
    )
    return results


async def _rows(client, owner, setup):
    return {
        "beneficiaries": setup.beneficiaries[0],
        "guardians": setup.guardians[0].row,
        "assets": await create(client, owner, "assets"),
        "messages": await create(client, owner, "messages"),
    }


async def test_contents_are_frozen_during_verification_until_check_in(client, settings):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, guardians=3)
    rows = await _rows(client, owner, setup)
    assert (await report(client, setup, setup.guardians[2])).status == 200
    before = query(settings, "SELECT count(*) AS n FROM activity")[0]["n"]
    for label, resp in await _mutations(client, owner, rows):
        assert resp.status == 409, label
        body = await resp.json()
        assert_error(body, 409)
        assert body["message"].startswith("Check in first"), label
    assert query(settings, "SELECT count(*) AS n FROM activity")[0]["n"] == before  # nothing changed
    resp = await client.post("/api/legacy/check-in", headers=owner.headers)
    assert resp.status == 200
    resp = await client.patch(
        f"/api/assets/{rows['assets']['id']}", json={"label": "Now"}, headers=owner.headers
    )
    assert resp.status == 200


async def test_contents_are_frozen_for_good_after_release(client, clock, run_worker, settings):
    owner = await sign_in(client)
    asset, message = await create(client, owner, "assets"), await create(client, owner, "messages")
    setup = await release_plan(client, owner, clock, run_worker)
    rows = {
        "beneficiaries": setup.beneficiaries[0],
        "guardians": setup.guardians[0].row,
        "assets": asset,
        "messages": message,
    }
    for label, resp in await _mutations(client, owner, rows):
        assert resp.status == 409, label
        assert "released" in (await resp.json())["message"], label


async def test_archive_is_frozen_after_release(vault, clock, run_worker, settings):
    item = await vault.upload_ok(b"before", title="kept")
    await release_plan(vault.client, vault.session, clock, run_worker)
    resp = await vault.upload(b"after", title="late")
    assert resp.status == 409
    resp = await vault.client.delete(f"/api/archive/{item['id']}", headers=vault.session.headers)
    assert resp.status == 409
    listed = await (await vault.client.get("/api/archive", headers=vault.session.headers)).json()
    assert [i["title"] for i in listed] == ["kept"]
    assert len(query(settings, "SELECT id FROM archive_items")) == 1
    assert len(vault.stored_files()) == 1  # the refused upload left no object behind


async def test_active_plan_keeps_enough_guardians_and_a_beneficiary(client):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner, allocations=(100,), guardians=2, threshold=2)
    resp = await client.delete(f"/api/guardians/{setup.guardians[0].row['id']}", headers=owner.headers)
    assert resp.status == 409
    resp = await client.delete(f"/api/beneficiaries/{setup.beneficiaries[0]['id']}", headers=owner.headers)
    assert resp.status == 409
    resp = await client.get("/api/guardians", headers=owner.headers)
    assert len(await resp.json()) == 2


async def test_a_release_never_overtakes_a_mutation_in_flight(client, clock, run_worker, settings):
    """A content mutation holds the plan row FOR SHARE (the guard) until it commits: the scan
    skips the locked plan rather than release under it, and releases it on the next scan."""
    owner = await sign_in(client)
    setup = await activate_plan(client, owner)
    await approve_plan(client, setup)
    clock.advance(seconds=61)
    conn = psycopg2.connect(settings.database_url)
    try:
        cur = conn.cursor()
        cur.execute("SELECT status FROM plans WHERE id = %s FOR SHARE", (setup.plan_id,))  # as the guard does
        await run_worker()
        assert query(settings, "SELECT status FROM plans")[0]["status"] == "Approved"
        conn.commit()
    finally:
        conn.close()
    await run_worker()
    assert (await get_overview(client, owner))["status"] == "Released"


async def test_guardians_see_only_their_plans_and_no_contents(client):
    owner_a, owner_b = await sign_in(client), await sign_in(client)
    plan_a = await activate_plan(client, owner_a)
    plan_b = await activate_plan(client, owner_b)
    guardian = plan_a.guardians[0]
    session = await guardian_session(client, guardian)
    resp = await client.get("/api/legacy/guardianships", headers=session.headers)
    [item] = await resp.json()
    assert item["planId"] == plan_a.plan_id and item["owner"]["walletAddress"] == owner_a.keypair.public_key
    assert set(item) == {
        "planId",
        "owner",
        "status",
        "threshold",
        "approvals",
        "approvedByMe",
        "reportedByMe",
        "releaseAt",
        "invitation",
        "invitedAt",
        "acceptedAt",
        "declinedAt",
        "reconfirmedAt",  # the guardian's own reconfirmation state
        "reconfirmationAsked",
        "reconfirmationAskedAt",
        "unresponsiveSince",
        "readySince",
        "ownerKeyUsedAt",  # someone signed in with the owner's key during this verification
        "objectedAt",  # the guardian's own objection in this verification, if any
        "objectionLapsesAt",  # when that objection lapses unless the owner checks in
        "beneficiaries",  # names and link delivery, once released or ready: empty before
        "walletChanges",  # wallets heirs proved in place of a lost one, once released or ready
        "addressChanges",  # corrected heir addresses still running, once released or ready
    }
    assert item["beneficiaries"] == [] and item["walletChanges"] == [] and item["ownerKeyUsedAt"] is None
    assert item["addressChanges"] == []
    assert item["objectedAt"] is None
    for method, suffix in (("post", "report"), ("get", "attestation"), ("post", "approve")):
        kwargs = {"json": {"signature": "00" * 64}} if suffix == "approve" else {}
        for plan_id in (plan_b.plan_id, "not-a-uuid"):
            resp = await getattr(client, method)(
                f"/api/legacy/guardianships/{plan_id}/{suffix}", headers=session.headers, **kwargs
            )
            assert resp.status == 404, (suffix, plan_id)
    assert (await get_overview(client, owner_b))["status"] == "Active"
    # The owner's own plan id is not a guardianship either.
    resp = await client.post(f"/api/legacy/guardianships/{plan_a.plan_id}/report", headers=owner_a.headers)
    assert resp.status == 404
