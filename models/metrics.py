"""What the operator's dashboards count: work waiting in PostgreSQL, by kind and status."""

from __future__ import annotations

from typing import TypedDict

from core.db import Pool, fetch_all


class Backlog(TypedDict):
    archive_items: dict[str, int]  # status -> count
    outbox_pending: int
    transactions_pending: int


async def backlog(pool: Pool) -> Backlog:
    """One round trip; the pending counts use the tables' partial indexes on status."""
    rows = await fetch_all(
        pool,
        "SELECT 'archive' AS kind, status, count(*)::int AS n FROM archive_items GROUP BY status"
        " UNION ALL SELECT 'outbox', 'pending', count(*)::int FROM outbox WHERE status = 'pending'"
        " UNION ALL SELECT 'transactions', 'pending', count(*)::int FROM transactions"
        " WHERE status = 'pending'",
    )
    result: Backlog = {"archive_items": {}, "outbox_pending": 0, "transactions_pending": 0}
    for row in rows:
        if row["kind"] == "archive":
            result["archive_items"][row["status"]] = row["n"]
        elif row["kind"] == "outbox":
            result["outbox_pending"] = row["n"]
        else:
            result["transactions_pending"] = row["n"]
    return result
