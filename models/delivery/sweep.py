"""The sweep's side of the outbox: rows left behind (an enqueue lost after COMMIT, a Redis
outage, a worker killed while it held them) and retries whose backoff has elapsed, found and
enqueued again in batches. A plain read: the claim (models.delivery.outbox.claim) decides who
sends a row."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TypedDict

from arq.connections import ArqRedis

from core import queue
from core.db import Pool, autocommit
from models.common import as_records
from models.delivery.outbox import DELIVER_JOB, batches
from models.jobs import leases

# A pending row older than this without a job has probably lost it (enqueue failed, worker died).
STALE_AFTER = timedelta(seconds=30)


class Due(TypedDict):
    id: str
    holder: str | None  # the job whose claim on the row lapsed (it died), if one did


async def due_for_enqueue(pool: Pool, *, now: datetime, limit: int = 1000) -> list[Due]:
    """Pending rows whose next attempt is due and that have waited long enough to be left behind
    (a row whose claim lapsed was left at once); rows a job holds right now are not due. A plain
    read: the claim decides who sends a row, and a lock here made a job's claim skip it."""
    async with autocommit(pool) as cur:
        await cur.execute(
            "SELECT id::text AS id, claimed_by AS holder FROM outbox WHERE status = 'pending'"
            " AND next_attempt_at <= %s AND (attempts > 0 OR created_at <= %s OR claimed_by IS NOT NULL)"
            " AND (claimed_until IS NULL OR claimed_until <= %s)"
            " ORDER BY next_attempt_at, id LIMIT %s",
            (now, now - STALE_AFTER, now, limit),
        )
        return as_records(Due, rows=await cur.fetchall())


async def enqueue_due(redis: ArqRedis, *, due: list[Due]) -> int:
    """The sweep's enqueue: due rows in batches, as after a commit. Rows a dead job held go under
    a job id of their own, named after that job: its id stays refused (queued, and marked in
    progress by arq for the longest job timeout) long after its lease has lapsed."""
    by_holder: dict[str | None, list[str]] = {}
    for row in due:
        by_holder.setdefault(row["holder"], []).append(row["id"])
    jobs = 0
    for holder, row_ids in by_holder.items():
        after = "" if holder is None else leases.takeover_suffix(holder=holder)
        for batch in batches(row_ids=row_ids):
            jobs += await queue.after_commit(redis, DELIVER_JOB, batch, row_id=batch[0] + after)
    return jobs
