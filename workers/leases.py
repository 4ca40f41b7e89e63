"""The worker's side of the lease (models/jobs/leases.py): every job family that works on rows
runs under one (`leased`), and one sweep hands over the work of jobs that died (`take_over`).

A job registered through `leased` first takes the lease on its work, named after the job and
its arguments (the same row's verification, relay or deletion; a cron's run as a whole), under
its own arq job id, and renews it while it runs. It returns without running when a live job
holds that work. When it ends, however it ends, it gives the lease back; a worker killed mid-
job cannot, so its lease lapses within JOB_LEASE_SECONDS and `take_over`, every third of that,
enqueues the same job again under an id of its own. Email delivery keeps its claim on the outbox
rows themselves and is taken over by the outbox sweep (workers/email.py), under the same lease.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import uuid
from datetime import timedelta
from typing import Any, TypeVar

from arq.cron import CronJob
from arq.typing import WorkerCoroutine
from arq.worker import Function

from core import queue
from models.jobs import leases
from workers import context

log = logging.getLogger(__name__)

J = TypeVar("J", Function, CronJob)
# What a job returns when another live job holds its work: it did nothing.
HELD = "held by another job"
# The jobs registered `leased` in this process: lapsed work of any other job (one renamed or
# removed since its worker died) is dropped by the sweep rather than enqueued to fail forever.
REGISTERED: set[str] = set()


def leased(job: J) -> J:
    """The job (an arq `func` or `cron`) run under the lease on its work."""
    REGISTERED.add(job.name)
    return dataclasses.replace(job, coroutine=_under_lease(job.name, job.coroutine))


def _under_lease(name: str, coroutine: WorkerCoroutine) -> WorkerCoroutine:
    @functools.wraps(coroutine)
    async def run(ctx: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        app = context.get(ctx)
        work = ":".join([name, *map(str, args)])
        holder = str(ctx.get("job_id") or uuid.uuid4())
        lease = timedelta(seconds=app.settings.job_lease_seconds)
        held = await leases.take(
            app.db,
            name=work,
            job=name,
            args=[str(a) for a in args],
            holder=holder,
            now=app.clock.now(),
            lease=lease,
        )
        if not held:
            log.info("job skipped: a live job holds its work", extra={"job": name})
            return HELD

        async def renew() -> None:
            await leases.renew(app.db, name=work, holder=holder, until=app.clock.now() + lease)

        try:
            async with leases.holding(renew=renew, lease=lease):
                return await coroutine(ctx, *args, **kwargs)
        finally:
            try:
                await leases.release(app.db, name=work, holder=holder)
            except Exception as exc:  # PostgreSQL away: the lease lapses and the work is redone, once
                log.warning(
                    "could not release a job's lease", extra={"job": name, "error": type(exc).__name__}
                )

    return run


async def take_over(ctx: dict[str, Any]) -> int:
    """Enqueue the work whose lease lapsed (its job died) under an id naming the dead holder:
    the dead job's own id stays refused while arq marks it in progress."""
    app = context.get(ctx)
    queued = 0
    for work in await leases.lapsed(app.db, now=app.clock.now()):
        if work["job"] not in REGISTERED:
            log.warning("lapsed work of a job this worker does not run: dropped", extra={"job": work["job"]})
            await leases.release(app.db, name=work["name"], holder=work["holder"])
            continue
        row = work["name"].removeprefix(work["job"]).removeprefix(":")  # empty for a cron's run
        row += leases.takeover_suffix(holder=work["holder"])
        if await queue.after_commit(app.redis, work["job"], *work["args"], row_id=row):
            queued += 1
    if queued:
        log.warning("jobs taken over from a worker that stopped", extra={"jobs": queued})
    return queued
