"""Enqueueing a job once per row: the one place that knows how arq keeps job ids and results.

Conventions (docs/conventions.md): the row commits first, then its job is enqueued under an
id derived from the row, so a double enqueue runs once and a sweeper can re-enqueue what was
lost. arq refuses an id while that job is queued or running, which is the point, but also while
it keeps the result of a finished run (`keep_result`), which would stop a sweeper from
re-enqueueing a row whose job died before finishing its bookkeeping.
"""

from __future__ import annotations

from typing import Any

from arq.connections import ArqRedis
from arq.constants import job_key_prefix, result_key_prefix
from arq.jobs import Job, JobStatus, serialize_job
from arq.utils import timestamp_ms
from redis.commands.core import AsyncScript

# arq's enqueue_job (WATCH, EXISTS, MULTI/PSETEX/ZADD/EXEC: three round trips) as one atomic
# script: a hot path (contract submit) enqueues once per request.
_ENQUEUE = """
if redis.call('EXISTS', KEYS[1], KEYS[2]) > 0 then return 0 end
redis.call('PSETEX', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[4])
return 1
"""
_scripts: dict[int, AsyncScript] = {}


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
    """What `redis.enqueue_job(function, *args, _job_id=job_id)` does, in one round trip:
    False when that id is queued, running or keeps a result (arq's own refusal)."""
    script = _scripts.get(id(redis))
    if script is None:
        script = _scripts[id(redis)] = redis.register_script(_ENQUEUE)
    now = timestamp_ms()
    job = serialize_job(function, args, {}, None, now, serializer=redis.job_serializer)
    keys = [job_key_prefix + job_id, result_key(job_id), redis.default_queue_name]
    done = await script(keys=keys, args=[redis.expires_extra_ms, job, now, job_id], client=redis)
    return bool(done)
