"""/api/beneficiaries: fields, validation, the 100% allocation cap (also under concurrency),
and the claim token: minted by the server, stored as digest + sealed value, rotatable."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re

import pytest

from api.keys import DB, SETTINGS
from models.claim import capsules
from tests.helpers import assert_error, sign_in
from tests.plan_helpers import activity_rows, body_for, create, query

TOKEN_RE = re.compile(r"^[0-9a-f]{64}$")
FIELDS = {
    "id",
    "userId",
    "name",
    "relationship",
    "email",
    "allocationPercentage",
    "walletAddress",  # optional (null until set or bound by a claim): docs/soroban.md
    "claimToken",
    "emailConfirmedAt",  # null until the heir confirms their address (#28): docs/capsule.md
    "locale",  # their language and zone, null until set: docs/translations.md
    "timeZone",
    "grammaticalGender",  # how to refer to them, null until said: docs/pages.md
    "createdAt",
    "updatedAt",
}


async def test_create_returns_the_spec_object_with_a_server_minted_token(client, settings):
    session = await sign_in(client)
    resp = await client.post(
        "/api/beneficiaries",
        headers=session.headers,
        json={
            "name": "  Ada Lovelace ",
            "relationship": "daughter",
            "email": "ada@example.org",
            "allocationPercentage": 33.33,
            "claimToken": "0" * 64,
            "userId": "someone-else",
            "isAdmin": True,
        },
    )
    assert resp.status == 201, await resp.text()
    body = await resp.json()
    assert set(body) == FIELDS
    assert body["name"] == "Ada Lovelace"
    assert body["userId"] == session.user["id"]
    assert body["allocationPercentage"] == 33.33
    assert TOKEN_RE.match(body["claimToken"]) and body["claimToken"] != "0" * 64
    assert body["createdAt"].endswith("Z")
    [row] = query(settings, "SELECT allocation_percentage::text AS pct FROM beneficiaries")
    assert row["pct"] == "33.33"


async def test_whole_percentages_come_back_as_integers(client):
    session = await sign_in(client)
    assert (await create(client, session, "beneficiaries", allocationPercentage=50))[
        "allocationPercentage"
    ] == 50


async def test_token_is_shown_on_get_list_and_patch(client):
    session = await sign_in(client)
    created = await create(client, session, "beneficiaries")
    path = f"/api/beneficiaries/{created['id']}"
    got = await (await client.get(path, headers=session.headers)).json()
    listed = await (await client.get("/api/beneficiaries", headers=session.headers)).json()
    patched = await (await client.patch(path, json={"relationship": "son"}, headers=session.headers)).json()
    assert got == created
    assert listed == [created]
    assert patched["claimToken"] == created["claimToken"] and patched["relationship"] == "son"


async def test_list_is_newest_first_with_link_header(client):
    session = await sign_in(client)
    ids = [(await create(client, session, "beneficiaries", name=f"B{i}"))["id"] for i in range(3)]
    resp = await client.get("/api/beneficiaries?limit=2", headers=session.headers)
    assert [b["id"] for b in await resp.json()] == ids[::-1][:2]
    assert 'rel="next"' in resp.headers["Link"]


@pytest.mark.parametrize(
    "overrides,field",
    [
        ({"name": None}, "name"),
        ({"name": "   "}, "name"),
        ({"name": "x" * 121}, "name"),
        ({"relationship": ""}, "relationship"),
        ({"relationship": "x" * 61}, "relationship"),
        ({"email": "not-an-email"}, "email"),
        ({"email": None}, "email"),
        ({"allocationPercentage": 0}, "allocationPercentage"),
        ({"allocationPercentage": -5}, "allocationPercentage"),
        ({"allocationPercentage": 100.01}, "allocationPercentage"),
        ({"allocationPercentage": 12.345}, "allocationPercentage"),
        ({"allocationPercentage": "50"}, "allocationPercentage"),
        ({"allocationPercentage": True}, "allocationPercentage"),
        ({"allocationPercentage": None}, "allocationPercentage"),
    ],
)
async def test_create_validation(client, overrides, field):
    session = await sign_in(client)
    resp = await client.post(
        "/api/beneficiaries", json=body_for("beneficiaries", **overrides), headers=session.headers
    )
    assert resp.status == 400
    body = await resp.json()
    assert_error(body, 400)
    assert field in body["details"] and any(m.startswith(f"{field}: ") for m in body["message"])


async def test_missing_fields_are_each_named(client):
    session = await sign_in(client)
    resp = await client.post("/api/beneficiaries", json={}, headers=session.headers)
    assert resp.status == 400
    assert set((await resp.json())["details"]) == {"name", "relationship", "email", "allocationPercentage"}


async def test_allocation_total_is_capped_at_100_naming_the_current_total(client, settings):
    session = await sign_in(client)
    await create(client, session, "beneficiaries", allocationPercentage=60.5)
    resp = await client.post(
        "/api/beneficiaries", json=body_for("beneficiaries", allocationPercentage=40), headers=session.headers
    )
    assert resp.status == 400
    body = await resp.json()
    assert "current total is 60.5%" in body["message"][0] and "100.5%" in body["message"][0]
    assert (
        await client.post(
            "/api/beneficiaries",
            json=body_for("beneficiaries", allocationPercentage=39.5),
            headers=session.headers,
        )
    ).status == 201
    assert query(settings, "SELECT sum(allocation_percentage) AS total FROM beneficiaries")[0]["total"] == 100


async def test_allocation_cap_is_per_owner(client):
    first, second = await sign_in(client), await sign_in(client)
    await create(client, first, "beneficiaries", allocationPercentage=100)
    await create(client, second, "beneficiaries", allocationPercentage=100)


async def test_patch_allocation_counts_the_others_not_itself(client):
    session = await sign_in(client)
    a = await create(client, session, "beneficiaries", allocationPercentage=60)
    b = await create(client, session, "beneficiaries", allocationPercentage=40)
    path_a, path_b = f"/api/beneficiaries/{a['id']}", f"/api/beneficiaries/{b['id']}"
    assert (
        await client.patch(path_a, json={"allocationPercentage": 60}, headers=session.headers)
    ).status == 200
    resp = await client.patch(path_a, json={"allocationPercentage": 61}, headers=session.headers)
    assert resp.status == 400 and "current total is 100%" in (await resp.json())["message"][0]
    assert (
        await client.patch(path_b, json={"allocationPercentage": 30}, headers=session.headers)
    ).status == 200
    resp = await client.patch(path_a, json={"allocationPercentage": 70}, headers=session.headers)
    assert (await resp.json())["allocationPercentage"] == 70


async def test_parallel_creates_never_exceed_100(client, settings):
    session = await sign_in(client)
    body = body_for("beneficiaries", allocationPercentage=20)
    responses = await asyncio.gather(
        *(client.post("/api/beneficiaries", json=body, headers=session.headers) for _ in range(10))
    )
    statuses = sorted(r.status for r in responses)
    assert statuses == [201] * 5 + [400] * 5
    [row] = query(settings, "SELECT sum(allocation_percentage) AS total, count(*) AS n FROM beneficiaries")
    assert row["total"] == 100 and row["n"] == 5


async def test_parallel_patches_never_exceed_100(client, settings):
    session = await sign_in(client)
    # 3 x 10%; raising each to 45% fits twice (65%, then 100%), never a third time.
    rows = [await create(client, session, "beneficiaries", allocationPercentage=10) for _ in range(3)]
    responses = await asyncio.gather(
        *(
            client.patch(
                f"/api/beneficiaries/{r['id']}", json={"allocationPercentage": 45}, headers=session.headers
            )
            for r in rows
        )
    )
    assert sorted(r.status for r in responses) == [200, 200, 400]
    assert query(settings, "SELECT sum(allocation_percentage) AS t FROM beneficiaries")[0]["t"] == 100


async def test_empty_patch_and_token_only_patch_are_400(client):
    session = await sign_in(client)
    created = await create(client, session, "beneficiaries")
    path = f"/api/beneficiaries/{created['id']}"
    for body in ({}, {"claimToken": "a" * 64}, {"unknown": 1}):
        resp = await client.patch(path, json=body, headers=session.headers)
        assert resp.status == 400
        assert "at least one field" in (await resp.json())["message"][0]


async def test_patch_validates_given_fields_and_ignores_client_token(client):
    session = await sign_in(client)
    created = await create(client, session, "beneficiaries")
    path = f"/api/beneficiaries/{created['id']}"
    resp = await client.patch(path, json={"email": "nope"}, headers=session.headers)
    assert resp.status == 400 and "email" in (await resp.json())["details"]
    resp = await client.patch(path, json={"name": "Bea", "claimToken": "b" * 64}, headers=session.headers)
    body = await resp.json()
    assert body["name"] == "Bea" and body["claimToken"] == created["claimToken"]
    assert body["updatedAt"] > created["updatedAt"]


async def test_unchanged_patch_records_nothing(client, settings):
    session = await sign_in(client)
    created = await create(client, session, "beneficiaries")
    resp = await client.patch(
        f"/api/beneficiaries/{created['id']}", json={"name": "Ada"}, headers=session.headers
    )
    assert (await resp.json())["updatedAt"] == created["updatedAt"]
    assert [r["kind"] for r in activity_rows(settings, session.user["id"])] == [
        "user.created",
        "beneficiary.created",
    ]


async def test_delete_is_204_then_404(client, settings):
    session = await sign_in(client)
    created = await create(client, session, "beneficiaries")
    path = f"/api/beneficiaries/{created['id']}"
    resp = await client.delete(path, headers=session.headers)
    assert resp.status == 204 and await resp.read() == b""
    assert (await client.get(path, headers=session.headers)).status == 404
    assert (await client.delete(path, headers=session.headers)).status == 404
    assert activity_rows(settings, session.user["id"])[-1]["kind"] == "beneficiary.deleted"


async def test_token_is_stored_as_digest_and_sealed_value_only(client, settings):
    session = await sign_in(client)
    created = await create(client, session, "beneficiaries")
    token = created["claimToken"]
    [row] = query(settings, "SELECT claim_token_hash, claim_token_sealed FROM beneficiaries")
    assert bytes(row["claim_token_hash"]) == hashlib.sha256(token.encode()).digest()
    assert token not in row["claim_token_sealed"]
    dump = str(query(settings, "SELECT * FROM beneficiaries")) + str(
        query(settings, "SELECT * FROM activity")
    )
    assert token not in dump


async def test_token_never_reaches_logs_or_activity(client, settings, caplog):
    caplog.set_level(logging.DEBUG)
    session = await sign_in(client)
    created = await create(client, session, "beneficiaries")
    path = f"/api/beneficiaries/{created['id']}"
    await client.get(path, headers=session.headers)
    rotated = await (await client.post(f"{path}/claim-token/rotate", headers=session.headers)).json()
    for token in (created["claimToken"], rotated["claimToken"]):
        assert token not in caplog.text
        assert token not in str(activity_rows(settings, session.user["id"]))


async def test_rotate_issues_a_new_token_and_the_old_one_stops_matching(client, settings):
    session = await sign_in(client)
    created = await create(client, session, "beneficiaries")
    pool = client.server.app[DB]
    assert (await capsules.open_by_token(pool, client.app[SETTINGS].key_ring, token=created["claimToken"]))[
        "beneficiary_id"
    ] == created["id"]
    resp = await client.post(
        f"/api/beneficiaries/{created['id']}/claim-token/rotate", headers=session.headers
    )
    assert resp.status == 200
    rotated = await resp.json()
    assert TOKEN_RE.match(rotated["claimToken"]) and rotated["claimToken"] != created["claimToken"]
    assert {k: v for k, v in rotated.items() if k not in ("claimToken", "updatedAt")} == {
        k: v for k, v in created.items() if k not in ("claimToken", "updatedAt")
    }
    assert (
        await capsules.open_by_token(pool, client.app[SETTINGS].key_ring, token=created["claimToken"]) is None
    )
    assert (await capsules.open_by_token(pool, client.app[SETTINGS].key_ring, token=rotated["claimToken"]))[
        "beneficiary_id"
    ] == created["id"]
    got = await (await client.get(f"/api/beneficiaries/{created['id']}", headers=session.headers)).json()
    assert got["claimToken"] == rotated["claimToken"]
    entry = activity_rows(settings, session.user["id"])[-1]
    assert entry["kind"] == "beneficiary.claim_token_rotated" and entry["entity_id"] == created["id"]


async def test_a_claim_token_opens_its_capsule_and_nothing_else_does(client):
    session = await sign_in(client)
    created = await create(client, session, "beneficiaries")
    pool = client.server.app[DB]
    found = await capsules.open_by_token(pool, client.app[SETTINGS].key_ring, token=created["claimToken"])
    assert found is not None
    assert found["owner_id"] == session.user["id"] and found["name"] == "Ada"
    assert not {"claim_token", "claim_token_hash", "claim_token_sealed"} & set(found)
    token = created["claimToken"]
    for other in (
        token.upper(),
        token[:-1],
        token + "0",
        token + "\n",
        "",
        "x" * 64,
        "0" * 64,
        "\udcff",
        "\ud800",
    ):
        assert await capsules.open_by_token(pool, client.app[SETTINGS].key_ring, token=other) is None
