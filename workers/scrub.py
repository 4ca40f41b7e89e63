"""The archive scrub: every stored file read whole again on a schedule, at a bounded byte rate.

`scrub_archive` runs every minute (and at worker start). It takes the file whose last whole
read is oldest and due (ARCHIVE_SCRUB_INTERVAL_SECONDS), authenticates every segment
(core.files.sealed_files.read_through: the object exists, has its length, and every AEAD tag
opens), and goes on to the next while its run lasts (RUN_SECONDS), never reading more than
ARCHIVE_SCRUB_BYTES_PER_SECOND on average. A large file is read over several runs (the
position is kept). One run at a time across every worker (the run's lease, workers/leases.py),
so the byte rate is the deployment's, not each worker's, and a run killed mid-read is taken over
once its lease lapses, from the position it last saved. Verdicts and emails:
models/archive/scrub.py. Decisions: docs/archive.md, "The scrub".
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from core import jobstats
from core.files import sealed_files
from core.files.crypto import UnknownKeyError
from core.files.storage import StorageError
from models.archive import scrub
from models.delivery import outbox
from workers import context

log = logging.getLogger(__name__)

# A run stops starting new reads after this long, so runs a minute apart never overlap.
RUN_SECONDS = 45


class Pace:
    """Sleep as needed so that the bytes read since the start never exceed the rate.

    The clock and the sleep are the process's own; a test passes its own pair to check the
    rate without timing anything."""

    def __init__(
        self,
        rate: int,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.rate = rate
        self.monotonic = monotonic
        self.sleep = sleep
        self.started = monotonic()
        self.read = 0

    def seconds_left(self) -> float:
        return RUN_SECONDS - (self.monotonic() - self.started)

    async def spent(self, n: int) -> None:
        self.read += n
        ahead = self.started + self.read / self.rate - self.monotonic()
        if ahead > 0:
            await self.sleep(ahead)


async def scrub_archive(ctx: dict[str, Any]) -> dict[str, int]:
    """One run (under its lease: workers.main registers it `leased`, so runs never overlap)."""
    app = context.get(ctx)
    if app.storage is None:
        return {"checked": 0}
    return await _run(app)


async def _run(app: context.Context) -> dict[str, int]:
    pool, storage = app.db, app.storage
    assert storage is not None
    settings = app.settings
    interval = timedelta(seconds=settings.archive_scrub_interval_seconds)
    pace = Pace(settings.archive_scrub_bytes_per_second)
    result = {"checked": 0, "damaged": 0, "restored": 0, "partial": 0, "bytes": 0}
    skip: list[str] = []
    while pace.seconds_left() > 0:
        target = await scrub.next_due(pool, now=app.clock.now(), interval=interval, skip=skip)
        if target is None:
            break
        start = target["position"]
        budget = max(1, int(pace.seconds_left() * pace.rate))
        stop = min(target["size_bytes"], start + budget)
        where = {"itemId": target["id"]}
        position = start
        try:
            async for n in sealed_files.read_through(storage, app.key_ring, target, start=start, stop=stop):
                position += n
                await pace.spent(n)
        except sealed_files.VerificationFailed as exc:
            verdict = await scrub.record_damage(pool, target=target, now=app.clock.now())
            if verdict["newly_damaged"]:
                result["damaged"] += 1
                await jobstats.add_counts(app.redis, scrub.METRICS, failures=1)
                log.error("archive scrub: stored file damaged", extra={**where, "error": str(exc)})
            await outbox.enqueue(app.redis, row_ids=verdict["emails"])
            result["checked"] += 1
            continue
        except UnknownKeyError:
            log.error("archive scrub: the file's key id is not in ENCRYPTION_KEYS; skipped", extra=where)
            skip.append(target["id"])
            continue
        except StorageError as exc:
            log.warning("archive scrub: storage unavailable; the next run goes on", extra={"error": str(exc)})
            break
        finally:
            result["bytes"] += position - start
        if position < target["size_bytes"]:
            await scrub.save_position(pool, item_id=target["id"], position=position)
            result["partial"] += 1
            break  # the run's time is up
        if await scrub.record_whole(pool, target=target, now=app.clock.now()):
            result["restored"] += 1
            log.info("archive scrub: a damaged file reads whole again", extra=where)
        result["checked"] += 1
    await jobstats.add_counts(app.redis, scrub.METRICS, bytes=result["bytes"])
    if result["checked"] or result["partial"]:
        log.info("archive scrub", extra=result)
    return result
