"""The email outbox: rows written in the transaction of the event that causes them.

A row holds references (kind, plan, recipient) and non-secret facts, never a rendered body,
an address or a claim token: those are read and rendered at send time (models.delivery.emails). The
delivery jobs are enqueued after COMMIT, one per batch of up to BATCH rows, with a job id made
of the batch's first row id and its attempt count, so a double enqueue runs once; the sweep
re-enqueues, in batches too, rows left behind by a crash or a Redis outage, and retries whose
backoff has elapsed.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any, Literal, TypedDict

from arq.connections import ArqRedis
from psycopg2.extras import Json

from core import queue
from core.db import Cursor, Pool, autocommit

DELIVER_JOB = "deliver_email"
RecipientType = Literal["owner", "guardian", "beneficiary"]
# A pending row older than this without a job has probably lost it (enqueue failed, worker died).
STALE_AFTER = timedelta(seconds=30)
# Rows per delivery job. A worker has 32 requests at the provider at once (workers/email.py),
# each bounded at 20 s (core.mailer.TIMEOUT): one batch alone is two waves, within its 60 s job
# timeout. 32 rows per job measured 0.22 of the bare client, 64 rows 0.43-0.56 (bench/README).
BATCH = 64


class OutboxRow(TypedDict):
    id: Any
    kind: str
    plan_id: Any
    recipient_type: str
    recipient_id: Any
    context: dict[str, Any]
    status: str
    attempts: int
    next_attempt_at: datetime
    last_error: str | None
    created_at: datetime
    finished_at: datetime | None


class Notice(TypedDict):
    """What the owner sees of an email: that it went out, to whom (by role) and when; no body."""

    id: Any
    kind: str
    recipient_type: str
    status: str
    created_at: datetime
    finished_at: datetime | None


async def add(
    cur: Cursor,
    *,
    kind: str,
    plan_id: Any,
    recipient_type: RecipientType,
    recipient_id: Any,
    now: datetime,
    context: dict[str, Any] | None = None,
) -> str:
    await cur.execute(
        "INSERT INTO outbox (kind, plan_id, recipient_type, recipient_id, context, next_attempt_at, "
        "created_at)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING id::text AS id",
        (kind, plan_id, recipient_type, recipient_id, Json(context or {}), now, now),
    )
    row = await cur.fetchone()
    return str(row["id"])


async def add_for_guardians(
    cur: Cursor,
    *,
    kind: str,
    plan_id: Any,
    owner_id: Any,
    now: datetime,
    context: dict[str, Any] | None = None,
    exclude: Iterable[Any] = (),
) -> list[str]:
    """One row per guardian of the owner (except `exclude`), in one statement."""
    await cur.execute(
        "INSERT INTO outbox (kind, plan_id, recipient_type, recipient_id, context, next_attempt_at, "
        "created_at)"
        " SELECT %s, %s, 'guardian', g.id, %s, %s, %s FROM guardians g"
        " WHERE g.user_id = %s AND NOT (g.id = ANY(%s::uuid[])) RETURNING id::text AS id",
        (kind, plan_id, Json(context or {}), now, now, owner_id, [str(e) for e in exclude]),
    )
    return [str(row["id"]) for row in await cur.fetchall()]


async def add_for_owner_and_guardians(
    cur: Cursor,
    *,
    owner_kind: str,
    guardian_kind: str,
    plan_id: Any,
    owner_id: Any,
    now: datetime,
    context: dict[str, Any] | None = None,
    exclude: Iterable[Any] = (),
) -> list[str]:
    """The owner's email and one per guardian (except `exclude`), for a step both must hear of."""
    row_ids = [
        await add(
            cur,
            kind=owner_kind,
            plan_id=plan_id,
            recipient_type="owner",
            recipient_id=owner_id,
            now=now,
            context=context,
        )
    ]
    return row_ids + await add_for_guardians(
        cur, kind=guardian_kind, plan_id=plan_id, owner_id=owner_id, now=now, context=context, exclude=exclude
    )


async def add_for_beneficiaries(
    cur: Cursor, *, kind: str, plan_id: Any, owner_id: Any, now: datetime
) -> list[str]:
    await cur.execute(
        "INSERT INTO outbox (kind, plan_id, recipient_type, recipient_id, next_attempt_at, created_at)"
        " SELECT %s, %s, 'beneficiary', b.id, %s, %s FROM beneficiaries b WHERE b.user_id = %s"
        " RETURNING id::text AS id",
        (kind, plan_id, now, now, owner_id),
    )
    return [str(row["id"]) for row in await cur.fetchall()]


def batches(row_ids: list[str]) -> list[list[str]]:
    return [row_ids[i : i + BATCH] for i in range(0, len(row_ids), BATCH)]


async def enqueue(redis: ArqRedis, row_ids: Iterable[Any]) -> None:
    """Enqueue first attempts after COMMIT, one job per batch of rows (core.queue.after_commit:
    a Redis failure leaves the rows to the sweep)."""
    for batch in batches([str(row_id) for row_id in row_ids]):
        await queue.after_commit(redis, DELIVER_JOB, batch, row_id=batch[0])


async def due_for_enqueue(pool: Pool, now: datetime, limit: int = 1000) -> list[str]:
    """Pending rows whose next attempt is due and that have waited long enough to be left behind;
    rows a job holds right now (locked, being sent) are not due."""
    async with autocommit(pool) as cur:
        await cur.execute(
            "SELECT id::text AS id FROM outbox WHERE status = 'pending'"
            " AND next_attempt_at <= %s AND (attempts > 0 OR created_at <= %s)"
            " ORDER BY next_attempt_at, id LIMIT %s FOR UPDATE SKIP LOCKED",
            (now, now - STALE_AFTER, limit),
        )
        return [row["id"] for row in await cur.fetchall()]


async def enqueue_due(redis: ArqRedis, due: list[str]) -> int:
    """The sweep's enqueue: due rows in batches, as after a commit."""
    jobs = 0
    for batch in batches(due):
        jobs += await queue.after_commit(redis, DELIVER_JOB, batch, row_id=batch[0])
    return jobs


async def notices(cur: Cursor, plan_id: Any, limit: int = 50) -> list[Notice]:
    await cur.execute(
        "SELECT id, kind, recipient_type, status, created_at, finished_at FROM outbox"
        " WHERE plan_id = %s ORDER BY created_at DESC, id DESC LIMIT %s",
        (plan_id, limit),
    )
    return [Notice(**row) for row in await cur.fetchall()]  # type: ignore[typeddict-item]
