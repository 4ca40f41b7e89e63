"""Helpers for the plan-contents tests: valid bodies, creating rows, reading the timeline."""

from __future__ import annotations

from typing import Any

import psycopg2
import psycopg2.extras
from aiohttp.test_utils import TestClient
from stellar_sdk import Keypair

from core.settings import Settings
from tests.helpers import Session

COLLECTIONS = ("beneficiaries", "guardians", "assets", "messages")


def body_for(collection: str, **overrides: Any) -> dict[str, Any]:
    """A valid create body for a collection; a fresh guardian wallet each call."""
    bodies: dict[str, dict[str, Any]] = {
        "beneficiaries": {
            "name": "Ada",
            "relationship": "daughter",
            "email": "ada@example.org",
            "allocationPercentage": 10,
        },
        "guardians": {
            "name": "Grace",
            "email": "grace@example.org",
            "walletAddress": Keypair.random().public_key,
            "relationship": "friend",
        },
        "assets": {"label": "Savings", "amount": "1250.50", "assetCode": "XLM"},
        "messages": {
            "title": "For you",
            "content": "Dear Ada, ...",
            "releaseRule": {"kind": "on_release", "value": None},
            "audience": {"all": True},
        },
    }
    return {**bodies[collection], **overrides}


async def create(client: TestClient, session: Session, collection: str, **overrides: Any) -> dict[str, Any]:
    resp = await client.post(
        f"/api/{collection}", json=body_for(collection, **overrides), headers=session.headers
    )
    assert resp.status == 201, await resp.text()
    body: dict[str, Any] = await resp.json()
    return body


def query(settings: Settings, sql: str, params: Any = None) -> list[dict[str, Any]]:
    """Read the database directly (outside the app) to check what was really committed."""
    conn = psycopg2.connect(settings.database_url, cursor_factory=psycopg2.extras.RealDictCursor)
    try:
        with conn, conn.cursor() as cur:
            cur.execute(sql, params)
            return [dict(row) for row in cur.fetchall()] if cur.description else []
    finally:
        conn.close()


def blocked_by(settings: Settings, pid: int) -> list[int]:
    """Backends of the test database waiting on a lock that backend `pid` holds: the state a
    test polls (tests.helpers.until) to know a request really is blocked, not merely late."""
    rows = query(
        settings,
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
        " AND %s = ANY(pg_blocking_pids(pid))",
        (pid,),
    )
    return [row["pid"] for row in rows]


def activity_rows(settings: Settings, user_id: str) -> list[dict[str, Any]]:
    return query(
        settings,
        "SELECT kind, entity_type, entity_id, summary, metadata FROM activity WHERE user_id = %s"
        " ORDER BY created_at, id",
        (user_id,),
    )
