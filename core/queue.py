"""Enqueueing a job once per row: the one place that knows how arq keeps job ids and results.

Conventions (docs/conventions.md): the row commits first, then `after_commit` enqueues its job
under the one job-id scheme `<job>:<row id>`, so a double enqueue runs once and a sweeper can
re-enqueue what was lost. One failure rule for every caller: the commit stands, the failure is
one log line and a count (`ENQUEUE_FAILURES`, rendered by /api/metrics), the row's sweeper re-
enqueues it, and the client is answered with the committed state. arq refuses an id while that
job is queued or running, which is the point, but also while it keeps the result of a finished
run (`keep_result`), which would stop a sweeper from re-enqueueing a row whose job died before
finishing its bookkeeping.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections import Counter
from typing import Any

from arq.connections import ArqRedis
from arq.constants import job_key_prefix, result_key_prefix
from arq.jobs import Job, JobStatus, serialize_job
from arq.utils import timestamp_ms
from redis.commands.core import AsyncScript
from redis.exceptions import RedisError

log = logging.getLogger(__name__)

# arq's enqueue_job (WATCH, EXISTS, MULTI/PSETEX/ZADD/EXEC: three round trips) as one atomic
# script, for every job enqueued in the same turn of the event loop: a hot path (contract
# submit) enqueues once per request, and under load several requests get there together.
# KEYS: the queue, then each job's key and result key; ARGV: the expiry, then each job's
# serialized bytes, id and score. Returns 1 or 0 per job, as arq's own refusal would.
_ENQUEUE = """
local queued = {}
for n = 1, (#KEYS - 1) / 2 do
  local job_key, result_key = KEYS[2 * n], KEYS[2 * n + 1]
  if redis.call('EXISTS', job_key, result_key) > 0 then
    queued[n] = 0
  else
    redis.call('PSETEX', job_key, ARGV[1], ARGV[3 * n - 1])
    redis.call('ZADD', KEYS[1], ARGV[3 * n + 1], ARGV[3 * n])
    queued[n] = 1
  end
end
return queued
"""
# One script object for every client: given bytes, redis-py hashes the script without asking a
# client for its encoding, and each call names its client (`client=`), so nothing per client is
# kept (a script registered per client held that client for the life of the process).
_SCRIPT = AsyncScript(None, _ENQUEUE.encode())  # type: ignore[arg-type]


# Enqueues after a commit that failed, by job name, in this process (the rows are committed and
# pending: their sweepers re-enqueue them).
ENQUEUE_FAILURES: Counter[str] = Counter()


def job_id(function: str, row_id: str) -> str:
    """The one job-id scheme: the job's name and the id of the row it works on (a batch job
    takes its first row's id), so the same row's job is refused while queued or running."""
    return f"{function}:{row_id}"


async def after_commit(redis: ArqRedis, function: str, *args: Any, row_id: str) -> bool:
    """Enqueue the job of a row that has just committed (or that a sweeper found still
    pending); True if this call queued it.

    A Redis failure never undoes or hides the commit: it is logged and counted, and the row
    stays pending for its sweeper, which calls this again.
    """
    try:
        return await enqueue_once(redis, function, *args, job_id=job_id(function, row_id))
    except (RedisError, OSError, TimeoutError) as exc:
        ENQUEUE_FAILURES[function] += 1
        log.warning(
            "enqueue after commit failed; the sweeper will re-enqueue the row",
            extra={"job": function, "rowId": row_id, "error": repr(exc)},
        )
        return False


def result_key(job_id: str) -> str:
    """Where arq keeps a finished job's result. arq has no public call to drop one, so its key
    layout is known here and nowhere else (tests/test_library_seams.py pins it)."""
    return result_key_prefix + job_id


async def enqueue_once(redis: ArqRedis, function: str, *args: Any, job_id: str) -> bool:
    """Queue `function(*args)` under `job_id` unless it is queued or running; True if queued.

    Call this only while the row still needs the job (e.g. it is still pending): a finished
    result arq still keeps for this id is then stale, so it is dropped and the job queued
    again. Queued, deferred and running jobs are never disturbed.
    """
    if await enqueue(redis, function, *args, job_id=job_id):
        return True
    status = await Job(job_id, redis, _queue_name=redis.default_queue_name).status()
    if status is not JobStatus.complete:
        return False
    await redis.delete(result_key(job_id))
    return await redis.enqueue_job(function, *args, _job_id=job_id) is not None


async def enqueue(redis: ArqRedis, function: str, *args: Any, job_id: str) -> bool:
    """What `redis.enqueue_job(function, *args, _job_id=job_id)` does, in one round trip shared
    with every other enqueue of this turn of the event loop: False when that id is queued,
    running or keeps a result (arq's own refusal)."""
    now = timestamp_ms()
    job = serialize_job(function, args, {}, None, now, serializer=redis.job_serializer)
    loop = asyncio.get_running_loop()
    queued: asyncio.Future[bool] = loop.create_future()
    turn = _waiting.get(redis)
    if turn is None or turn[0] is not loop:  # (a loop that closed before its flush left one)
        turn = _waiting[redis] = (loop, [])
        loop.call_soon(_flush, redis)
    turn[1].append((job, job_id, now, queued))
    return await queued


# Per Redis client, weakly: its loop and the (job bytes, job id, score, caller's future)
# enqueued this turn.
_Job = tuple[bytes, str, int, asyncio.Future[bool]]
_waiting: weakref.WeakKeyDictionary[ArqRedis, tuple[asyncio.AbstractEventLoop, list[_Job]]] = (
    weakref.WeakKeyDictionary()
)
_flushing: set[asyncio.Task[None]] = set()


def _flush(redis: ArqRedis) -> None:
    task = asyncio.get_running_loop().create_task(_send(redis, _waiting.pop(redis)[1]))
    _flushing.add(task)  # the loop keeps only a weak reference to a task
    task.add_done_callback(_flushing.discard)


async def _send(redis: ArqRedis, jobs: list[_Job]) -> None:
    keys: list[str] = [redis.default_queue_name]
    args: list[Any] = [redis.expires_extra_ms]
    for job, job_id, now, _ in jobs:
        keys += [job_key_prefix + job_id, result_key(job_id)]
        args += [job, job_id, now]
    try:
        queued = await _SCRIPT(keys=keys, args=args, client=redis)
    except asyncio.CancelledError:
        for *_, future in jobs:
            future.cancel()
        raise
    except Exception as exc:  # Redis down or stalled: every caller of this turn hears it
        for *_, future in jobs:
            if not future.done():  # a caller that went away (cancelled) needs no answer
                future.set_exception(exc)
        return
    for (*_, future), done in zip(jobs, queued, strict=True):
        if not future.done():
            future.set_result(bool(done))
