"""The archive sweepers' reads (workers/archive.py): pending items whose job may be lost, queued
object deletions, which ids still have a row, and data keys wrapped under an older key.

They change with the worker's policies (retries, sweeps, key rotation); every write they lead
to is models.archive.items' (the one writer of `archive_items` and `archive_deletions`).
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import timedelta
from typing import TypedDict

from core.db import Pool, fetch_all


class WrappedKey(TypedDict):
    id: str
    key_id: str
    wrapped_key: bytes


async def stale_pending(pool: Pool, *, older_than: timedelta, limit: int = 500) -> list[str]:
    """Pending items nothing has touched for a while: their job may have been lost."""
    rows = await fetch_all(
        pool,
        "SELECT id::text AS id FROM archive_items WHERE status = 'pending'"
        " AND updated_at < clock_timestamp() - %s ORDER BY updated_at LIMIT %s",
        (older_than, limit),
    )
    return [row["id"] for row in rows]


async def pending_deletions(pool: Pool, *, limit: int = 500) -> list[str]:
    rows = await fetch_all(
        pool, "SELECT storage_key FROM archive_deletions ORDER BY created_at LIMIT %s", (limit,)
    )
    return [row["storage_key"] for row in rows]


async def known_ids(pool: Pool, *, item_ids: Collection[str]) -> set[str]:
    """Which of these item ids still have a row."""
    rows = await fetch_all(
        pool, "SELECT id::text AS id FROM archive_items WHERE id = ANY(%s::uuid[])", (list(item_ids),)
    )
    return {row["id"] for row in rows}


async def wrapped_under_other_keys(
    pool: Pool, *, key_id: str, after: str, limit: int = 500
) -> list[WrappedKey]:
    """Items whose data key is wrapped under another key than `key_id`, by id after `after`."""
    rows = await fetch_all(
        pool,
        "SELECT id::text AS id, key_id, wrapped_key FROM archive_items"
        " WHERE key_id <> %s AND id > %s::uuid ORDER BY id LIMIT %s",
        (key_id, after, limit),
    )
    return [
        {"id": row["id"], "key_id": row["key_id"], "wrapped_key": bytes(row["wrapped_key"])} for row in rows
    ]
