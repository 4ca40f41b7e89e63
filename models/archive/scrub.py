"""The archive scrub's bookkeeping: which stored file to read next, how far a pass has got, and
what a verdict changes (the one owner of `archive_scrub`; the item's own status changes through
models.archive.items).

Each file is read whole again at most once per ARCHIVE_SCRUB_INTERVAL_SECONDS (the job and its
pacing: workers/archive.py `scrub_archive`). A pass over a large file may span several runs:
`position` keeps where it stopped. Damaged files are read again on the same schedule, so one an
operator restored from a backup or an earlier object version becomes `available` again; while
one stays damaged the owner is emailed at most once a week, and never once the plan is released.
Decisions: docs/archive.md, "The scrub".
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TypedDict

from core.db import Cursor, Pool, fetch_one, transaction
from core.files.sealed_files import SealedFile
from models import plans
from models.archive import items
from models.common import as_record
from models.delivery import outbox

DAMAGE_EMAIL = "archive_item_damaged"
METRICS = "archive_scrub"  # core.jobstats counters the workers add to: bytes, failures
EMAIL_AT_MOST_EVERY = timedelta(days=7)


class ScrubTarget(SealedFile):
    """A stored file due for a read, where its current pass stands, and whose it is."""

    user_id: str
    status: str  # available | damaged
    type: str
    stored_at: datetime
    position: int
    notified_at: datetime | None


class Verdict(TypedDict):
    newly_damaged: bool
    emails: list[str]  # outbox rows to enqueue after the commit


async def next_due(
    pool: Pool, *, now: datetime, interval: timedelta, skip: Sequence[str] = ()
) -> ScrubTarget | None:
    """The stored file whose last whole read (or its upload) is oldest, if older than `interval`;
    a pass already under way first."""
    row = await fetch_one(
        pool,
        "SELECT i.id::text AS id, i.user_id::text AS user_id, i.status, i.type, i.storage_key, i.key_id,"
        " i.wrapped_key, i.size_bytes, i.stored_bytes, i.stored_at, COALESCE(s.position, 0) AS position,"
        " s.notified_at FROM archive_items i LEFT JOIN archive_scrub s ON s.item_id = i.id"
        " WHERE i.status IN ('available', 'damaged') AND NOT (i.id = ANY(%s::uuid[]))"
        " AND (COALESCE(s.position, 0) > 0 OR COALESCE(s.checked_at, i.stored_at) <= %s)"
        " ORDER BY COALESCE(s.position, 0) = 0, COALESCE(s.checked_at, i.stored_at), i.id LIMIT 1",
        (list(skip), now - interval),
    )
    if row is None:
        return None
    row["wrapped_key"] = bytes(row["wrapped_key"])
    return as_record(ScrubTarget, row=row)


async def save_position(pool: Pool, *, item_id: str, position: int) -> None:
    """A pass stopped part-way (its run's time is up): the next run goes on from here."""
    async with transaction(pool) as cur:
        await cur.execute(
            "INSERT INTO archive_scrub (item_id, position) SELECT id, %s FROM archive_items WHERE id = %s"
            " ON CONFLICT (item_id) DO UPDATE SET position = EXCLUDED.position",
            (position, item_id),
        )


async def _checked(cur: Cursor, item_id: str, now: datetime, notified: bool) -> None:
    await cur.execute(
        "INSERT INTO archive_scrub (item_id, checked_at, position, notified_at)"
        " SELECT id, %s, 0, CASE WHEN %s THEN %s::timestamptz END FROM archive_items WHERE id = %s"
        " ON CONFLICT (item_id) DO UPDATE SET checked_at = EXCLUDED.checked_at, position = 0,"
        " notified_at = COALESCE(EXCLUDED.notified_at, archive_scrub.notified_at)",
        (now, notified, now, item_id),
    )


async def record_whole(pool: Pool, *, target: ScrubTarget, now: datetime) -> bool:
    """The file read whole: the pass is done. True if it had been damaged and is whole again."""
    async with transaction(pool) as cur:
        restored = target["status"] == "damaged" and await items.mark_whole_again(cur, item_id=target["id"])
        await _checked(cur, target["id"], now, notified=False)
    return restored


async def record_damage(pool: Pool, *, target: ScrubTarget, now: datetime) -> Verdict:
    """The file does not read whole: `damaged` (if it was not yet), and the owner's email while
    the plan is not released, at most once every EMAIL_AT_MOST_EVERY per item."""
    emails: list[str] = []
    async with transaction(pool) as cur:
        newly = await items.mark_damaged(cur, item_id=target["id"], now=now) is not None
        plan = await plans.get(cur, user_id=target["user_id"])
        last = target["notified_at"]
        due = last is None or last <= now - EMAIL_AT_MOST_EVERY
        damaged = newly or target["status"] == "damaged"
        if due and damaged and (plan is None or plan["status"] != plans.RELEASED):
            emails.append(
                await outbox.add(
                    cur,
                    kind=DAMAGE_EMAIL,
                    plan_id=plan["id"] if plan else None,
                    recipient_type="owner",
                    recipient_id=target["user_id"],
                    now=now,
                    context={
                        "itemType": target["type"],
                        "uploadedAt": target["stored_at"].isoformat(),
                        "sizeBytes": target["size_bytes"],
                    },
                )
            )
        await _checked(cur, target["id"], now, notified=bool(emails))
    return {"newly_damaged": newly, "emails": emails}


async def stalest_check(pool: Pool) -> datetime | None:
    """When the file read longest ago (or never, since its upload) was last read whole: with the
    scrub keeping up, about one interval ago; further back, the time a whole pass takes."""
    row = await fetch_one(
        pool,
        "SELECT min(COALESCE(s.checked_at, i.stored_at)) AS oldest FROM archive_items i"
        " LEFT JOIN archive_scrub s ON s.item_id = i.id WHERE i.status IN ('available', 'damaged')",
    )
    return None if row is None else row["oldest"]
