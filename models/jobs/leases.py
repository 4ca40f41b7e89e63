"""The lease: how every job family survives a worker that dies mid-job.

A job holds its work (a row, or a cron's whole run) under its own id until a moment a lease
ahead, and renews it every third of the lease while it runs (`holding`). A worker killed mid-job
stops renewing, so its work is free once the lease has lapsed. arq cannot hand it over by
itself: it keeps a started job's id marked in progress for the longest timeout of any job the
worker runs, and refuses that id until then. So the work lapsed is enqueued again under an id of
its own that names the dead holder (`takeover_id`), and whichever job then takes the lease does
it. Every family's effects are guarded (a state change `WHERE status = 'pending'`, an email's
Idempotency-Key, a transaction's hash), so work done twice is applied once.

Two stores, one recipe. The email outbox keeps the holder and the moment on each row
(`outbox.claimed_by`, `claimed_until`): one delivery job holds many rows, and each may be taken
over apart. Every other family holds one thing per job and keeps it in `job_leases`, here: the
work's name (`<job>:<row id>`, or the cron's name), the job and arguments to run again, the
holder and the moment.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import TypedDict

from core.db import Pool, autocommit
from models.common import as_records

log = logging.getLogger(__name__)

# Lapsed leases the sweep hands over in one run; the rest wait for its next run.
SWEEP_LIMIT = 500


def takeover_suffix(*, holder: str) -> str:
    """What lapsed work's row id gets in the id of the job that takes it over: the dead
    holder's name, hashed. A second death (of the job that took over) names another holder, so
    another id."""
    return "~" + hashlib.sha256(holder.encode()).hexdigest()[:12]


@asynccontextmanager
async def holding(*, renew: Callable[[], Awaitable[None]], lease: timedelta) -> AsyncIterator[None]:
    """Renew a lease every third of it while the block runs, so a live job never loses its work
    to another, however slow the storage, the node or the provider it waits on. A renewal that
    fails (PostgreSQL away) is tried again at the next third; should the lease lapse meanwhile,
    another job does the work again, and its guarded effects apply once."""

    async def keep() -> None:
        while True:
            await asyncio.sleep(lease.total_seconds() / 3)
            try:
                # Shielded: the job ending mid-renewal must not cancel a query half-way.
                await asyncio.shield(renew())
            except Exception as exc:  # the next third tries again
                log.warning("could not renew a job's lease", extra={"error": type(exc).__name__})

    task = asyncio.create_task(keep())
    try:
        yield
    finally:
        task.cancel()


async def take(
    pool: Pool, *, name: str, job: str, args: list[str], holder: str, now: datetime, lease: timedelta
) -> bool:
    """Hold `name` for `holder` until `now + lease`, unless another holder's lease is still
    running; True if held. A holder taking its own work again (arq rerunning it) holds it."""
    async with autocommit(pool) as cur:
        await cur.execute(
            "INSERT INTO job_leases AS l (name, job, args, holder, until)"
            " VALUES (%(name)s, %(job)s, %(args)s, %(holder)s, %(until)s)"
            " ON CONFLICT (name) DO UPDATE SET job = excluded.job, args = excluded.args,"
            " holder = excluded.holder, until = excluded.until"
            " WHERE l.until <= %(now)s OR l.holder = excluded.holder"
            " RETURNING name",
            {"name": name, "job": job, "args": args, "holder": holder, "until": now + lease, "now": now},
        )
        return await cur.fetchone() is not None


async def renew(pool: Pool, *, name: str, holder: str, until: datetime) -> None:
    """Extend a lease this holder still holds (taken over meanwhile: left to its new holder)."""
    async with autocommit(pool) as cur:
        await cur.execute(
            "UPDATE job_leases SET until = %s WHERE name = %s AND holder = %s", (until, name, holder)
        )


async def release(pool: Pool, *, name: str, holder: str) -> None:
    """The job ended (done, failed, or deferred to a later try arq will run): nothing to take
    over. A lease another job has taken since stays that job's."""
    async with autocommit(pool) as cur:
        await cur.execute("DELETE FROM job_leases WHERE name = %s AND holder = %s", (name, holder))


class Lapsed(TypedDict):
    """Work whose holder stopped renewing: what to run again, and who held it."""

    name: str
    job: str
    args: list[str]
    holder: str


async def lapsed(pool: Pool, *, now: datetime) -> list[Lapsed]:
    """Leases past their moment, oldest first: their jobs died (or lost PostgreSQL for a whole
    lease). A plain read: the job that takes one over decides, with `take`."""
    async with autocommit(pool) as cur:
        await cur.execute(
            "SELECT name, job, args, holder FROM job_leases WHERE until <= %s ORDER BY until LIMIT %s",
            (now, SWEEP_LIMIT),
        )
        return as_records(Lapsed, rows=await cur.fetchall())
