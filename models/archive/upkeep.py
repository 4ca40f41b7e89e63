"""Archive items as the worker sees them: the verify job's bookkeeping, the sweepers' queries,
and re-wrapping data keys after a key rotation (workers/archive.py; docs/archive.md).

Separate from models/archive/items.py (the owner's rows) because it changes with the worker's
policies (retries, sweeps, rotation), not with what an owner can do. Every state change is one
UPDATE guarded by the state it expects, so a rerun or a late job never moves an item backwards.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import timedelta
from typing import TypedDict

import psycopg2

from core.db import Pool, fetch_all, fetch_one
from models.common import as_record


class ClaimedItem(TypedDict):
    """A pending item the verify job counted an attempt at: a core.files.sealed_files.SealedFile."""

    id: str
    size_bytes: int
    stored_bytes: int
    storage_key: str
    key_id: str
    wrapped_key: bytes
    attempts: int


class WrappedKey(TypedDict):
    id: str
    key_id: str
    wrapped_key: bytes


# --------------------------------------------------------------------------------------------
# The verify job's bookkeeping (workers/archive.py)
# --------------------------------------------------------------------------------------------


async def claim_attempt(pool: Pool, item_id: str) -> ClaimedItem | None:
    """Count one more attempt at a pending item and return it; None if it is not pending."""
    row = await fetch_one(
        pool,
        "UPDATE archive_items SET attempts = attempts + 1, updated_at = clock_timestamp()"
        " WHERE id = %s AND status = 'pending'"
        " RETURNING id::text AS id, size_bytes, stored_bytes, storage_key, key_id, wrapped_key, attempts",
        (item_id,),
    )
    if row is None:
        return None
    row["wrapped_key"] = bytes(row["wrapped_key"])
    return as_record(ClaimedItem, row)


async def mark_available(pool: Pool, item_id: str) -> bool:
    """`pending` -> `available`; False if the item is no longer pending (deleted, failed)."""
    row = await fetch_one(
        pool,
        "UPDATE archive_items SET status = 'available', failure_reason = NULL, updated_at = clock_timestamp()"
        " WHERE id = %s AND status = 'pending' RETURNING id",
        (item_id,),
    )
    return row is not None


async def mark_failed(pool: Pool, *, item_id: str, reason: str) -> bool:
    """Give up on a pending item; its object stays until the owner deletes the item."""
    row = await fetch_one(
        pool,
        "UPDATE archive_items SET status = 'failed', failure_reason = %s, updated_at = clock_timestamp()"
        " WHERE id = %s AND status = 'pending' RETURNING id",
        (reason, item_id),
    )
    return row is not None


# --------------------------------------------------------------------------------------------
# The sweeper's queries
# --------------------------------------------------------------------------------------------


async def stale_pending(pool: Pool, *, older_than: timedelta, limit: int = 500) -> list[str]:
    """Pending items nothing has touched for a while: their job may have been lost."""
    rows = await fetch_all(
        pool,
        "SELECT id::text AS id FROM archive_items WHERE status = 'pending'"
        " AND updated_at < clock_timestamp() - %s ORDER BY updated_at LIMIT %s",
        (older_than, limit),
    )
    return [row["id"] for row in rows]


async def pending_deletions(pool: Pool, limit: int = 500) -> list[str]:
    rows = await fetch_all(
        pool, "SELECT storage_key FROM archive_deletions ORDER BY created_at LIMIT %s", (limit,)
    )
    return [row["storage_key"] for row in rows]


async def known_ids(pool: Pool, item_ids: Collection[str]) -> set[str]:
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


async def rewrap(pool: Pool, *, item_id: str, old_key_id: str, key_id: str, wrapped_key: bytes) -> bool:
    """Swap in a data key re-wrapped under `key_id`, unless someone else changed it meanwhile."""
    row = await fetch_one(
        pool,
        "UPDATE archive_items SET key_id = %s, wrapped_key = %s WHERE id = %s AND key_id = %s RETURNING id",
        (key_id, psycopg2.Binary(wrapped_key), item_id, old_key_id),
    )
    return row is not None
