"""Rotating ENCRYPTION_KEYS: claim tokens sealed under the old key are re-sealed under the new
primary by the worker's cron, the links keep working, and the old key can then leave the ring."""

from __future__ import annotations

import psycopg2
from arq import cron

from core.files.crypto import KeyRing
from tests.helpers import sign_in
from workers import keys as key_jobs


def _sealed_key_ids(settings) -> list[str]:
    with psycopg2.connect(settings.database_url) as conn, conn.cursor() as cur:
        cur.execute("SELECT claim_token_sealed FROM beneficiaries ORDER BY created_at")
        ids = [row[0].split(".", 1)[0] for row in cur.fetchall()]
    conn.close()
    return ids


async def test_claim_tokens_are_resealed_under_the_new_primary(make_client, run_worker, settings):
    k1, k2 = KeyRing.generate_entry("k1"), KeyRing.generate_entry("k2")
    old_ring, new_ring, k2_only = KeyRing.parse(k1), KeyRing.parse(f"{k2},{k1}"), KeyRing.parse(k2)
    before = await make_client(encryption_keys=old_ring)
    session = await sign_in(before)
    body = {"name": "Ada", "relationship": "daughter", "email": "ada@example.org", "allocationPercentage": 40}
    created = [await (await before.post("/api/beneficiaries", json=body, headers=session.headers)).json()]
    assert _sealed_key_ids(settings) == ["k1"]

    after = await make_client(encryption_keys=new_ring)
    created.append(await (await after.post("/api/beneficiaries", json=body, headers=session.headers)).json())
    assert _sealed_key_ids(settings) == ["k1", "k2"]

    await run_worker(
        settings={"encryption_keys": new_ring},
        cron_jobs=[
            cron(key_jobs.reseal_claim_tokens, run_at_startup=True),
            # Names and addresses are sealed under the ring too (models/sealed_text.py).
            cron(key_jobs.reseal_private_texts, run_at_startup=True),
        ],
    )
    assert _sealed_key_ids(settings) == ["k2", "k2"]

    # With k1 gone from the ring, the owner still sees the same tokens and names as before.
    retired = await make_client(encryption_keys=k2_only)
    listed = await (await retired.get("/api/beneficiaries", headers=session.headers)).json()
    assert sorted(b["claimToken"] for b in listed) == sorted(b["claimToken"] for b in created)
    assert {(b["name"], b["email"]) for b in listed} == {("Ada", "ada@example.org")}
