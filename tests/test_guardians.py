"""/api/guardians: fields, wallet validation, no duplicate wallet per owner, never oneself."""

from __future__ import annotations

import pytest
from stellar_sdk import Keypair

from tests.helpers import assert_error, sign_in
from tests.plan_helpers import activity_rows, body_for, create

FIELDS = {
    "id",
    "userId",
    "name",
    "email",
    "walletAddress",
    "relationship",
    "createdAt",
    "updatedAt",
    "invitedAt",
    "acceptedAt",
    "declinedAt",
    "reconfirmedAt",
    "unresponsiveSince",
    "proof",
    "locale",  # their language and zone, null until set: docs/translations.md
    "timeZone",
    "grammaticalGender",  # how to refer to them, null until said: docs/pages.md
}


def _bad_checksum(address: str) -> str:
    """Same alphabet and length (passes the regex), wrong StrKey checksum."""
    last = "A" if address[-1] != "A" else "B"
    return address[:-1] + last


async def test_create_and_get(client):
    session = await sign_in(client)
    wallet = Keypair.random().public_key
    resp = await client.post(
        "/api/guardians",
        headers=session.headers,
        json={
            "name": " Grace ",
            "email": "grace@example.org",
            "walletAddress": wallet,
            "id": "x",
            "extra": 1,
        },
    )
    assert resp.status == 201, await resp.text()
    body = await resp.json()
    assert set(body) == FIELDS
    assert body["name"] == "Grace" and body["walletAddress"] == wallet and body["relationship"] is None
    assert body["userId"] == session.user["id"]
    got = await client.get(f"/api/guardians/{body['id']}", headers=session.headers)
    assert await got.json() == body


@pytest.mark.parametrize(
    "overrides,field",
    [
        ({"name": ""}, "name"),
        ({"email": "grace"}, "email"),
        ({"walletAddress": "GABC"}, "walletAddress"),
        ({"walletAddress": Keypair.random().public_key.lower()}, "walletAddress"),
        ({"walletAddress": _bad_checksum(Keypair.random().public_key)}, "walletAddress"),
        ({"walletAddress": Keypair.random().secret}, "walletAddress"),
        ({"relationship": "x" * 61}, "relationship"),
    ],
)
async def test_create_validation(client, overrides, field):
    session = await sign_in(client)
    resp = await client.post(
        "/api/guardians", json=body_for("guardians", **overrides), headers=session.headers
    )
    assert resp.status == 400
    body = await resp.json()
    assert_error(body, 400)
    assert field in body["details"]


async def test_missing_required_fields(client):
    session = await sign_in(client)
    resp = await client.post("/api/guardians", json={"relationship": "friend"}, headers=session.headers)
    assert resp.status == 400
    # A wallet is optional: a guardian without one answers with a passkey (test_guardian_passkeys.py).
    assert set((await resp.json())["details"]) == {"name", "email"}


async def test_same_wallet_twice_is_409_but_fine_for_another_owner(client):
    first, second = await sign_in(client), await sign_in(client)
    wallet = Keypair.random().public_key
    await create(client, first, "guardians", walletAddress=wallet)
    resp = await client.post(
        "/api/guardians", json=body_for("guardians", walletAddress=wallet), headers=first.headers
    )
    assert resp.status == 409
    assert_error(await resp.json(), 409)
    await create(client, second, "guardians", walletAddress=wallet)


async def test_owner_cannot_be_their_own_guardian(client):
    session = await sign_in(client)
    resp = await client.post(
        "/api/guardians",
        json=body_for("guardians", walletAddress=session.user["walletAddress"]),
        headers=session.headers,
    )
    assert resp.status == 400
    assert "walletAddress" in (await resp.json())["details"]
    guardian = await create(client, session, "guardians")
    resp = await client.patch(
        f"/api/guardians/{guardian['id']}",
        json={"walletAddress": session.user["walletAddress"]},
        headers=session.headers,
    )
    assert resp.status == 400


async def test_patch(client, settings):
    session = await sign_in(client)
    one = await create(client, session, "guardians")
    two = await create(client, session, "guardians")
    path = f"/api/guardians/{one['id']}"
    resp = await client.patch(path, json={"relationship": None, "name": "Grace H."}, headers=session.headers)
    body = await resp.json()
    assert resp.status == 200 and body["relationship"] is None and body["name"] == "Grace H."
    resp = await client.patch(path, json={"walletAddress": two["walletAddress"]}, headers=session.headers)
    assert resp.status == 409
    resp = await client.patch(path, json={"walletAddress": "bad"}, headers=session.headers)
    assert resp.status == 400
    resp = await client.patch(path, json={"userId": "x"}, headers=session.headers)
    assert resp.status == 400
    entries = activity_rows(settings, session.user["id"])
    assert entries[-1]["kind"] == "guardian.updated"
    assert entries[-1]["metadata"] == {"fields": ["name", "relationship"]}


async def test_list_and_delete(client, settings):
    session = await sign_in(client)
    one = await create(client, session, "guardians")
    two = await create(client, session, "guardians")
    listed = await (await client.get("/api/guardians", headers=session.headers)).json()
    assert [g["id"] for g in listed] == [two["id"], one["id"]]
    resp = await client.delete(f"/api/guardians/{one['id']}", headers=session.headers)
    assert resp.status == 204
    listed = await (await client.get("/api/guardians", headers=session.headers)).json()
    assert [g["id"] for g in listed] == [two["id"]]
    # The wallet can be added again once removed.
    await create(client, session, "guardians", walletAddress=one["walletAddress"])
    kinds = [r["kind"] for r in activity_rows(settings, session.user["id"])]
    assert kinds.count("guardian.created") == 3 and kinds.count("guardian.deleted") == 1
