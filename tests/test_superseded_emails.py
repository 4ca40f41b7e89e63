"""An email a newer one of its kind to the same person has made untrue is not sent
(models.delivery.outbox.SUPERSEDED_BY_NEWER; docs/lifecycle.md, "Superseded emails"): the last
thing a guardian receives describes the present, whichever order the worker takes the rows in."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import redis as redis_sync
from stellar_sdk import Keypair

from core.redis import connect
from models.delivery import outbox
from tests.helpers import sign_in
from tests.plan_helpers import query


async def _invited_twice(client: Any, settings: Any) -> list[dict[str, Any]]:
    """A guardian invited, given a wallet, and the wallet removed again: three invitations
    queued with their moment's content, none sent yet. Their rows, oldest first."""
    owner = await sign_in(client)
    resp = await client.patch(
        "/api/users/me", json={"email": "owner@example.org", "name": "Olive Owner"}, headers=owner.headers
    )
    assert resp.status == 200
    resp = await client.post(
        "/api/guardians", json={"name": "Sister", "email": "sister@example.org"}, headers=owner.headers
    )
    assert resp.status == 201
    sister = await resp.json()
    for wallet in (Keypair.random().public_key, None):
        resp = await client.patch(
            f"/api/guardians/{sister['id']}", json={"walletAddress": wallet}, headers=owner.headers
        )
        assert resp.status == 200
    # The jobs the requests enqueued are dropped: the test enqueues the rows in the order it picks.
    conn = redis_sync.Redis.from_url(settings.redis_url)
    conn.delete(settings.arq_queue_name, *conn.scan_iter("arq:job:deliver_email:*"))
    conn.close()
    rows = query(
        settings,
        "SELECT id::text AS id, status FROM outbox WHERE kind = 'guardian_invitation' ORDER BY created_at",
    )
    assert len(rows) == 3 and {r["status"] for r in rows} == {"pending"}
    return rows


@pytest.mark.parametrize("newest_first", [True, False])
async def test_an_invitation_superseded_before_it_is_sent_is_not_sent(
    newest_first, client, run_worker, email_provider, settings, caplog
):
    rows = await _invited_twice(client, settings)
    order = list(reversed(rows)) if newest_first else rows
    arq = await connect(settings.redis_url, settings.arq_queue_name)
    try:
        with caplog.at_level(logging.INFO):
            for row in order:  # one job per row, each run to its end before the next is queued
                await outbox.enqueue(arq, row_ids=[row["id"]])
                await run_worker(settings=email_provider.settings)
    finally:
        await arq.aclose()
    sent = email_provider.to("sister@example.org")
    assert len(sent) == 1
    text = sent[0].body["text"]
    assert "creating a passkey" in text and "Stellar wallet G" not in text  # the present: no wallet
    after = {
        r["id"]: r
        for r in query(
            settings,
            "SELECT id::text AS id, status, last_error FROM outbox WHERE kind = 'guardian_invitation'",
        )
    }
    assert after[rows[-1]["id"]]["status"] == "sent"
    for older in rows[:-1]:  # skipped with its reason, not deleted
        assert after[older["id"]]["status"] == "skipped"
        assert after[older["id"]]["last_error"] == outbox.SUPERSEDED
    skipped = [r for r in caplog.records if r.getMessage() == "email skipped: a newer one replaces it"]
    assert sorted(r.outboxId for r in skipped) == sorted(r["id"] for r in rows[:-1])
