"""GET/PATCH /api/users/me and the timeline entries profile changes leave."""

from __future__ import annotations

import asyncio

import psycopg2
import pytest
from stellar_sdk import Keypair

from core import db
from models.account import users
from tests.helpers import assert_error, sign_in


def _activity(settings, user_id):
    with psycopg2.connect(settings.database_url) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT kind, metadata, summary FROM activity WHERE user_id = %s ORDER BY created_at", (user_id,)
        )
        rows = cur.fetchall()
    conn.close()
    return rows


async def test_get_me(client):
    session = await sign_in(client)
    resp = await client.get("/api/users/me", headers=session.headers)
    assert resp.status == 200
    body = await resp.json()
    assert body["id"] == session.user["id"]
    assert body["name"] is None and body["email"] is None
    assert body["createdAt"].endswith("Z")


async def test_patch_me_updates_and_records_fields_not_values(client, settings):
    session = await sign_in(client)
    resp = await client.patch(
        "/api/users/me", headers=session.headers, json={"name": "  Ada Lovelace ", "email": "ada@example.org"}
    )
    assert resp.status == 200, await resp.text()
    body = await resp.json()
    assert body["name"] == "Ada Lovelace"
    assert body["email"] == "ada@example.org"
    kinds = _activity(settings, session.user["id"])
    assert [k for k, _, _ in kinds] == ["user.created", "user.updated"]
    assert kinds[1][1] == {"fields": ["name", "email"]}
    assert "ada@example.org" not in str(kinds) and "Lovelace" not in str(kinds)


async def test_patch_me_null_clears(client):
    session = await sign_in(client)
    await client.patch("/api/users/me", headers=session.headers, json={"name": "A"})
    resp = await client.patch("/api/users/me", headers=session.headers, json={"name": None})
    assert (await resp.json())["name"] is None


@pytest.mark.parametrize(
    "body,field",
    [
        ({}, "body"),
        ({"unknown": 1}, "body"),
        ({"email": "not-an-email"}, "email"),
        ({"name": ""}, "name"),
        ({"name": "   "}, "name"),
        ({"name": "x" * 121}, "name"),
        ({"name": 5}, "name"),
    ],
)
async def test_patch_me_validation(client, settings, body, field):
    session = await sign_in(client)
    resp = await client.patch("/api/users/me", headers=session.headers, json=body)
    assert resp.status == 400
    payload = await resp.json()
    assert_error(payload, 400)
    assert any(m.startswith(f"{field}:") for m in payload["message"]), payload
    assert [k for k, _, _ in _activity(settings, session.user["id"])] == ["user.created"]


async def test_concurrent_first_sign_ins_create_one_account(client, settings):
    pool = await db.create_pool(settings.database_url, 10)
    try:
        address = (await sign_in(client)).keypair.public_key  # an existing wallet...
        fresh = Keypair.random().public_key  # ...and a new one, claimed by eight racers at once
        ring = settings.encryption_keys
        results = await asyncio.gather(*(users.sign_in(pool, ring, wallet_address=fresh) for _ in range(8)))
        assert len({str(r["id"]) for r in results}) == 1
        assert str((await users.sign_in(pool, ring, wallet_address=address))["id"]) != str(results[0]["id"])
    finally:
        pool.close()
        await pool.wait_closed()
    with psycopg2.connect(settings.database_url) as conn, conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM users WHERE wallet_address = %s", (fresh,))
        assert cur.fetchone()[0] == 1
    conn.close()
